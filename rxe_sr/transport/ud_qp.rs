// SPDX-License-Identifier: GPL-2.0
//! UD and GSI QPs: the requester that sends a user ring's or kernel queue's datagrams, and
//! the delivery of received UD SENDs (unicast and multicast) into receive WQEs. Each
//! message's packet, and its bytes into a receive WQE, are [`ud_packet`]'s.

use kernel::prelude::*;

use crate::kx::ib_verbs::{QpState, QpType, SigType};
use crate::kx::netdevice::NetDev;
use crate::objects::ah;
use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::objects::qp::QpAttrs;
use crate::objects::recv_queue::take_from_ring;
use crate::proto::wire::PacketRepr;
use crate::transport::qp::{CqEvents, QpCqs, QpCtx, QpInner};
use crate::transport::qp_error::{enter_error, flush, flush_kernel};
use crate::transport::ud_packet;
use crate::uabi::cqe::{Completion, RecvInfo, WcStatus};
use crate::uabi::layout;
use crate::uabi::limits::MAX_SEND_WQE_BYTES;
use crate::uabi::send_wqe::QpType as WqeQpType;
use crate::uabi::send_wqe::{NetworkType, SendFlags, SendLimits, SendWqe};

/// Datagram work requests sent per call at most (post_send, or one run of the QP's work).
pub(crate) const UD_BUDGET: u32 = 64;

/// Sends the queued UD work requests of a user QP's ring ([`UD_BUDGET`] per call; the QP's
/// work sends the rest), completing each (signalled ones on success, every one on error). A
/// request that fails moves the QP to the Error state, which flushes both rings. `g` is the
/// QP's lock.
pub(crate) fn run_ud_requester(g: &mut QpInner, ctx: &QpCtx<'_>, nd: &NetDev) -> Result {
    if ud_may_send(g, ctx)? && send_ud_ring(g, ctx, nd)? {
        fail_ud(g, ctx);
    }
    Ok(())
}

/// Whether the QP sends now: in RTS yes; in Error its posted requests complete as flushed
/// and no; in any other state posting is refused (both as rdma_rxe).
fn ud_may_send(g: &mut QpInner, ctx: &QpCtx<'_>) -> Result<bool> {
    match g.attrs.state {
        QpState::Rts => Ok(true),
        QpState::Err => {
            flush(
                g.sq.as_ref(),
                &mut g.sq_q,
                layout::SEND_WQE_WR_ID_OFF,
                ctx.qpn,
                |c| ctx.cqs.send(c),
            );
            Ok(false)
        }
        _ => Err(EINVAL),
    }
}

/// What each request of one run is sent with.
struct UdSend {
    limits: SendLimits,
    sig_all: bool,
    mtu: u32,
}

/// Sends up to [`UD_BUDGET`] requests from the ring, completing each; true when one failed
/// (the QP must enter the Error state).
fn send_ud_ring(g: &mut QpInner, ctx: &QpCtx<'_>, nd: &NetDev) -> Result<bool> {
    let QpInner {
        sq, sq_q, attrs, ..
    } = g;
    let Some(ring) = sq.as_ref() else {
        return Err(EINVAL);
    };
    let shared = ring.queue();
    if sq_q.observe_producer(shared.load_producer()).is_err() {
        return Err(EINVAL);
    }
    let shape = &ctx.st.shape;
    let run = UdSend {
        limits: SendLimits {
            max_sge: shape.sq.max_sge,
            max_inline: shape.sq.max_inline,
        },
        sig_all: shape.sq_sig_type == SigType::AllWr,
        // enum ib_mtu: 1 = 256 .. 5 = 4096 bytes.
        mtu: ctx.dev.active_mtu().bytes(),
    };
    let mut budget = UD_BUDGET;
    // One WQE, parsed in place for each slot (a WQE by value per call costs stack).
    let mut wqe = SendWqe::EMPTY;
    while let Some(slot) = sq_q.head() {
        if budget == 0 {
            // The rest from the QP's work, after others had their turn: one doorbell on a
            // ring of up to 2^20 requests must not hold the CPU and the QP lock meanwhile.
            ctx.dev.counters().inc(Counter::UdSendDeferred);
            ctx.qp.timer().kick();
            break;
        }
        budget -= 1;
        let mut bytes = [0u8; MAX_SEND_WQE_BYTES];
        shared.read_slot(slot, &mut bytes);
        let (c, failed) = send_ud_slot(ctx, nd, attrs, &bytes, &run, &mut wqe);
        // Consumed whatever happens next: the packet may be on the wire already, and a CQ
        // that cannot take the completion has raised its error event.
        if let Some(cons) = sq_q.advance_consumer() {
            shared.publish_consumer(cons);
        }
        if let Some(c) = c {
            if ctx.cqs.send(&c).is_err() {
                break;
            }
        }
        if failed {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Parses and sends the request in one ring slot; returns its completion, if it gets one
/// (signalled, or failed), and whether it failed.
fn send_ud_slot(
    ctx: &QpCtx<'_>,
    nd: &NetDev,
    attrs: &mut QpAttrs,
    bytes: &[u8; MAX_SEND_WQE_BYTES],
    run: &UdSend,
    wqe: &mut SendWqe,
) -> (Option<Completion>, bool) {
    let (dev, qpn) = (ctx.dev, ctx.qpn);
    if let Err(e) = SendWqe::parse_into(bytes, WqeQpType::Ud, run.limits, wqe) {
        let wr_id = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        return (Some(Completion::zeroed(wr_id, qpn, e.wc_status())), true);
    }
    // The rxe provider passes an AH number; providers from before AH numbers embed the AV
    // instead (ah_num 0), checked against the GID table.
    let av = wqe.ud.and_then(|u| match u.av {
        Some(e) if u.ah_num == 0 => ah::embedded(dev, &e),
        _ => ah::lookup(dev.ahs(), ctx.pd, u.ah_num),
    });
    let res = match av {
        Some(av) => ud_packet::send_one(dev, ctx.pd, qpn, attrs, wqe, &av, run.mtu, nd),
        None => Err(WcStatus::LocQpOpErr),
    };
    let status = res.err().unwrap_or(WcStatus::Success);
    let signaled = run.sig_all || wqe.flags.contains(SendFlags::SIGNALED);
    let failed = !matches!(status, WcStatus::Success);
    (
        (signaled || failed).then(|| Completion::for_send_wqe(wqe, qpn, status)),
        failed,
    )
}

/// A request failed: the QP enters the Error state and both rings are flushed.
fn fail_ud(g: &mut QpInner, ctx: &QpCtx<'_>) {
    let (qpn, cqs) = (ctx.qpn, ctx.cqs);
    g.attrs.state = QpState::Err;
    flush(
        g.sq.as_ref(),
        &mut g.sq_q,
        layout::SEND_WQE_WR_ID_OFF,
        qpn,
        |c| cqs.send(c),
    );
    flush(
        g.rq.as_ref(),
        &mut g.rq_q,
        layout::RECV_WQE_WR_ID_OFF,
        qpn,
        |c| cqs.recv(c, false),
    );
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
pub(crate) fn ud_deliver_to(
    dev: &RoceDevice,
    qpn: u32,
    p: &PacketRepr<'_>,
    ip_header: &[u8],
) -> bool {
    let Some(deth) = p.ext.deth else {
        return false;
    };
    let Some(qp) = dev.qps().get(qpn) else {
        return false;
    };
    let st = &**qp;
    let datagram = matches!(st.shape.qp_type, QpType::Ud | QpType::Gsi);
    if !datagram || p.bth.pkey & 0x7fff != 0x7fff {
        return false;
    }
    let (pd, qpn, cqs) = (qp.pd(), qp.qpn(), QpCqs::of(&qp));
    // Dropped after the lock.
    let _events = CqEvents::new(&qp);
    let mut g = st.inner.lock();
    let ready = g.attrs.state == QpState::Rtr || g.attrs.state == QpState::Rts;
    if !ready || deth.qkey != g.attrs.qkey {
        return false;
    }
    let QpInner { rq, rq_q, .. } = &mut *g;
    let taken = if let Some(srq) = qp.srq() {
        srq.take()
    } else if let Some(k) = st.kq.lock().as_mut() {
        k.pop_recv().map(Ok)
    } else {
        take_from_ring(rq.as_ref(), rq_q, st.shape.rq.max_sge)
    };
    // No receive WQE: UD drops the message.
    let Some(taken) = taken else {
        return false;
    };
    let grh = ud_packet::grh_area(ip_header);
    let total = grh.len() + p.payload.len();
    let c = match taken {
        Err((wr_id, status)) => Completion::zeroed(wr_id, qpn, status),
        Ok(wqe) => {
            let status = match ud_packet::scatter_all(dev, pd, &wqe, &[&grh, p.payload]) {
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
    // (A full CQ raised its error event.)
    if cqs.recv(&c, p.bth.se).is_err() {
        return false;
    }
    dev.counters().inc(Counter::RdmaRecvs);
    true
}

/// A kernel datagram QP's work item: sends what waits in its kernel send queue, completing
/// each request (signalled ones on success, every one on error); a request that fails moves
/// the QP to the Error state. In Error, the queues are flushed.
pub(crate) fn run_kernel_sends(ctx: &QpCtx<'_>) {
    let st = ctx.st;
    let mut g = st.inner.lock();
    if g.attrs.state == QpState::Err {
        flush_kernel(ctx.qp);
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
            ctx.qp.timer().kick();
            break;
        }
        budget -= 1;
        let next = st.kq.lock().as_mut().and_then(|k| k.sq.pop().flatten());
        let Some(ks) = next else {
            break;
        };
        let res = match ks.av.as_ref() {
            Some(av) => {
                ud_packet::send_one(ctx.dev, ctx.pd, ctx.qpn, &mut g.attrs, &ks.wqe, av, mtu, nd)
            }
            None => Err(WcStatus::LocQpOpErr),
        };
        let status = res.err().unwrap_or(WcStatus::Success);
        let failed = status != WcStatus::Success;
        if sig_all || ks.wqe.flags.signaled() || failed {
            // A full CQ has raised its error event.
            let _ = ctx
                .cqs
                .send(&Completion::for_send_wqe(&ks.wqe, ctx.qpn, status));
        }
        if failed {
            enter_error(&mut g, ctx.qp);
            break;
        }
    });
}
