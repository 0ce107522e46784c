// SPDX-License-Identifier: GPL-2.0
//! Modifying a QP (IBTA 11.2.5): the state transition, the attributes, and for RC/UC QPs
//! the transport they build as they connect; Reset empties the work queues, Error flushes
//! them.

use kernel::prelude::*;

use crate::kx::ib_verbs::{self, QpAttr, QpAttrMask, QpState};
use crate::objects::ah::Av;
use crate::objects::device::RoceDevice;
use crate::objects::qp::QpShape;
use crate::proto::rc::RcConfig;
use crate::transport::qp::{CqEvents, QpInner, QpObject, RoceQp};
use crate::transport::qp_error::enter_error;
use crate::transport::rc_conn::{self, RcConn};

/// `modify_qp`: a state transition the core's table allows, with attributes rxe_sr can
/// honour.
pub(crate) fn modify(qp: &RoceQp, a: &QpAttr, mask: QpAttrMask) -> Result {
    let st: &QpObject = qp;
    if !mask.within(QpAttrMask::STANDARD) {
        return Err(crate::kx::error::eopnotsupp());
    }
    let av = if mask.contains(QpAttrMask::AV) && rc_conn::service(st.shape.qp_type).is_some() {
        Some(crate::verbs::ah::av_of(&a.ah_attr)?)
    } else {
        None
    };
    let qpn = qp.qpn();
    // Declared before the lock, so dropped after it.
    let _events = CqEvents::new(qp);
    let mut g = st.inner.lock();
    // Lock order: QP mutex, then the kernel queues, then a CQ (each takes only its own).
    // The transition starts from the QP's real state: a caller's IB_QP_CUR_STATE that
    // disagrees with it is refused, not believed.
    let cur = g.attrs.state;
    if mask.contains(QpAttrMask::CUR_STATE) && a.cur_qp_state != Some(cur) {
        return Err(EINVAL);
    }
    let next = if mask.contains(QpAttrMask::STATE) {
        a.qp_state.ok_or(EINVAL)?
    } else {
        cur
    };
    if !ib_verbs::modify_qp_is_ok(cur, next, st.shape.qp_type, mask) {
        return Err(EINVAL);
    }
    let before = g.attrs;
    g.attrs.apply(a, mask)?;
    if rc_conn::service(st.shape.qp_type).is_some() {
        if let Err(e) = connect(&mut g, &st.shape, qp.device(), qpn, cur, next, av) {
            g.attrs = before;
            return Err(e);
        }
    }
    if let Some(k) = st.kq.lock().as_mut() {
        k.state = next;
        if next == QpState::Reset {
            // IBTA 10.3.1: Reset empties the work queues, without completions.
            k.clear();
        }
    }
    if next == QpState::Reset {
        if let Some(h) = st.held.as_ref() {
            h.purge();
        }
        // IBTA 10.3.1: Reset empties a user QP's rings too (consumer := producer, published),
        // so nothing posted before it runs after the QP is brought up again.
        let QpInner {
            sq, rq, sq_q, rq_q, ..
        } = &mut *g;
        for (ring, q) in [(sq.as_ref(), sq_q), (rq.as_ref(), rq_q)] {
            if let Some(m) = ring {
                // On a mangled producer index, what was validly queued is discarded.
                let _ = q.observe_producer(m.queue().load_producer());
                m.queue().publish_consumer(q.discard_all());
            }
        }
    }
    if next == QpState::Err && cur != QpState::Err {
        enter_error(&mut g, qp);
    }
    Ok(())
}

/// RC/UC: builds the transport as the QP connects (RTR: responder; RTS: requester),
/// refreshes its view of the attributes in RTS, and drops it at reset.
// Out of line: the transport it builds is large, and modify_qp's frame is big already.
#[inline(never)]
fn connect(
    g: &mut QpInner,
    shape: &QpShape,
    dev: &RoceDevice,
    qpn: u32,
    cur: QpState,
    next: QpState,
    av: Option<Av>,
) -> Result {
    let cfg = rc_conn::config(&g.attrs, shape, qpn, dev.active_mtu()).ok_or(EINVAL)?;
    match next {
        QpState::Reset => {
            if let Some(mut rc) = g.rc.take() {
                rc.release_shared(dev);
            }
        }
        QpState::Rtr if cur != QpState::Rtr => {
            let av = av.ok_or(EINVAL)?;
            let srq = shape.srq;
            g.rc = Some(RcConn::new(
                cfg,
                av,
                g.attrs.rq_psn,
                (dev.scheme(), dev.fec()),
                srq,
            )?);
        }
        QpState::Rts => {
            let conn = g.rc.as_mut().ok_or(EINVAL)?;
            // The attributes as RTS has them; FEC stays what RTR found.
            conn.cfg = RcConfig {
                fec: conn.cfg.fec,
                ..cfg
            };
            if let Some(av) = av {
                conn.av = av;
            }
            if cur == QpState::Rtr {
                conn.start_requester(shape, g.attrs.sq_psn)?;
            }
        }
        _ => {}
    }
    Ok(())
}
