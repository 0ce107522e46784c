// SPDX-License-Identifier: GPL-2.0
//! How the requester finds a lost resend, or a lost packet nothing after it shows lost,
//! before the retransmission timeout: the resend of UNACK watched against later SACKs and
//! READ responses and against a bound on the measured round trip; UNACK itself probed once
//! when it stayed unanswered for that bound (a tail loss); each READ repair watched until
//! its run's first response is placed. None of them spends a retry: only the
//! retransmission timeout and a sequence-error NAK do (selective.rs).

use core::ops::DerefMut;

use super::psn_set::PsnSet;
use super::ReqSr;
use super::Requester;
use super::SqEntry;
use crate::proto::psn::Psn;
use crate::proto::rc::{RcEnv, RcEvent};
use crate::proto::words::WindowWords;
use crate::uabi::send_wqe::SendOp;

/// The least time a resend of UNACK is given before it counts as lost, microseconds (the
/// kernel's timers fire on jiffies: 4 ms at HZ=250).
const PROBE_MIN_US: u64 = 4000;

/// Most doublings of the bound for a resend of UNACK when the probes before it were met
/// by silence (4 times the bound).
const MAX_PROBE_BACKOFF: u32 = 2;

/// UNACK and the start of the silence about it.
#[derive(Clone, Copy, Debug)]
struct UnaSince {
    psn: Psn,
    at: u64,
    /// UNACK was probed already: its resend is watched (`una_resend`) from then on.
    probed: bool,
}

/// READ repairs sent (requests asking again for a missing run of responses), each
/// watched until the probe bound after it went out: a run whose first response is still
/// missing then was lost, or its repair was. Two generations of PSN sets, not a time per
/// repair (the state stays small): `young` gathers the repairs sent since `young_since`;
/// a probe bound later it becomes `old`, due a probe bound after its last repair, and a
/// new `young` starts. A lost repair is found between one and two bounds after it went.
#[derive(Clone, Debug)]
pub(super) struct RepairWatch<B> {
    young: PsnSet<B>,
    young_since: u64,
    young_last: u64,
    old: PsnSet<B>,
    old_due: u64,
}

impl<B: WindowWords> RepairWatch<B> {
    /// Nothing watched, over the words `young` and `old` (zeroed), PSNs from `base` on.
    pub(super) const fn new(young: B, old: B, base: Psn) -> Self {
        RepairWatch {
            young: PsnSet::new(young, base),
            young_since: 0,
            young_last: 0,
            old: PsnSet::new(old, base),
            old_due: 0,
        }
    }

    /// Forgets every repair watched; PSNs from `base` on.
    pub(super) fn restart(&mut self, base: Psn) {
        self.young.restart(base);
        self.old.restart(base);
    }

    /// The repair of the run from `psn` went out at `now`.
    pub(super) fn sent(&mut self, psn: Psn, now: u64) {
        if self.young.is_empty() {
            self.young_since = now;
        }
        self.young.mark(psn, 1);
        self.young_last = now;
    }

    /// UNACK moved to `una`: what is before it was answered.
    pub(super) fn advance(&mut self, una: Psn) {
        self.young.advance(una);
        self.old.advance(una);
    }

    /// When the watch next has something to do, for probe bound `probe`.
    pub(super) fn deadline(&self, probe: u64) -> Option<u64> {
        if !self.old.is_empty() {
            Some(self.old_due)
        } else if !self.young.is_empty() {
            Some(self.young_since.saturating_add(probe))
        } else {
            None
        }
    }

    /// Whether repairs are due at `now` (sent at least `probe` before it): they are then
    /// the ones [`Self::take_due`] gives.
    pub(super) fn due(&mut self, now: u64, probe: u64) -> bool {
        if self.old.is_empty()
            && !self.young.is_empty()
            && self.young_since.saturating_add(probe) <= now
        {
            core::mem::swap(&mut self.old, &mut self.young);
            self.old_due = self.young_last.saturating_add(probe);
            self.young.restart(self.old.base());
        }
        !self.old.is_empty() && self.old_due <= now
    }

    /// Takes the oldest due repair (after [`Self::due`] said there are some).
    pub(super) fn take_due(&mut self) -> Option<Psn> {
        self.old.take_first()
    }

    /// Takes the oldest repair watched, due or not.
    pub(super) fn take_any(&mut self) -> Option<Psn> {
        self.old.take_first().or_else(|| self.young.take_first())
    }
}

/// A resend of UNACK, watched for its loss.
#[derive(Clone, Copy, Debug)]
pub(super) struct UnaResend {
    /// The PSN resent (UNACK when it went out, and while this is kept).
    pub(super) psn: Psn,
    /// Where new packets stood when it went out: every PSN from here on was first sent
    /// after it.
    pub(super) sent_high: Psn,
    /// When it went out.
    pub(super) sent_at: u64,
    /// When it counts as lost if still unanswered (none before a round trip was measured).
    pub(super) probe_at: Option<u64>,
}

/// The requester's watch for losses nothing after them shows, less its PSN sets (the PSNs
/// resent and the READ repairs watched, kept in [`ReqSr`] over its window's storage).
/// Meaningful in the SR format only.
#[derive(Clone, Copy, Debug)]
pub(super) struct LossProbe {
    /// The last resend of UNACK, watched for its loss until UNACK moves past it.
    pub(super) una_resend: Option<UnaResend>,
    /// Probes of this UNACK in a row with nothing heard since the one before: each
    /// doubles the bound of the next ([`MAX_PROBE_BACKOFF`] at most).
    silent_probes: u32,
    /// When the last probe (of UNACK, a stall or a silence) went.
    probed_at: u64,
    /// UNACK, and when the silence about it began: when UNACK last moved, or when its
    /// packet was sent by the send cursor if later. Probed once per UNACK.
    una_since: Option<UnaSince>,
    /// When the last response or acknowledgment of an outstanding PSN arrived.
    heard_at: u64,
    /// The round trip of a resend of UNACK, smoothed, and its mean deviation (RFC 6298),
    /// microseconds; 0 before a sample. A resend (a READ repair is served ahead of the
    /// responses queued at the responder) and UNACK itself (everything older answered)
    /// wait behind no queue of requests; the requester's RTT estimate measures a new
    /// READ's first response, behind up to max_rd_atomic READs' responses, and would make
    /// each probe nearly as late as the timeout.
    resend_srtt: u64,
    resend_rttvar: u64,
    /// The least round trip measured (of a new request or a resend), microseconds; 0
    /// before a sample. Nothing in flight is queued behind anything then.
    min_rtt: u64,
    /// The start of the silence last probed ([`Requester::silence_deadline`]).
    silence_probed: Option<u64>,
    /// The PSN the last probe of UNACK resent.
    last_probed: Option<Psn>,
}

impl LossProbe {
    /// Nothing watched.
    pub(super) const fn new() -> Self {
        LossProbe {
            una_resend: None,
            silent_probes: 0,
            probed_at: 0,
            una_since: None,
            heard_at: 0,
            resend_srtt: 0,
            resend_rttvar: 0,
            min_rtt: 0,
            silence_probed: None,
            last_probed: None,
        }
    }

    /// A round trip of `r` microseconds was measured.
    pub(super) fn note_rtt(&mut self, r: u64) {
        if self.min_rtt == 0 || r < self.min_rtt {
            self.min_rtt = r;
        }
    }

    /// UNACK moved to `una` at `now`.
    pub(super) fn advance(&mut self, una: Psn, now: u64) {
        if let Some(r) = self.una_resend.filter(|r| r.psn.before(una)) {
            self.una_resend = None;
            self.sample_resend_rtt(now.saturating_sub(r.sent_at).max(1));
        }
        self.silent_probes = 0;
        if !self.una_since.is_some_and(|u| u.psn == una) {
            self.una_since = Some(UnaSince {
                psn: una,
                at: now,
                probed: false,
            });
        }
    }
}

impl LossProbe {
    /// A resend of UNACK was answered `r` microseconds after it went out (the last resend:
    /// an answer to an earlier one reads short, and makes the next probe earlier only).
    fn sample_resend_rtt(&mut self, r: u64) {
        self.note_rtt(r);
        smooth_rtt(&mut self.resend_srtt, &mut self.resend_rttvar, r);
    }
}

/// RFC 6298: a round-trip sample `r` into the smoothed RTT `srtt` (0: none yet) and its
/// mean deviation `rttvar`, microseconds.
pub(super) fn smooth_rtt(srtt: &mut u64, rttvar: &mut u64, r: u64) {
    if *srtt == 0 {
        *srtt = r;
        *rttvar = r / 2;
    } else {
        let dev = srtt.abs_diff(r);
        *rttvar = (3 * *rttvar + dev) / 4;
        *srtt = (7 * *srtt + r) / 8;
    }
}

impl<S: DerefMut<Target = [SqEntry]>, B: WindowWords, E: DerefMut<Target = ReqSr<B>>>
    Requester<S, E>
{
    /// A SACK, or a READ response, arrived for `sack_psn`: if that is a packet first sent
    /// after the last resend of RCV-NXT, and RCV-NXT is still missing, that resend was lost
    /// (the path delivered what followed it): RCV-NXT is marked to go again now. Without
    /// this a lost resend of the hole at UNACK waits for the retransmission timeout (the
    /// QP's local ACK timeout: tens of milliseconds), unless the scheme sends an FNACK,
    /// which FaSR does only on its slow path. A resend reordered behind later packets is
    /// sent once more for nothing (the responder drops the duplicate).
    pub(super) fn check_lost_resend(&mut self, env: &mut dyn RcEnv, rcv_nxt: Psn, sack_psn: Psn) {
        let lost = self
            .probe
            .una_resend
            .filter(|r| r.psn == rcv_nxt && !sack_psn.before(r.sent_high));
        if let (Some(r), Some(sr)) = (lost, self.sr.as_deref_mut()) {
            self.probe.una_resend = None;
            sr.count(env, RcEvent::LostResend);
            sr.mark_una_again(r.psn);
        }
    }

    /// How long a resend (or UNACK) may go unanswered before it counts as lost: the round
    /// trip of resends of UNACK (the requester's round trip until one was answered) and
    /// four deviations, at least twice the round trip and [`PROBE_MIN_US`]; none before a
    /// round trip was measured.
    pub(super) fn probe_us(&self) -> Option<u64> {
        let (srtt, rttvar) = match self.probe.resend_srtt {
            0 => self.rtt_us(),
            s => (s, self.probe.resend_rttvar),
        };
        (srtt != 0).then(|| {
            srtt.saturating_add(4 * rttvar)
                .max(2 * srtt)
                .max(PROBE_MIN_US)
        })
    }

    /// The bound for the resend of UNACK going out now: [`Self::probe_us`], doubled for
    /// each probe in a row that nothing answered before the next one (at most
    /// [`MAX_PROBE_BACKOFF`] times; back to once when anything is heard or UNACK moves).
    ///
    /// Choice (Karn's backoff, for the probes): a probe met by silence says the path or the
    /// responder is slower than the bound, not that the resend was lost (evidence of that,
    /// a later packet SACKed or answered, resends at once: `check_lost_resend`). Probes
    /// firing on at the bound at a busy responder resent faster than it drained, until the
    /// QP died of retransmission timeouts.
    pub(super) fn una_probe_us(&self) -> Option<u64> {
        let shift = self.probe.silent_probes;
        self.probe_us().map(|t| t.saturating_mul(1u64 << shift))
    }

    /// A probe fired at `now`: one more in a row met by silence if nothing was heard since
    /// the last one.
    fn note_probe(&mut self, now: u64) {
        let p = &mut self.probe;
        if p.probed_at != 0 && p.heard_at < p.probed_at {
            p.silent_probes = p.silent_probes.saturating_add(1).min(MAX_PROBE_BACKOFF);
        } else {
            p.silent_probes = 0;
        }
        p.probed_at = now;
    }

    /// The earliest probe due: the resend of UNACK counting as lost if still unanswered
    /// (with none watched, UNACK itself: [`Self::stall_probe_deadline`]), a READ repair
    /// watched, or a silence ([`Self::silence_deadline`]).
    pub(super) fn probe_deadline(&self) -> Option<u64> {
        if !self.sr_active() {
            return None;
        }
        let una = match self.probe.una_resend {
            Some(r) => r.probe_at,
            None => self.stall_probe_deadline(),
        };
        let repairs = self
            .probe_us()
            .zip(self.sr.as_deref())
            .and_then(|(t, sr)| sr.repairs.deadline(t));
        [una, repairs, self.silence_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    /// When nothing has come back since the silence began (the last response, or UNACK's
    /// last move or send by the cursor, whichever is later) for twice the least round trip
    /// measured (at least [`PROBE_MIN_US`]) and the time the path takes to deliver what
    /// was sent past UNACK ([`Self::drain_us`]): the pipe drained, and what is outstanding
    /// was lost. Once per silence.
    ///
    /// Choice: once the repair of a READ response is lost, the READs after it are answered
    /// (each keeps its max_rd_atomic place, recount_rd_atomic) and then nothing more comes.
    /// The probe bound for a resend is set by round trips queued behind READs' responses,
    /// while an empty pipe answers in about the least round trip.
    fn silence_deadline(&self) -> Option<u64> {
        if !self.sr_active()
            || self.probe.min_rtt == 0
            || !self.una().before(self.sent_high)
            || self.rnr_deadline.is_some()
            || self.busy_deadline.is_some()
        {
            return None;
        }
        let start = self.silence_start();
        if self.probe.silence_probed == Some(start) {
            return None;
        }
        let bound = (2 * self.probe.min_rtt).max(PROBE_MIN_US);
        Some(start.saturating_add(bound).saturating_add(self.drain_us()))
    }

    /// When the silence began: the last response, or UNACK's last move or send by the
    /// cursor, whichever is later.
    fn silence_start(&self) -> u64 {
        match self.probe.una_since {
            Some(u) if u.psn == self.una() => u.at.max(self.probe.heard_at),
            _ => self.probe.heard_at,
        }
    }

    /// The silence deadline passed: UNACK goes again, and every READ repair watched whose
    /// run is still missing. No retry is spent.
    fn on_silence(&mut self, env: &mut dyn RcEnv, now: u64) {
        self.note_probe(now);
        let una = self.una();
        self.probe.silence_probed = Some(self.silence_start());
        // UNACK is probed here: not again by the stall probe.
        if let Some(u) = self.probe.una_since.as_mut().filter(|u| u.psn == una) {
            u.probed = true;
        }
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.count(env, RcEvent::StallProbe);
        }
        self.resend_una();
        self.ask_again_if_missing(env, RepairWatch::take_any);
    }

    /// Marks UNACK for resending (no RTT sample across it), with what the scheme's
    /// responder dropped behind a lost resend of it ([`ReqSr::mark_una_again`]); or, when
    /// the probe before this one was answered by UNACK moving just past it and nothing
    /// after ([`Self::dropped_after_probe`]), goes back to UNACK.
    ///
    /// Choice: a probe asks for UNACK's run only, never for the READs and atomics after it
    /// that have no response yet: those may be queued at the responder rather than lost,
    /// and asking for them all again had it serve the whole window at every probe until
    /// the QP died of retransmission timeouts. Were they dropped behind a lost request at
    /// UNACK, its sequence-error NAK, or failing that a stall probe of their own once UNACK
    /// reaches them, has them sent again.
    fn resend_una(&mut self) {
        self.rtt_probe = None;
        let una = self.una();
        let go_back = self.dropped_after_probe(una);
        self.probe.last_probed = Some(una);
        let Some(sr) = self.sr.as_deref_mut().filter(|s| s.active) else {
            return;
        };
        if go_back {
            sr.resend.clear_from(una);
            self.rewind(una);
        } else {
            sr.mark_una_again(una);
        }
    }

    /// Whether the responder dropped, unrecorded, what follows UNACK: the last probe resent
    /// the PSN before it and was answered by UNACK moving just past that one, and UNACK, of
    /// a message that takes a receive WQE (a SEND), sent before that probe, has gone
    /// unanswered since for a probe bound. A responder holding later PSNs would have
    /// answered them, or shown UNACK missing; this one holds none: SENDs dropped for want
    /// of a receive WQE behind a lost RNR NAK, whose go-back never came. Probing them one
    /// a bound each crawled.
    fn dropped_after_probe(&self, una: Psn) -> bool {
        self.probe.last_probed.is_some_and(|p| p.next() == una)
            && una.before(self.sent_high)
            && self
                .find(una)
                .and_then(|i| self.entry(i))
                .is_some_and(SqEntry::consumes_recv)
    }

    /// Whether READ response `psn` is still missing: its READ sent and unanswered, and
    /// `psn` neither placed nor before the READ's first missing response.
    fn read_response_missing(&self, psn: Psn) -> bool {
        let Some(e) = self.find(psn).and_then(|i| self.entry(i)) else {
            return false;
        };
        let frontier = e.first_psn.add(e.done_bytes / self.pmtu.get());
        matches!(e.wqe.op, SendOp::RdmaRead { .. })
            && !e.complete
            && !psn.before(frontier)
            && !psn.before(self.una())
            && self
                .sr
                .as_deref()
                .is_some_and(|sr| !sr.read_placed.contains(psn))
    }

    /// READ repairs whose probe bound passed: the ones still missing are asked for again
    /// (spending no retry; the resend is watched anew).
    fn on_repair_deadline(&mut self, env: &mut dyn RcEnv, now: u64) {
        let Some(probe) = self.probe_us() else {
            return;
        };
        if self
            .sr
            .as_deref_mut()
            .is_some_and(|sr| sr.repairs.due(now, probe))
        {
            self.ask_again_if_missing(env, RepairWatch::take_due);
        }
    }

    /// Marks for resending each repair `take` takes from the watch whose run is still
    /// missing (a lost resend each).
    fn ask_again_if_missing(
        &mut self,
        env: &mut dyn RcEnv,
        take: fn(&mut RepairWatch<B>) -> Option<Psn>,
    ) {
        while let Some(psn) = self.sr.as_deref_mut().and_then(|sr| take(&mut sr.repairs)) {
            if !self.read_response_missing(psn) {
                continue;
            }
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.count(env, RcEvent::LostResend);
                sr.resend.mark(psn, 1);
            }
        }
    }

    /// A response or acknowledgment of an outstanding PSN arrived at `now`.
    pub(super) fn note_heard(&mut self, now: u64) {
        self.probe.heard_at = now;
    }

    /// A packet is sent at UNACK by the send cursor (first sent, or gone back to after a
    /// timeout or an RNR NAK): the silence about it starts now.
    pub(super) fn note_una_sent(&mut self, psn: Psn, now: u64) {
        if psn != self.una() {
            return;
        }
        self.probe.una_since = Some(UnaSince {
            psn,
            at: now,
            probed: false,
        });
    }

    /// SR format: when UNACK, sent and not resent, counts as lost if nothing has answered
    /// it: the probe bound and the path's time to deliver what was sent past UNACK
    /// ([`Self::drain_us`]) after UNACK last moved (or was first sent, if later). Once per
    /// UNACK; not while an RNR NAK or a full egress queue holds sending back.
    ///
    /// Choice (a tail-loss probe; the papers leave timeouts to the transport): the SR
    /// engines see a loss by what arrives after it, so a loss with nothing after it, or
    /// with what showed it lost too, would wait for the retransmission timeout, many round
    /// trips long. A responder that only paused is sent one duplicate, which it drops or
    /// answers again.
    fn stall_probe_deadline(&self) -> Option<u64> {
        if !self.sr_active() {
            return None;
        }
        let u = self
            .probe
            .una_since
            .filter(|u| !u.probed && u.psn == self.una())?;
        if !u.psn.before(self.sent_high)
            || self.rnr_deadline.is_some()
            || self.busy_deadline.is_some()
        {
            return None;
        }
        Some(
            u.at.saturating_add(self.probe_us()?)
                .saturating_add(self.drain_us()),
        )
    }

    /// How long the path takes to deliver the PSNs sent past UNACK, at the rate it was
    /// measured at. Sent in a burst, the last of them (a message's packets ask for an
    /// acknowledgment only at its end) is answered no sooner, however short the round
    /// trip of an empty path.
    fn drain_us(&self) -> u64 {
        let out = u32::try_from(self.sent_high.diff(self.una())).unwrap_or(0);
        self.path.drain_us(out)
    }

    /// The probe deadline passed. If UNACK is still the PSN resent, that resend was lost
    /// (or its acknowledgment was): UNACK is marked to go again, without spending a retry
    /// (the retransmission timeout, which does, runs on as before). A window so full that
    /// no new packet follows the resend leaves no SACK to show its loss; this does.
    /// If UNACK went unanswered since it last moved ([`Self::stall_probe_deadline`]), it is
    /// marked the same way, without spending a retry. Either way UNACK's run alone goes
    /// ([`Self::resend_una`]).
    pub(super) fn on_probe_deadline(&mut self, env: &mut dyn RcEnv, now: u64) {
        if !self.sr_active() {
            return;
        }
        if self.silence_deadline().is_some_and(|d| d <= now) {
            self.on_silence(env, now);
        }
        self.on_repair_deadline(env, now);
        if let Some(r) = self.probe.una_resend {
            let due = r.probe_at.is_some_and(|d| d <= now);
            if !due {
                return;
            }
            self.probe.una_resend = None;
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.count(env, RcEvent::LostResend);
            }
        } else if self.stall_probe_deadline().is_some_and(|d| d <= now) {
            if let Some(u) = self.probe.una_since.as_mut() {
                u.probed = true;
            }
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.count(env, RcEvent::StallProbe);
            }
        } else {
            return;
        }
        self.note_probe(now);
        self.resend_una();
    }
}
