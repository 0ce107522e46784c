// SPDX-License-Identifier: GPL-2.0
//! The drive loop of RC and UC QPs: one step of the transport (`transport::rc` around
//! `proto::rc`) under the QP's lock, in named stages: the step itself, sending what it made
//! room for, accounting its counters and in-flight budget, re-arming the timers, and
//! reporting a fatal error.

use kernel::prelude::*;

use crate::kx::ib_verbs::QpState;
use crate::kx::netdevice::NetDev;
use crate::kx::timer::QpTimer;
use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::proto::rc::requester::ReqCounters;
use crate::proto::rc::responder::{RespCounters, READ_BUDGET};
use crate::proto::rc::sr::SrStats;
use crate::proto::rc::{Fatal, RcConfig, RcEnv, Service};
use crate::proto::wire::opcode::OpKind;
use crate::proto::wire::PacketRepr;
use crate::transport::fetch::{fetch, fetch_kernel};
use crate::transport::qp::{QpCtx, QpInner};
use crate::transport::qp_error::enter_error;
use crate::transport::rc::{KRequester, KResponder, RcConn};
use crate::transport::rc_env::KEnv;
use crate::uabi::send_wqe::SendLimits;

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
pub(crate) fn drive(ctx: &QpCtx<'_>, g: &mut QpInner, nd: &NetDev, step: Step<'_>) {
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
    let before = Snapshot::take(req, resp);
    let mut outcome = run_step(&mut env, cfg, req, resp, rts, step);
    if let (Ok(()), Some(r), true) = (outcome, req.as_mut(), rts) {
        outcome = send_more(ctx, &mut env, cfg, r);
    }
    account(ctx, &mut env, req, resp, rts, &before);
    rearm(ctx, &env, req, resp, rts, outcome);
    if outcome.is_err() {
        report_fatal(ctx.qpn, req, resp);
        enter_error(g, ctx.qp);
    }
}

/// What one step is measured against: the requester's and responder's counters and the
/// SR statistics before it.
struct Snapshot {
    counters: (Option<ReqCounters>, RespCounters),
    sr: Option<SrStats>,
}

impl Snapshot {
    /// The QP's counters and SR statistics now.
    fn take(req: &Option<KRequester>, resp: &KResponder) -> Self {
        Snapshot {
            counters: (req.as_ref().map(|r| r.counters), resp.counters),
            sr: resp
                .sr()
                .map(|rs| SrStats::of(req.as_ref().and_then(|r| r.sr()), Some(rs))),
        }
    }
}

/// The step itself: a packet to the responder or the requester, a timer, the slow path or
/// the READ pump. Out of RTS the requester takes no response and no timer.
fn run_step(
    env: &mut KEnv<'_>,
    cfg: &RcConfig,
    req: &mut Option<KRequester>,
    resp: &mut KResponder,
    rts: bool,
    step: Step<'_>,
) -> Result<(), Fatal> {
    match step {
        Step::Packet(p) if is_request(p) => {
            if let Some(r) = req.as_mut() {
                r.on_peer_request(p.bth.tver, p.bth.resv7);
            }
            resp.on_request(env, cfg, p)
        }
        Step::Packet(p) => match req.as_mut() {
            Some(r) if rts => r.on_response(env, cfg, p),
            _ => Ok(()),
        },
        Step::Timer => match req.as_mut() {
            Some(r) if rts => r.on_timer(env, cfg),
            _ => Ok(()),
        },
        Step::SlowPath => resp.on_timer(env, cfg),
        Step::Pump => resp.pump(env, cfg, READ_BUDGET),
    }
}

/// Fetches the send WQEs the step made room for (from the user ring or the kernel queue)
/// and sends what the window allows.
fn send_more(
    ctx: &QpCtx<'_>,
    env: &mut KEnv<'_>,
    cfg: &RcConfig,
    r: &mut KRequester,
) -> Result<(), Fatal> {
    let shape = &ctx.st.shape;
    let limits = SendLimits {
        max_sge: shape.sq.max_sge,
        max_inline: shape.sq.max_inline,
    };
    let outcome = if env.sq.is_some() {
        fetch(r, env, cfg, limits)
    } else {
        fetch_kernel(r, env, cfg, &ctx.st.kq)
    };
    outcome?;
    r.run(env, cfg)
}

/// Adds what the step counted to the device's counters, and gives what it acknowledged
/// back to the device's in-flight budget (out of RTS, all of it), waking waiters.
fn account(
    ctx: &QpCtx<'_>,
    env: &mut KEnv<'_>,
    req: &Option<KRequester>,
    resp: &KResponder,
    rts: bool,
    before: &Snapshot,
) {
    let after = Snapshot::take(req, resp);
    count(ctx.dev, before.counters, after.counters);
    if let (Some(a), Some(b)) = (&before.sr, &after.sr) {
        count_sr(ctx.dev, a, b);
    }
    if let Some((part, held, taken)) = env.take_inflight() {
        let now = match req.as_ref() {
            Some(r) if rts => r.admitted_psns(),
            _ => 0,
        };
        ctx.dev.settle_inflight(part, held, taken, now);
    }
}

/// Re-arms the requester's timer and the responder's slow path for their next deadlines,
/// and queues the QP's work when READ responses remain to be sent.
fn rearm(
    ctx: &QpCtx<'_>,
    env: &KEnv<'_>,
    req: &Option<KRequester>,
    resp: &KResponder,
    rts: bool,
    outcome: Result<(), Fatal>,
) {
    let now = RcEnv::now_us(env);
    // Out of RTS the requester's timers do nothing (see `run_step`): armed, a past deadline
    // would queue the QP's work again and again.
    arm(
        ctx.qp.timer(),
        req.as_ref().filter(|_| rts).and_then(|r| r.deadline()),
        now,
    );
    arm(ctx.qp.slow_path(), resp.deadline(), now);
    if resp.read_pending() && outcome.is_ok() {
        // The QP's work sends the rest.
        ctx.qp.timer().kick();
    }
}

/// Says in the kernel log why the QP is about to enter the Error state: the request the
/// responder refused, or the requester's exceeded retries.
fn report_fatal(qpn: u32, req: &mut Option<KRequester>, resp: &mut KResponder) {
    // A peer can cause both warnings at will: they are rate-limited (the counters still
    // count each).
    let warn = crate::kx::ratelimit::remote_warning_allowed;
    if let Some(f) = resp.fatal.take().filter(|_| warn()) {
        pr_warn!(
            "qp {:#x}: refused request psn {:#x} opcode {:#x} ({} B, {} in progress{}): nak {}, status {:?}; qp to error\n",
            qpn,
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
            qpn,
            n.psn.get(),
            n.opcode,
            n.cause,
            n.timeouts,
            n.seq_naks,
            n.resent_pkts,
            n.engine,
        );
    }
}

/// Adds what one step of the transport counted to the device's counters.
fn count(
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
