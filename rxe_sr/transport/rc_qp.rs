// SPDX-License-Identifier: GPL-2.0
//! RC and UC QPs around the drive loop ([`rc_drive`](super::rc_drive)): the doorbell, the
//! delivery of received packets, and the requests held back while the QP's READ responses
//! go out, served by the QP's work ([`qp_work`](super::qp_work)).

use kernel::prelude::*;

use crate::kx::ib_qp::QpRef;
use crate::kx::ib_verbs::QpState;
use crate::kx::skbuff::{SkBuff, SkbQueue};
use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::objects::device::RxeSr;
use crate::proto::fec::{RepairHeader, RhKind};
use crate::proto::psn::Psn;
use crate::proto::rc::Service;
use crate::proto::wire::ip::RoceDatagram;
use crate::proto::wire::PacketRepr;
use crate::transport::qp::{CqEvents, QpCtx, QpInner, QpObject, RoceQp};
use crate::transport::qp_error::flush;
use crate::transport::rc_conn::{self, receiving};
use crate::transport::rc_drive::{drive, is_request, parse, Step};
use crate::transport::rc_fec::{self, RepairPath};
use crate::transport::rc_fec_resp::{self, on_peer_conn, peer_conn, rts};
use crate::uabi::layout;

/// `post_send` on an RC or UC QP: the doorbell. In RTS, unless the requester runs again
/// anyway, it sends in the caller's system call (the QP's work only when the netdev is
/// gone); in Error it flushes the send ring at once.
pub(crate) fn doorbell(qp: &RoceQp) -> Result {
    let ctx = QpCtx::new(qp);
    // Dropped after the lock.
    let _events = CqEvents::new(qp);
    let mut g = qp.inner.lock();
    match g.attrs.state {
        QpState::Rts => {}
        QpState::Err => {
            let QpInner { sq, sq_q, .. } = &mut *g;
            flush(
                sq.as_ref(),
                sq_q,
                layout::SEND_WQE_WR_ID_OFF,
                ctx.qpn,
                |c| ctx.cqs.send(c),
            );
            return Ok(());
        }
        _ => return Err(EINVAL),
    }
    // While acknowledgments are due the requester runs again as each arrives (or its timer
    // fires), and takes in every WQE posted meanwhile: the doorbell does nothing then.
    // Otherwise the requester is idle, and the doorbell fetches and sends here, in the
    // caller's system call: the first request after a quiet spell leaves without waiting
    // for a work item to be scheduled (ib_write_lat's path). What it sends makes the
    // requester clocked, so the posts behind it are taken in as acknowledgments arrive.
    let clocked =
        g.rc.as_ref()
            .and_then(|c| c.req.as_ref())
            .is_some_and(|r| r.runs_again());
    if !clocked
        && ctx
            .with_netdev(|nd| drive(&ctx, &mut g, nd, Step::Timer))
            .is_none()
    {
        // No netdev: the QP's work tries again.
        drop(g);
        qp.timer().kick();
    }
    Ok(())
}

/// What became of an RC or UC packet.
pub(crate) enum Delivery {
    /// The QP took it.
    Done,
    /// Dropped (counted by the caller).
    Dropped,
    /// A request for a QP still sending READ responses: hand the packet to
    /// [`Later::hold`], which queues it for the QP's work.
    Later(Later),
    /// A request after a gap the QP's FEC shim may fill: hand the packet to
    /// [`FecLater::pass`].
    Fec(FecLater),
}

/// Where [`deliver_to`] sends a packet it did not drop.
enum Route {
    /// Taken.
    Done,
    /// To be held back ([`Delivery::Later`]).
    Later,
    /// To the FEC shim: its PSN and the PSNs it stands for.
    Fec(Psn, u32),
    /// A response to the requester's FEC shim: its PSN.
    FecResp(Psn),
}

/// A packet the QP's FEC shim takes in (it may hold it for a rebuild).
pub(crate) struct FecLater {
    qp: QpRef<RxeSr>,
    psn: Psn,
    /// The PSNs a request stands for; `None` for a response.
    span: Option<u32>,
}

impl FecLater {
    /// Hands the packet to the QP's FEC shim, which holds it, or lets it go on with the
    /// packets it puts in order: those join the QP's queue of held requests, which its
    /// work runs. False when the QP no longer receives (the packet is dropped).
    pub(crate) fn pass(self, skb: SkBuff) -> bool {
        let Some(span) = self.span else {
            return rc_fec_resp::pass(&self.qp, self.psn, skb);
        };
        let st: &QpObject = &self.qp;
        let Some(held) = st.held.as_ref() else {
            return false;
        };
        let mut g = st.inner.lock();
        let state = g.attrs.state;
        let Some(conn) = g.rc.as_deref_mut().filter(|_| receiving(state)) else {
            return false;
        };
        let epsn = conn.resp.epsn();
        let Some(f) = conn.fec_rx.as_deref_mut() else {
            return false;
        };
        let dev = self.qp.device();
        f.rx.pass(self.psn, span, skb, epsn, &mut |s| hold(held, dev, s));
        drop(g);
        self.qp.timer().kick();
        true
    }
}

/// Queues a packet the FEC shim let go on the QP's queue of held requests; a full queue
/// drops it, counted.
fn hold(held: &SkbQueue, dev: &RoceDevice, skb: SkBuff) {
    if held.push(skb).is_err() {
        dev.counters().inc(Counter::RcvdDropped);
    }
}

/// A QP that holds back its requests while its READ responses go out.
pub(crate) struct Later(QpRef<RxeSr>);

impl Later {
    /// Queues the packet on the QP (its work runs it once the responses are out). False
    /// when the queue is full: the packet is dropped, and the requester's retry resends it.
    pub(crate) fn hold(self, skb: SkBuff) -> bool {
        let Some(held) = self.0.held.as_ref() else {
            return false;
        };
        let ok = held.push(skb).is_ok();
        self.0.timer().kick();
        ok
    }
}

/// Delivers an RC or UC packet to its QP: requests to the responder (in RTR and RTS),
/// responses to the completer (in RTS). The packet must come from the QP's peer and be
/// addressed to the QP's own GID (rdma_rxe's check_addr): QPNs are easy to guess, IP
/// addresses on the path are not forged as easily.
pub(crate) fn connected_deliver(
    dev: &RoceDevice,
    d: &RoceDatagram<'_>,
    p: &PacketRepr<'_>,
) -> Delivery {
    let Some(qp) = dev.qps().get(p.bth.dest_qpn) else {
        return Delivery::Dropped;
    };
    match deliver_to(dev, &qp, d, p) {
        Some(Route::Done) => Delivery::Done,
        Some(Route::Later) => Delivery::Later(Later(qp)),
        Some(Route::Fec(psn, span)) => Delivery::Fec(FecLater {
            qp,
            psn,
            span: Some(span),
        }),
        Some(Route::FecResp(psn)) => Delivery::Fec(FecLater {
            qp,
            psn,
            span: None,
        }),
        None => Delivery::Dropped,
    }
}

/// [`connected_deliver`] on QP `qp`: taken, a request to hold back (the QP is still
/// sending READ responses, or requests held before it wait), one for the FEC shim, or
/// dropped (`None`).
fn deliver_to(
    dev: &RoceDevice,
    qp: &RoceQp,
    d: &RoceDatagram<'_>,
    p: &PacketRepr<'_>,
) -> Option<Route> {
    let st: &QpObject = qp;
    let want = match rc_conn::service(st.shape.qp_type)? {
        Service::Rc => crate::proto::wire::Transport::Rc,
        Service::Uc => crate::proto::wire::Transport::Uc,
    };
    if p.bth.opcode.transport() != want || p.bth.pkey & 0x7fff != 0x7fff {
        return None;
    }
    let ctx = QpCtx::new(qp);
    // Dropped after the lock.
    let _events = CqEvents::new(qp);
    let mut g = st.inner.lock();
    peer_conn(dev, &mut g, d, receiving)?;
    if is_request(p) {
        fec_take(&ctx, &mut g, p);
        if let Some(fec) = fec_code(&mut g, d, p) {
            return Some(fec);
        }
    } else if rc_fec_resp::code(&mut g, d, p) {
        return Some(Route::FecResp(p.bth.psn));
    }
    let conn = g.rc.as_ref()?;
    let busy = conn.resp.read_pending() || st.held.as_ref().is_some_and(|h| h.len() > 0);
    // A repair of lost READ responses (SR format) is not held behind the new READs.
    if busy && is_request(p) && !conn.resp.repair_goes_ahead(p) {
        return Some(Route::Later);
    }
    ctx.with_netdev(|nd| drive(&ctx, &mut g, nd, Step::Packet(p)))
        .map(|()| Route::Done)
}

/// A request to a QP whose device runs FEC: on UC, the take its offer is due, if any, goes
/// to the peer ([`FecRx::take_for`](crate::proto::fec::rx::FecRx::take_for)).
fn fec_take(ctx: &QpCtx<'_>, g: &mut QpInner, p: &PacketRepr<'_>) {
    let Some(conn) = g.rc.as_deref_mut() else {
        return;
    };
    let (uc, dest_qpn) = (conn.cfg.service == Service::Uc, conn.cfg.dest_qpn);
    let Some(f) = conn.fec_rx.as_deref_mut() else {
        return;
    };
    let Some(rh) = f.rx.take_for(uc, p.bth.resv7, p.bth.psn, dest_qpn) else {
        return;
    };
    let (dev, av, sport) = (ctx.dev, &conn.av, conn.sport);
    let _ = ctx.with_netdev(|nd| RepairPath { dev, nd, av, sport }.send(&rh, &[]));
}

/// The FEC shim's part of a request's delivery (with FEC on the QP): the request is coded
/// into its unit; `Some` when it must be handed to the shim rather than go on now.
fn fec_code(g: &mut QpInner, d: &RoceDatagram<'_>, p: &PacketRepr<'_>) -> Option<Route> {
    let conn = g.rc.as_deref_mut()?;
    let (epsn, pmtu) = (conn.resp.epsn(), conn.cfg.pmtu);
    let f = conn.fec_rx.as_deref_mut()?;
    let psn = p.bth.psn;
    f.rx.code(psn, rc_fec::ip_id(d.ip_header), d.ib, epsn);
    let span = rc_fec::span(p, pmtu);
    if f.rx.pass_in_order(psn, span, epsn) {
        return None;
    }
    Some(Route::Fec(psn, span))
}

/// A repair packet (its datagram `d`, its ICRC checked, its header `rh` and payload) for
/// its QP, from the QP's peer: the packet it rebuilt, as a received datagram, and the QP
/// ([`fec_settle`] once that went through the receive path). `None`: dropped.
pub(crate) fn repair_deliver(
    dev: &RoceDevice,
    d: &RoceDatagram<'_>,
    rh: &RepairHeader,
    payload: &[u8],
) -> Option<(QpRef<RxeSr>, Option<SkBuff>)> {
    rc_fec_resp::repair_to(dev, d, rh.dest_qpn, receiving, |nd, conn| {
        let epsn = conn.resp.epsn();
        let (av, sport, dest_qpn) = (&conn.av, conn.sport, conn.cfg.dest_qpn);
        let f = conn.fec_rx.as_deref_mut()?;
        let rebuilt = f.repair((dev, nd), d, (rh, payload), epsn);
        f.send_ask(&RepairPath { dev, nd, av, sport }, dest_qpn, epsn);
        Some(rebuilt)
    })
}

/// An ask or a take of the FEC shim (its datagram `d`, its ICRC checked, its header `rh`)
/// from the peer of the QP it names: the requester takes it or not, and its encoder
/// follows. False when it was dropped (no such QP sending, or not from its peer).
pub(crate) fn fec_negotiate(dev: &RoceDevice, d: &RoceDatagram<'_>, rh: &RepairHeader) -> bool {
    let taken = on_peer_conn(dev, d, rh.dest_qpn, rts, |_, conn| {
        let (Some(req), Some(enc)) = (conn.req.as_mut(), conn.fec_tx.as_deref_mut()) else {
            return false;
        };
        if rh.kind == RhKind::Take {
            req.on_fec_take(&conn.cfg, rh.first_psn);
        } else if req.on_fec_ask(&conn.cfg, rh.epoch, rh.first_psn) {
            enc.take_ask(rh.epoch, rh.params);
            dev.counters().inc(Counter::FecAsksTaken);
        }
        true
    });
    taken.is_some_and(|(_, t)| t)
}

/// After a repair, and the packet it rebuilt: the packets the QP's FEC shim held for a
/// gap nothing will fill go on, into the QP's queue of held requests (responses go to
/// the requester at once).
pub(crate) fn fec_settle(qp: &RoceQp) {
    let st: &QpObject = qp;
    let Some(held) = st.held.as_ref() else {
        return;
    };
    let dev = qp.device();
    let ctx = QpCtx::new(qp);
    // Dropped after the lock.
    let _events = CqEvents::new(qp);
    let mut g = st.inner.lock();
    if let Some(f) = g.rc.as_deref_mut().and_then(|c| c.fec_rx.as_deref_mut()) {
        f.rx.settle(&mut |s| hold(held, dev, s));
    }
    rc_fec_resp::release(&ctx, &mut g);
    drop(g);
    qp.timer().kick();
}

/// Requests held back at most per run of the QP's work (then it queues itself again).
pub(crate) const HELD_PER_RUN: u32 = 16;

/// The responder's part of an RC QP's work: the next batches of READ responses, then, once
/// they are out, the requests held back meanwhile, in order. Called from its work
/// (process context, no lock held).
pub(crate) fn serve_held(ctx: &QpCtx<'_>) {
    let st = ctx.st;
    let Some(held) = st.held.as_ref() else {
        return;
    };
    for _ in 0..HELD_PER_RUN {
        let mut g = st.inner.lock();
        let pending = match g.rc.as_ref() {
            Some(c) if receiving(g.attrs.state) => c.resp.read_pending(),
            _ => {
                held.purge();
                return;
            }
        };
        if pending {
            let _ = ctx.with_netdev(|nd| drive(ctx, &mut g, nd, Step::Pump));
            continue;
        }
        drop(g);
        let Some(mut skb) = held.pop() else {
            return;
        };
        let Some((_, p)) = skb.ip_bytes().and_then(parse) else {
            ctx.dev.counters().inc(Counter::RcvdDropped);
            continue;
        };
        let mut g = st.inner.lock();
        if g.rc.is_none() || !receiving(g.attrs.state) {
            continue;
        }
        let _ = ctx.with_netdev(|nd| drive(ctx, &mut g, nd, Step::Packet(&p)));
    }
    // More to do: the work runs again after others had their turn.
    ctx.qp.timer().kick();
}
