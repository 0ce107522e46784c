// SPDX-License-Identifier: GPL-2.0
//! The Error state of a QP (IBTA 10.3.1): what the transport holds completes as flushed,
//! then the work queues (rings or kernel queues) are flushed, oldest first.

use kernel::prelude::*;

use crate::kx::ib_verbs::QpState;
use crate::kx::rxe::mmap_queue::MappedQueue;
use crate::transport::qp::{QpCqs, QpInner, RoceQp};
use crate::transport::rc_conn::RcConn;
use crate::uabi::cqe::{Completion, WcStatus};
use crate::uabi::layout;
use crate::uabi::queue::FromClientQueue;

/// Moves the QP to the Error state: what the transport holds is completed as flushed, then
/// the work queues are flushed (IBTA 10.3.1).
/// `g` is the QP's lock.
pub(crate) fn enter_error(g: &mut QpInner, qp: &RoceQp) {
    let (qpn, cqs) = (qp.qpn(), QpCqs::of(qp));
    g.attrs.state = QpState::Err;
    if let Some(h) = qp.held.as_ref() {
        h.purge();
    }
    let QpInner {
        sq,
        rq,
        sq_q,
        rq_q,
        rc,
        ..
    } = g;
    if let Some(conn) = rc.as_mut() {
        // The QP is done sending and with loss recovery: its part of the in-flight budget
        // and its pool units go back to the device.
        conn.release_shared(qp.device());
        // What the responder took ahead from an SRQ and holds no data of goes back to the
        // SRQ for its other QPs; the rest is flushed.
        let srq = qp.srq();
        conn.resp.drop_held(
            |wr_id| {
                let c = Completion::zeroed(wr_id, qpn, WcStatus::WrFlushErr);
                let _ = cqs.recv(&c, false);
            },
            |w| srq.is_some_and(|s| s.give_back(w)),
        );
        // The requests the requester took complete first, in order (a kernel QP's are no
        // longer in any queue; a user QP's leave its ring as they complete).
        let RcConn { cfg, req, .. } = &mut **conn;
        if let Some(req) = req.as_mut() {
            req.flush(cfg, |c| {
                if let Some(ring) = sq.as_ref() {
                    if let Some(cons) = sq_q.advance_consumer() {
                        ring.queue().publish_consumer(cons);
                    }
                }
                // A full CQ has raised its error event.
                let _ = cqs.send(c);
            });
        }
    }
    flush(sq.as_ref(), sq_q, layout::SEND_WQE_WR_ID_OFF, qpn, |c| {
        cqs.send(c)
    });
    flush(rq.as_ref(), rq_q, layout::RECV_WQE_WR_ID_OFF, qpn, |c| {
        cqs.recv(c, false)
    });
    flush_kernel(qp);
}

/// Completes what waits in a kernel QP's queues with IB_WC_WR_FLUSH_ERR, oldest first (the
/// Error state; nothing for user QPs). Each request is taken under the queues' lock and
/// completed outside it, so a consumer's completion handler may post again.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
pub(crate) fn flush_kernel(qp: &RoceQp) {
    let (qpn, cqs) = (qp.qpn(), QpCqs::of(qp));
    loop {
        let (send, recv) = match qp.kq.lock().as_mut() {
            Some(k) => (
                k.sq.pop().flatten(),
                if k.sq.is_empty() {
                    k.rq.pop().flatten()
                } else {
                    None
                },
            ),
            None => return,
        };
        if send.is_none() && recv.is_none() {
            return;
        }
        // A full CQ has raised its error event.
        if let Some(s) = send {
            let _ = cqs.send(&Completion::zeroed(s.wqe.wr_id, qpn, WcStatus::WrFlushErr));
        }
        if let Some(r) = recv {
            let _ = cqs.recv(
                &Completion::zeroed(r.wr_id, qpn, WcStatus::WrFlushErr),
                false,
            );
        }
    }
}

/// Completes every work request queued in a ring with IB_WC_WR_FLUSH_ERR (IBTA 10.3.1: a
/// QP in the Error state flushes its work queues), oldest first, until the ring is empty or
/// the CQ (through `post`) refuses. Only the WQE's `wr_id` is read; a producer index user
/// space mangled flushes what was validly queued before.
#[inline(never)]
pub(crate) fn flush(
    ring: Option<&MappedQueue>,
    q: &mut FromClientQueue,
    wr_id_off: usize,
    qpn: u32,
    post: impl Fn(&Completion) -> Result,
) {
    let Some(m) = ring else {
        return;
    };
    let shared = m.queue();
    // On a bad index the kernel's view stays as it was.
    let _ = q.observe_producer(shared.load_producer());
    while let Some(slot) = q.head() {
        let mut head = [0u8; 64];
        let n = shared.read_slot(slot, &mut head);
        let wr_id = head
            .get(wr_id_off..wr_id_off + 8)
            .filter(|_| n >= wr_id_off + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        let c = Completion::zeroed(wr_id, qpn, WcStatus::WrFlushErr);
        if post(&c).is_err() {
            break;
        }
        if let Some(cons) = q.advance_consumer() {
            shared.publish_consumer(cons);
        }
    }
}
