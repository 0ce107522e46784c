// SPDX-License-Identifier: GPL-2.0
//! The FEC shim's other direction on an RC QP: the peer's coded responses (READ responses,
//! atomic ACKs) decoded by the requester's receiving half, responses held while the one
//! the requester waits for may still be rebuilt and handed to it as that one moves, and
//! the requester's asks for other parameters taken by the responder.

use crate::kx::ib_qp::QpRef;
use crate::kx::ib_verbs::QpState;
use crate::kx::netdevice::NetDev;
use crate::kx::skbuff::SkBuff;
use crate::objects::counters::Counter;
use crate::objects::device::{RoceDevice, RxeSr};
use crate::proto::fec::resp_rx::RespPass;
use crate::proto::fec::RepairHeader;
use crate::proto::psn::Psn;
use crate::proto::wire::ip::RoceDatagram;
use crate::proto::wire::PacketRepr;
use crate::transport::qp::{CqEvents, QpCtx, QpInner, QpObject, RoceQp};
use crate::transport::rc_conn::{receiving, RcConn};
use crate::transport::rc_drive::{drive, Step};
use crate::transport::rc_fec::{self, RepairPath};

/// The connection of a QP locked as `g`, when its state passes `ok` and the datagram `d`
/// comes from its peer to its own GID (rdma_rxe's check_addr; a mismatch is counted).
pub(crate) fn peer_conn<'g>(
    dev: &RoceDevice,
    g: &'g mut QpInner,
    d: &RoceDatagram<'_>,
    ok: fn(QpState) -> bool,
) -> Option<&'g mut RcConn> {
    let state = g.attrs.state;
    let conn = g.rc.as_deref_mut().filter(|_| ok(state))?;
    if conn.av.dgid != d.src_gid() || conn.av.sgid != d.dest_gid() {
        dev.counters().inc(Counter::RcvdAddrMismatch);
        return None;
    }
    Some(conn)
}

/// Runs `f` on the connection of the QP `qpn`, under its lock, when its state passes
/// `ok` and the datagram `d` comes from its peer ([`peer_conn`]). Returns the QP and what
/// `f` gave; `None`: no such QP, or not in such a state, or not from its peer.
pub(crate) fn on_peer_conn<R>(
    dev: &RoceDevice,
    d: &RoceDatagram<'_>,
    qpn: u32,
    ok: fn(QpState) -> bool,
    f: impl FnOnce(&RoceQp, &mut RcConn) -> R,
) -> Option<(QpRef<RxeSr>, R)> {
    let qp = dev.qps().get(qpn)?;
    let r = {
        let st: &QpObject = &qp;
        let mut g = st.inner.lock();
        f(&qp, peer_conn(dev, &mut g, d, ok)?)
    };
    Some((qp, r))
}

/// True in RTS, where the requester takes responses.
pub(crate) fn rts(state: QpState) -> bool {
    state == QpState::Rts
}

/// A response to a QP whose requester decodes its peer's responses: coded into its unit;
/// true when it must be handed to the shim ([`pass`]) rather than go on now (responses
/// are held, or it comes after the one the requester waits for).
pub(crate) fn code(g: &mut QpInner, d: &RoceDatagram<'_>, p: &PacketRepr<'_>) -> bool {
    let Some(conn) = g.rc.as_deref_mut().filter(|_| rts(g.attrs.state)) else {
        return false;
    };
    let (Some(req), Some(f)) = (conn.req.as_ref(), conn.fec_resp_rx.as_deref_mut()) else {
        return false;
    };
    let (psn, owed) = (p.bth.psn, req.owed_response());
    f.rx.code(psn, rc_fec::ip_id(d.ip_header), d.ib, req.una());
    f.rx.held() != 0 || owed.is_some_and(|o| psn.after(o))
}

/// Hands the response `skb` of PSN `psn` to the shim of `qp`, which holds it or lets it
/// go on, with the held responses it puts in order. False when the QP no longer takes
/// responses (the response is dropped).
pub(crate) fn pass(qp: &QpRef<RxeSr>, psn: Psn, skb: SkBuff) -> bool {
    let st: &QpObject = qp;
    let ctx = QpCtx::new(qp);
    // Dropped after the lock.
    let _events = CqEvents::new(qp);
    let mut g = st.inner.lock();
    let in_rts = rts(g.attrs.state);
    let Some(conn) = g.rc.as_deref_mut().filter(|_| in_rts) else {
        return false;
    };
    let owed = conn.req.as_ref().and_then(|r| r.owed_response());
    let Some(f) = conn.fec_resp_rx.as_deref_mut() else {
        return false;
    };
    match f.rx.pass(psn, skb, owed) {
        RespPass::Held => {}
        RespPass::Now(s) => {
            deliver(&ctx, &mut g, s);
            release(&ctx, &mut g);
        }
        RespPass::AfterHeld(s) => {
            release(&ctx, &mut g);
            deliver(&ctx, &mut g, s);
            release(&ctx, &mut g);
        }
    }
    true
}

/// The held responses that may go on now, each handed to the requester as the response
/// it waits for moves.
pub(crate) fn release(ctx: &QpCtx<'_>, g: &mut QpInner) {
    loop {
        let Some(conn) = g.rc.as_deref_mut().filter(|_| rts(g.attrs.state)) else {
            return;
        };
        let owed = conn.req.as_ref().and_then(|r| r.owed_response());
        let Some(skb) = conn
            .fec_resp_rx
            .as_deref_mut()
            .and_then(|f| f.rx.release(owed))
        else {
            return;
        };
        deliver(ctx, g, skb);
    }
}

/// One response the shim let go, to the requester.
fn deliver(ctx: &QpCtx<'_>, g: &mut QpInner, mut skb: SkBuff) {
    let Some((_, p)) = skb.ip_bytes().and_then(crate::transport::rc_drive::parse) else {
        ctx.dev.counters().inc(Counter::RcvdDropped);
        return;
    };
    let _ = ctx.with_netdev(|nd| drive(ctx, g, nd, Step::Packet(&p)));
}

/// A repair of responses (its datagram `d`, its ICRC checked, its header `rh` and
/// payload) for its QP, from the QP's peer: the response it rebuilt, as a received
/// datagram, and the QP. `None`: dropped.
pub(crate) fn repair_deliver(
    dev: &RoceDevice,
    d: &RoceDatagram<'_>,
    rh: &RepairHeader,
    payload: &[u8],
) -> Option<(QpRef<RxeSr>, Option<SkBuff>)> {
    repair_to(dev, d, rh.dest_qpn, rts, |nd, conn| {
        let req = conn.req.as_ref()?;
        let (owed, una) = (req.owed_response(), req.una());
        let (av, sport, dest_qpn) = (&conn.av, conn.sport, conn.cfg.dest_qpn);
        let f = conn.fec_resp_rx.as_deref_mut()?;
        let rebuilt = f.repair((dev, nd), d, (rh, payload), owed);
        let path = RepairPath { dev, nd, av, sport };
        f.send_ask(&path, dest_qpn, owed.unwrap_or(una));
        Some(rebuilt)
    })
}

/// A repair (its datagram `d`) for the QP `qpn` in a state `ok` passes, from the QP's
/// peer: `take` runs on its connection under the QP's lock and gives what it rebuilt
/// (`None`: the QP takes no such repair). Returns the QP and what was rebuilt; `None`:
/// dropped.
pub(crate) fn repair_to(
    dev: &RoceDevice,
    d: &RoceDatagram<'_>,
    qpn: u32,
    ok: fn(QpState) -> bool,
    take: impl FnOnce(&NetDev, &mut RcConn) -> Option<Option<SkBuff>>,
) -> Option<(QpRef<RxeSr>, Option<SkBuff>)> {
    let (qp, taken) = on_peer_conn(dev, d, qpn, ok, |qp, conn| {
        QpCtx::new(qp).with_netdev(|nd| take(nd, conn))
    })?;
    match taken {
        Some(None) => None,
        Some(Some(rebuilt)) => Some((qp, rebuilt)),
        None => Some((qp, None)),
    }
}

/// The requester's ask for other parameters for the responses (its datagram `d`, its
/// ICRC checked, its header `rh`) from the peer of the QP it names: the responder takes
/// it or not, and the encoder of its responses follows. False when it was dropped.
pub(crate) fn take_ask(dev: &RoceDevice, d: &RoceDatagram<'_>, rh: &RepairHeader) -> bool {
    let taken = on_peer_conn(dev, d, rh.dest_qpn, receiving, |_, conn| {
        let Some(enc) = conn.fec_resp_tx.as_deref_mut() else {
            return false;
        };
        if conn.resp.on_fec_resp_ask(rh.epoch, rh.first_psn) {
            enc.take_ask(rh.epoch, rh.params);
            dev.counters().inc(Counter::FecAsksTaken);
        }
        true
    });
    taken.is_some_and(|(_, t)| t)
}
