// SPDX-License-Identifier: GPL-2.0
//! Sans-IO loss-recovery engines behind one trait, [`Recovery`].
//!
//! An engine is the per-QP loss-recovery state of one RC queue pair, in the quinn-proto /
//! smoltcp manner: the transport feeds it [`ReqEvent`]s (requester side: a packet was sent,
//! feedback arrived, a timer fired) and [`RespEvent`]s (responder side: a request packet
//! arrived, a timer fired), and the engine answers with [`Action`]s pushed into an
//! [`ActionSink`] (deliver/place, send ACK/SACK/NAK/FNACK, retransmit PSNs, go back N,
//! arm/disarm timers, fall back to GBN). It never touches an skb, a lock or a clock: time
//! is the `now` tick carried by every event, timers are actions. The events it counts go
//! into its [`Counters`] and, as they are counted, to the sink ([`ActionSink::counted`]).
//!
//! The requester and responder sides are split as in the papers; one engine object holds
//! both, because an RC QP is a requester for its own sends and a responder for its peer's.
//! Engines that share memory among all QPs of a device (FaSR's SR pool, MELO's bits pool)
//! name it as [`Recovery::Shared`]; the transport owns one per device and lends it to every
//! call.
//!
//! Schemes: [`gbn`] (rdma_rxe), [`irn`] (per-QP BDP bitmaps), [`fasr`] (the headline
//! scheme), [`srnic`] (bitmap onloading), [`melo`] (shared bits pool); [`any`] holds
//! one enum over them for a device whose scheme is picked at load time; [`scheme`] names
//! them for the `recovery=` parameter.

pub mod any;
pub mod fasr;
pub mod gbn;
pub mod irn;
pub mod melo;
pub mod scheme;
pub mod srnic;

use crate::proto::psn::Psn;

/// The timers an engine may arm. Each QP side has at most one pending deadline per timer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Timer {
    /// Requester retransmission timeout (RTO).
    Rto,
    /// Responder: SRNIC's slow-path (software) consumer finishes its next queued entry.
    SlowPath,
}

/// A hole in the receiver's sequence space: `count` PSNs starting at `first`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Hole {
    /// First missing PSN.
    pub first: Psn,
    /// Number of consecutive missing PSNs (0 means "no hole": an unused slot).
    pub count: u32,
}

/// Feedback a responder sends to its requester (the ACK-path packets).
///
/// Every variant carries `rcv_nxt`, the responder's cumulative acknowledgement: every PSN
/// before it has been received (IBTA's ePSN / the papers' RCV-NXT).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Feedback {
    /// Plain cumulative ACK. When sent because the bitmap advanced RCV-NXT after a
    /// retransmission filled a hole, FaSR calls it AACK.
    Ack {
        /// The responder's RCV-NXT (ePSN).
        rcv_nxt: Psn,
    },
    /// Selective ACK (IRN NACK / FaSR SACK): the out-of-order packets `run_from ..=
    /// sack_psn` arrived (an engine SACKs one packet, `run_from == sack_psn`; FaSR's
    /// responder coalesces the SACKs of a contiguous run into the last one).
    ///
    /// On the wire (`wire::sr_ext::SrAckEth`, kind SACK): BTH PSN = `rcv_nxt`, SackHigh =
    /// `sack_psn`, TriggerPSN = `run_from`. FaSR SACKs a packet beyond its sack-high (or a
    /// duplicate below it), so for FaSR `sack_psn` is then also the responder's new
    /// sack-high.
    Sack {
        /// The responder's RCV-NXT.
        rcv_nxt: Psn,
        /// PSN of the (last) out-of-order packet this SACK reports.
        sack_psn: Psn,
        /// The first PSN of the run this SACK reports (`sack_psn` for one packet).
        run_from: Psn,
        /// FaSR: the responder's 3-bit lost-cnt (number of PSNs it believes lost).
        lost_cnt: u8,
        /// FaSR: lost-cnt overflowed (carried in an unused op-type value on the wire).
        overflow: bool,
    },
    /// IBTA NAK with syndrome "PSN sequence error": resend from `rcv_nxt` (go-back-N).
    Nak {
        /// The responder's RCV-NXT, the first PSN to resend.
        rcv_nxt: Psn,
    },
    /// FaSR FNACK: `psn` (between RCV-NXT and sack-high) arrived while RCV-NXT is still
    /// missing, so a retransmission was lost; the requester resends RCV-NXT early (the
    /// paper: runs its RTO action early).
    Fnack {
        /// The responder's RCV-NXT.
        rcv_nxt: Psn,
        /// The PSN of the packet that showed the loss (kept by the responder).
        psn: Psn,
    },
    /// MELO NACK / SRNIC software NAK: up to three holes, most recent first.
    Holes {
        /// The responder's RCV-NXT.
        rcv_nxt: Psn,
        /// Holes; unused slots have `count == 0`.
        holes: [Hole; 3],
    },
}

impl Feedback {
    /// The cumulative acknowledgement every feedback packet carries.
    pub const fn rcv_nxt(&self) -> Psn {
        match *self {
            Feedback::Ack { rcv_nxt }
            | Feedback::Sack { rcv_nxt, .. }
            | Feedback::Nak { rcv_nxt }
            | Feedback::Fnack { rcv_nxt, .. }
            | Feedback::Holes { rcv_nxt, .. } => rcv_nxt,
        }
    }
}

/// What an engine asks the transport to do.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Action {
    /// Responder: place this packet's payload at its target (in order or out of order).
    /// Emitted exactly once per PSN.
    Deliver {
        /// The placed packet's PSN.
        psn: Psn,
    },
    /// Responder: discard this packet (duplicate, or not recordable).
    Drop {
        /// The discarded packet's PSN.
        psn: Psn,
    },
    /// Responder: every PSN before `rcv_nxt` has been placed; complete the messages that
    /// end before it, in order.
    Advance {
        /// The new RCV-NXT.
        rcv_nxt: Psn,
    },
    /// Responder: send this feedback packet to the requester.
    Send(Feedback),
    /// Requester: every PSN before `una` is acknowledged; complete and free those WQEs.
    Acked {
        /// The new UNACK (first unacknowledged PSN).
        una: Psn,
    },
    /// Requester: retransmit the `count` PSNs starting at `first`.
    Retransmit {
        /// First PSN to resend.
        first: Psn,
        /// Number of PSNs.
        count: u32,
    },
    /// Requester: go back N: resend everything from `from` onward, in order.
    GoBack {
        /// First PSN to resend.
        from: Psn,
    },
    /// Arm (or re-arm) `timer` to fire at tick `deadline`.
    ArmTimer {
        /// Which timer.
        timer: Timer,
        /// Absolute deadline in the caller's ticks.
        deadline: u64,
    },
    /// Cancel `timer`.
    DisarmTimer {
        /// Which timer.
        timer: Timer,
    },
    /// This QP side left selective repeat for go-back-N until its current loss recovery
    /// completes (SR pool exhausted).
    Fallback,
}

/// An event an engine counts in its [`Counters`], told to its sink as it is counted
/// ([`ActionSink::counted`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EngineEvent {
    /// An SR operation done without a bitmap ([`Counters::fast_path`]).
    FastPath,
    /// An SR operation that needed a bitmap or SRNIC's slow path ([`Counters::slow_path`]).
    SlowPath,
    /// A QP side fell back to go-back-N ([`Counters::gbn_fallbacks`]).
    GbnFallback,
    /// FaSR: the responder's lost-cnt overflowed ([`Counters::lost_cnt_overflows`]).
    LostCntOverflow,
    /// SRNIC: the slow path served an entry ([`Counters::onload_served`]).
    OnloadServed,
    /// SRNIC: ticks a served entry waited ([`Counters::onload_delay_total`]).
    OnloadDelay,
    /// SRNIC: the onload queue reached a new peak ([`Counters::onload_queue_peak`]).
    OnloadQueuePeak,
}

/// Where engines put their actions: a callback, a fixed buffer, a ring, ...
pub trait ActionSink {
    /// Takes one action.
    fn push(&mut self, action: Action);

    /// The engine just added `n` to the counter of `ev` ([`EngineEvent::OnloadQueuePeak`]:
    /// raised it to the new peak `n`). A sink that reports no counts ignores it.
    fn counted(&mut self, _ev: EngineEvent, _n: u64) {}
}

impl<F: FnMut(Action)> ActionSink for F {
    fn push(&mut self, action: Action) {
        self(action)
    }
}

/// Requester-side inputs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReqEvent {
    /// The transport put request packet `psn` on the wire (first transmission or not).
    Sent {
        /// The PSN sent.
        psn: Psn,
        /// Current tick.
        now: u64,
    },
    /// A feedback packet (ACK/SACK/NAK/FNACK/...) arrived from the responder.
    Feedback {
        /// The feedback.
        fb: Feedback,
        /// Current tick.
        now: u64,
    },
    /// A timer armed by this side fired.
    Timer {
        /// Which timer.
        timer: Timer,
        /// Current tick.
        now: u64,
    },
}

/// Responder-side inputs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RespEvent {
    /// A request packet with `psn` arrived and passed header checks.
    Data {
        /// Its PSN.
        psn: Psn,
        /// Current tick.
        now: u64,
    },
    /// A timer armed by this side fired.
    Timer {
        /// Which timer.
        timer: Timer,
        /// Current tick.
        now: u64,
    },
}

/// Retransmission timeout parameters (IRN's RTO_low / RTO_high, in the caller's ticks).
///
/// IRN uses RTO_low while at most `n_low` packets are in flight (too few packets remain to
/// trigger a SACK) and RTO_high otherwise. FaSR does not give its RTO value; it builds on
/// IRN's SR state, so it takes the same pair. GBN uses `rto_high` only.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RtoConfig {
    /// Short timeout, used when few packets are in flight.
    pub rto_low: u64,
    /// Long timeout.
    pub rto_high: u64,
    /// In-flight threshold (IRN's N, 3 by default) at or below which `rto_low` applies.
    pub n_low: u32,
}

impl RtoConfig {
    /// The timeout for `in_flight` outstanding packets.
    pub const fn rto(&self, in_flight: u32) -> u64 {
        if in_flight <= self.n_low {
            self.rto_low
        } else {
            self.rto_high
        }
    }
}

/// Event counters an engine keeps (exported by the transport as `rdma statistic` values).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Counters {
    /// SR operations (an out-of-order or retransmitted packet handled by the responder, a
    /// SACK or timeout handled by the requester) done without touching a bitmap.
    pub fast_path: u64,
    /// SR operations that needed a bitmap (or, for SRNIC, the software slow path).
    pub slow_path: u64,
    /// Times a QP side fell back to go-back-N (SR pool exhausted).
    pub gbn_fallbacks: u64,
    /// PSNs the requester asked to retransmit (ranges and go-back-N both counted by the
    /// transport when it actually resends; this counts PSNs named in `Retransmit`).
    pub retransmit_psns: u64,
    /// `GoBack` actions issued.
    pub go_backs: u64,
    /// Retransmission timeouts that fired with data outstanding.
    pub rto_fired: u64,
    /// FNACKs sent by the responder.
    pub fnacks_sent: u64,
    /// FNACKs the requester acted on (at most one per new ACK).
    pub fnacks_answered: u64,
    /// SACK / NACK / hole-list feedback sent.
    pub sacks_sent: u64,
    /// NAK-sequence-error feedback sent.
    pub naks_sent: u64,
    /// Packets the responder discarded.
    pub drops: u64,
    /// FaSR: times the responder's 3-bit lost-cnt overflowed.
    pub lost_cnt_overflows: u64,
    /// SRNIC: entries the slow path (bitmap onloading) served.
    pub onload_served: u64,
    /// SRNIC: ticks those entries waited in the onload queue, in all.
    pub onload_delay_total: u64,
    /// SRNIC: most entries in the onload queue at once.
    pub onload_queue_peak: u64,
}

impl Counters {
    /// All counters at zero (usable in `const fn` constructors).
    pub const ZERO: Counters = Counters {
        fast_path: 0,
        slow_path: 0,
        gbn_fallbacks: 0,
        retransmit_psns: 0,
        go_backs: 0,
        rto_fired: 0,
        fnacks_sent: 0,
        fnacks_answered: 0,
        sacks_sent: 0,
        naks_sent: 0,
        drops: 0,
        lost_cnt_overflows: 0,
        onload_served: 0,
        onload_delay_total: 0,
        onload_queue_peak: 0,
    };

    #[cfg_attr(MODULE, expect(dead_code, reason = "the simulator"))]
    /// Adds `other` into `self` (saturating).
    pub fn accumulate(&mut self, other: &Counters) {
        self.fast_path = self.fast_path.saturating_add(other.fast_path);
        self.slow_path = self.slow_path.saturating_add(other.slow_path);
        self.gbn_fallbacks = self.gbn_fallbacks.saturating_add(other.gbn_fallbacks);
        self.retransmit_psns = self.retransmit_psns.saturating_add(other.retransmit_psns);
        self.go_backs = self.go_backs.saturating_add(other.go_backs);
        self.rto_fired = self.rto_fired.saturating_add(other.rto_fired);
        self.fnacks_sent = self.fnacks_sent.saturating_add(other.fnacks_sent);
        self.fnacks_answered = self.fnacks_answered.saturating_add(other.fnacks_answered);
        self.sacks_sent = self.sacks_sent.saturating_add(other.sacks_sent);
        self.naks_sent = self.naks_sent.saturating_add(other.naks_sent);
        self.drops = self.drops.saturating_add(other.drops);
        self.lost_cnt_overflows = self
            .lost_cnt_overflows
            .saturating_add(other.lost_cnt_overflows);
        self.onload_served = self.onload_served.saturating_add(other.onload_served);
        self.onload_delay_total = self
            .onload_delay_total
            .saturating_add(other.onload_delay_total);
        self.onload_queue_peak = self.onload_queue_peak.max(other.onload_queue_peak);
    }
}

/// One QP's loss-recovery engine: both the requester and the responder side.
pub trait Recovery {
    /// Per-device state shared by all QPs of this scheme (`()` when there is none; a
    /// pool's object-safe interface when there is one).
    type Shared: ?Sized;

    /// Handles a requester-side event.
    fn on_requester(&mut self, shared: &mut Self::Shared, ev: ReqEvent, out: &mut dyn ActionSink);

    /// Handles a responder-side event.
    fn on_responder(&mut self, shared: &mut Self::Shared, ev: RespEvent, out: &mut dyn ActionSink);

    /// Releases every shared resource this QP holds (QP destroyed or reset).
    fn release(&mut self, shared: &mut Self::Shared);

    /// The event counters.
    fn counters(&self) -> &Counters;
}

/// Small helpers shared by the engines.
pub(crate) mod util {
    use super::{Action, ActionSink, Counters, EngineEvent, Feedback, RtoConfig, Timer};
    use crate::proto::psn::Psn;
    use crate::proto::words::WindowWords;

    /// The requester state every scheme keeps in the QPC: UNACK, the next new PSN and
    /// whether the RTO is armed.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct ReqBase {
        /// First unacknowledged PSN (UNACK / IBTA's "oldest outstanding").
        pub(crate) una: Psn,
        /// One past the highest PSN ever sent.
        pub(crate) snd_nxt: Psn,
        /// The RTO timer is pending.
        pub(crate) rto_armed: bool,
    }

    impl ReqBase {
        pub(crate) const fn new(ipsn: Psn) -> Self {
            ReqBase {
                una: ipsn,
                snd_nxt: ipsn,
                rto_armed: false,
            }
        }

        /// Takes over a requester mid-stream at UNACK `una` with `snd_nxt` sent: the
        /// retransmission timer that the previous engine armed for what is in flight counts
        /// as this engine's (it restarts or disarms it as UNACK moves; left to itself, that
        /// timer fired after everything was acknowledged and counted a timeout).
        pub(crate) fn start(&mut self, una: Psn, snd_nxt: Psn) {
            self.una = una;
            self.snd_nxt = snd_nxt;
            self.rto_armed = una.before(snd_nxt);
        }

        /// PSNs outstanding.
        pub(crate) fn in_flight(&self) -> u32 {
            span(self.una, self.snd_nxt)
        }

        /// True when `psn` is outstanding (in `[una, snd_nxt)`).
        pub(crate) fn outstanding(&self, psn: Psn) -> bool {
            !psn.before(self.una) && psn.before(self.snd_nxt)
        }

        /// A packet went out: track the send frontier, arm the RTO if idle.
        pub(crate) fn on_sent(
            &mut self,
            psn: Psn,
            now: u64,
            rto: &RtoConfig,
            out: &mut dyn ActionSink,
        ) {
            // Only a PSN at most a window ahead can be new; anything else is a resend.
            if !psn.before(self.snd_nxt) {
                self.snd_nxt = psn.next();
            }
            if !self.rto_armed {
                self.rto_armed = true;
                arm(out, Timer::Rto, now, rto.rto(self.in_flight()));
            }
        }

        /// A cumulative acknowledgement `rcv_nxt` arrived. Returns true when UNACK moved.
        pub(crate) fn on_cum_ack(
            &mut self,
            rcv_nxt: Psn,
            now: u64,
            rto: &RtoConfig,
            out: &mut dyn ActionSink,
        ) -> bool {
            if !rcv_nxt.after(self.una) || rcv_nxt.after(self.snd_nxt) {
                return false;
            }
            self.una = rcv_nxt;
            out.push(Action::Acked { una: rcv_nxt });
            self.restart_rto(now, rto, out);
            true
        }

        /// Re-arms the RTO from `now` when data is outstanding, else disarms it.
        pub(crate) fn restart_rto(&mut self, now: u64, rto: &RtoConfig, out: &mut dyn ActionSink) {
            if self.una == self.snd_nxt {
                if self.rto_armed {
                    self.rto_armed = false;
                    out.push(Action::DisarmTimer { timer: Timer::Rto });
                }
            } else {
                self.rto_armed = true;
                arm(out, Timer::Rto, now, rto.rto(self.in_flight()));
            }
        }
    }

    /// A per-QP bitmap of `words.len() * 64` PSNs starting at `base`, kept as a ring so
    /// moving the base is O(distance moved).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct RingBits<B> {
        words: B,
        /// PSN of the bit at `head`.
        pub(crate) base: Psn,
        head: u32,
    }

    impl<B: WindowWords> RingBits<B> {
        /// A clear bitmap over the `words` (zeroed) from `base`.
        pub(crate) const fn new(words: B, base: Psn) -> Self {
            RingBits {
                words,
                base,
                head: 0,
            }
        }

        /// PSNs the bitmap covers.
        pub(crate) fn cap(&self) -> u32 {
            u32::try_from(self.words.len().saturating_mul(64)).unwrap_or(u32::MAX)
        }

        fn slot(&self, psn: Psn) -> Option<(usize, u32)> {
            let off = psn.diff(self.base);
            let cap = self.cap();
            if off < 0 || off.unsigned_abs() >= cap {
                return None;
            }
            let i = (self.head + off.unsigned_abs()) % cap;
            Some(((i / 64) as usize, i % 64))
        }

        /// True when `psn` lies in the window.
        pub(crate) fn covers(&self, psn: Psn) -> bool {
            self.slot(psn).is_some()
        }

        /// Sets the bit of `psn`; false when outside the window.
        pub(crate) fn set(&mut self, psn: Psn) -> bool {
            match self.slot(psn) {
                Some((w, b)) => match self.words.get_mut(w) {
                    Some(x) => {
                        *x |= 1u64 << b;
                        true
                    }
                    None => false,
                },
                None => false,
            }
        }

        /// The bit of `psn` (false outside the window).
        pub(crate) fn get(&self, psn: Psn) -> bool {
            self.slot(psn)
                .and_then(|(w, b)| self.words.get(w).map(|x| x & (1u64 << b) != 0))
                .unwrap_or(false)
        }

        /// Moves the base forward to `to`, clearing the bits passed.
        pub(crate) fn advance_to(&mut self, to: Psn) {
            let n = span(self.base, to);
            let cap = self.cap();
            if n >= cap {
                self.words.fill(0);
                self.head = 0;
            } else {
                for _ in 0..n {
                    if let Some((w, b)) = self.slot(self.base) {
                        if let Some(x) = self.words.get_mut(w) {
                            *x &= !(1u64 << b);
                        }
                    }
                    self.head = (self.head + 1) % cap;
                    self.base = self.base.next();
                }
            }
            self.base = to;
        }

        /// Clears every bit.
        pub(crate) fn clear(&mut self, base: Psn) {
            self.words.fill(0);
            self.head = 0;
            self.base = base;
        }

        /// Calls `f(first, count)` for each run of clear bits in `[from, to)` (clipped to
        /// the window).
        pub(crate) fn zeros(&self, from: Psn, to: Psn, f: &mut dyn FnMut(Psn, u32)) {
            let mut p = from;
            let mut start = from;
            let mut len = 0u32;
            let mut n = span(from, to).min(self.cap());
            while n > 0 {
                if self.get(p) {
                    if len > 0 {
                        f(start, len);
                        len = 0;
                    }
                } else {
                    if len == 0 {
                        start = p;
                    }
                    len += 1;
                }
                p = p.next();
                n -= 1;
            }
            if len > 0 {
                f(start, len);
            }
        }
    }

    /// Number of PSNs in `[from, to)` when `to` is not before `from`, else 0.
    pub(crate) fn span(from: Psn, to: Psn) -> u32 {
        let d = to.diff(from);
        if d > 0 {
            d.unsigned_abs()
        } else {
            0
        }
    }

    /// Adds `n` of `ev` to the engine's counters `c` (a peak: raises it to `n`) and tells
    /// `out` what they took, in one place so the two never differ.
    pub(crate) fn count(out: &mut dyn ActionSink, c: &mut Counters, ev: EngineEvent, n: u64) {
        let field = match ev {
            EngineEvent::FastPath => &mut c.fast_path,
            EngineEvent::SlowPath => &mut c.slow_path,
            EngineEvent::GbnFallback => &mut c.gbn_fallbacks,
            EngineEvent::LostCntOverflow => &mut c.lost_cnt_overflows,
            EngineEvent::OnloadServed => &mut c.onload_served,
            EngineEvent::OnloadDelay => &mut c.onload_delay_total,
            EngineEvent::OnloadQueuePeak => &mut c.onload_queue_peak,
        };
        let old = *field;
        if ev == EngineEvent::OnloadQueuePeak {
            if n > old {
                *field = n;
                out.counted(ev, n);
            }
            return;
        }
        *field = old.saturating_add(n);
        if *field > old {
            out.counted(ev, *field - old);
        }
    }

    /// Pushes `Send(fb)` and counts it.
    pub(crate) fn send(out: &mut dyn ActionSink, c: &mut Counters, fb: Feedback) {
        match fb {
            Feedback::Sack { .. } | Feedback::Holes { .. } => {
                c.sacks_sent = c.sacks_sent.saturating_add(1)
            }
            Feedback::Nak { .. } => c.naks_sent = c.naks_sent.saturating_add(1),
            Feedback::Fnack { .. } => c.fnacks_sent = c.fnacks_sent.saturating_add(1),
            Feedback::Ack { .. } => {}
        }
        out.push(Action::Send(fb));
    }

    /// Sends and counts an ACK of everything before `rcv_nxt`.
    pub(crate) fn send_ack(out: &mut dyn ActionSink, c: &mut Counters, rcv_nxt: Psn) {
        send(out, c, Feedback::Ack { rcv_nxt });
    }

    /// Sends and counts a sequence-error NAK for `rcv_nxt`, unless one went since the
    /// responder last advanced (`nak_sent`, which the caller clears then).
    pub(crate) fn send_nak_once(
        out: &mut dyn ActionSink,
        c: &mut Counters,
        nak_sent: &mut bool,
        rcv_nxt: Psn,
    ) {
        if !*nak_sent {
            *nak_sent = true;
            send(out, c, Feedback::Nak { rcv_nxt });
        }
    }

    /// Pushes a `Retransmit` of `count` PSNs from `first` (nothing when `count == 0`).
    pub(crate) fn retransmit(out: &mut dyn ActionSink, c: &mut Counters, first: Psn, count: u32) {
        if count > 0 {
            c.retransmit_psns = c.retransmit_psns.saturating_add(u64::from(count));
            out.push(Action::Retransmit { first, count });
        }
    }

    /// Pushes a `GoBack` from `from`.
    pub(crate) fn go_back(out: &mut dyn ActionSink, c: &mut Counters, from: Psn) {
        c.go_backs = c.go_backs.saturating_add(1);
        out.push(Action::GoBack { from });
    }

    /// Pushes a drop of `psn`.
    pub(crate) fn drop_pkt(out: &mut dyn ActionSink, c: &mut Counters, psn: Psn) {
        c.drops = c.drops.saturating_add(1);
        out.push(Action::Drop { psn });
    }

    /// Arms `timer` at `now + after`.
    pub(crate) fn arm(out: &mut dyn ActionSink, timer: Timer, now: u64, after: u64) {
        out.push(Action::ArmTimer {
            timer,
            deadline: now.saturating_add(after),
        });
    }
}
