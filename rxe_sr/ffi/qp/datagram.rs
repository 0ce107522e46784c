// SPDX-License-Identifier: GPL-2.0
//! UD and GSI QPs: the requester that sends a user ring's or kernel queue's datagrams, and
//! the delivery of received UD SENDs (unicast and multicast) into receive WQEs.

use super::*;

/// Datagram work requests sent per call at most (post_send, or one run of the QP's work).
pub(super) const UD_BUDGET: u32 = 64;

/// Sends the queued UD work requests of a user QP's ring ([`UD_BUDGET`] per call; the QP's
/// work sends the rest), completing each (signalled ones
/// on success, every one on error). A request that fails moves the QP to the Error state,
/// which flushes both rings.
///
/// # Safety
/// `g` is the lock of the live QP `ctx`.
pub(super) unsafe fn run_ud_requester(g: &mut QpInner, ctx: &QpCtx<'_>, nd: &NetDev<'_>) -> c_int {
    let (shape, dev, qpn, cqs) = (&ctx.st.shape, ctx.dev, ctx.qpn, ctx.cqs);
    let QpInner {
        sq,
        rq,
        sq_q,
        rq_q,
        attrs,
        ..
    } = g;
    match attrs.state {
        QpState::Rts => {}
        // As rdma_rxe: in Error the posted requests complete as flushed.
        QpState::Err => {
            // SAFETY: per this function's contract.
            unsafe {
                flush(sq.as_ref(), sq_q, layout::SEND_WQE_WR_ID_OFF, qpn, |c| {
                    cqs.send(c)
                })
            };
            return 0;
        }
        // As rdma_rxe: posting to a QP that cannot send yet is refused.
        _ => return EINVAL.to_errno(),
    }
    let Some(ring) = sq.as_ref() else {
        return EINVAL.to_errno();
    };
    let shared = ring.queue();
    if sq_q.observe_producer(shared.load_producer()).is_err() {
        return EINVAL.to_errno();
    }
    let limits = SendLimits {
        max_sge: shape.sq.max_sge,
        max_inline: shape.sq.max_inline,
    };
    let sig_all = shape.sq_sig_type == SigType::AllWr;
    // enum ib_mtu: 1 = 256 .. 5 = 4096 bytes.
    let mtu = dev.active_mtu().bytes();
    let mut budget = UD_BUDGET;
    // One WQE, parsed in place for each slot (a WQE by value per call costs stack).
    let mut wqe = SendWqe::EMPTY;
    while let Some(slot) = sq_q.head() {
        if budget == 0 {
            // The rest from the QP's work, after others had their turn: one doorbell on a
            // ring of up to 2^20 requests must not hold the CPU and the QP lock meanwhile.
            if let Some(t) = ctx.st.timer.as_ref() {
                t.kick();
            }
            break;
        }
        budget -= 1;
        let mut bytes = [0u8; MAX_SEND_WQE_BYTES];
        shared.read_slot(slot, &mut bytes);
        let (c, failed) = match SendWqe::parse_into(&bytes, QpType::Ud, limits, &mut wqe) {
            Ok(()) => {
                // The rxe provider passes an AH number; providers from before AH numbers
                // embed the AV instead (ah_num 0), checked against the GID table.
                let av = wqe.ud.and_then(|u| match u.av {
                    Some(e) if u.ah_num == 0 => ah::embedded(dev, &e),
                    _ => ah::lookup(dev, ctx.pd, u.ah_num),
                });
                let res = match av {
                    Some(av) => ud::send_one(dev, ctx.pd, qpn, attrs, &wqe, &av, mtu, nd),
                    None => Err(WcStatus::LocQpOpErr),
                };
                let status = res.err().unwrap_or(WcStatus::Success);
                let signaled = sig_all || wqe.flags.contains(SendFlags::SIGNALED);
                let failed = !matches!(status, WcStatus::Success);
                (
                    (signaled || failed).then(|| Completion::for_send_wqe(&wqe, qpn, status)),
                    failed,
                )
            }
            Err(e) => {
                let wr_id = bytes
                    .get(..8)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u64::from_le_bytes);
                (Some(Completion::zeroed(wr_id, qpn, e.wc_status())), true)
            }
        };
        // Consumed whatever happens next: the packet may be on the wire already, and a CQ
        // that cannot take the completion has raised its error event.
        if let Some(cons) = sq_q.advance_consumer() {
            shared.publish_consumer(cons);
        }
        if let Some(c) = c {
            // SAFETY: per this function's contract.
            if unsafe { cqs.send(&c) }.is_err() {
                break;
            }
        }
        if failed {
            attrs.state = QpState::Err;
            // SAFETY: per this function's contract.
            unsafe {
                flush(sq.as_ref(), sq_q, layout::SEND_WQE_WR_ID_OFF, qpn, |c| {
                    cqs.send(c)
                });
                flush(rq.as_ref(), rq_q, layout::RECV_WQE_WR_ID_OFF, qpn, |c| {
                    cqs.recv(c, false)
                });
            }
            break;
        }
    }
    0
}

/// A counted reference on a QP, taken by the receive path under the QP table's lock.
pub(super) struct QpRef {
    pub(super) ibqp: *mut bindings::ib_qp,
    pub(super) st: *const QpObject,
}

impl QpRef {
    /// The QP with number `qpn`, if it exists and is complete.
    pub(super) fn get(dev: &RoceDevice, qpn: u32) -> Option<QpRef> {
        dev.qps()
            .with_entry(qpn, |p| {
                let ibqp = p.cast::<bindings::ib_qp>();
                // SAFETY: published entries are complete QPs of ours; the table lock keeps
                // destroy_qp from erasing it (and then waiting for us) until we counted.
                let st = unsafe { (*ibqp.cast::<RxeSrQp>()).state };
                // SAFETY: as above: non-null and live.
                unsafe { st.as_ref() }.map(|s| {
                    s.users.get();
                    QpRef { ibqp, st }
                })
            })
            .flatten()
    }

    pub(super) fn state(&self) -> &QpObject {
        // SAFETY: destroy_qp frees the state only after our count is dropped.
        unsafe { &*self.st }
    }
}

impl Drop for QpRef {
    fn drop(&mut self) {
        // After this the state may be freed at once: no access follows.
        self.state().users.put();
    }
}

/// Delivers a UD SEND to its QP: the QP must be ready to receive, the Q_Key and P_Key must
/// match, and a receive WQE must be posted (otherwise the message is dropped, as UD allows);
/// the GRH area and the payload are scattered into the WQE's buffers and a completion is
/// posted to the receive CQ. False when dropped.
pub(crate) fn ud_deliver(dev: &RoceDevice, p: &PacketRepr<'_>, ip_header: &[u8]) -> bool {
    ud_deliver_to(dev, p.bth.dest_qpn, p, ip_header)
}

/// Delivers a UD SEND to the multicast QPN to every QP attached to its group (the
/// packet's destination GID), each taking its own copy. False when no QP took it.
pub(crate) fn ud_deliver_mcast(
    dev: &RoceDevice,
    p: &PacketRepr<'_>,
    ip_header: &[u8],
    mgid: &[u8; 16],
) -> bool {
    let mut qpns = [0u32; crate::objects::mcast::MAX_MCAST_QP_ATTACH as usize];
    // A snapshot: delivery takes QP locks, which must not nest inside the groups' lock.
    let n = dev.mcast().lock().members(mgid, &mut qpns);
    let mut any = false;
    for &qpn in qpns.iter().take(n) {
        any |= ud_deliver_to(dev, qpn, p, ip_header);
    }
    any
}

/// Delivers a UD SEND to QP `qpn` (see [`ud_deliver`]).
pub(super) fn ud_deliver_to(
    dev: &RoceDevice,
    qpn: u32,
    p: &PacketRepr<'_>,
    ip_header: &[u8],
) -> bool {
    let Some(deth) = p.ext.deth else {
        return false;
    };
    let Some(qp) = QpRef::get(dev, qpn) else {
        return false;
    };
    let st = qp.state();
    let datagram = matches!(st.shape.qp_type, QpType::Ud | QpType::Gsi);
    if !datagram || p.bth.pkey & 0x7fff != 0x7fff {
        return false;
    }
    // SAFETY: the QP is live (counted) with its PD and CQs.
    let (pd, qpn, cqs) = unsafe { ((*qp.ibqp).pd, (*qp.ibqp).qp_num, QpCqs::of(qp.ibqp)) };
    let pd = PdId::of(pd);
    // SAFETY: the counted QP outlives this; dropped after the lock.
    let _events = unsafe { CqEvents::new(cqs) };
    let mut g = st.inner.lock();
    let ready = g.attrs.state == QpState::Rtr || g.attrs.state == QpState::Rts;
    if !ready || deth.qkey != g.attrs.qkey {
        return false;
    }
    // SAFETY: the counted QP keeps its SRQ (if any) alive.
    let srq = unsafe { (*qp.ibqp).srq };
    let QpInner { rq, rq_q, .. } = &mut *g;
    let taken = if !srq.is_null() {
        // SAFETY: as above; an SRQ of ours.
        unsafe { crate::objects::srq::RoceSrq::from_raw(srq) }.take()
    } else if let Some(k) = st.kq.lock().as_mut() {
        k.pop_recv().map(Ok)
    } else {
        take_from_ring(rq.as_ref(), rq_q, st.shape.rq.max_sge)
    };
    // No receive WQE: UD drops the message.
    let Some(taken) = taken else {
        return false;
    };
    let grh = ud::grh_area(ip_header);
    let total = grh.len() + p.payload.len();
    let c = match taken {
        Err((wr_id, status)) => Completion::zeroed(wr_id, qpn, status),
        Ok(wqe) => {
            let status = match ud::scatter_all(dev, pd, &wqe, &[&grh, p.payload]) {
                Ok(()) => WcStatus::Success,
                Err(s) => s,
            };
            let info = RecvInfo {
                byte_len: u32::try_from(total).unwrap_or(u32::MAX),
                rdma_with_imm: false,
                imm: p.ext.imm_dt.map(|i| i.data.to_be_bytes()),
                invalidated_rkey: None,
                src_qp: Some(deth.src_qpn),
                port_num: 1,
                network: Some(if ip_header.len() == 40 {
                    NetworkType::Ipv6
                } else {
                    NetworkType::Ipv4
                }),
            };
            Completion::recv(wqe.wr_id, qpn, status, info)
        }
    };
    // SAFETY: the counted QP keeps its receive CQ alive. (A full CQ raised its error event.)
    if unsafe { cqs.recv(&c, p.bth.se) }.is_err() {
        return false;
    }
    dev.counters().inc(Counter::RdmaRecvs);
    true
}
