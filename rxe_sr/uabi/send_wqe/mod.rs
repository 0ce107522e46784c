// SPDX-License-Identifier: GPL-2.0
//! Parsing and validation of one send-queue slot (`struct rxe_send_wqe`) as rdma-core's rxe
//! provider writes it.
//!
//! What the provider writes (`providers/rxe/rxe.c`: `post_one_send`/`init_send_wqe`, and the
//! `ibv_wr_*` extended API): `wr.wr_id`, `wr.opcode` (`IBV_WR_*`, numerically equal to
//! `IB_UVERBS_WR_*`), `wr.send_flags` (`IBV_SEND_*` = `IB_SEND_*`), `wr.ex`, the per-opcode
//! `wr.wr` union, and `dma`: `length` (sum of the SGE lengths, or the inline byte count),
//! `num_sge`, then either the SGE array or the inline bytes (`IBV_SEND_INLINE`), or for
//! `ATOMIC_WRITE` the 8-byte value in `dma.atomic_wr`. For UD it sets `wr.ud.ah_num` to the
//! kernel's AH number (or, with old kernels, leaves it 0 and copies the AV into `wr.ud.av`).
//!
//! Kernel-scratch fields (`status`, `state`, `iova`, `mask`, PSNs, `ssn`, `dma.resid`,
//! `dma.cur_sge`, `dma.sge_offset`) are ignored: the remote address comes from the `wr` union.
//! For SGE-carrying WQEs `dma.length` is ignored too and recomputed from the SGEs.
//!
//! The parts, by concept:
//! - `opcode.rs`: the QP types, the `IB_UVERBS_WR_*` opcodes and where they are allowed, and
//!   `wr.send_flags`.
//! - `wr.rs`: the per-opcode fields of the `wr.wr` union ([`SendOp`]) and the decoded work
//!   request ([`WrFields`]).
//! - `av.rs`: the UD/GSI destination (`wr.ud`) and its embedded address vector (`struct rxe_av`).
//! - `payload.rs`: where the local data is: the SGE list or the inline bytes.
//! - `parse.rs`: decoding a copied ring slot (`struct rxe_send_wqe`) into a [`SendWqe`].
//! - `build.rs`: validating decoded fields against the QP type and [`SendLimits`].
//!
//! This file holds [`SendWqe`] itself and its accessors.

mod av;
mod build;
mod opcode;
mod parse;
mod payload;
mod wr;

pub use self::av::{is_v4_mapped, Av, IpAddr, NetworkType, UdDest};
pub use self::build::SendLimits;
pub use self::opcode::{QpType, SendFlags, SendOpcode};
pub use self::payload::{InlineData, Payload, INLINE_CAP};
pub use self::wr::{BindMw, ImmData, Remote, SendOp, WrFields};

use crate::uabi::sge::Sge;
use crate::uabi::WqeError;

/// A validated send WQE, held by value: nothing points back into the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe {
    /// `wr.wr_id`, returned in the completion.
    pub wr_id: u64,
    /// The opcode.
    pub opcode: SendOpcode,
    /// The known `IB_SEND_*` flags. INLINE is cleared for the opcodes without a local buffer
    /// (LOCAL_INV, BIND_MW, ATOMIC_WRITE, FLUSH); on READ and the fetching atomics it is an
    /// error, since their SGEs receive data.
    pub flags: SendFlags,
    /// The operation and its fields.
    pub op: SendOp,
    /// The UD/GSI destination (present exactly for datagram QPs).
    pub ud: Option<UdDest>,
    /// Local data.
    pub payload: Payload,
    /// Message length in bytes: sum of SGE lengths, inline length, 8 for ATOMIC_WRITE,
    /// the FLUSH length, 0 for local operations. At most `RXE_MAX_MSG_SIZE` (2^31).
    pub length: u32,
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl SendWqe {
    /// A placeholder (a SEND of nothing): the value of a slot no request has filled yet.
    pub const EMPTY: SendWqe = SendWqe {
        wr_id: 0,
        opcode: SendOpcode::Send,
        flags: SendFlags(0),
        op: SendOp::Send,
        ud: None,
        payload: Payload::None,
        length: 0,
    };

    /// The SGEs (empty unless the payload is a gather/scatter list).
    pub fn sges(&self) -> &[Sge] {
        match &self.payload {
            Payload::Sges(list) => list.as_slice(),
            _ => &[],
        }
    }

    /// The inline bytes (empty unless the payload is inline).
    pub fn inline_data(&self) -> &[u8] {
        match &self.payload {
            Payload::Inline(data) => data.as_slice(),
            _ => &[],
        }
    }

    /// The immediate data, for the `*_WITH_IMM` opcodes.
    pub const fn imm_data(&self) -> Option<ImmData> {
        match self.op {
            SendOp::SendWithImm { imm } | SendOp::RdmaWriteWithImm { imm, .. } => Some(imm),
            _ => None,
        }
    }

    /// The rkey to invalidate, for SEND_WITH_INV and LOCAL_INV.
    pub const fn invalidate_rkey(&self) -> Option<u32> {
        match self.op {
            SendOp::SendWithInv { invalidate_rkey } | SendOp::LocalInv { invalidate_rkey } => {
                Some(invalidate_rkey)
            }
            _ => None,
        }
    }

    /// The remote address and rkey, for RDMA, atomic and FLUSH operations.
    pub const fn remote(&self) -> Option<Remote> {
        match self.op {
            SendOp::RdmaWrite { remote }
            | SendOp::RdmaWriteWithImm { remote, .. }
            | SendOp::RdmaRead { remote }
            | SendOp::AtomicCmpAndSwp { remote, .. }
            | SendOp::AtomicFetchAndAdd { remote, .. }
            | SendOp::AtomicWrite { remote, .. }
            | SendOp::Flush { remote, .. } => Some(remote),
            _ => None,
        }
    }
}

/// The field read, or `SlotTooSmall` when the WQE slot is too short to hold it.
fn need<T>(v: Option<T>) -> Result<T, WqeError> {
    v.ok_or(WqeError::SlotTooSmall)
}
