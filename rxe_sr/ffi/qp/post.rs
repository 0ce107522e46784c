// SPDX-License-Identifier: GPL-2.0
//! Posting work requests: `post_send` (the user doorbell, or a kernel consumer's WRs
//! validated into the QP's kernel queue), `post_recv`, and the kernel send work.

use super::*;
use crate::kx::ib_wr::{kernel_sges_into, RecvWrList};

/// `ib_device_ops.post_send`. From user space it is the rxe ABI's doorbell (no WRs: the
/// work is in the send ring) and the requester runs in the caller's context. A kernel
/// consumer's WRs are validated into the QP's kernel send queue and sent by its work item.
///
/// # Safety
/// Called by the core with a live QP of ours; `bad_wr` is writable when `wr` is not null.
pub(crate) unsafe extern "C" fn post_send(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(st) = (unsafe { state(ibqp) }) else {
        return EINVAL.to_errno();
    };
    if !wr.is_null() {
        // SAFETY: per this function's contract.
        return unsafe { post_send_kernel(ibqp, st, wr, bad_wr) };
    }
    if rc_transport::service(st.shape.qp_type).is_some() {
        // SAFETY: per this function's contract.
        return unsafe { post_send_connected(ibqp, st) };
    }
    if st.shape.qp_type != QpType::Ud {
        return crate::kx::error::eopnotsupp().to_errno();
    }
    // SAFETY: per this function's contract.
    let ctx = unsafe { QpCtx::new(ibqp, st) };
    // SAFETY: the QP outlives the call; dropped after the lock.
    let _events = unsafe { CqEvents::new(ctx.cqs) };
    ctx.with_netdev(|nd| {
        let mut g = st.inner.lock();
        // SAFETY: the QP's CQs outlive it.
        unsafe { run_ud_requester(&mut g, &ctx, nd) }
    })
    .unwrap_or_else(|| EINVAL.to_errno())
}

/// A kernel consumer's post_send: validates each WR of the chain into the kernel send
/// queue and kicks the QP's work. May run in atomic context: takes no mutex, allocates
/// nothing. The first WR that cannot be queued is returned in `bad_wr` (the ones before it
/// are queued), as IBTA's Post Send requires.
///
/// # Safety
/// `ibqp` is a live QP of ours with state `st`; `wr` is a valid chain of `ib_ud_wr`s (the
/// core's contract for the datagram QPs that kernel consumers may create here); `bad_wr`
/// is writable.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
pub(super) unsafe fn post_send_kernel(
    ibqp: *mut bindings::ib_qp,
    st: &QpObject,
    wr: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
) -> c_int {
    // SAFETY: per this function's contract.
    let pd = PdId::of(unsafe { (*ibqp).pd });
    let mut cur = wr;
    let mut err = 0;
    // Each WR is decoded into this one value (a WQE by value per call costs stack).
    let mut ks = KernelSend {
        wqe: SendWqe::EMPTY,
        av: None,
    };
    {
        let mut kq = st.kq.lock();
        match kq.as_mut() {
            // As rdma_rxe: a QP that cannot send yet refuses; in Error the work flushes.
            Some(k) if matches!(k.state, QpState::Rts | QpState::Err) => {
                while !cur.is_null() {
                    // SAFETY: per this function's contract.
                    if unsafe { kernel_send(cur, &st.shape, pd, &mut ks) }.is_none() {
                        err = EINVAL.to_errno();
                        break;
                    }
                    if k.sq.push(Some(ks)).is_err() {
                        err = ENOMEM.to_errno();
                        break;
                    }
                    // SAFETY: a valid chain.
                    cur = unsafe { (*cur).next };
                }
            }
            _ => err = EINVAL.to_errno(),
        }
    }
    if err != 0 {
        // SAFETY: per this function's contract.
        unsafe { bad_wr.write(cur) };
    }
    if let Some(t) = st.timer.as_ref() {
        t.kick();
    }
    err
}

/// A kernel consumer's SGE array (`ib_sge` has `rxe_sge`'s fields) as a validated list.
///
/// # Safety
/// `sg_list` holds `num_sge` entries (or `num_sge` is 0).
pub(super) unsafe fn kernel_sges(
    sg_list: *const bindings::ib_sge,
    num_sge: c_int,
    max_sge: u32,
) -> Result<(SgeList, u32), WqeError> {
    let mut list = SgeList::EMPTY;
    // SAFETY: per this function's contract.
    let total = unsafe { kernel_sges_into(sg_list, num_sge, max_sge, &mut list) }?;
    Ok((list, total))
}

/// Decodes and validates one kernel send WR (the `ib_send_wr` inside an `ib_ud_wr`,
/// `ib_rdma_wr`, `ib_atomic_wr` or `ib_reg_wr`, by opcode) with the checks a ring slot gets
/// (`SendWqe::build`); a datagram WR's AH must be on the QP's PD. Inline data is copied
/// now, as the caller may reuse its buffer once post_send returns.
///
/// # Safety
/// `wr` points to a live WR of the type its opcode implies, whose `sg_list` holds
/// `num_sge` entries.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
pub(super) unsafe fn kernel_send(
    wr: *const bindings::ib_send_wr,
    shape: &QpShape,
    pd: PdId,
    out: &mut KernelSend,
) -> Option<()> {
    // SAFETY: per this function's contract.
    let w = unsafe { &*wr };
    let qp_type = shape.qp_type;
    let opcode = SendOpcode::from_kernel(w.opcode)?;
    // SAFETY: plain integers whichever union member was written.
    let (wr_id, imm, inv) = unsafe {
        (
            w.__bindgen_anon_1.wr_id,
            w.ex.imm_data.to_ne_bytes(),
            w.ex.invalidate_rkey,
        )
    };
    let rdma = || {
        // SAFETY: RDMA opcodes come in an `ib_rdma_wr`, which begins with its `ib_send_wr`.
        let r = unsafe { &*wr.cast::<bindings::ib_rdma_wr>() };
        Remote {
            addr: r.remote_addr,
            rkey: r.rkey,
        }
    };
    // SAFETY: atomic opcodes come in an `ib_atomic_wr`.
    let atomic = || unsafe { &*wr.cast::<bindings::ib_atomic_wr>() };
    let op = match opcode {
        SendOpcode::Send => SendOp::Send,
        SendOpcode::SendWithImm => SendOp::SendWithImm { imm },
        SendOpcode::SendWithInv => SendOp::SendWithInv {
            invalidate_rkey: inv,
        },
        SendOpcode::RdmaWrite => SendOp::RdmaWrite { remote: rdma() },
        SendOpcode::RdmaWriteWithImm => SendOp::RdmaWriteWithImm {
            remote: rdma(),
            imm,
        },
        SendOpcode::RdmaRead => SendOp::RdmaRead { remote: rdma() },
        SendOpcode::AtomicCmpAndSwp => {
            let a = atomic();
            SendOp::AtomicCmpAndSwp {
                remote: Remote {
                    addr: a.remote_addr,
                    rkey: a.rkey,
                },
                compare: a.compare_add,
                swap: a.swap,
            }
        }
        SendOpcode::AtomicFetchAndAdd => {
            let a = atomic();
            SendOp::AtomicFetchAndAdd {
                remote: Remote {
                    addr: a.remote_addr,
                    rkey: a.rkey,
                },
                add: a.compare_add,
            }
        }
        SendOpcode::LocalInv => SendOp::LocalInv {
            invalidate_rkey: inv,
        },
        SendOpcode::RegMr => {
            // SAFETY: REG_MR comes in an `ib_reg_wr`.
            let r = unsafe { &*wr.cast::<bindings::ib_reg_wr>() };
            SendOp::RegMr {
                key: r.key,
                access: u32::try_from(r.access).ok()?,
            }
        }
        // Not offered to kernel consumers (rdma_rxe has no kernel users of them).
        SendOpcode::BindMw | SendOpcode::Flush | SendOpcode::AtomicWrite => return None,
    };
    let (ud, av) = if qp_type.is_datagram() {
        // SAFETY: datagram QPs take `ib_ud_wr`s.
        let u = unsafe { &*wr.cast::<bindings::ib_ud_wr>() };
        // SAFETY: the AH of a posted WR is one of this device's, live while the WR is.
        let ah = unsafe { ah::RoceAh::from_raw(u.ah) }?;
        let av = ah::kernel_av(ah, pd)?;
        let dest = UdDest {
            remote_qpn: u.remote_qpn,
            remote_qkey: u.remote_qkey,
            pkey_index: u.pkey_index,
            ah_num: 0,
            av: None,
        };
        (Some(dest), Some(av))
    } else {
        (None, None)
    };
    let limits = SendLimits {
        max_sge: shape.sq.max_sge,
        max_inline: shape.sq.max_inline,
    };
    let flags = SendFlags::from_bits_truncate(w.send_flags as u32);
    // Inline: the SGEs name kernel memory to copy now; their total is the inline length.
    let (inline_list, dma_length) = if flags.inline() {
        let max = crate::uabi::limits::RXE_MAX_SGE;
        // SAFETY: per this function's contract.
        let (list, total) = unsafe { kernel_sges(w.sg_list, w.num_sge, max) }.ok()?;
        (Some(list), total)
    } else {
        (None, 0)
    };
    let inline = |len: u32, d: &mut InlineData| {
        let len = usize::try_from(len).map_err(|_| WqeError::InlineTooLong)?;
        let buf = d.fill(len).ok_or(WqeError::InlineTooLong)?;
        let mut at = 0usize;
        for s in inline_list.as_ref().map_or(&[][..], |l| l.as_slice()) {
            let n = usize::try_from(s.length).map_err(|_| WqeError::InlineTooLong)?;
            let dst = at
                .checked_add(n)
                .and_then(|end| buf.get_mut(at..end))
                .ok_or(WqeError::InlineTooLong)?;
            // SAFETY: `dst` is writable for `n` bytes; the helper refuses addresses outside
            // the direct map.
            if unsafe { bindings::rxe_sr_glue_kva_copy(s.addr, dst.as_mut_ptr().cast(), n, false) }
                != 0
            {
                return Err(WqeError::SgeAddressOverflow);
            }
            at += n;
        }
        if at != len {
            return Err(WqeError::InlineTooLong);
        }
        Ok(())
    };
    let (sg_list, num_sge, max_sge) = (w.sg_list, w.num_sge, limits.max_sge);
    // SAFETY: per this function's contract.
    let sges = |l: &mut SgeList| unsafe { kernel_sges_into(sg_list, num_sge, max_sge, l) };
    let fields = WrFields {
        wr_id,
        opcode,
        flags,
        op,
        ud,
        dma_length,
    };
    SendWqe::build_into(fields, qp_type, limits, inline, sges, &mut out.wqe).ok()?;
    out.av = av;
    Some(())
}

/// `ib_device_ops.post_recv`: a kernel consumer's receive WRs, validated into the QP's
/// kernel receive queue (user QPs post through their ring). May run in atomic context.
///
/// # Safety
/// Called by the core with a live QP of ours, a valid WR chain and a writable `bad_wr`.
pub(crate) unsafe extern "C" fn post_recv(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: per this function's contract.
    let wrs = unsafe { RecvWrList::from_raw(wr, bad_wr) };
    // SAFETY: per this function's contract.
    let Some(st) = (unsafe { state(ibqp) }) else {
        return wrs.refuse(EINVAL).to_errno();
    };
    let (err, flush) = {
        let mut kq = st.kq.lock();
        match kq.as_mut() {
            // As rdma_rxe: receives may be posted from Init on.
            Some(k) if k.state != QpState::Reset => (
                wrs.post_each(st.shape.rq.max_sge, |wqe| {
                    k.rq.push(Some(wqe)).map_err(|_| ENOMEM)
                })
                .map_or_else(|e| e.to_errno(), |()| 0),
                k.state == QpState::Err,
            ),
            _ => (wrs.refuse(EINVAL).to_errno(), false),
        }
    };
    if flush {
        // In Error, receives complete as flushed: the work item does it.
        if let Some(t) = st.timer.as_ref() {
            t.kick();
        }
    }
    err
}

/// A kernel datagram QP's work item: sends what waits in its kernel send queue, completing
/// each request (signalled ones on success, every one on error); a request that fails moves
/// the QP to the Error state. In Error, the queues are flushed.
///
/// # Safety
/// `ctx` describes a live kernel QP.
pub(super) unsafe fn run_kernel_sends(ctx: &QpCtx<'_>) {
    let st = ctx.st;
    let mut g = st.inner.lock();
    if g.attrs.state == QpState::Err {
        // SAFETY: per this function's contract.
        unsafe { flush_kernel(st, ctx.qpn, ctx.cqs) };
        return;
    }
    let sig_all = st.shape.sq_sig_type == SigType::AllWr;
    let mtu = ctx.dev.active_mtu().bytes();
    let mut budget = UD_BUDGET;
    let _ = ctx.with_netdev(|nd| loop {
        if g.attrs.state != QpState::Rts {
            break;
        }
        if budget == 0 {
            // The rest in the next run of the work, after others had their turn.
            if let Some(t) = st.timer.as_ref() {
                t.kick();
            }
            break;
        }
        budget -= 1;
        let next = st.kq.lock().as_mut().and_then(|k| k.sq.pop().flatten());
        let Some(ks) = next else {
            break;
        };
        let res = match ks.av.as_ref() {
            Some(av) => ud::send_one(ctx.dev, ctx.pd, ctx.qpn, &mut g.attrs, &ks.wqe, av, mtu, nd),
            None => Err(WcStatus::LocQpOpErr),
        };
        let status = res.err().unwrap_or(WcStatus::Success);
        let failed = status != WcStatus::Success;
        if sig_all || ks.wqe.flags.signaled() || failed {
            // SAFETY: per this function's contract. A full CQ has raised its error event.
            let _ = unsafe {
                ctx.cqs
                    .send(&Completion::for_send_wqe(&ks.wqe, ctx.qpn, status))
            };
        }
        if failed {
            // SAFETY: per this function's contract.
            unsafe { enter_error(&mut g, st, ctx.qpn, ctx.cqs) };
            break;
        }
    });
}
