// SPDX-License-Identifier: GPL-2.0
//! Posting work requests: `post_send` (a kernel consumer's WRs validated into the QP's
//! kernel queue, or, without WRs, the rxe user ABI's doorbell) and `post_recv`.

use kernel::prelude::*;

use crate::kx::ib_verbs::{QpState, QpType};
use crate::kx::ib_wr::{RecvWrList, SendWrList};
use crate::objects::ah;
use crate::objects::device::RxeSr;
use crate::transport::qp::QpCtx;
use crate::transport::qp::{CqEvents, KernelSend, RoceQp};
use crate::transport::rc_conn;
use crate::transport::rc_qp;
use crate::transport::ud_qp::run_ud_requester;
use crate::uabi::send_wqe::{SendLimits, SendWqe};
use crate::verbs::kernel_wr;

/// `post_send` from user space: the rxe ABI's doorbell (the work is in the send ring). An
/// RC or UC QP's work fetches and sends (as rdma_rxe's send task for user QPs); a UD QP
/// sends a budget of requests in the caller's context, its work the rest.
pub(crate) fn doorbell(qp: &RoceQp) -> Result {
    if rc_conn::service(qp.shape.qp_type).is_some() {
        return rc_qp::doorbell(qp);
    }
    if qp.shape.qp_type != QpType::Ud {
        return Err(crate::kx::error::eopnotsupp());
    }
    let ctx = QpCtx::new(qp);
    // Dropped after the lock.
    let _events = CqEvents::new(qp);
    ctx.with_netdev(|nd| {
        let mut g = qp.inner.lock();
        run_ud_requester(&mut g, &ctx, nd)
    })
    .unwrap_or(Err(EINVAL))
}

/// `post_send` from a kernel consumer: validates each WR of the chain into the kernel send
/// queue and kicks the QP's work. May run in atomic context: takes no mutex, allocates
/// nothing. The first WR that cannot be queued is returned in `bad_wr` (the ones before it
/// are queued), as IBTA's Post Send requires; a datagram WR's AH must be on the QP's PD.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
pub(crate) fn post_send(qp: &RoceQp, wrs: SendWrList<'_, RxeSr>) -> Result {
    let shape = &qp.shape;
    let (pd, qp_type) = (qp.pd(), shape.wqe_qp_type());
    let limits = SendLimits {
        max_sge: shape.sq.max_sge,
        max_inline: shape.sq.max_inline,
    };
    // Each WR is decoded into this one value (a WQE by value per call costs stack).
    let mut ks = KernelSend {
        wqe: SendWqe::EMPTY,
        av: None,
    };
    let res = {
        let mut kq = qp.kq.lock();
        match kq.as_mut() {
            // As rdma_rxe: a QP that cannot send yet refuses; in Error the work flushes.
            Some(k) if matches!(k.state, QpState::Rts | QpState::Err) => wrs.post_each(|wr| {
                kernel_wr::send_wqe(wr, qp_type, limits, &mut ks.wqe).ok_or(EINVAL)?;
                ks.av = if qp_type.is_datagram() {
                    Some(wr.ah().and_then(|a| ah::kernel_av(a, pd)).ok_or(EINVAL)?)
                } else {
                    None
                };
                k.sq.push(Some(ks)).map_err(|_| ENOMEM)
            }),
            _ => Err(wrs.refuse(EINVAL)),
        }
    };
    qp.timer().kick();
    res
}

/// `post_recv`: a kernel consumer's receive WRs, validated into the QP's kernel receive
/// queue (user QPs post through their ring). May run in atomic context.
pub(crate) fn post_recv(qp: &RoceQp, wrs: RecvWrList<'_>) -> Result {
    let (res, flush) = {
        let mut kq = qp.kq.lock();
        match kq.as_mut() {
            // As rdma_rxe: receives may be posted from Init on.
            Some(k) if k.state != QpState::Reset => (
                wrs.post_each(|wr_id, sges| {
                    let wqe = kernel_wr::recv_wqe(wr_id, sges, qp.shape.rq.max_sge)?;
                    k.rq.push(Some(wqe)).map_err(|_| ENOMEM)
                }),
                k.state == QpState::Err,
            ),
            _ => (Err(wrs.refuse(EINVAL)), false),
        }
    };
    if flush {
        // In Error, receives complete as flushed: the work item does it.
        qp.timer().kick();
    }
    res
}
