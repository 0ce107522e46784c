// SPDX-License-Identifier: GPL-2.0
//! A QP's completion queues as its paths post to them: [`QpCqs`], and [`CqEvents`], which
//! runs the consumer callbacks those completions made due once the QP's lock is released.

use super::*;
use crate::kx::ib_cq::WcQp;
use crate::objects::cq::{self, RoceCq};
use crate::objects::srq::{self, RoceSrq};

/// A QP's send and receive CQs, and the QP their completions name (`ib_wc.qp` for kernel
/// CQs).
#[derive(Clone, Copy)]
pub(crate) struct QpCqs {
    qp: *mut bindings::ib_qp,
    send: *mut bindings::ib_cq,
    recv: *mut bindings::ib_cq,
}

impl QpCqs {
    /// # Safety
    /// `ibqp` is a live QP of ours.
    pub(crate) unsafe fn of(ibqp: *mut bindings::ib_qp) -> QpCqs {
        // SAFETY: per this function's contract; the core set the CQs at create.
        unsafe {
            QpCqs {
                qp: ibqp,
                send: (*ibqp).send_cq,
                recv: (*ibqp).recv_cq,
            }
        }
    }

    /// Posts a send-queue completion.
    ///
    /// # Safety
    /// The QP is still live (so are its CQs, which it holds).
    pub(crate) unsafe fn send(&self, c: &Completion) -> Result {
        // SAFETY: per this function's contract, a created CQ of ours that outlives the call.
        let cq = unsafe { RoceCq::from_raw(self.send) };
        cq.post(c, WcQp::of(self.qp), false)
    }

    /// Posts a receive-queue completion (`solicited`: the message asked for an event).
    ///
    /// # Safety
    /// As [`QpCqs::send`].
    pub(crate) unsafe fn recv(&self, c: &Completion, solicited: bool) -> Result {
        // SAFETY: as in `send`.
        let cq = unsafe { RoceCq::from_raw(self.recv) };
        cq.post(c, WcQp::of(self.qp), solicited)
    }
}

/// Runs, when dropped, the consumer callbacks (completion handler, CQ error event) that
/// completions posted meanwhile made due on a QP's CQs. Each path that posts completions
/// while holding the QP's lock creates one before taking the lock, so it is dropped after
/// the lock is released: a handler may then call back into the QP (a ULP that modifies the
/// QP from its completion handler), as rdma_rxe allows.
pub(crate) struct CqEvents(QpCqs);

impl CqEvents {
    /// # Safety
    /// The QP of `cqs` stays live until this value is dropped, and it is dropped with no
    /// lock of ours held.
    pub(crate) unsafe fn new(cqs: QpCqs) -> CqEvents {
        CqEvents(cqs)
    }
}

impl Drop for CqEvents {
    fn drop(&mut self) {
        let QpCqs { qp, send, recv } = self.0;
        // SAFETY: per `new`'s contract the QP is live.
        let srq = unsafe { (*qp).srq };
        if !srq.is_null() {
            // SAFETY: the live QP holds its SRQ, one of ours.
            srq::run_due(unsafe { RoceSrq::from_raw(srq) });
        }
        // SAFETY: per `new`'s contract the QP, and so the CQs it holds, are live.
        let (send, recv) = unsafe { (RoceCq::from_raw(send), RoceCq::from_raw(recv)) };
        cq::run_due(send);
        if !recv.is(send) {
            cq::run_due(recv);
        }
    }
}
