// SPDX-License-Identifier: GPL-2.0
//! The operation of a send work request with its opcode-specific fields (the `wr.wr` union
//! of `struct rxe_send_wr`, plus `ex` and `dma.atomic_wr`): [`SendOp`] and its parts, and
//! [`WrFields`], a work request decoded but not yet validated.

use super::av::UdDest;
use super::opcode::{SendFlags, SendOpcode};

/// Immediate data (`__be32`): the four bytes in network order, as in the ImmDt header.
pub type ImmData = [u8; 4];

/// The remote side of an RDMA or atomic operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Remote {
    /// Remote virtual address (`wr.rdma.remote_addr` / `wr.atomic.remote_addr`).
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// `wr.mw`: a memory window bind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BindMw {
    /// Start of the window.
    pub addr: u64,
    /// Length of the window.
    pub length: u64,
    /// The MR the window lies in.
    pub mr_lkey: u32,
    /// The window's current rkey.
    pub mw_rkey: u32,
    /// The rkey the window gets.
    pub rkey: u32,
    /// `IB_UVERBS_ACCESS_*` flags for the window.
    pub access: u32,
}

/// The operation of a send WQE with its opcode-specific fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND.
    Send,
    /// SEND with immediate data.
    SendWithImm {
        /// Immediate data.
        imm: ImmData,
    },
    /// SEND with invalidate.
    SendWithInv {
        /// The rkey the responder invalidates (`ex.invalidate_rkey`).
        invalidate_rkey: u32,
    },
    /// RDMA WRITE.
    RdmaWrite {
        /// Target.
        remote: Remote,
    },
    /// RDMA WRITE with immediate data.
    RdmaWriteWithImm {
        /// Target.
        remote: Remote,
        /// Immediate data.
        imm: ImmData,
    },
    /// RDMA READ into the WQE's SGEs.
    RdmaRead {
        /// Source.
        remote: Remote,
    },
    /// Atomic compare-and-swap; the original value lands in the SGEs.
    AtomicCmpAndSwp {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Compare operand (`wr.atomic.compare_add`).
        compare: u64,
        /// Swap operand (`wr.atomic.swap`).
        swap: u64,
    },
    /// Atomic fetch-and-add; the original value lands in the SGEs.
    AtomicFetchAndAdd {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Addend (`wr.atomic.compare_add`).
        add: u64,
    },
    /// Atomic write of 8 bytes (`dma.atomic_wr`).
    AtomicWrite {
        /// Target (`wr.rdma`, 8-byte aligned).
        remote: Remote,
        /// The bytes written, as user space stored them.
        value: [u8; 8],
    },
    /// FLUSH of `length` bytes (taken from `dma.length`).
    Flush {
        /// Target (`wr.flush.remote_addr`, `wr.flush.rkey`).
        remote: Remote,
        /// Placement type (`wr.flush.type`).
        placement_type: u8,
        /// Selectivity level (`wr.flush.level`).
        level: u8,
    },
    /// Local invalidate of `invalidate_rkey`.
    LocalInv {
        /// The key to invalidate (`ex.invalidate_rkey`).
        invalidate_rkey: u32,
    },
    /// Memory window bind.
    BindMw(BindMw),
    /// Fast registration of a kernel MR: the MR named by `key`'s index takes `key` (its new
    /// L_Key and R_Key), `access`, and the pages mapped into it.
    RegMr {
        /// The new key.
        key: u32,
        /// `IB_ACCESS_*`.
        access: u32,
    },
}

/// A work request's fields as decoded, before [`SendWqe::build`](super::SendWqe::build) validates them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrFields {
    /// `wr_id`.
    pub wr_id: u64,
    /// The opcode.
    pub opcode: SendOpcode,
    /// `IB_SEND_*` flags.
    pub flags: SendFlags,
    /// The operation and its fields.
    pub op: SendOp,
    /// The UD/GSI destination (datagram QPs only).
    pub ud: Option<UdDest>,
    /// `dma.length`: the inline length, or FLUSH's length.
    pub dma_length: u32,
}
