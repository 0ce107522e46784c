// SPDX-License-Identifier: GPL-2.0
//! The responder in the SR format: out-of-order placement, in-order completion.
//!
//! From the first TVer = 1 request after the peer's offer was echoed on, the scheme's
//! engine ([`RespSr`]) runs the QP's receive side: it starts at the current ePSN (its
//! RCV-NXT), and every request packet in the SR window from it is offered to the engine,
//! which answers `Deliver` (place it now, wherever it falls) or `Drop`, moves RCV-NXT with
//! `Advance`, and asks for feedback (ACK, SACK, FNACK, hole lists), sent as SR-format
//! ACKNOWLEDGEs at once. (Documentation/sr-wire-format.md states the rules.)
//!
//! - RDMA WRITE: each packet carries the RETH of its own bytes; the R_Key, rights and
//!   bounds are checked for every packet before the engine sees it, so a refused packet is
//!   never a hole the engine waits for: at RCV-NXT it is a NAK and the QP's error, past it
//!   a counted drop until its resend arrives at RCV-NXT.
//! - SEND (and RDMA WRITE with immediate, which consumes a receive WQE): the MSN-ETH names
//!   the message among those that consume receive WQEs, and the packet's offset in it.
//!   Receive WQEs are taken from the RQ (or SRQ) ahead, in order, into a window of
//!   [`RECV_WINDOW`] slots: a packet of a message whose WQE cannot be taken yet gets an
//!   RNR NAK at RCV-NXT (as in IBTA: the requester waits and resends from that PSN) and is
//!   dropped unrecorded past it, as is one past the window (the requester resends it).
//!   Bounds are checked against the WQE before the engine sees the packet.
//! - Every NAK (RNR, or fatal) carries RCV-NXT: a requester takes a NAK as the
//!   acknowledgment of every PSN before it, so a packet past RCV-NXT that would be refused
//!   is dropped and counted instead, and refused when it arrives again at RCV-NXT.
//! - Messages complete (receive completion, immediate data, invalidation, MSN) only when
//!   RCV-NXT passes their last packet, in order.
//! - RDMA READ and atomics execute only at RCV-NXT, in order and once: one arriving early
//!   is dropped unrecorded (the requester resends it, as it does for any hole), so it sees
//!   every WRITE before it; duplicates are answered as in IBTA (READs replayed, atomics
//!   from their saved result). The responses of a READ are its answer: no ACK follows it.
//! - A standard (TVer = 0) request at or after RCV-NXT once the SR format is in use is a
//!   stale packet of the standard phase: dropped and counted.

use core::ops::DerefMut;

use super::recv_window::RecvSlot;
use super::sack_coalesce::SackCoalescer;
use super::RdRes;
use super::Responder;
use crate::proto::psn::Psn;
use crate::proto::rc::event::engine_event;
use crate::proto::rc::sr::{encode_feedback, SrSetup};
use crate::proto::rc::{Fatal, RcConfig, RcEnv, RcEvent};
use crate::proto::recovery::any::{AnyEngine, EngineSide, SharedPools};
use crate::proto::recovery::scheme::Scheme;
use crate::proto::recovery::{
    Action, ActionSink, Counters, EngineEvent, Feedback, Recovery, RespEvent, Timer,
};
use crate::proto::wire::caps::ResponderCaps;
use crate::proto::wire::fec_caps::fec_answer;
use crate::proto::wire::sr_ext::BTH_TVER_SR;
use crate::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr};
use crate::proto::words::WindowWords;

/// Selective-retransmission counters of a responder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RespSrCounters {
    /// Request packets placed after a missing one (out of order).
    pub ooo_placed: u64,
    /// SR-format ACKs sent (cumulative; AACKs included).
    pub acks_sent: u64,
    /// Of those, AACKs: RCV-NXT moved past the packet that triggered it (a hole filled).
    pub aacks_sent: u64,
    /// SACKs sent.
    pub sacks_sent: u64,
    /// SACKs held back (FaSR: they only moved sack-high by one; see `sack_coalesce`).
    pub sacks_coalesced: u64,
    /// FNACKs sent.
    pub fnacks_sent: u64,
    /// HOLE acknowledgments sent (one per hole).
    pub holes_sent: u64,
    /// NAKs "PSN sequence error" sent by an engine in go-back-N fallback.
    pub naks_sent: u64,
    /// READs and atomics that arrived before RCV-NXT reached them: dropped unrecorded.
    pub ordered_early: u64,
    /// SEND packets past the receive-WQE window: dropped unrecorded.
    pub window_full: u64,
    /// SEND packets past RCV-NXT that found no receive WQE: dropped unrecorded (an RNR
    /// NAK goes only at RCV-NXT).
    pub early_rnr: u64,
    /// Packets past RCV-NXT that would have been refused (NAK, the QP to Error): dropped
    /// unrecorded (a NAK goes only at RCV-NXT).
    pub early_refused: u64,
    /// Standard-format requests at or after RCV-NXT once the SR format is in use: dropped.
    pub stale_standard: u64,
    /// SR-format requests to a responder without SR, or malformed, or before the SR
    /// format was offered: dropped.
    pub refused: u64,
    /// SR-format requests at or past RCV-NXT + the SR window: dropped unrecorded.
    pub out_of_window: u64,
}

impl RespSrCounters {
    /// Adds `n` to the tally of `ev`, if it is one of these.
    fn record(&mut self, ev: RcEvent, n: u64) {
        let c = match ev {
            RcEvent::OooPlaced => &mut self.ooo_placed,
            RcEvent::SrAckSent => &mut self.acks_sent,
            RcEvent::AackSent => &mut self.aacks_sent,
            RcEvent::SackSent => &mut self.sacks_sent,
            RcEvent::SackCoalesced => &mut self.sacks_coalesced,
            RcEvent::FnackSent => &mut self.fnacks_sent,
            RcEvent::HoleSent => &mut self.holes_sent,
            RcEvent::SrNakSent => &mut self.naks_sent,
            RcEvent::OrderedEarly => &mut self.ordered_early,
            RcEvent::WindowFull => &mut self.window_full,
            RcEvent::EarlyRnr => &mut self.early_rnr,
            RcEvent::EarlyRefused => &mut self.early_refused,
            RcEvent::StaleStandard => &mut self.stale_standard,
            RcEvent::SrRefused => &mut self.refused,
            RcEvent::OutOfWindow => &mut self.out_of_window,
            _ => return,
        };
        *c += n;
    }
}

/// A responder's selective-retransmission state (kept apart so the kernel can hold it on
/// the heap).
pub struct RespSr<B> {
    pub(super) caps: ResponderCaps,
    pub(super) engine: AnyEngine<B>,
    /// The SR window this responder tracks past RCV-NXT and advertises, as log2.
    pub(super) window_log2: u8,
    /// The SR format is in use (a TVer = 1 request arrived after the offer was noted).
    pub(super) active: bool,
    /// The peer offered our scheme in a standard request inside the SR window.
    pub(super) offered: bool,
    /// The next receive WQE to take ahead: slots hold `[recv_msn, fetched)`.
    pub(super) fetched: u32,
    /// SRNIC's slow-path timer.
    pub(super) deadline: Option<u64>,
    /// The first PSN past RCV-NXT dropped for want of a receive WQE: when RCV-NXT reaches
    /// it, an RNR NAK goes at once (the requester would otherwise learn of the drop only
    /// by a probe, as nothing reports a packet dropped unrecorded).
    pub(super) rnr_at: Option<Psn>,
    /// `rnr_at` may have been sent again unasked (it was dropped behind an RNR NAK at
    /// RCV-NXT, which has the requester go back): its RNR NAK waits until a SEND past it is
    /// dropped for want of a receive WQE too, which shows the requester did not go back.
    pub(super) rnr_quiet: bool,
    /// The last PSN dropped for want of a receive WQE.
    pub(super) rnr_last: Option<Psn>,
    /// FaSR's SACKs that only move sack-high, held back.
    sacks: SackCoalescer,
    /// Statistics.
    pub counters: RespSrCounters,
}

/// True when `psn` lies in the SR window `[rcv_nxt, rcv_nxt + window)`, the window every SR
/// acknowledgment of this responder advertises: the PSNs a requester in the SR format may
/// have outstanding, as its UNACK is never past RCV-NXT. Nothing outside it changes any
/// state.
pub(super) fn in_sr_window(psn: Psn, rcv_nxt: Psn, window: u32) -> bool {
    psn.distance_from(rcv_nxt) < window
}

impl<B: WindowWords> RespSr<B> {
    /// The SR state of a responder expecting `rq_psn` first; `words(n)` makes `n` zeroed
    /// words, the storage of a bitmap. Out of line, so the engine it builds does not share
    /// a stack frame with the state its caller holds.
    #[inline(never)]
    pub fn new(setup: SrSetup, rq_psn: Psn, words: &mut dyn FnMut(usize) -> B) -> Self {
        RespSr {
            caps: ResponderCaps::new(Some(setup.cap)),
            engine: setup.engine(EngineSide::Responder, rq_psn, words),
            window_log2: setup.window_log2,
            active: false,
            offered: false,
            fetched: 0,
            deadline: None,
            rnr_at: None,
            rnr_quiet: false,
            rnr_last: None,
            sacks: SackCoalescer::new(matches!(setup.scheme(), Scheme::Fasr)),
            counters: RespSrCounters::default(),
        }
    }

    /// The SR window in PSNs.
    pub const fn window(&self) -> u32 {
        1 << self.window_log2
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// True once requests arrive in the SR format.
    pub const fn active(&self) -> bool {
        self.active
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// The engine's counters.
    pub fn engine_counters(&self) -> &Counters {
        self.engine.counters()
    }

    /// Counts one event `ev` of the SR responder: in its tallies, and through `env`.
    pub(super) fn count(&mut self, env: &mut dyn RcEnv, ev: RcEvent) {
        self.counters.record(ev, 1);
        env.count(ev, 1);
    }

    /// Gives the engine's shared resources back to the device (QP reset, error, destroy).
    pub fn release(&mut self, shared: &mut (dyn SharedPools + 'static)) {
        self.engine.release(shared);
    }

    /// Starts the engine again at `rcv_nxt`, its shared resources given back: one request
    /// at RCV-NXT took every PSN of the SR window and more, so nothing the engine recorded
    /// past RCV-NXT is a packet a requester sent.
    fn restart_engine(&mut self, shared: &mut (dyn SharedPools + 'static), rcv_nxt: Psn) {
        self.engine.release(shared);
        self.engine.start_responder(rcv_nxt);
        self.sacks.reset();
        self.deadline = None;
    }
}

/// What the engine decided about one event.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Fate {
    pub(super) deliver: bool,
    pub(super) advance: Option<Psn>,
    pub(super) timer: Option<Option<u64>>,
}

/// Collects the engine's decisions and sends its feedback at once.
struct Sink<'a> {
    env: &'a mut dyn RcEnv,
    cfg: &'a RcConfig,
    msn: u32,
    fate: &'a mut Fate,
    /// A plain ACK of exactly this RCV-NXT is not sent (an in-order packet that asked for
    /// no ACK, or a READ / atomic, whose responses answer it).
    quiet: Option<Psn>,
    /// The RCV-NXT an in-order arrival of the event's packet gives: an ACK past it is an
    /// AACK; none for a timer event (the slow path), whose every ACK is one.
    in_order: Option<Psn>,
    /// The event's packet asked for an acknowledgment (AckReq).
    ack_req: bool,
    sacks: &'a mut SackCoalescer,
    counters: &'a mut RespSrCounters,
    /// BTH Resv7 of the acknowledgments (the FEC offer's echo, or 0).
    resv7: u8,
    /// The SR window the acknowledgments advertise, as log2.
    window_log2: u8,
}

impl ActionSink for Sink<'_> {
    fn push(&mut self, a: Action) {
        match a {
            Action::Deliver { .. } => self.fate.deliver = true,
            Action::Advance { rcv_nxt } => self.fate.advance = Some(rcv_nxt),
            Action::Send(fb) => self.feedback(&fb),
            Action::ArmTimer {
                timer: Timer::SlowPath,
                deadline,
            } => self.fate.timer = Some(Some(deadline)),
            Action::DisarmTimer {
                timer: Timer::SlowPath,
            } => self.fate.timer = Some(None),
            _ => {}
        }
    }

    fn counted(&mut self, ev: EngineEvent, n: u64) {
        if let Some(ev) = engine_event(ev, true) {
            self.env.count(ev, n);
        }
    }
}

impl Sink<'_> {
    /// Counts `n` of event `ev`: in the responder's tallies, and through the environment.
    fn count(&mut self, ev: RcEvent, n: u64) {
        self.counters.record(ev, n);
        self.env.count(ev, n);
    }

    fn feedback(&mut self, fb: &Feedback) {
        match *fb {
            Feedback::Ack { rcv_nxt } if Some(rcv_nxt) == self.quiet => return,
            Feedback::Ack { rcv_nxt } => {
                self.count(RcEvent::SrAckSent, 1);
                // This event moved RCV-NXT (not a duplicate's ACK): its packet past those
                // held after it (it filled a hole), or the slow path after a repair.
                let past = match self.in_order {
                    Some(p) => rcv_nxt.after(p),
                    None => true,
                };
                if self.fate.advance.is_some() && past {
                    self.count(RcEvent::AackSent, 1);
                }
            }
            Feedback::Sack { .. } | Feedback::SackGap { .. } => {
                let Some(f) = self.sacks.coalesce(fb, self.ack_req) else {
                    self.count(RcEvent::SackCoalesced, 1);
                    return;
                };
                self.count(RcEvent::SackSent, 1);
                self.emit(&f);
                return;
            }
            Feedback::Fnack { .. } => self.count(RcEvent::FnackSent, 1),
            Feedback::Nak { .. } => self.count(RcEvent::SrNakSent, 1),
            Feedback::Holes { holes, .. } => {
                let n = holes.iter().filter(|h| h.count > 0).count() as u64;
                self.count(RcEvent::HoleSent, n);
            }
        }
        self.emit(fb);
    }

    /// Sends `fb` as SR-format acknowledgments.
    fn emit(&mut self, fb: &Feedback) {
        let (env, cfg, resv7) = (&mut *self.env, self.cfg, self.resv7);
        encode_feedback(fb, self.msn, self.window_log2, |a| {
            let hdr = PacketRepr {
                bth: BthRepr {
                    opcode: Opcode::RC_ACKNOWLEDGE,
                    dest_qpn: cfg.dest_qpn,
                    psn: a.psn,
                    tver: BTH_TVER_SR,
                    resv7,
                    ..Default::default()
                },
                ext: ExtHeaders {
                    sr_ack_eth: Some(a.sr),
                    aeth: Some(a.aeth),
                    ..Default::default()
                },
                payload: &[],
            };
            // A lost acknowledgment is recovered like any other.
            let _ = env.transmit(&hdr, super::super::PayloadSrc::None, 0);
        });
    }
}

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// Sets the format of the responses to request `p`. A standard request offering our
    /// scheme notes the offer when its PSN lies in the SR window from ePSN (a forger must
    /// guess it), and the offer is echoed only once noted: so the SR format, which needs
    /// the offer noted, is adopted only after a peer that saw the echo switches.
    pub(super) fn set_answer(&mut self, p: &PacketRepr<'_>) {
        let (tver, resv7) = (p.bth.tver, p.bth.resv7);
        let epsn = self.epsn;
        self.answer = match self.sr.as_deref_mut() {
            Some(sr) => {
                let in_window = in_sr_window(p.bth.psn, epsn, sr.window());
                let mut a = sr.caps.answer(tver, resv7);
                if a.resv7 != 0 {
                    sr.offered |= in_window;
                    if !sr.offered {
                        a.resv7 = 0;
                    }
                }
                a
            }
            None => crate::proto::wire::caps::CapAnswer { tver: 0, resv7: 0 },
        };
        if let Some(echo) = fec_answer(self.fec.enabled(), resv7) {
            self.answer.resv7 = echo;
        }
    }

    /// True when the SR format is in use (standard requests ahead of RCV-NXT are stale).
    pub(super) fn sr_active(&self) -> bool {
        self.sr.as_deref().is_some_and(|s| s.active)
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// The SR state, when the QP's device runs an SR scheme.
    pub fn sr(&self) -> Option<&RespSr<B>> {
        self.sr.as_deref()
    }

    /// The SR state, mutable (to release its shared resources).
    pub fn sr_mut(&mut self) -> Option<&mut RespSr<B>> {
        self.sr.as_deref_mut()
    }

    /// The SRNIC slow path's next deadline, microseconds.
    pub fn deadline(&self) -> Option<u64> {
        self.sr.as_deref().and_then(|s| s.deadline)
    }

    /// A deadline from [`Responder::deadline`] passed: SRNIC's slow path serves what is
    /// due (RCV-NXT moves, hole lists go out).
    pub fn on_timer(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) -> Result<(), Fatal> {
        let now = env.now_us();
        let due = matches!(self.deadline(), Some(d) if d <= now);
        if !due {
            return Ok(());
        }
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.deadline = None;
        }
        let ev = RespEvent::Timer {
            timer: Timer::SlowPath,
            now,
        };
        let fate = self.feed(env, cfg, ev, None);
        self.settle(env, cfg, fate)
    }

    /// Offers a SEND or WRITE packet to the engine.
    pub(super) fn feed_data(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
    ) -> Fate {
        let psn = p.bth.psn;
        let quiet = (!p.bth.ack_req && psn == self.epsn).then_some(psn.next());
        let now = env.now_us();
        self.feed_with(env, cfg, RespEvent::Data { psn, now }, quiet, p.bth.ack_req)
    }

    /// Hands `ev` to the engine; its feedback goes out at once.
    pub(super) fn feed(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        ev: RespEvent,
        quiet: Option<Psn>,
    ) -> Fate {
        self.feed_with(env, cfg, ev, quiet, true)
    }

    /// Hands `ev` (about a packet that asked for an acknowledgment if `ack_req`) to the
    /// engine; its feedback goes out at once, but for the SACKs held back.
    fn feed_with(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        ev: RespEvent,
        quiet: Option<Psn>,
        ack_req: bool,
    ) -> Fate {
        let mut fate = Fate::default();
        let (msn, resv7) = (self.msn, self.answer.resv7);
        let in_order = match ev {
            RespEvent::Data { psn, .. } => Some(psn.next()),
            RespEvent::Timer { .. } => None,
        };
        let Some(RespSr {
            engine,
            counters,
            sacks,
            window_log2,
            ..
        }) = self.sr.as_deref_mut()
        else {
            return fate;
        };
        let window_log2 = *window_log2;
        let local = engine.on_responder_local(
            ev,
            &mut Sink {
                env: &mut *env,
                cfg,
                msn,
                fate: &mut fate,
                quiet,
                in_order,
                ack_req,
                sacks: &mut *sacks,
                counters: &mut *counters,
                resv7,
                window_log2,
            },
        );
        if !local {
            env.with_shared(&mut |sh, env| {
                engine.on_responder(
                    sh,
                    ev,
                    &mut Sink {
                        env,
                        cfg,
                        msn,
                        fate: &mut fate,
                        quiet,
                        in_order,
                        ack_req,
                        sacks: &mut *sacks,
                        counters: &mut *counters,
                        resv7,
                        window_log2,
                    },
                )
            });
        }
        fate
    }

    /// An ordered request at RCV-NXT `psn` took the `n` PSNs from it: the engine hears of
    /// each, but of a run longer than the SR window only of the last, after it starts again
    /// there ([`RespSr::restart_engine`]), so a READ of millions of PSNs is a few steps.
    /// The plain ACK of each is held back, but for one of `answered_end` if that is `None`.
    /// The engine's decision is carried out.
    pub(super) fn feed_ordered(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        psn: Psn,
        n: u32,
        answered_end: Option<Psn>,
    ) -> Result<(), Fatal> {
        let mut fate = Fate::default();
        let mut first = 0;
        let window = self.sr.as_deref().map_or(u32::MAX, RespSr::window);
        if n > window {
            first = n - 1;
            if let Some(sr) = self.sr.as_deref_mut() {
                env.with_shared(&mut |sh, _| sr.restart_engine(sh, psn.add(first)));
            }
        }
        let now = env.now_us();
        for k in first..n {
            let at = psn.add(k + 1);
            let quiet = if k + 1 < n { Some(at) } else { answered_end };
            let f = self.feed(
                env,
                cfg,
                RespEvent::Data {
                    psn: psn.add(k),
                    now,
                },
                quiet,
            );
            fate.advance = f.advance.or(fate.advance);
            fate.timer = f.timer.or(fate.timer);
        }
        self.settle(env, cfg, fate)
    }

    /// Carries out what the engine decided beyond placement: RCV-NXT moves (messages
    /// complete in order), SRNIC's slow-path timer.
    pub(super) fn settle(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        fate: Fate,
    ) -> Result<(), Fatal> {
        if let Some(sr) = self.sr.as_deref_mut() {
            match fate.timer {
                Some(Some(d)) => sr.deadline = Some(d),
                Some(None) => sr.deadline = None,
                None => {}
            }
        }
        let Some(rcv_nxt) = fate.advance else {
            return Ok(());
        };
        if !rcv_nxt.after(self.epsn) {
            return Ok(());
        }
        self.epsn = rcv_nxt;
        self.ack_psn = rcv_nxt;
        if self
            .ordered_run
            .is_some_and(|(f, n)| rcv_nxt.distance_from(f) >= n)
        {
            self.ordered_run = None;
        }
        self.complete_ready(env, cfg)?;
        self.send_deferred_rnr(env, cfg);
        Ok(())
    }

    /// RCV-NXT moved: the RNR NAK of a SEND dropped past it for want of a receive WQE goes
    /// now if RCV-NXT reached that SEND's PSN (it was not received, so RCV-NXT stops there),
    /// unless the requester is expected to send it again unasked (`rnr_quiet`).
    fn send_deferred_rnr(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) {
        let epsn = self.epsn;
        let Some(sr) = self.sr.as_deref_mut() else {
            return;
        };
        if sr.rnr_last.is_some_and(|l| l.before(epsn)) {
            sr.rnr_last = None;
        }
        match sr.rnr_at {
            Some(at) if at == epsn && !sr.rnr_quiet => sr.rnr_at = None,
            Some(at) if at.before(epsn) => {
                // Packets dropped past it may be at or after RCV-NXT still: a packet past
                // RCV-NXT that comes before RCV-NXT does shows it dropped.
                sr.rnr_at = None;
                if sr.rnr_last.is_some_and(|l| !l.before(epsn)) {
                    sr.rnr_at = Some(epsn);
                    sr.rnr_quiet = true;
                }
                return;
            }
            _ => return,
        }
        self.send_rnr_nak(env, cfg);
    }

    /// A SEND past RCV-NXT was dropped for want of a receive WQE: if RCV-NXT waits at a
    /// SEND that may have been dropped so too, the requester sends on without having gone
    /// back to it (an RNR NAK was lost, or none went), and an RNR NAK goes now.
    pub(super) fn note_past_rcv_nxt(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, psn: Psn) {
        let epsn = self.epsn;
        let Some(sr) = self.sr.as_deref_mut() else {
            return;
        };
        if psn.after(epsn) && sr.rnr_quiet && sr.rnr_at == Some(epsn) {
            sr.rnr_at = None;
            sr.rnr_quiet = false;
            self.send_rnr_nak(env, cfg);
        }
    }

    /// An RNR NAK at RCV-NXT. The requester goes back to RCV-NXT and sends what follows
    /// again unasked: should a packet past the next PSN come while RCV-NXT waits there,
    /// the NAK was lost ([`Self::note_past_rcv_nxt`]).
    pub(super) fn send_rnr_nak(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) {
        let epsn = self.epsn;
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.rnr_at = Some(epsn.next());
            sr.rnr_quiet = true;
        }
        self.count(env, RcEvent::RnrNakSent);
        let aeth = crate::proto::wire::ext_headers::Aeth::rnr_nak(cfg.min_rnr_timer, self.msn);
        self.send_ack(env, cfg, epsn, aeth);
    }
}
