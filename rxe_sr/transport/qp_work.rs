// SPDX-License-Identifier: GPL-2.0
//! The QP's two work items, for every QP type: its work (its timer fired, or a path kicked
//! it), which runs what the QP's type has pending, and an RC QP's slow-path work (SRNIC's
//! slow path). Each runs in process context with no lock held, and takes the QP's lock.

use crate::kx::ib_verbs::QpState;
use crate::transport::qp::{CqEvents, QpCtx, RoceQp};
use crate::transport::qp_error::flush_kernel;
use crate::transport::rc_conn;
use crate::transport::rc_conn::receiving;
use crate::transport::rc_drive::{drive, Step};
use crate::transport::rc_qp::serve_held;
use crate::transport::ud_qp::{run_kernel_sends, run_ud_requester};

/// The QP's work item (its timer fired, or a path kicked it): the transport's timer step
/// and the READ responses of an RC QP, a kernel QP's sends, the rest of a user datagram
/// QP's send ring.
pub(crate) fn qp_work(qp: &RoceQp) {
    let ctx = QpCtx::new(qp);
    // Dropped last, with no lock held.
    let _events = CqEvents::new(qp);
    if rc_conn::service(qp.shape.qp_type).is_none() {
        if qp.kq.lock().is_some() {
            // A kernel datagram QP: its send work.
            run_kernel_sends(&ctx);
        } else {
            // A user datagram QP: the rest of its send ring.
            let _ = ctx.with_netdev(|nd| {
                let mut g = qp.inner.lock();
                run_ud_requester(&mut g, &ctx, nd)
            });
        }
        return;
    }
    let mut g = qp.inner.lock();
    if g.attrs.state == QpState::Err {
        // A kernel consumer posted to a QP in Error: its requests complete as flushed.
        flush_kernel(qp);
        return;
    }
    // The requester's timers need RTS (drive checks it); a receiving QP still sends what
    // its responder has pending.
    if g.rc.is_some() && receiving(g.attrs.state) {
        let _ = ctx.with_netdev(|nd| drive(&ctx, &mut g, nd, Step::Timer));
    }
    drop(g);
    serve_held(&ctx);
}

/// The QP's slow-path work item: the responder's SR slow path (SRNIC's software consumer
/// of the onloaded out-of-order metadata), in a context of its own, apart from the receive
/// path that queues the metadata and from the QP's work. It takes the QP's lock as they do:
/// the engine's state lives under it.
pub(crate) fn qp_slow_path(qp: &RoceQp) {
    let ctx = QpCtx::new(qp);
    // Dropped last, with no lock held.
    let _events = CqEvents::new(qp);
    let mut g = qp.inner.lock();
    if g.rc.is_some() && receiving(g.attrs.state) {
        let _ = ctx.with_netdev(|nd| drive(&ctx, &mut g, nd, Step::SlowPath));
    }
}
