// SPDX-License-Identifier: GPL-2.0
//! The drive loop of RC and UC QPs: one step of the QP's connection (`transport::rc_conn`,
//! around `proto::rc`) under the QP's lock, in named stages: the step itself, sending what it made
//! room for, settling its in-flight budget, re-arming the timers, and reporting a fatal
//! error. (What a step counts went to the device's counters as it happened: see
//! `transport::rc_counters`.)

use kernel::prelude::*;

use crate::kx::ib_verbs::QpState;
use crate::kx::netdevice::NetDev;
use crate::kx::rxe::icrc::KernelCrc32;
use crate::kx::rxe::moduleparam;
use crate::kx::timer::QpTimer;
use crate::objects::counters::Counter;
use crate::proto::rc::responder::READ_BUDGET;
use crate::proto::rc::timer_hold::{self, HoldCheck, TimerHold};
use crate::proto::rc::{Fatal, RcConfig, RcEnv, Service};
use crate::proto::wire::ip::RoceDatagram;
use crate::proto::wire::PacketRepr;
use crate::transport::qp::{QpCtx, QpInner};
use crate::transport::qp_error::enter_error;
use crate::transport::rc_conn::{KRequester, KResponder, RcConn};
use crate::transport::rc_env::KEnv;
use crate::transport::rc_fetch::{fetch, fetch_kernel};
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
    /// The timer fired, but the requester's deadline waits for the receive work
    /// (`proto::rc::timer_hold`): only what can be sent.
    Held,
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
        path_held,
        timer_hold,
        fec_tx,
        fec_resp_tx,
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
        // The encoder codes once the peer took the FEC offer.
        let fec = fec_tx
            .as_deref_mut()
            .filter(|_| req.as_ref().is_some_and(|r| r.fec_on()));
        let env = if cfg.service == Service::Rc {
            env.with_inflight(&ctx.qp.inflight, inflight_held)
        } else {
            env
        };
        env.with_fec(fec).with_fec_resp(fec_resp_tx.as_deref_mut())
    };
    let rts = attrs.state == QpState::Rts;
    let held = matches!(step, Step::Timer) && hold_timers(ctx, &env, req, rts, timer_hold);
    let step = if held { Step::Held } else { step };
    let mut outcome = run_step(&mut env, cfg, req, resp, rts, step);
    if !resp.read_pending() {
        env.flush_fec(true);
    }
    if let (Ok(()), Some(r), true) = (outcome, req.as_mut(), rts) {
        outcome = send_more(ctx, &mut env, cfg, r);
        if r.sent_all() {
            env.flush_fec(false);
        }
    }
    settle(ctx, &mut env, req, rts, path_held);
    rearm(ctx, &env, req, resp, (rts, held), outcome);
    if outcome.is_err() {
        report_fatal(ctx.qpn, req, resp);
        enter_error(g, ctx.qp);
    }
}

/// Whether the requester's past deadline waits for the receive work to take what was
/// queued by then (`proto::rc::timer_hold`; never with `timer_hold=N`); each new hold is
/// counted.
fn hold_timers(
    ctx: &QpCtx<'_>,
    env: &KEnv<'_>,
    req: &Option<KRequester>,
    rts: bool,
    hold: &mut Option<TimerHold>,
) -> bool {
    if !moduleparam::timer_hold() {
        return false;
    }
    let deadline = req.as_ref().filter(|_| rts).and_then(|r| r.deadline());
    let rx = ctx.dev.rx_marks();
    match TimerHold::check(hold, deadline, RcEnv::now_us(env), rx) {
        HoldCheck::Go => false,
        HoldCheck::Held { first } => {
            if first {
                ctx.dev.counters().inc(Counter::TimerHolds);
            }
            true
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
        Step::Held => Ok(()),
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

/// Gives what the step acknowledged back to the device's in-flight budget (out of RTS, all
/// of it), waking waiters, and settles the requester's path allowance with the device.
fn settle(
    ctx: &QpCtx<'_>,
    env: &mut KEnv<'_>,
    req: &Option<KRequester>,
    rts: bool,
    path_held: &mut u32,
) {
    if let Some((part, held, taken)) = env.take_inflight() {
        let (now, path) = match req.as_ref() {
            Some(r) if rts => (r.admitted_psns(), r.path_allowance()),
            _ => (0, 0),
        };
        ctx.dev.settle_inflight(part, held, taken, now);
        ctx.dev.settle_path(path_held, path);
    }
}

/// Re-arms the requester's timer for its next deadline (`held`: looked at again a little
/// later) and the responder's slow path for its, and queues the QP's work when READ
/// responses remain to be sent.
fn rearm(
    ctx: &QpCtx<'_>,
    env: &KEnv<'_>,
    req: &Option<KRequester>,
    resp: &KResponder,
    (rts, held): (bool, bool),
    outcome: Result<(), Fatal>,
) {
    let now = RcEnv::now_us(env);
    // Out of RTS the requester's timers do nothing (see `run_step`): armed, a past deadline
    // would queue the QP's work again and again.
    let deadline = if held {
        Some(now.saturating_add(timer_hold::RECHECK_US))
    } else {
        req.as_ref().filter(|_| rts).and_then(|r| r.deadline())
    };
    arm(ctx.qp.timer(), deadline, now);
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

/// True for request packets (to the responder), false for responses (to the completer).
pub(crate) fn is_request(p: &PacketRepr<'_>) -> bool {
    !p.bth.opcode.info().is_some_and(|i| i.kind.is_response())
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

/// Splits a datagram (from its IP header) and checks its IP/UDP framing, ICRC and IBTA
/// headers (and rxe_sr's SR headers: the parser takes TVer 1 on RC only). Whether an SR
/// packet's QP agreed to the SR format is its transport's check: an SR request to a QP
/// without an SR scheme, or an SR response to a requester that never sent SR requests, is
/// dropped and counted there.
pub(crate) fn parse(bytes: &[u8]) -> Option<(RoceDatagram<'_>, PacketRepr<'_>)> {
    let d = RoceDatagram::parse(bytes).ok()?;
    let p = PacketRepr::parse_checked_with::<KernelCrc32>(d.ip_header, d.udp_header, d.ib).ok()?;
    Some((d, p))
}
