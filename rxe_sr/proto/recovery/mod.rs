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
pub(crate) mod util;

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
    /// FaSR SACK of a new gap: `sack_psn` arrived while `gap_from ..` `sack_psn` (not
    /// included) were missing; the responder's sack-high was `gap_from - 1`, so the PSNs
    /// it held the SACKs of up to there arrived too. One acknowledgment names both the gap
    /// and where the held run ended (the requester would otherwise take that run for part
    /// of the gap and resend it).
    ///
    /// On the wire (kind GAP): BTH PSN = `rcv_nxt`, SackHigh = `sack_psn`, TriggerPSN =
    /// `gap_from`.
    SackGap {
        /// The responder's RCV-NXT.
        rcv_nxt: Psn,
        /// PSN of the packet that arrived past the gap: the responder's new sack-high.
        sack_psn: Psn,
        /// The first PSN of the gap (the responder's sack-high before `sack_psn`, plus 1).
        gap_from: Psn,
        /// The responder's 3-bit lost-cnt, the gap counted.
        lost_cnt: u8,
        /// lost-cnt overflowed.
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
            | Feedback::SackGap { rcv_nxt, .. }
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
