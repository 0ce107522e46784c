// SPDX-License-Identifier: GPL-2.0
//! The requester's selective retransmission: the capability exchange, the switch to the
//! scheme's engine once the peer echoed, the engine's actions collected without loss, and
//! the per-PSN resends they ask for.
//!
//! The engine's actions for one event are folded into [`Acts`]: the newest UNACK, the
//! earliest go-back, the last timer change, and every PSN named by a `Retransmit` marked in
//! the [`PsnSet`] (a bitmap over the SR window, so no action is dropped however many
//! ranges an event produces). [`Requester::run`] sends the marked PSNs, oldest
//! first, before any new packet.
//!
//! Retry accounting stays IBTA's: only a retransmission timeout and a NAK "PSN sequence
//! error" consume `retry_cnt` (one per event, however many PSNs it resends); resends asked
//! by SACKs, FNACKs and hole lists do not, so `retry_exceeded` still means a dead peer.

use core::ops::DerefMut;

use super::loss_probe::{LossProbe, RepairWatch, UnaResend};
use super::psn_set::PsnSet;
use super::request_packet::{PacketAt, PacketError};
use super::sr_counters::ReqSrCounters;
use super::Requester;
use super::RetryCause;
use super::SqEntry;
use crate::proto::psn::Psn;
use crate::proto::rc::event::engine_event;
use crate::proto::rc::sr::SrSetup;
use crate::proto::rc::{packets, Fatal, RcConfig, RcEnv, RcEvent, SR_ASSUMED_WINDOW_PSNS};
use crate::proto::recovery::any::{AnyEngine, EngineSide, SharedPools};
use crate::proto::recovery::{
    Action, ActionSink, Counters, EngineEvent, Recovery, ReqEvent, Timer,
};
use crate::proto::wire::caps::{CapAnswer, RequesterCaps, RequesterState};
use crate::proto::words::WindowWords;
use crate::uabi::send_wqe::SendOp;

/// A requester's selective-retransmission state (kept apart from the requester so the
/// kernel can hold it on the heap).
pub struct ReqSr<B> {
    caps: RequesterCaps,
    engine: AnyEngine<B>,
    /// The engine runs: the peer echoed the capability.
    pub(super) active: bool,
    pub(super) resend: PsnSet<B>,
    /// READ response PSNs placed ahead of their READ's first missing response.
    pub(super) read_placed: PsnSet<B>,
    /// The PSNs resent and not yet acknowledged ([`ReqSr::mark_una_again`]).
    pub(super) resent: PsnSet<B>,
    /// READ repairs sent, watched for their loss. Without this a lost repair of a run past
    /// UNACK waits until UNACK reaches it, and then a stall probe of its own.
    pub(super) repairs: RepairWatch<B>,
    /// The highest READ response PSN placed: a response past it shows the READ responses
    /// and atomic ACKs between as missing, once.
    pub(super) read_high: Option<Psn>,
    /// The READ response taken last: the responder sends a READ's responses (or a run of
    /// them asked for again) in PSN order, so one after it in the same READ, further on
    /// than the next PSN, shows those between as lost, also below `read_high`.
    pub(super) read_last: Option<Psn>,
    /// Every request before this PSN reached the responder: a READ runs there only at
    /// RCV-NXT, so its responses acknowledge what precedes it, and its own responses up to
    /// its first missing one. Kept while an earlier READ waits for a response (the
    /// acknowledgment cannot pass it), and given to the engine once it has it.
    pub(super) read_acked: Option<Psn>,
    /// The highest PSN a SACK or a hole list reported received, or a READ response showed
    /// ([`ReqSr::received_past`]).
    sacked_high: Option<Psn>,
    /// FaSR: the pipe's length (0: none).
    pipe_psns: u32,
    /// The SR window in use with this peer ([`ReqSr::window`]).
    window: u32,
    /// The most this requester keeps outstanding, whatever the peer advertises: the
    /// device's SR window.
    max_window: u32,
    /// Statistics.
    pub counters: ReqSrCounters,
}

impl<B: WindowWords> ReqSr<B> {
    /// For the kernel log: the SR format's state and the engine's.
    pub fn describe(&self) -> &'static str {
        if self.active {
            self.engine.describe_requester()
        } else {
            "standard (no SR answer yet)"
        }
    }

    /// The SR state of a requester whose first packet carries `sq_psn`: probing.
    /// `words(n)` makes `n` zeroed words, the storage of a bitmap. Out of line, so the
    /// engine it builds does not share a stack frame with the state its caller holds.
    #[inline(never)]
    pub fn new(setup: SrSetup, sq_psn: Psn, words: &mut dyn FnMut(usize) -> B) -> Self {
        let n = setup.window_words();
        ReqSr {
            caps: RequesterCaps::new(Some(setup.cap)),
            engine: setup.engine(EngineSide::Requester, sq_psn, words),
            active: false,
            resend: PsnSet::new(words(n), sq_psn),
            read_placed: PsnSet::new(words(n), sq_psn),
            resent: PsnSet::new(words(n), sq_psn),
            repairs: RepairWatch::new(words(n), words(n), sq_psn),
            read_high: None,
            read_last: None,
            read_acked: None,
            sacked_high: None,
            pipe_psns: setup.pipe_psns,
            window: SR_ASSUMED_WINDOW_PSNS,
            max_window: setup.window_psns(),
            counters: ReqSrCounters::ZERO,
        }
    }

    /// The PSNs the requester lets be outstanding past UNACK in the SR format: the window
    /// the peer advertised in the last SR acknowledgment taken, at most the device's SR
    /// window; [`SR_ASSUMED_WINDOW_PSNS`] until one arrives.
    pub fn window(&self) -> u32 {
        self.window
    }

    /// An SR acknowledgment the requester took advertised a window of 2^`window_log2`
    /// PSNs (the parser let through only valid ones).
    pub(super) fn take_window(&mut self, window_log2: u8) {
        let advertised = 1u32.checked_shl(u32::from(window_log2)).unwrap_or(u32::MAX);
        self.window = advertised.clamp(SR_ASSUMED_WINDOW_PSNS, self.max_window);
    }

    /// The highest PSN known received past UNACK `una` (within the window in use): a SACK
    /// or a hole list reported it, or its READ response arrived. While there is one, UNACK
    /// is a hole (an ACK that moves it is an AACK), and FaSR's pipe is measured from it.
    pub(super) fn received_past(&self, una: Psn) -> Option<Psn> {
        let window = i32::try_from(self.window).unwrap_or(i32::MAX);
        self.sacked_high
            .filter(|h| h.after(una) && h.diff(una) < window)
    }

    /// Marks UNACK `una` to go again, and, if it was resent before (that resend may be
    /// lost), every later resend the scheme's responder dropped behind such a loss: the
    /// PSNs of [`ReqSr::resent`] (those resent and not yet acknowledged) up to
    /// [`AnyEngine::lost_resend_end`] (MELO's resends of later holes, each dropped for
    /// filling the middle of its bitmap). Only the resends: the packets between them were
    /// received (going back over the whole range, MELO's probes resent many times the
    /// holes, and on a slow responder faster than it could drop them).
    pub(super) fn mark_una_again(&mut self, una: Psn) {
        self.resend.mark(una, 1);
        match self.engine.lost_resend_end() {
            Some(end) if self.resent.contains(una) => {
                self.resend.mark_held(&self.resent, una.next(), end)
            }
            _ => {}
        }
    }

    /// Counts one event `ev` of the SR requester: in its tallies, and through `env`.
    pub(super) fn count(&mut self, env: &mut dyn RcEnv, ev: RcEvent) {
        self.counters.record(ev, 1);
        env.count(ev, 1);
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// Where the capability exchange stands.
    pub const fn state(&self) -> RequesterState {
        self.caps.state()
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// The engine's counters (meaningful once the SR format is in use).
    pub fn engine_counters(&self) -> &Counters {
        self.engine.counters()
    }

    /// Gives the engine's shared resources back to the device (QP reset, error, destroy).
    pub fn release(&mut self, shared: &mut (dyn SharedPools + 'static)) {
        self.engine.release(shared);
    }
}

/// The engine's actions for one event, folded without loss.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Acts {
    /// The newest UNACK.
    acked: Option<Psn>,
    /// The earliest go-back.
    go_back: Option<Psn>,
    /// The last RTO change: arm at a deadline, or disarm.
    rto: Option<Option<u64>>,
    /// PSNs were marked for resending.
    resend: bool,
}

/// A marked PSN found in the send queue ([`Requester::resend_target`]).
struct Resend {
    /// The entry's index from the head.
    i: usize,
    /// The packet of the entry (of a READ, its first missing response) sent again.
    k: u32,
    /// That packet's PSN.
    at: Psn,
    /// A READ: the bytes of the run of responses its request asks for.
    read_len: Option<u32>,
}

struct Sink<'a, B> {
    /// Where the engine's counted events are reported.
    env: &'a mut dyn RcEnv,
    acts: &'a mut Acts,
    /// Standard mode (go-back-N engine) has no resend set: a range becomes a go-back.
    resend: Option<&'a mut PsnSet<B>>,
}

impl<B> Sink<'_, B> {
    fn go_back(&mut self, from: Psn) {
        let earliest = match self.acts.go_back {
            Some(g) => from.before(g),
            None => true,
        };
        if earliest {
            self.acts.go_back = Some(from);
        }
    }
}

impl<B: WindowWords> ActionSink for Sink<'_, B> {
    fn push(&mut self, a: Action) {
        match a {
            Action::Acked { una } => self.acts.acked = Some(una),
            Action::GoBack { from } => self.go_back(from),
            Action::Retransmit { first, count } => match self.resend.as_deref_mut() {
                Some(r) => {
                    r.mark(first, count);
                    self.acts.resend = true;
                }
                None => self.go_back(first),
            },
            Action::ArmTimer {
                timer: Timer::Rto,
                deadline,
            } => self.acts.rto = Some(Some(deadline)),
            Action::DisarmTimer { timer: Timer::Rto } => self.acts.rto = Some(None),
            // Responder-side actions and the fallback notice (the engine counts it).
            _ => {}
        }
    }

    fn counted(&mut self, ev: EngineEvent, n: u64) {
        if let Some(ev) = engine_event(ev, false) {
            self.env.count(ev, n);
        }
    }
}

impl<S: DerefMut<Target = [SqEntry]>, B: WindowWords, E: DerefMut<Target = ReqSr<B>>>
    Requester<S, E>
{
    /// UNACK: the first unacknowledged PSN.
    pub fn una(&self) -> Psn {
        match self.sr.as_deref() {
            Some(sr) if sr.active => sr.engine.una(),
            _ => self.engine.una(),
        }
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// The SR state, when the QP's device runs an SR scheme.
    pub fn sr(&self) -> Option<&ReqSr<B>> {
        self.sr.as_deref()
    }

    /// The SR state, mutable (to release its shared resources).
    pub fn sr_mut(&mut self) -> Option<&mut ReqSr<B>> {
        self.sr.as_deref_mut()
    }

    /// True once requests go out in the SR format.
    pub(super) fn sr_active(&self) -> bool {
        self.sr.as_deref().is_some_and(|s| s.active)
    }

    /// An SR acknowledgment was taken advertising a window of 2^`window_log2` PSNs: the
    /// window in use from now on, if this requester sends in the SR format (an SR
    /// acknowledgment to one that does not answers nothing it sent).
    pub(super) fn take_window(&mut self, window_log2: u8) {
        if let Some(sr) = self.sr.as_deref_mut().filter(|s| s.active) {
            sr.take_window(window_log2);
        }
    }

    /// A SACK or a hole list reported `psn` received, or its READ response arrived
    /// ([`ReqSr::received_past`] keeps the highest).
    pub(super) fn note_sacked(&mut self, psn: Psn) {
        let una = self.una();
        let Some(sr) = self.sr.as_deref_mut() else {
            return;
        };
        if !psn.after(una) {
            return;
        }
        // A value UNACK has passed is stale, whatever it is.
        if !sr
            .sacked_high
            .is_some_and(|h| h.after(una) && !psn.after(h))
        {
            sr.sacked_high = Some(psn);
        }
    }

    /// Whether a new packet `psn` would overfill the pipe: FaSR sends at most
    /// `pipe_psns` ([`SR_PIPE_PSNS`](crate::proto::rc::SR_PIPE_PSNS) unless the module
    /// parameter `sr_pipe_psns` says otherwise; 0: no pipe) past the highest PSN known
    /// received (the last acknowledged, or a higher one a SACK reported or a READ response
    /// showed), within the window from UNACK.
    ///
    /// Choice (the paper leaves flow control to the transport): the SR window from UNACK
    /// ([`ReqSr::window`]) filled with new packets is also a queue in front of a repair,
    /// which then waits behind the whole window; a shorter pipe keeps the repair's round
    /// trip short. A path that holds more than `pipe_psns` stretches the pipe to what it
    /// holds ([`Self::path_allowance`]).
    pub(super) fn pipe_full(&self, psn: Psn) -> bool {
        let Some(sr) = self.sr.as_deref().filter(|s| s.active) else {
            return false;
        };
        if !matches!(sr.engine, AnyEngine::Fasr(_)) || sr.pipe_psns == 0 {
            return false;
        }
        let una = self.una();
        let base = sr.received_past(una).unwrap_or(una.sub(1));
        let pipe = sr.pipe_psns.max(self.path_allowance());
        psn.diff(base) > i32::try_from(pipe).unwrap_or(i32::MAX)
    }

    /// BTH TVer and Resv7 of the next request packet.
    pub(super) fn marks(&self) -> CapAnswer {
        let m = match self.sr.as_deref() {
            Some(sr) => sr.caps.request_marks(),
            None => CapAnswer { tver: 0, resv7: 0 },
        };
        CapAnswer {
            resv7: self.fec_marks(m.resv7),
            ..m
        }
    }

    /// Hands `ev` to the engine in use (go-back-N until the peer agreed to SR).
    pub(super) fn feed(&mut self, env: &mut dyn RcEnv, ev: ReqEvent) -> Acts {
        let mut acts = Acts::default();
        match self.sr.as_deref_mut() {
            Some(ReqSr {
                engine,
                resend,
                active: true,
                ..
            }) => {
                let mut sink = Sink {
                    env: &mut *env,
                    acts: &mut acts,
                    resend: Some(&mut *resend),
                };
                if !engine.on_requester_local(ev, &mut sink) {
                    env.with_shared(&mut |sh, env| {
                        let mut sink = Sink {
                            env,
                            acts: &mut acts,
                            resend: Some(&mut *resend),
                        };
                        engine.on_requester(sh, ev, &mut sink)
                    });
                }
            }
            _ => self.engine.on_requester(
                &mut (),
                ev,
                &mut Sink {
                    env,
                    acts: &mut acts,
                    resend: None::<&mut PsnSet<B>>,
                },
            ),
        }
        acts
    }

    /// Carries out the engine's actions. `counted`: the event was a retransmission timeout
    /// or a sequence-error NAK, so a resend it causes consumes a retry.
    pub(super) fn apply(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        acts: Acts,
        counted: Option<RetryCause>,
    ) -> Result<(), Fatal> {
        if let Some(una) = acts.acked {
            // Karn: the doubled timeout stands until a round trip is measured on a packet
            // sent once (or on the resend a sequence-error NAK asked for, `nak_sample`). An
            // acknowledgment of other resent packets says nothing of the round trip;
            // dropping the backoff on it sent every QP of a backlogged device back to the
            // base timeout, each resending its window again into the backlog (floods of
            // duplicates at the responder, QPs out of retries).
            if self.sample_rtt(env, una) {
                self.backoff = 0;
            }
            self.retries_left = cfg.retry_cnt;
            self.rnr_left = cfg.rnr_retry;
            self.retry_psn = None;
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.resend.advance(una);
                sr.read_placed.advance(una);
                sr.resent.advance(una);
                sr.repairs.advance(una);
            }
            self.probe.advance(una, env.now_us());
            self.retire(env, cfg);
        }
        if let Some(cause) = counted.filter(|_| acts.go_back.is_some() || acts.resend) {
            if self.retries_left == 0 {
                return Err(self.retry_exceeded(env, cfg, cause));
            }
            self.retries_left -= 1;
            self.count(env, RcEvent::Retry);
        }
        if let Some(from) = acts.go_back {
            self.retry_psn = Some(from);
            self.rtt_probe = None;
            self.nak_sample = (counted == Some(RetryCause::SeqNak)).then_some(from);
            self.rewind(from);
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.resend.clear_from(from);
            }
        }
        if acts.resend {
            // Karn: no RTT sample across a resend.
            self.rtt_probe = None;
        }
        match acts.rto {
            Some(Some(_)) if cfg.timeout_us != 0 => {
                // The engine says when the timer runs; the requester says how long: the QP's
                // timeout stretched by the measured round trip, doubled by the backoff.
                let rto = self.backed_off_rto_us(cfg);
                self.rto_deadline = Some(env.now_us().saturating_add(rto));
            }
            Some(None) => self.rto_deadline = None,
            _ => {}
        }
        Ok(())
    }

    /// A response arrived with BTH `tver` and `resv7`: while probing it decides the format;
    /// on the peer's echo the scheme's engine takes over from UNACK, with what was already
    /// sent in flight.
    pub(super) fn on_caps(&mut self, env: &mut dyn RcEnv, tver: u8, resv7: u8) {
        let una = self.engine.una();
        let sent = self.sent_high;
        let Some(sr) = self.sr.as_deref_mut() else {
            return;
        };
        let RequesterState::Probing { .. } = sr.caps.state() else {
            return;
        };
        match sr.caps.on_response(tver, resv7) {
            RequesterState::Sr(_) => {
                env.count(RcEvent::SrAgreed, 1);
                sr.engine.start_requester(una, sent);
                sr.resend.restart(una);
                sr.read_placed.restart(una);
                sr.resent.restart(una);
                sr.repairs.restart(una);
                sr.active = true;
                self.probe = LossProbe::new();
                self.start_fec_offer();
            }
            RequesterState::Standard => {
                env.count(RcEvent::SrDeclined, 1);
                self.start_fec_offer();
            }
            RequesterState::Probing { .. } => {}
        }
    }

    /// A request from the peer arrived (the QP's responder side) with BTH `tver` and
    /// `resv7`: while probing, a peer marking its requests with our capability is no silent
    /// one (`RequesterCaps::on_peer_request`).
    pub fn on_peer_request(&mut self, tver: u8, resv7: u8) {
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.caps.on_peer_request(tver, resv7);
        }
    }

    /// A retransmission timeout while probing: one more unanswered probe.
    pub(super) fn on_probe_timeout(&mut self) {
        if let Some(sr) = self.sr.as_deref_mut() {
            if !sr.active {
                sr.caps.on_probe_timeout();
            }
        }
    }

    /// Sends the PSNs the engine marked, oldest first: for each, finds what to resend,
    /// sends it and accounts for it. A refused packet stays marked, and sending pauses.
    pub(super) fn resend_marked(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
    ) -> Result<(), Fatal> {
        let marks = self.marks();
        loop {
            let Some(psn) = self.sr.as_deref_mut().and_then(|s| s.resend.take_first()) else {
                return Ok(());
            };
            let Some(r) = self.resend_target(psn) else {
                continue;
            };
            let Some(e) = self.slots.get(self.idx(r.i)) else {
                continue;
            };
            let pmtu = self.pmtu.get();
            let sent = match r.read_len {
                Some(len) => Self::send_read_request(env, cfg, pmtu, e, r.k, len, marks)
                    .map(|()| (true, packets(len, pmtu).max(1))),
                None => Self::send_packet(
                    env,
                    cfg,
                    pmtu,
                    &mut self.noack_pkts,
                    e,
                    PacketAt {
                        k: r.k,
                        next_follows: false,
                        stops_after: false,
                    },
                    marks,
                ),
            };
            let used = match sent {
                Ok((_, used)) => used,
                Err(PacketError::Busy) => {
                    if let Some(sr) = self.sr.as_deref_mut() {
                        sr.resend.mark(psn, 1);
                    }
                    self.wait_busy(env);
                    return Ok(());
                }
                Err(PacketError::Failed(status)) => {
                    return Err(self.fail_entry(env, cfg, r.i, status))
                }
            };
            let read = r.read_len.is_some();
            self.account_resent(env, cfg, r.at, used, read)?;
        }
    }

    /// What marked PSN `psn` resends: its entry among those sent (not one the send cursor
    /// has yet to reach, nor a READ or atomic answered already) and its packet; for a
    /// READ, one request for the missing run of responses from it (at least from the first
    /// missing one) up to the next response placed or the READ's end, whose marks it
    /// clears. `None`: nothing to resend.
    fn resend_target(&mut self, psn: Psn) -> Option<Resend> {
        let i = (0..self.next.saturating_add(1).min(self.len))
            .find(|&i| self.entry(i).is_some_and(|e| e.covers(psn)))?;
        let e = self.entry(i)?;
        let k = psn.distance_from(e.first_psn);
        if i == self.next && k >= self.next_pkt {
            // Not sent yet: the send cursor gets there.
            return None;
        }
        if e.is_rd_atomic() && e.complete {
            return None;
        }
        let first = e.first_psn;
        let SendOp::RdmaRead { .. } = e.wqe.op else {
            return Some(Resend {
                i,
                k,
                at: first.add(k),
                read_len: None,
            });
        };
        let k = k.max(e.done_bytes / self.pmtu.get());
        let (len, end_k) = self.read_run(e, k);
        if let Some(sr) = self.sr.as_deref_mut() {
            if sr.read_placed.contains(first.add(k)) {
                return None;
            }
            sr.resend.clear_range(first.add(k), first.add(end_k));
        }
        Some(Resend {
            i,
            k,
            at: first.add(k),
            read_len: Some(len),
        })
    }

    /// Accounts for a resend of `used` PSNs from `at` (`read`: a READ's run): the PSNs
    /// resent and the counters, the watch on a resend of UNACK (a READ's run is watched as
    /// one: its first response moves UNACK) or on a READ repair past it, and the engine
    /// hears of it.
    fn account_resent(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        at: Psn,
        used: u32,
        read: bool,
    ) -> Result<(), Fatal> {
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.resent.mark(at, used);
        }
        self.count(env, RcEvent::Resent);
        let now = env.now_us();
        let watch = (at == self.una() && (used == 1 || read)).then(|| UnaResend {
            psn: at,
            sent_high: self.sent_high,
            sent_at: now,
            probe_at: self.una_probe_us().map(|t| now.saturating_add(t)),
        });
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.count(env, RcEvent::SelectiveResent);
        }
        if watch.is_some() {
            self.probe.una_resend = watch;
        } else if read {
            // A repair past UNACK (one at UNACK is watched as its resend).
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.repairs.sent(at, now);
            }
        }
        let acts = self.feed(
            env,
            ReqEvent::Sent {
                psn: at.add(used.saturating_sub(1)),
                now,
            },
        );
        self.apply(env, cfg, acts, None)
    }

    /// In the SR format, marks `psn` for resending and returns true; false otherwise (the
    /// caller goes back instead).
    pub(super) fn mark_resend(&mut self, psn: Psn) -> bool {
        match self.sr.as_deref_mut() {
            Some(sr) if sr.active => {
                sr.resend.mark(psn, 1);
                true
            }
            _ => false,
        }
    }

    /// True while marked PSNs wait to be resent.
    pub(super) fn resend_pending(&self) -> bool {
        self.sr.as_deref().is_some_and(|s| !s.resend.is_empty())
    }
}
