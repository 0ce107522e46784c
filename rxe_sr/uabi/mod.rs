// SPDX-License-Identifier: GPL-2.0
//! The rdma_rxe user ABI, as pure Rust: no kernel crate, no allocation, safe code only.
//!
//! rxe_sr speaks the rdma_rxe user ABI (`include/uapi/rdma/rdma_user_rxe.h`) so that the stock
//! rdma-core `rxe` provider drives it unchanged. This module holds the part of that ABI that
//! is plain data handling, compiled into the kernel module as `crate::uabi` and tested on the
//! host by `cargo test`:
//! - [`layout`]: byte offsets and sizes of every uapi struct field used (x86_64).
//! - [`limits`]: the rdma_rxe device limits the parsers rely on.
//! - [`queue`]: ring index arithmetic, validation of user-written indices, slot sizing.
//! - [`send_wqe`], [`recv_wqe`]: parsing and validation of a copied SQ / RQ / SRQ slot.
//! - [`sge`]: scatter/gather elements shared by both.
//! - [`cqe`]: completions, emitted as `struct ib_uverbs_wc` bytes into a user CQ slot.
//! - [`resp`]: the driver-private create responses (`struct mminfo` and friends).
//!
//! Nothing here keeps a reference into user-shared memory: parsers take a slice the kernel
//! copied out of the ring and return plain values. No input makes any function panic.

#![forbid(unsafe_code)]

pub mod cqe;
mod field;
pub mod layout;
pub mod limits;
pub mod queue;
pub mod recv_wqe;
pub mod resp;
pub mod send_wqe;
pub mod sge;

pub use cqe::{emit_uverbs_wc, Completion, RecvInfo, WcEx, WcFlags, WcOpcode, WcStatus};
pub use queue::{Fifo, FromClientQueue, QueueError, Ring, ToClientQueue};
pub use recv_wqe::{RecvLimits, RecvWqe};
pub use send_wqe::{QpType, SendFlags, SendLimits, SendOp, SendOpcode, SendWqe};
pub use sge::{Sge, SgeList};

/// Why a user WQE was refused. The kernel completes it in error (or counts and drops it);
/// [`WqeError::wc_status`] gives the status and [`WqeError::vendor_err`] a code for
/// `vendor_err` to tell the cases apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WqeError {
    /// The slot copy is shorter than the WQE struct.
    SlotTooSmall,
    /// `wr.opcode` is not an opcode user space may post.
    UnknownOpcode,
    /// The opcode is not valid on this QP type (e.g. READ on UC, WRITE on UD).
    OpcodeNotAllowed,
    /// `dma.num_sge` exceeds the queue's `max_sge`.
    TooManySge,
    /// The SGE array runs past the end of the slot.
    SgeOutsideSlot,
    /// An SGE's `addr + length` overflows 64 bits.
    SgeAddressOverflow,
    /// The message is longer than `RXE_PORT_MAX_MSG_SZ` (2^31).
    LengthTooLong,
    /// `IB_SEND_INLINE` on an opcode whose SGEs receive data (READ, atomics).
    InlineNotAllowed,
    /// Inline length exceeds the QP's `max_inline_data`.
    InlineTooLong,
    /// Inline data runs past the end of the slot.
    InlineOutsideSlot,
    /// A fetching atomic's SGEs hold fewer than 8 bytes.
    AtomicLength,
    /// An atomic's remote address is not 8-byte aligned.
    MisalignedAtomic,
    /// A UD destination QPN wider than 24 bits.
    BadRemoteQpn,
    /// An embedded UD address vector with a bad port or network type.
    BadAv,
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl WqeError {
    /// The completion status reporting this error: length problems are
    /// `IB_WC_LOC_LEN_ERR`, an SGE address overflow `IB_WC_LOC_PROT_ERR`, the rest
    /// `IB_WC_LOC_QP_OP_ERR`.
    pub const fn wc_status(self) -> WcStatus {
        match self {
            WqeError::TooManySge
            | WqeError::SgeOutsideSlot
            | WqeError::LengthTooLong
            | WqeError::InlineTooLong
            | WqeError::InlineOutsideSlot
            | WqeError::AtomicLength => WcStatus::LocLenErr,
            WqeError::SgeAddressOverflow => WcStatus::LocProtErr,
            WqeError::SlotTooSmall
            | WqeError::UnknownOpcode
            | WqeError::OpcodeNotAllowed
            | WqeError::InlineNotAllowed
            | WqeError::MisalignedAtomic
            | WqeError::BadRemoteQpn
            | WqeError::BadAv => WcStatus::LocQpOpErr,
        }
    }

    /// A distinct non-zero code per error, for `ib_uverbs_wc.vendor_err`.
    pub const fn vendor_err(self) -> u32 {
        match self {
            WqeError::SlotTooSmall => 1,
            WqeError::UnknownOpcode => 2,
            WqeError::OpcodeNotAllowed => 3,
            WqeError::TooManySge => 4,
            WqeError::SgeOutsideSlot => 5,
            WqeError::SgeAddressOverflow => 6,
            WqeError::LengthTooLong => 7,
            WqeError::InlineNotAllowed => 8,
            WqeError::InlineTooLong => 9,
            WqeError::InlineOutsideSlot => 10,
            WqeError::AtomicLength => 11,
            WqeError::MisalignedAtomic => 12,
            WqeError::BadRemoteQpn => 13,
            WqeError::BadAv => 14,
        }
    }
}
