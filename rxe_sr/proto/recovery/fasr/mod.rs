// SPDX-License-Identifier: GPL-2.0
//! FaSR: fast and scalable selective retransmission (Huang et al., FaSR §III).
//!
//! Per QP the QPC holds RCV-NXT / UNACK and one SR-state pointer per direction, null while
//! the QP has no loss. On loss the QP takes an [`SrUnit`](crate::proto::pool::sr_pool::SrUnit)
//! from the device's shared [`SrPool`] (level 1), and bitmap blocks (level 2) only while
//! it is on the slow path.
//!
//! Responder (§III-B1): a gap between PSN and RCV-NXT (normal state) or sack-high (loss
//! recovery) raises lost-cnt by the gap; a retransmission filling RCV-NXT lowers it.
//! - fast path, lost-cnt == 1: only RCV-NXT is missing; an out-of-order packet only moves
//!   sack-high; the retransmission sets RCV-NXT = sack-high + 1 and ends recovery.
//! - slow path, lost-cnt > 1 (or overflowed): a bitmap chain records arrivals; after a
//!   retransmission RCV-NXT is found by querying the bitmap and returned in an AACK. When
//!   lost-cnt falls back to 1 the chain is released (fast path again).
//! - bitmap acceleration: on entering the slow path with a run of at least one block of
//!   received PSNs after RCV-NXT, the run is kept as compression-cnt (12 bits) instead of
//!   bits, and the chain starts after it.
//! - FNACK: a packet between RCV-NXT and sack-high on the slow path means a retransmission
//!   was lost: its PSN is returned in an FNACK (the paper discards the packet; here it is
//!   kept, and FNACKed for the 1st, 4th, 16th, .. at one RCV-NXT: choices, below).
//! - lost-cnt is 3 bits: past 7 it overflows, stays put, RCV-NXT comes from the bitmap
//!   alone and the SACKs carry the overflow flag, until a retransmission filling RCV-NXT
//!   leaves at most 7 zeros in the bitmap up to sack-high: lost-cnt is then their count
//!   (the paper keeps the overflow until recovery completes; see responder.rs's
//!   `lost_cnt_after_fill`).
//! - pool exhausted: the QP falls back to go-back-N (out-of-order packets it cannot record
//!   are dropped, one NAK sequence error per gap), keeps what it recorded, and returns to
//!   SR only when this recovery completes (§III-D).
//!
//! Requester (§III-B2): it does not count losses itself; it keeps the last lost-cnt the
//! responder reported and its own sack-high.
//! - the first SACK enters recovery and retransmits UNACK .. SACK at once, whatever lost-cnt;
//! - later, PSNs between sack-high and a SACK are retransmitted only when the SACK is not
//!   contiguous with sack-high AND lost-cnt grew (else a SACK was lost, not data), or when
//!   lost-cnt overflowed; without either, those PSNs count as SACKed too. "Grew" is
//!   measured against the last SACK's lost-cnt less one per UNACK move since (each is a
//!   retransmission filling RCV-NXT, which lowered it), so a fill and a new gap between
//!   two SACKs do not cancel out. The rule resends exactly the new gap when the
//!   requester knows the responder's sack-high before the gap (see the SACK coalescing
//!   below);
//! - RTO by lost-cnt: > 1, retransmit UNACK and every bitmap zero up to sack-high; == 1,
//!   UNACK only; 0 (no SACK seen: the whole window was lost), go back to UNACK;
//! - FNACK: the paper runs the RTO action early, at most once until a new ACK arrives
//!   (here: UNACK alone, a choice below).
//!
//! Choices where the paper is silent (each marked in the code):
//! - Per-packet feedback: every out-of-order arrival is SACKed (as IRN), every in-order
//!   one ACKed; the SACK carries RCV-NXT, the SACKed PSN, lost-cnt and the overflow flag,
//!   and the requester derives its sack-high from the SACKed PSNs.
//! - SACK coalescing (`rc::responder`'s `sack_coalesce`): the responder holds back SACKs
//!   that only move sack-high by one, which the requester takes for lost SACKs. A SACK
//!   reporting a new gap names where the gap starts (a GAP), so the requester takes the
//!   held run up to it, as the SACK of it would have said, and the paper's rule resends
//!   the gap alone (not the held run with it).
//! - A packet between RCV-NXT and sack-high whose bitmap bit is already set is a plain
//!   duplicate, not an FNACK (software reads that bit cheaply; the hardware did not look).
//!   It is SACKed again, not ACKed: a resend of a PSN whose SACK was lost thus reaches the
//!   requester's bitmap, and the next RTO action does not send it once more.
//! - On the fast path such a packet is always a duplicate (only RCV-NXT is missing).
//! - FNACK, responder: the paper discards the packet that shows a lost retransmission,
//!   because its hardware bitmap was slow to reach intermediate blocks. Software sets that
//!   bit as cheaply as any, and discarding cost every resend in flight behind a lost one
//!   a second resend: the packet is kept (recorded, placed), and lost-cnt does not fall
//!   for it (the requester sees no fill; a lost-cnt below what it expects would hide a
//!   later gap from it). The paper lets the responder send an FNACK per such packet ("may
//!   send multiple"); it sends one for the 1st, 4th, 16th, 64th .. at one RCV-NXT: the
//!   first says it all, the few after stand in for it if it is lost.
//! - FNACK, requester: at most one answered per new ACK, as in the paper, but by resending
//!   UNACK alone, not by the RTO action (UNACK and every bitmap zero): the resends behind
//!   the lost one were kept, or are still in flight. The FNACK's PSN is recorded in the
//!   bitmap.
//! - A new UNACK that the requester took for received (in its compressed run or bitmap, or
//!   anything below sack-high on the fast path) means a SACK that reported it lost was
//!   lost too: it is retransmitted at once.
//! - The switch to the SR format happens mid-stream. A standard responder's NAK sequence
//!   error for the packets sent before the switch asks for them alone: the SR-format
//!   packets after them reach the responder's SR engine. The first such NAK (before any
//!   SACK) resends `[RCV-NXT, first SR PSN)`, not a go-back over the window, and the first
//!   SACK's resend then starts at the first SR PSN. Later NAKs (the SR responder's
//!   fallback) go back to RCV-NXT.
//! - The requester keeps a bitmap of SACKed PSNs only on the slow path, seeded like the
//!   responder's (compression-cnt for the run after UNACK).
//! - RTO values are IRN's RTO_low/RTO_high pair ([`RtoConfig`]).
//! - One SR-state pointer byte per QP and direction is the per-QP cost.

mod requester;
mod responder;

use super::util::{count, span, ReqBase};
use super::{
    Action, ActionSink, Counters, EngineEvent, Feedback, Recovery, ReqEvent, RespEvent, RtoConfig,
    Timer,
};
use crate::proto::pool::ops::SrPoolOps;
use crate::proto::pool::sr_pool::UnitId;
use crate::proto::psn::Psn;

/// Largest lost-cnt value the 3-bit SACK field carries.
pub const LOST_CNT_MAX: u8 = 7;
/// Largest compression-cnt (22 bits: the paper's 10 cover its 1024-PSN window, these the
/// largest SR window of the module).
pub const COMPRESSION_CNT_MAX: u32 = (1 << 22) - 1;
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "the simulator's memory accounting")
)]
/// Per-QP SR memory on the device, bytes: the SR-state pointer.
pub const SR_BYTES_PER_QP: u32 = 1;

/// One QP's FaSR state (the QPC part); SR state lives in the shared [`SrPool`].
#[derive(Clone, Debug)]
pub struct Fasr {
    // Requester.
    req: ReqBase,
    rto: RtoConfig,
    tx_unit: Option<UnitId>,
    /// Requester could not get a unit: go-back-N until UNACK passes `tx_gbn_until`.
    tx_gbn: bool,
    tx_gbn_until: Psn,
    /// An FNACK was answered since the last new ACK.
    fnack_answered: bool,
    /// Times UNACK moved since the last SACK: the responder's lost-cnt fell by one for
    /// each (a retransmission filled RCV-NXT).
    tx_fills: u8,
    /// The first PSN the requester sent in the SR format (it switched mid-stream): the
    /// packets before it went out in the standard format.
    tx_sr_from: Psn,
    /// The standard responder's NAK for those packets may still come.
    tx_std_open: bool,
    /// Those packets were resent for that NAK: the first SACK's resend starts after them.
    tx_std_resent: bool,
    // Responder.
    rcv_nxt: Psn,
    rx_unit: Option<UnitId>,
    /// Responder could not get a unit: go-back-N until the expected packet arrives.
    rx_gbn: bool,
    nak_sent: bool,
    /// Retransmissions taken between RCV-NXT and sack-high since RCV-NXT last moved (each
    /// shows a lost retransmission of RCV-NXT; an FNACK goes out for the 1st, 4th, 16th,
    /// 64th, ..).
    behind: u8,
    counters: Counters,
}

fn slow(lost_cnt: u8, overflow: bool) -> bool {
    lost_cnt > 1 || overflow
}

impl Fasr {
    /// A QP whose requester starts at `sq_psn` and whose responder expects `rq_psn`.
    pub const fn new(sq_psn: Psn, rq_psn: Psn, rto: RtoConfig) -> Self {
        Fasr {
            req: ReqBase::new(sq_psn),
            rto,
            tx_unit: None,
            tx_gbn: false,
            tx_gbn_until: sq_psn,
            fnack_answered: false,
            tx_fills: 0,
            tx_sr_from: sq_psn,
            tx_std_open: false,
            tx_std_resent: false,
            rcv_nxt: rq_psn,
            rx_unit: None,
            rx_gbn: false,
            nak_sent: false,
            behind: 0,
            counters: Counters::ZERO,
        }
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// Responder RCV-NXT.
    pub const fn rcv_nxt(&self) -> Psn {
        self.rcv_nxt
    }

    /// Requester UNACK.
    pub const fn una(&self) -> Psn {
        self.req.una
    }

    /// Starts the requester side at UNACK `una` with `snd_nxt` already sent (the QP
    /// direction switches to this engine mid-stream, after the capability exchange). Only
    /// before the side saw any event.
    pub fn start_requester(&mut self, una: Psn, snd_nxt: Psn) {
        self.req.start(una, snd_nxt);
        self.tx_gbn_until = una;
        self.tx_sr_from = snd_nxt;
        self.tx_std_open = una.before(snd_nxt);
    }

    /// Starts the responder side expecting `rcv_nxt`, forgetting what it recorded: when the
    /// QP direction switches to this engine mid-stream, or after [`Recovery::release`] when
    /// one request took more PSNs than the side tracks.
    pub fn start_responder(&mut self, rcv_nxt: Psn) {
        self.rcv_nxt = rcv_nxt;
        self.rx_gbn = false;
        self.nak_sent = false;
        self.behind = 0;
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// The responder's SR-state pointer: its unit in the pool while in loss recovery.
    pub const fn rx_sr_state(&self) -> Option<UnitId> {
        self.rx_unit
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// The requester's SR-state pointer.
    pub const fn tx_sr_state(&self) -> Option<UnitId> {
        self.tx_unit
    }

    /// Counts one SR operation, on the slow path or the fast path.
    fn op(&mut self, out: &mut dyn ActionSink, slow_path: bool) {
        let ev = if slow_path {
            EngineEvent::SlowPath
        } else {
            EngineEvent::FastPath
        };
        count(out, &mut self.counters, ev, 1);
    }

    /// For the kernel log: the requester side's path.
    pub const fn describe_requester(&self) -> &'static str {
        match (self.tx_gbn, self.tx_unit) {
            (true, _) => "FaSR, fallen back to go-back-N (no SR unit)",
            (false, Some(_)) => "FaSR, in recovery (SR unit held)",
            (false, None) => "FaSR, fast path (no SR unit)",
        }
    }

    fn fallback(&mut self, out: &mut dyn ActionSink) {
        count(out, &mut self.counters, EngineEvent::GbnFallback, 1);
        out.push(Action::Fallback);
    }

    // ----------------------------------------------------------------- responder

    /// The events FaSR handles without the device's pool (the fast path of a QP that holds
    /// no SR unit: every packet of a lossless stream, its sending and its ACKs), so the
    /// caller need not take the pool's lock; false, having done nothing, for any other.
    pub fn on_requester_unpooled(&mut self, ev: ReqEvent, out: &mut dyn ActionSink) -> bool {
        match ev {
            ReqEvent::Sent { psn, now } => self.req.on_sent(psn, now, &self.rto, out),
            ReqEvent::Feedback {
                fb: Feedback::Ack { rcv_nxt },
                now,
            } if self.tx_unit.is_none() => {
                self.tx_cum_ack(rcv_nxt, now, out);
            }
            _ => return false,
        }
        true
    }

    /// See [`Fasr::on_requester_unpooled`].
    pub fn on_responder_unpooled(&mut self, ev: RespEvent, out: &mut dyn ActionSink) -> bool {
        match ev {
            RespEvent::Data { psn, .. } if self.rx_unit.is_none() => self.rx_without_unit(psn, out),
            RespEvent::Data { .. } => false,
            RespEvent::Timer { .. } => true,
        }
    }

    /// Fast -> slow path: everything in `(head, sack_high]` is known received. A run of at
    /// least one block goes into compression-cnt; the chain starts after it and records
    /// the rest of the run as set bits. Returns false when the pool is exhausted (the
    /// unit is left in a consistent fast-path-equivalent state: a chain whose bits cover
    /// what was recorded, compression-cnt set).
    fn enter_slow(
        &mut self,
        pool: &mut dyn SrPoolOps,
        u: UnitId,
        head: Psn,
        sack_high: Psn,
    ) -> bool {
        let run = span(head, sack_high);
        let cc = if run >= pool.block_bits() {
            run.min(COMPRESSION_CNT_MAX)
        } else {
            0
        };
        let base = head.next().add(cc);
        pool.start_chain(u, base);
        if let Some(st) = pool.unit_mut(u) {
            st.compression_cnt = cc;
        }
        if !base.after(sack_high) {
            if pool.cover(u, sack_high).is_err() {
                return false;
            }
            pool.set_run(u, base, sack_high.next());
        }
        true
    }
}

impl Recovery for Fasr {
    type Shared = dyn SrPoolOps;

    fn on_requester(&mut self, pool: &mut Self::Shared, ev: ReqEvent, out: &mut dyn ActionSink) {
        match ev {
            ReqEvent::Sent { psn, now } => self.req.on_sent(psn, now, &self.rto, out),
            ReqEvent::Feedback { fb, now } => self.tx_feedback(pool, fb, now, out),
            ReqEvent::Timer {
                timer: Timer::Rto,
                now,
            } => {
                self.req.rto_armed = false;
                if self.req.in_flight() > 0 {
                    self.counters.rto_fired = self.counters.rto_fired.saturating_add(1);
                    self.tx_rto_action(pool, out);
                    self.req.restart_rto(now, &self.rto, out);
                }
            }
            ReqEvent::Timer { .. } => {}
        }
    }

    fn on_responder(&mut self, pool: &mut Self::Shared, ev: RespEvent, out: &mut dyn ActionSink) {
        if let RespEvent::Data { psn, .. } = ev {
            self.rx_data(pool, psn, out);
        }
    }

    fn release(&mut self, pool: &mut Self::Shared) {
        if let Some(u) = self.tx_unit.take() {
            pool.free_unit(u);
        }
        if let Some(u) = self.rx_unit.take() {
            pool.free_unit(u);
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}
