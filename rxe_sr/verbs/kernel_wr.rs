// SPDX-License-Identifier: GPL-2.0
//! A kernel consumer's work requests as the rxe ABI's WQEs: `post_send`'s requests get the
//! checks a ring slot gets (`SendWqe::build_into`), `post_recv`'s become receive WQEs, so
//! that the transport sees one kind of WQE whoever posted it.

use kernel::prelude::*;

use crate::kx::ib_ah::AhDriver;
use crate::kx::ib_wr::{SendWr, SgeArray};
use crate::uabi::limits::RXE_MAX_SGE;
use crate::uabi::recv_wqe::RecvWqe;
use crate::uabi::send_wqe::{
    InlineData, QpType, Remote, SendFlags, SendLimits, SendOp, SendOpcode, SendWqe, UdDest,
    WrFields,
};
use crate::uabi::sge::{Sge, SgeList};
use crate::uabi::WqeError;

/// The SGEs of a kernel work request, validated into `list` (at most `max_sge`); returns
/// the total length.
fn sges_into(
    sges: Option<SgeArray<'_>>,
    max_sge: u32,
    list: &mut SgeList,
) -> Result<u32, WqeError> {
    let sges = sges.ok_or(WqeError::TooManySge)?;
    let n = u32::try_from(sges.len()).map_err(|_| WqeError::TooManySge)?;
    list.collect_into(n, max_sge, |i| {
        let s = sges.get(i).ok_or(WqeError::TooManySge)?;
        Ok(Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        })
    })
}

/// A `post_recv` / `post_srq_recv` request as a receive WQE of at most `max_sge` SGEs;
/// EINVAL when its SGEs are not valid.
pub(crate) fn recv_wqe(wr_id: u64, sges: Option<SgeArray<'_>>, max_sge: u32) -> Result<RecvWqe> {
    let mut list = SgeList::EMPTY;
    let length = sges_into(sges, max_sge, &mut list).map_err(|_| EINVAL)?;
    Ok(RecvWqe {
        wr_id,
        sges: list,
        length,
    })
}

/// What a kernel send request asks for, as a send WQE's operation; `None` for what kernel
/// consumers are not offered.
fn send_op<T: AhDriver>(wr: &SendWr<'_, T>, opcode: SendOpcode) -> Option<SendOp> {
    let imm = wr.imm();
    let remote = |r: crate::kx::ib_wr::RemoteVa| Remote {
        addr: r.addr,
        rkey: r.rkey,
    };
    Some(match opcode {
        SendOpcode::Send => SendOp::Send,
        SendOpcode::SendWithImm => SendOp::SendWithImm { imm },
        SendOpcode::SendWithInv => SendOp::SendWithInv {
            invalidate_rkey: wr.invalidate_rkey(),
        },
        SendOpcode::RdmaWrite => SendOp::RdmaWrite {
            remote: remote(wr.rdma()?),
        },
        SendOpcode::RdmaWriteWithImm => SendOp::RdmaWriteWithImm {
            remote: remote(wr.rdma()?),
            imm,
        },
        SendOpcode::RdmaRead => SendOp::RdmaRead {
            remote: remote(wr.rdma()?),
        },
        SendOpcode::AtomicCmpAndSwp => {
            let (r, compare, swap) = wr.atomic()?;
            SendOp::AtomicCmpAndSwp {
                remote: remote(r),
                compare,
                swap,
            }
        }
        SendOpcode::AtomicFetchAndAdd => {
            let (r, add, _) = wr.atomic()?;
            SendOp::AtomicFetchAndAdd {
                remote: remote(r),
                add,
            }
        }
        SendOpcode::LocalInv => SendOp::LocalInv {
            invalidate_rkey: wr.invalidate_rkey(),
        },
        SendOpcode::RegMr => {
            let (key, access) = wr.reg_mr()?;
            SendOp::RegMr {
                key,
                access: u32::try_from(access).ok()?,
            }
        }
        // Not offered to kernel consumers (rdma_rxe has no kernel users of them).
        SendOpcode::BindMw | SendOpcode::Flush | SendOpcode::AtomicWrite => return None,
    })
}

/// Copies the inline data of `wr` (its SGEs name kernel memory, `len` bytes in all) into
/// `d` now, as the caller may reuse its buffer once `post_send` returns.
fn copy_inline<T: AhDriver>(
    wr: &SendWr<'_, T>,
    list: Option<&SgeList>,
    len: u32,
    d: &mut InlineData,
) -> Result<(), WqeError> {
    let len = usize::try_from(len).map_err(|_| WqeError::InlineTooLong)?;
    let buf = d.fill(len).ok_or(WqeError::InlineTooLong)?;
    let mut at = 0usize;
    for s in list.map_or(&[][..], |l| l.as_slice()) {
        let n = usize::try_from(s.length).map_err(|_| WqeError::InlineTooLong)?;
        let dst = at
            .checked_add(n)
            .and_then(|end| buf.get_mut(at..end))
            .ok_or(WqeError::InlineTooLong)?;
        if !wr.inline_memory().read(s.addr, dst) {
            return Err(WqeError::SgeAddressOverflow);
        }
        at += n;
    }
    if at != len {
        return Err(WqeError::InlineTooLong);
    }
    Ok(())
}

/// Decodes and validates a kernel consumer's send request into `out`, with the checks a
/// ring slot gets for a QP of type `qp_type` and limits `limits`. `None` when it is
/// invalid.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
pub(crate) fn send_wqe<T: AhDriver>(
    wr: &SendWr<'_, T>,
    qp_type: QpType,
    limits: SendLimits,
    out: &mut SendWqe,
) -> Option<()> {
    let opcode = SendOpcode::from_kernel(wr.opcode())?;
    let op = send_op(wr, opcode)?;
    let ud = match wr.ud() {
        Some(u) if qp_type.is_datagram() => Some(UdDest {
            remote_qpn: u.remote_qpn,
            remote_qkey: u.remote_qkey,
            pkey_index: u.pkey_index,
            ah_num: 0,
            av: None,
        }),
        _ => None,
    };
    let flags = SendFlags::from_bits_truncate(wr.send_flags());
    // Inline: the SGEs name kernel memory to copy now; their total is the inline length.
    let (inline_list, dma_length) = if flags.inline() {
        let mut list = SgeList::EMPTY;
        let total = sges_into(wr.sges(), RXE_MAX_SGE, &mut list).ok()?;
        (Some(list), total)
    } else {
        (None, 0)
    };
    let inline = |len: u32, d: &mut InlineData| copy_inline(wr, inline_list.as_ref(), len, d);
    let sges = |l: &mut SgeList| sges_into(wr.sges(), limits.max_sge, l);
    let fields = WrFields {
        wr_id: wr.wr_id(),
        opcode,
        flags,
        op,
        ud,
        dma_length,
    };
    SendWqe::build_into(fields, qp_type, limits, inline, sges, out).ok()
}
