// SPDX-License-Identifier: GPL-2.0
//! The requester's selective retransmission: the capability exchange, the switch to the
//! scheme's engine once the peer echoed, the engine's actions collected without loss, and
//! the per-PSN resends they ask for.
//!
//! The engine's actions for one event are folded into [`Acts`]: the newest UNACK, the
//! earliest go-back, the last timer change, and every PSN named by a `Retransmit` marked in
//! the [`ResendSet`] (a bitmap over the unacknowledged window, so no action is dropped
//! however many ranges an event produces). [`Requester::run`] sends the marked PSNs, oldest
//! first, before any new packet.
//!
//! Retry accounting stays IBTA's: only a retransmission timeout and a NAK "PSN sequence
//! error" consume `retry_cnt` (one per event, however many PSNs it resends); resends asked
//! by SACKs, FNACKs and hole lists do not, so `retry_exceeded` still means a dead peer.

use core::ops::DerefMut;

use super::Requester;
use super::SqEntry;
use crate::proto::psn::Psn;
use crate::proto::rc::sr::SrSetup;
use crate::proto::rc::{Outcome, RcConfig, RcEnv, MAX_UNACKED_PSNS};
use crate::proto::recovery::any::{AnyEngine, SharedPools};
use crate::proto::recovery::{Action, ActionSink, Counters, Recovery, ReqEvent, Timer};
use crate::proto::wire::caps::{CapAnswer, RequesterCaps, RequesterState};
use crate::uabi::send_wqe::SendOp;

/// PSNs the resend bitmap spans from UNACK (the requester's window).
const RESEND_SPAN: u32 = MAX_UNACKED_PSNS;

/// PSNs to resend, as a bitmap over `[base, base + RESEND_SPAN)`; a PSN past it (only an
/// RDMA READ's response range reaches that far) is kept as `far`, the earliest one.
#[derive(Clone, Copy, Debug)]
pub(super) struct ResendSet {
    base: Psn,
    bits: u128,
    far: Option<Psn>,
}

impl ResendSet {
    const fn new(base: Psn) -> Self {
        ResendSet {
            base,
            bits: 0,
            far: None,
        }
    }

    /// Marks `count` PSNs from `first` (those before the base are acknowledged: skipped).
    fn mark(&mut self, first: Psn, count: u32) {
        let skip = if first.before(self.base) {
            self.base.distance_from(first)
        } else {
            0
        };
        if skip >= count {
            return;
        }
        let start = first.add(skip);
        let off = start.distance_from(self.base);
        let n = count - skip;
        let in_span = RESEND_SPAN.saturating_sub(off).min(n);
        for i in off..off + in_span {
            self.bits |= 1u128 << i;
        }
        if in_span < n {
            let p = start.add(in_span);
            let earliest = match self.far {
                Some(f) => p.before(f),
                None => true,
            };
            if earliest {
                self.far = Some(p);
            }
        }
    }

    /// UNACK moved to `una`.
    fn advance(&mut self, una: Psn) {
        let d = una.diff(self.base);
        if d <= 0 {
            return;
        }
        let d = d.unsigned_abs();
        self.bits = if d >= RESEND_SPAN { 0 } else { self.bits >> d };
        self.base = una;
        if self.far.is_some_and(|f| f.before(una)) {
            self.far = None;
        }
    }

    /// Forgets the marks at and after `from` (a go-back resends all of them anyway).
    fn clear_from(&mut self, from: Psn) {
        let d = from.diff(self.base);
        if d <= 0 {
            self.bits = 0;
        } else if d.unsigned_abs() < RESEND_SPAN {
            self.bits &= (1u128 << d.unsigned_abs()) - 1;
        }
        if self.far.is_some_and(|f| !f.before(from)) {
            self.far = None;
        }
    }

    /// Forgets the marks in `[first, end)`.
    fn clear_range(&mut self, first: Psn, end: Psn) {
        let mut p = if first.before(self.base) {
            self.base
        } else {
            first
        };
        while p.before(end) {
            let off = p.distance_from(self.base);
            if off >= RESEND_SPAN {
                break;
            }
            self.bits &= !(1u128 << off);
            p = p.next();
        }
        if self.far.is_some_and(|f| !f.before(first) && f.before(end)) {
            self.far = None;
        }
    }

    /// Takes the oldest marked PSN.
    fn take_first(&mut self) -> Option<Psn> {
        if self.bits != 0 {
            let i = self.bits.trailing_zeros();
            self.bits &= !(1u128 << i);
            return Some(self.base.add(i));
        }
        self.far.take()
    }

    const fn is_empty(&self) -> bool {
        self.bits == 0 && self.far.is_none()
    }
}

/// Selective-retransmission counters of a requester.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReqSrCounters {
    /// SACKs received.
    pub sacks_rcvd: u64,
    /// FNACKs received.
    pub fnacks_rcvd: u64,
    /// HOLE acknowledgments (MELO / SRNIC hole lists) received.
    pub holes_rcvd: u64,
    /// Packets resent one by one (the engine's ranges, not a go-back).
    pub selective_resent: u64,
}

/// A requester's selective-retransmission state (kept apart from the requester so the
/// kernel can hold it on the heap).
pub struct ReqSr {
    caps: RequesterCaps,
    engine: AnyEngine,
    /// The engine runs: the peer echoed the capability.
    active: bool,
    resend: ResendSet,
    /// Statistics.
    pub counters: ReqSrCounters,
}

impl ReqSr {
    /// The SR state of a requester whose first packet carries `sq_psn`: probing.
    pub fn new(setup: SrSetup, sq_psn: Psn) -> Self {
        ReqSr {
            caps: RequesterCaps::new(Some(setup.cap)),
            engine: AnyEngine::new(
                setup.scheme(),
                sq_psn,
                sq_psn,
                setup.rto,
                setup.srnic_delay_us,
            ),
            active: false,
            resend: ResendSet::new(sq_psn),
            counters: ReqSrCounters::default(),
        }
    }

    /// Where the capability exchange stands.
    pub const fn state(&self) -> RequesterState {
        self.caps.state()
    }

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

struct Sink<'a> {
    acts: &'a mut Acts,
    /// Standard mode (go-back-N engine) has no resend set: a range becomes a go-back.
    resend: Option<&'a mut ResendSet>,
}

impl Sink<'_> {
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

impl ActionSink for Sink<'_> {
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
}

impl<S: DerefMut<Target = [SqEntry]>, E: DerefMut<Target = ReqSr>> Requester<S, E> {
    /// UNACK: the first unacknowledged PSN.
    pub fn una(&self) -> Psn {
        match self.sr.as_deref() {
            Some(sr) if sr.active => sr.engine.una(),
            _ => self.engine.una(),
        }
    }

    /// The SR state, when the QP's device runs an SR scheme.
    pub fn sr(&self) -> Option<&ReqSr> {
        self.sr.as_deref()
    }

    /// The SR state, mutable (to release its shared resources).
    pub fn sr_mut(&mut self) -> Option<&mut ReqSr> {
        self.sr.as_deref_mut()
    }

    /// True once requests go out in the SR format.
    pub(super) fn sr_active(&self) -> bool {
        self.sr.as_deref().is_some_and(|s| s.active)
    }

    /// BTH TVer and Resv7 of the next request packet.
    pub(super) fn marks(&self) -> CapAnswer {
        match self.sr.as_deref() {
            Some(sr) => sr.caps.request_marks(),
            None => CapAnswer { tver: 0, resv7: 0 },
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
                    acts: &mut acts,
                    resend: Some(resend),
                };
                if !engine.on_requester_local(ev, &mut sink) {
                    env.with_shared(&mut |sh, _| engine.on_requester(sh, ev, &mut sink));
                }
            }
            _ => self.engine.on_requester(
                &mut (),
                ev,
                &mut Sink {
                    acts: &mut acts,
                    resend: None,
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
        counted: bool,
    ) -> Outcome {
        if let Some(una) = acts.acked {
            self.sample_rtt(env, una);
            self.backoff = 0;
            self.retries_left = cfg.retry_cnt;
            self.rnr_left = cfg.rnr_retry;
            self.retry_psn = None;
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.resend.advance(una);
            }
            self.retire(env, cfg);
        }
        if counted && (acts.go_back.is_some() || acts.resend) {
            if self.retries_left == 0 {
                self.counters.retry_exceeded += 1;
                return self.fail_entry(env, cfg, 0, crate::uabi::cqe::WcStatus::RetryExcErr);
            }
            self.retries_left -= 1;
            self.counters.retries += 1;
        }
        if let Some(from) = acts.go_back {
            self.retry_psn = Some(from);
            self.rtt_probe = None;
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
                let rto = self.rto_us(cfg).saturating_mul(1u64 << self.backoff);
                self.rto_deadline = Some(env.now_us().saturating_add(rto));
            }
            Some(None) => self.rto_deadline = None,
            _ => {}
        }
        Outcome::Ok
    }

    /// A response arrived with BTH `tver` and `resv7`: while probing it decides the format;
    /// on the peer's echo the scheme's engine takes over from UNACK, with what was already
    /// sent in flight.
    pub(super) fn on_caps(&mut self, tver: u8, resv7: u8) {
        let una = self.engine.una();
        let sent = self.sent_high;
        let Some(sr) = self.sr.as_deref_mut() else {
            return;
        };
        if sr.active {
            return;
        }
        if let RequesterState::Sr(_) = sr.caps.on_response(tver, resv7) {
            sr.engine.start_requester(una, sent);
            sr.resend = ResendSet::new(una);
            sr.active = true;
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

    /// Sends the PSNs the engine marked, oldest first.
    pub(super) fn resend_marked(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) -> Outcome {
        let marks = self.marks();
        loop {
            let Some(psn) = self.sr.as_deref_mut().and_then(|s| s.resend.take_first()) else {
                return Outcome::Ok;
            };
            // The entry holding it, among those already sent.
            let Some(i) = (0..self.next.saturating_add(1).min(self.len))
                .find(|&i| self.entry(i).is_some_and(|e| e.covers(psn)))
            else {
                continue;
            };
            let Some(e) = self.slots.get(self.idx(i)) else {
                continue;
            };
            let mut k = psn.distance_from(e.first_psn);
            if i == self.next && k >= self.next_pkt {
                // Not sent yet: the send cursor gets there.
                continue;
            }
            if e.is_rd_atomic() && e.complete {
                continue;
            }
            if let SendOp::RdmaRead { .. } = e.wqe.op {
                // One request asks for the rest of the READ: resume after what arrived.
                k = k.max(e.done_bytes / self.pmtu.get());
                let (first, end) = (e.first_psn, e.end_psn());
                if let Some(sr) = self.sr.as_deref_mut() {
                    sr.resend.clear_range(first, end);
                }
            }
            let Some(e) = self.slots.get(self.idx(i)) else {
                continue;
            };
            let sent =
                Self::send_packet(env, cfg, self.pmtu.get(), &mut self.noack_pkts, e, k, marks);
            let used = match sent {
                Ok((_, used)) => used,
                Err(status) => return self.fail_entry(env, cfg, i, status),
            };
            let at = e.first_psn.add(k);
            self.counters.resent_pkts += 1;
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.counters.selective_resent += 1;
            }
            let now = env.now_us();
            let acts = self.feed(
                env,
                ReqEvent::Sent {
                    psn: at.add(used.saturating_sub(1)),
                    now,
                },
            );
            if self.apply(env, cfg, acts, false) == Outcome::Error {
                return Outcome::Error;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resend_set_keeps_every_marked_psn_in_order() {
        let mut r = ResendSet::new(Psn::new(0xfffff0));
        r.mark(Psn::new(0xffffe0), 0x12); // Only 0xfffff0, 0xfffff1 are unacknowledged.
        r.mark(Psn::new(5), 2);
        r.mark(Psn::new(0xfffff0 + 200), 3); // Past the span: the earliest is kept.
        r.mark(Psn::new(0xfffff0 + 150), 1);
        let mut got = [0u32; 5];
        for g in &mut got {
            *g = r.take_first().unwrap().get();
        }
        assert_eq!(got, [0xfffff0, 0xfffff1, 5, 6, (0xfffff0 + 150) & 0xffffff]);
        assert!(r.is_empty());
    }

    #[test]
    fn advancing_and_clearing_forget_marks() {
        let mut r = ResendSet::new(Psn::new(10));
        r.mark(Psn::new(10), 20);
        r.advance(Psn::new(15));
        r.clear_range(Psn::new(16), Psn::new(18));
        r.clear_from(Psn::new(25));
        let mut got = [0u32; 8];
        for g in &mut got {
            *g = r.take_first().unwrap().get();
        }
        assert_eq!(got, [15, 18, 19, 20, 21, 22, 23, 24]);
        assert!(r.take_first().is_none());
    }
}
