// SPDX-License-Identifier: GPL-2.0
//! RC and UC QPs: the drive loop that runs the transport (`transport::rc` around
//! `proto::rc`) under the QP's lock, the doorbell, the delivery of received packets, the
//! READ responses' work and the QP timer.

use kernel::prelude::*;

use crate::kx::ib_pd::PdId;
use crate::kx::ib_qp::QpRef;
use crate::kx::ib_verbs::{QpState, QpType};
use crate::kx::netdevice::NetDev;
use crate::kx::skbuff::SkBuff;
use crate::kx::timer::QpTimer;
use crate::objects::counters::Counter;
use crate::objects::device::{DeviceState, RoceDevice};
use crate::objects::srq::RoceSrq;
use crate::proto::rc::requester::{PostError, ReqCounters};
use crate::proto::rc::responder::{RespCounters, READ_BUDGET};
use crate::proto::rc::sr::SrStats;
use crate::proto::rc::{Outcome, RcConfig, RcEnv, Service};
use crate::proto::wire::ip::RoceDatagram;
use crate::proto::wire::opcode::OpKind;
use crate::proto::wire::PacketRepr;
use crate::transport::datagram::run_kernel_sends;
use crate::transport::datagram::run_ud_requester;
use crate::transport::qp::{CqEvents, KernelQueueLock, QpCqs, QpInner, QpObject, RoceQp};
use crate::transport::qp_error::{enter_error, flush, flush_kernel};
use crate::transport::rc::{self as rc_transport, KRequester, KResponder, RcConn};
use crate::transport::rc_env::KEnv;
use crate::uabi::cqe::Completion;
use crate::uabi::layout;
use crate::uabi::limits::MAX_SEND_WQE_BYTES;
use crate::uabi::send_wqe::{SendLimits, SendOp, SendWqe};

/// The parts of a live QP the transport needs besides its lock.
pub(crate) struct QpCtx<'a> {
    pub(crate) qp: &'a RoceQp,
    pub(crate) dev: &'a RoceDevice,
    pub(crate) pd: PdId,
    pub(crate) qpn: u32,
    pub(crate) cqs: QpCqs<'a>,
    pub(crate) srq: Option<&'a RoceSrq>,
    pub(crate) st: &'a QpObject,
}

impl<'a> QpCtx<'a> {
    /// The context of `qp`.
    pub(crate) fn new(qp: &'a RoceQp) -> Self {
        QpCtx {
            qp,
            dev: qp.device(),
            pd: qp.pd(),
            qpn: qp.qpn(),
            cqs: QpCqs::of(qp),
            srq: qp.srq(),
            st: qp,
        }
    }

    /// Runs `f` with the device's netdev (referenced for the call), if it has one.
    pub(crate) fn with_netdev<R>(&self, f: impl FnOnce(&NetDev<'_>) -> R) -> Option<R> {
        self.dev.with_netdev(f)
    }
}

/// What to run on a connected QP once its environment is built.
pub(crate) enum Step<'p> {
    /// A packet from the peer.
    Packet(&'p PacketRepr<'p>),
    /// The timer fired: the requester's timers.
    Timer,
    /// The slow-path work runs: the responder's SR slow path (SRNIC's bitmap onloading).
    SlowPath,
    /// The next batch of READ responses.
    Pump,
}

/// Drives a connected QP's transport one step under its lock, then fetches and sends what
/// the step made room for, re-arms the timer, and moves the QP to Error if it failed.
/// `g` is the QP's lock.
pub(crate) fn drive(ctx: &QpCtx<'_>, g: &mut QpInner, nd: &NetDev<'_>, step: Step<'_>) {
    let shape = &ctx.st.shape;
    let QpInner {
        attrs,
        sq,
        rq,
        sq_q,
        rq_q,
        rc,
    } = g;
    let Some(conn) = rc.as_deref_mut() else {
        return;
    };
    let RcConn {
        cfg,
        av,
        sport,
        resp,
        req,
        inflight_held,
        ..
    } = conn;
    let mut env = {
        let env = KEnv::new(
            ctx.dev,
            nd,
            ctx.pd,
            ctx.qpn,
            attrs.qp_access_flags.bits(),
            av,
            *sport,
            (sq.as_ref(), sq_q),
            (rq.as_ref(), rq_q, shape.rq.max_sge),
            ctx.srq,
            ctx.cqs,
            &ctx.st.kq,
        );
        if cfg.service == Service::Rc {
            env.with_inflight(&ctx.qp.inflight, inflight_held)
        } else {
            env
        }
    };
    let rts = attrs.state == QpState::Rts;
    let before = (req.as_ref().map(|r| r.counters), resp.counters);
    let sr_stats = |req: &Option<KRequester>, resp: &KResponder| {
        resp.sr()
            .map(|rs| SrStats::of(req.as_ref().and_then(|r| r.sr()), Some(rs)))
    };
    let sr_before = sr_stats(req, resp);
    let mut outcome = match step {
        Step::Packet(p) if is_request(p) => {
            if let Some(r) = req.as_mut() {
                r.on_peer_request(p.bth.tver, p.bth.resv7);
            }
            resp.on_request(&mut env, cfg, p)
        }
        Step::Packet(p) => match req.as_mut() {
            Some(r) if rts => r.on_response(&mut env, cfg, p),
            _ => Outcome::Ok,
        },
        Step::Timer => match req.as_mut() {
            Some(r) if rts => r.on_timer(&mut env, cfg),
            _ => Outcome::Ok,
        },
        Step::SlowPath => resp.on_timer(&mut env, cfg),
        Step::Pump => resp.pump(&mut env, cfg, READ_BUDGET),
    };
    if let (Outcome::Ok, Some(r), true) = (outcome, req.as_mut(), rts) {
        let limits = SendLimits {
            max_sge: shape.sq.max_sge,
            max_inline: shape.sq.max_inline,
        };
        outcome = if env.sq.is_some() {
            fetch(r, &mut env, cfg, limits)
        } else {
            fetch_kernel(r, &mut env, cfg, &ctx.st.kq)
        };
        if outcome == Outcome::Ok {
            outcome = r.run(&mut env, cfg);
        }
    }
    count(
        ctx.dev,
        before,
        (req.as_ref().map(|r| r.counters), resp.counters),
    );
    if let (Some(a), Some(b)) = (sr_before, sr_stats(req, resp)) {
        count_sr(ctx.dev, &a, &b);
    }
    // What the step acknowledged goes back to the device's budget (out of RTS, all of it),
    // and waiters are woken for the room.
    if let Some((part, held, taken)) = env.take_inflight() {
        let now = match req.as_ref() {
            Some(r) if rts => r.admitted_psns(),
            _ => 0,
        };
        ctx.dev.inflight().settle(ctx.dev, part, held, taken, now);
    }
    let now = RcEnv::now_us(&env);
    // Out of RTS the requester's timers do nothing (see the match above): armed, a past
    // deadline would queue the QP's work again and again.
    arm(
        ctx.qp.timer(),
        req.as_ref().filter(|_| rts).and_then(|r| r.deadline()),
        now,
    );
    arm(ctx.qp.slow_path(), resp.deadline(), now);
    if resp.read_pending() && outcome == Outcome::Ok {
        // The QP's work sends the rest.
        ctx.qp.timer().kick();
    }
    if outcome == Outcome::Error {
        // A peer can cause both warnings at will: they are rate-limited (the counters
        // still count each).
        let warn = crate::kx::ratelimit::remote_warning_allowed;
        if let Some(f) = resp.fatal.take().filter(|_| warn()) {
            pr_warn!(
                "qp {:#x}: refused request psn {:#x} opcode {:#x} ({} B, {} in progress{}): nak {}, status {:?}; qp to error\n",
                ctx.qpn,
                f.psn.get(),
                f.opcode,
                f.payload_len,
                f.in_progress.describe(),
                if f.out_of_sequence { ", opcode out of sequence" } else { "" },
                f.nak,
                f.status,
            );
        }
        if let Some(n) = req
            .as_mut()
            .and_then(|r| r.retry_note.take())
            .filter(|_| warn())
        {
            pr_warn!(
                "qp {:#x}: retry exceeded at psn {:#x} ({:?}), last resend by {:?}; {} timeouts, {} sequence NAKs, {} packets resent; {}; qp to error\n",
                ctx.qpn,
                n.psn.get(),
                n.opcode,
                n.cause,
                n.timeouts,
                n.seq_naks,
                n.resent_pkts,
                n.engine,
            );
        }
        enter_error(g, ctx.qp);
    }
}

/// Adds what one step of the transport counted to the device's counters.
pub(crate) fn count(
    dev: &RoceDevice,
    (req0, resp0): (Option<ReqCounters>, RespCounters),
    (req1, resp1): (Option<ReqCounters>, RespCounters),
) {
    let c = dev.counters();
    let delta = |counter, old: u64, new: u64| c.add(counter, new.saturating_sub(old));
    delta(Counter::OutOfSeqRequest, resp0.seq_err, resp1.seq_err);
    delta(
        Counter::DuplicateRequest,
        resp0.duplicates,
        resp1.duplicates,
    );
    delta(
        Counter::SendRnrErr,
        resp0.rnr_naks_sent,
        resp1.rnr_naks_sent,
    );
    delta(
        Counter::DupRdAtomicDropped,
        resp0.dup_unmatched,
        resp1.dup_unmatched,
    );
    // SR requests to a QP without SR (gbn, UC); the SR engines count their own refusals.
    delta(Counter::SrRefused, resp0.sr_refused, resp1.sr_refused);
    if let (Some(a), Some(b)) = (req0, req1) {
        delta(Counter::RcvdRnrErr, a.rnr_naks, b.rnr_naks);
        delta(Counter::RcvdSeqErr, a.seq_naks, b.seq_naks);
        delta(Counter::CompleterRetryErr, a.retries, b.retries);
        delta(Counter::LocalAckTimeoutErr, a.timeouts, b.timeouts);
        delta(
            Counter::RetryExceededErr,
            a.retry_exceeded,
            b.retry_exceeded,
        );
        delta(
            Counter::RetryRnrExceededErr,
            a.rnr_retry_exceeded,
            b.rnr_retry_exceeded,
        );
        delta(Counter::InflightWaits, a.admit_waits, b.admit_waits);
    }
}

/// Adds what one step changed in a QP's SR statistics to the device's counters.
fn count_sr(dev: &RoceDevice, a: &SrStats, b: &SrStats) {
    let c = dev.counters();
    for (counter, old, new) in [
        (Counter::SrQpsNegotiated, a.qps_sr, b.qps_sr),
        (Counter::SrQpsStandard, a.qps_standard, b.qps_standard),
        (Counter::SrFastPath, a.fast_path, b.fast_path),
        (Counter::SrSlowPath, a.slow_path, b.slow_path),
        (Counter::SrSacksSent, a.sacks_sent, b.sacks_sent),
        (Counter::SrSacksRcvd, a.sacks_rcvd, b.sacks_rcvd),
        (Counter::SrAacksSent, a.aacks_sent, b.aacks_sent),
        (Counter::SrAacksRcvd, a.aacks_rcvd, b.aacks_rcvd),
        (Counter::SrFnacksSent, a.fnacks_sent, b.fnacks_sent),
        (Counter::SrFnacksRcvd, a.fnacks_rcvd, b.fnacks_rcvd),
        (Counter::SrHolesSent, a.holes_sent, b.holes_sent),
        (Counter::SrHolesRcvd, a.holes_rcvd, b.holes_rcvd),
        (Counter::SrResentPkts, a.resent_pkts, b.resent_pkts),
        (Counter::SrLostResends, a.lost_resends, b.lost_resends),
        (Counter::SrStallProbes, a.stall_probes, b.stall_probes),
        (
            Counter::SrSacksCoalesced,
            a.sacks_coalesced,
            b.sacks_coalesced,
        ),
        (Counter::SrGbnFallbacks, a.gbn_fallbacks, b.gbn_fallbacks),
        (
            Counter::SrLostCntOverflows,
            a.lost_cnt_overflows,
            b.lost_cnt_overflows,
        ),
        (Counter::SrOooPlaced, a.ooo_placed, b.ooo_placed),
        (Counter::SrOrderedEarly, a.ordered_early, b.ordered_early),
        (Counter::SrWindowFull, a.window_full, b.window_full),
        (Counter::SrEarlyRnr, a.early_rnr, b.early_rnr),
        (Counter::SrEarlyRefused, a.early_refused, b.early_refused),
        (Counter::SrOutOfWindow, a.out_of_window, b.out_of_window),
        (Counter::SrStaleStandard, a.stale_standard, b.stale_standard),
        (Counter::SrRefused, a.refused, b.refused),
        (Counter::SrOnloadServed, a.onload_served, b.onload_served),
        (
            Counter::SrOnloadDelayUs,
            a.onload_delay_us,
            b.onload_delay_us,
        ),
    ] {
        c.add(counter, new.saturating_sub(old));
    }
    c.max(Counter::SrOnloadQueuePeak, b.onload_queue_peak);
}

/// True for request packets (to the responder), false for responses (to the completer).
pub(crate) fn is_request(p: &PacketRepr<'_>) -> bool {
    !matches!(
        p.bth.opcode.info().map(|i| i.kind),
        Some(OpKind::Acknowledge | OpKind::AtomicAcknowledge | OpKind::RdmaReadResponse)
    )
}

/// Copies new send WQEs from the ring into the requester, each validated. A WQE that fails
/// validation completes in error once everything before it has retired (then the QP
/// enters the Error state).
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
pub(crate) fn fetch(
    req: &mut KRequester,
    env: &mut KEnv<'_>,
    cfg: &RcConfig,
    limits: SendLimits,
) -> Outcome {
    let Some(ring) = env.sq else {
        return Outcome::Ok;
    };
    let shared = ring.queue();
    if env.sq_q.observe_producer(shared.load_producer()).is_err() {
        // A producer index user space mangled: what was validly queued still runs.
        return Outcome::Ok;
    }
    let qp_type = if cfg.service == Service::Rc {
        QpType::Rc
    } else {
        QpType::Uc
    };
    while req.room() > 0 {
        let Some(slot) = env.sq_q.nth(req.len() as u32) else {
            break;
        };
        let mut bytes = [0u8; MAX_SEND_WQE_BYTES];
        shared.read_slot(slot, &mut bytes);
        let wr_id = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        let Some(wqe) = req.vacant() else {
            break;
        };
        // Parsed straight into the requester's slot: no WQE copy on this stack.
        let status = match SendWqe::parse_into(&bytes, qp_type, limits, wqe) {
            Ok(()) => {
                let op = wqe.op;
                match req.post_vacant(cfg) {
                    Ok(()) => {
                        count_send(env, &op);
                        continue;
                    }
                    Err(PostError::Full) => break,
                    Err(PostError::Unsupported(s)) => s,
                }
            }
            Err(e) => e.wc_status(),
        };
        if !req.is_empty() {
            // Wait for the requests before it to retire.
            break;
        }
        use crate::proto::rc::RcEnv as _;
        env.retire_send(Some(&Completion::zeroed(wr_id, cfg.qpn, status)));
        return Outcome::Error;
    }
    Outcome::Ok
}

/// Counts a request the requester took, if it is a SEND (`rdma_sends`).
pub(crate) fn count_send(env: &KEnv<'_>, op: &SendOp) {
    if matches!(
        op,
        SendOp::Send | SendOp::SendWithImm { .. } | SendOp::SendWithInv { .. }
    ) {
        env.dev.counters().inc(Counter::RdmaSends);
    }
}

/// Moves a kernel QP's posted send WRs (validated at post time) into the requester while
/// it has room.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
pub(crate) fn fetch_kernel(
    req: &mut KRequester,
    env: &mut KEnv<'_>,
    cfg: &RcConfig,
    kq: &KernelQueueLock,
) -> Outcome {
    while req.room() > 0 {
        let Some(ks) = kq.lock().as_mut().and_then(|k| k.sq.peek().flatten()) else {
            break;
        };
        let status = match req.post(ks.wqe, cfg) {
            Ok(()) => {
                if let Some(k) = kq.lock().as_mut() {
                    k.sq.pop();
                }
                count_send(env, &ks.wqe.op);
                continue;
            }
            Err(PostError::Full) => break,
            Err(PostError::Unsupported(s)) => s,
        };
        if !req.is_empty() {
            // Wait for the requests before it to retire.
            break;
        }
        if let Some(k) = kq.lock().as_mut() {
            k.sq.pop();
        }
        use crate::proto::rc::RcEnv as _;
        env.retire_send(Some(&Completion::zeroed(ks.wqe.wr_id, cfg.qpn, status)));
        return Outcome::Error;
    }
    Outcome::Ok
}

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
}

/// A QP that holds back its requests while its READ responses go out.
pub(crate) struct Later(QpRef<DeviceState>);

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

/// True for QP states whose responder takes requests.
pub(crate) fn receiving(state: QpState) -> bool {
    matches!(state, QpState::Rtr | QpState::Rts)
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
        Some(true) => Delivery::Done,
        Some(false) => Delivery::Later(Later(qp)),
        None => Delivery::Dropped,
    }
}

/// [`connected_deliver`] on QP `qp`: `Some(true)` taken, `Some(false)` a request to hold
/// back (the QP is still sending READ responses, or requests held before it wait), `None`
/// dropped.
fn deliver_to(
    dev: &RoceDevice,
    qp: &RoceQp,
    d: &RoceDatagram<'_>,
    p: &PacketRepr<'_>,
) -> Option<bool> {
    let st: &QpObject = qp;
    let want = match rc_transport::service(st.shape.qp_type)? {
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
    let conn = g.rc.as_ref().filter(|_| receiving(g.attrs.state))?;
    if conn.av.dgid != d.src_gid() || conn.av.sgid != d.dest_gid() {
        dev.counters().inc(Counter::RcvdAddrMismatch);
        return None;
    }
    let busy = conn.resp.read_pending() || st.held.as_ref().is_some_and(|h| h.len() > 0);
    // A repair of lost READ responses (SR format) is not held behind the new READs.
    if busy && is_request(p) && !conn.resp.repair_goes_ahead(p) {
        return Some(false);
    }
    ctx.with_netdev(|nd| drive(&ctx, &mut g, nd, Step::Packet(p)))
        .map(|()| true)
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
        let Some((_, p)) = skb.ip_bytes().and_then(crate::transport::rx::parse) else {
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

/// Arms `timer` for `deadline`; one already due (SRNIC's slow path queues work for "now")
/// queues the work at once: arming a timer instead would be pushed back by every packet
/// that arrives.
fn arm(timer: &QpTimer, deadline: Option<u64>, now: u64) {
    match deadline {
        Some(d) if d <= now => timer.kick(),
        Some(d) => timer.arm(d),
        None => {}
    }
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

/// The QP's work item (its timer fired, or a path kicked it): the transport's timer step
/// and the READ responses of an RC QP, a kernel QP's sends, the rest of a user datagram
/// QP's send ring.
pub(crate) fn qp_work(qp: &RoceQp) {
    let ctx = QpCtx::new(qp);
    // Dropped last, with no lock held.
    let _events = CqEvents::new(qp);
    if rc_transport::service(qp.shape.qp_type).is_none() {
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
