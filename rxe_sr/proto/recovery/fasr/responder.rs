// SPDX-License-Identifier: GPL-2.0
//! FaSR's responder (FaSR §III-B1): RCV-NXT and in-order delivery, the SACK of each
//! out-of-order packet with lost-cnt, the fast path's single-loss recovery and the slow
//! path's bitmap from the shared pool, and FNACK for a lost retransmission (see the parent
//! module for the rules).

use super::{slow, Fasr, LOST_CNT_MAX};
use crate::proto::pool::ops::SrPoolOps;
use crate::proto::pool::sr_pool::{SrUnit, UnitId};
use crate::proto::psn::Psn;
use crate::proto::recovery::util::{count, drop_pkt, send, send_ack, send_nak_once, span};
use crate::proto::recovery::{Action, ActionSink, EngineEvent, Feedback};

/// RCV-NXT after the retransmission `psn` filled it on the slow path: past the compressed
/// run, then the first zero in the bitmap, at most sack-high + 1.
fn query_rcv_nxt(pool: &dyn SrPoolOps, u: UnitId, st: &SrUnit, psn: Psn) -> Psn {
    let end = st.sack_high.next();
    // Skip the compressed run, then query the bitmap from its head.
    let mut next = psn.next().add(st.compression_cnt);
    if next.after(end) {
        next = end;
    }
    if next.before(st.bm_base) {
        // Inside the part recorded as bits starting at bm_base: nothing to skip.
    } else if next != end {
        next = pool.first_zero(u, next, span(next, end));
    }
    next
}

/// lost-cnt and the overflow flag after a fill moved RCV-NXT to `next`: one less, or, once
/// overflowed, the bitmap's count of zeros up to sack-high when that is back under eight.
fn lost_cnt_after_fill(pool: &dyn SrPoolOps, u: UnitId, st: &SrUnit, next: Psn) -> (u8, bool) {
    let end = st.sack_high.next();
    if !st.overflow {
        return (st.lost_cnt.saturating_sub(1), false);
    }
    if next.before(end) {
        // Overflowed: the bitmap knows how many are still missing. Back under eight,
        // lost-cnt counts again (choice: the 3-bit counter of the paper's hardware stays
        // saturated until recovery completes, which a recovery that new losses keep
        // extending may never do).
        let mut missing = 0u32;
        pool.for_each_zero(u, next, span(next, end), &mut |_, n| missing += n);
        if missing <= u32::from(LOST_CNT_MAX) {
            return (missing as u8, false);
        }
    }
    (st.lost_cnt, true)
}

/// lost-cnt and the overflow flag after a gap of `gap` PSNs: lost-cnt grows by it and
/// saturates at [`LOST_CNT_MAX`] with the flag set; once overflowed it stays put.
fn lost_cnt_after_gap(lost_cnt: u8, overflow: bool, gap: u32) -> (u8, bool) {
    if gap == 0 || overflow {
        return (lost_cnt, overflow);
    }
    let sum = u32::from(lost_cnt).saturating_add(gap);
    if sum > u32::from(LOST_CNT_MAX) {
        (LOST_CNT_MAX, true)
    } else {
        (sum as u8, false)
    }
}

impl Fasr {
    fn ack(&mut self, out: &mut dyn ActionSink) {
        send_ack(out, &mut self.counters, self.rcv_nxt);
    }

    fn advance_to(&mut self, to: Psn, out: &mut dyn ActionSink) {
        self.rcv_nxt = to;
        self.nak_sent = false;
        self.behind = 0;
        out.push(Action::Advance { rcv_nxt: to });
    }

    /// Places an out-of-order packet and SACKs it with the receiver's lost-cnt state (both the
    /// fast and the slow path end here).
    fn deliver_and_sack(
        &mut self,
        psn: Psn,
        lost_cnt: u8,
        overflow: bool,
        out: &mut dyn ActionSink,
    ) {
        out.push(Action::Deliver { psn });
        self.sack(psn, lost_cnt, overflow, out);
    }

    /// SACKs `psn` with the receiver's lost-cnt state.
    fn sack(&mut self, psn: Psn, lost_cnt: u8, overflow: bool, out: &mut dyn ActionSink) {
        let fb = Feedback::Sack {
            rcv_nxt: self.rcv_nxt,
            sack_psn: psn,
            run_from: psn,
            lost_cnt,
            overflow,
        };
        send(out, &mut self.counters, fb);
    }

    fn nak_once(&mut self, out: &mut dyn ActionSink) {
        send_nak_once(out, &mut self.counters, &mut self.nak_sent, self.rcv_nxt);
    }

    pub(super) fn rx_data(&mut self, pool: &mut dyn SrPoolOps, psn: Psn, out: &mut dyn ActionSink) {
        if let Some(u) = self.rx_unit {
            if pool.unit(u).is_some() {
                self.rx_recovery(pool, u, psn, out);
                return;
            }
            // The pool was reset under us: forget the stale pointer.
            self.rx_unit = None;
        }
        if self.rx_without_unit(psn, out) {
            return;
        }
        // Normal state, loss detected: lost-cnt grows by the gap to RCV-NXT.
        let gap = span(self.rcv_nxt, psn);
        let Ok(u) = pool.alloc_unit() else {
            self.rx_gbn = true;
            self.fallback(out);
            drop_pkt(out, &mut self.counters, psn);
            self.nak_once(out);
            return;
        };
        let (lost_cnt, overflow) = lost_cnt_after_gap(0, false, gap);
        let is_slow = slow(lost_cnt, overflow);
        if is_slow {
            // No received run yet: the chain starts right after RCV-NXT.
            pool.start_chain(u, self.rcv_nxt.next());
            if pool.cover(u, psn).is_err() {
                pool.free_unit(u);
                self.rx_gbn = true;
                self.fallback(out);
                drop_pkt(out, &mut self.counters, psn);
                self.nak_once(out);
                return;
            }
            pool.set(u, psn);
        }
        if let Some(st) = pool.unit_mut(u) {
            st.sack_high = psn;
            st.lost_cnt = lost_cnt;
            st.overflow = overflow;
        }
        if overflow {
            count(out, &mut self.counters, EngineEvent::LostCntOverflow, 1);
        }
        self.rx_unit = Some(u);
        self.op(out, is_slow);
        self.deliver_and_sack(psn, lost_cnt, overflow, out);
    }

    /// A packet for a responder holding no SR unit that needs none: the expected one, a
    /// duplicate, or any while it has fallen back to go-back-N. False for a packet past
    /// RCV-NXT in the normal state (it takes a unit).
    pub(super) fn rx_without_unit(&mut self, psn: Psn, out: &mut dyn ActionSink) -> bool {
        if psn == self.rcv_nxt {
            out.push(Action::Deliver { psn });
            self.rx_gbn = false;
            self.advance_to(psn.next(), out);
            self.ack(out);
            return true;
        }
        if psn.before(self.rcv_nxt) {
            drop_pkt(out, &mut self.counters, psn);
            self.ack(out);
            return true;
        }
        if self.rx_gbn {
            drop_pkt(out, &mut self.counters, psn);
            self.nak_once(out);
            return true;
        }
        false
    }

    /// A data packet while the responder holds an SR unit (loss recovery), sorted by where
    /// `psn` falls against RCV-NXT and sack-high. The path is chosen by lost-cnt alone; `gbn`
    /// only stops recording new packets.
    fn rx_recovery(
        &mut self,
        pool: &mut dyn SrPoolOps,
        u: UnitId,
        psn: Psn,
        out: &mut dyn ActionSink,
    ) {
        let Some(st) = pool.unit(u).copied() else {
            return;
        };
        if psn == self.rcv_nxt {
            self.rx_fill_rcv_nxt(pool, u, st, psn, out);
        } else if psn.before(self.rcv_nxt) {
            drop_pkt(out, &mut self.counters, psn);
            self.ack(out);
        } else if !psn.after(st.sack_high) {
            self.rx_below_sack_high(pool, u, st, psn, out);
        } else {
            self.rx_past_sack_high(pool, u, st, psn, out);
        }
    }

    /// The retransmission filling RCV-NXT. Fast path: everything up to sack-high is here,
    /// recovery ends at sack-high + 1; slow path: see [`Fasr::rx_slow_fill`].
    fn rx_fill_rcv_nxt(
        &mut self,
        pool: &mut dyn SrPoolOps,
        u: UnitId,
        st: SrUnit,
        psn: Psn,
        out: &mut dyn ActionSink,
    ) {
        let was_slow = slow(st.lost_cnt, st.overflow);
        out.push(Action::Deliver { psn });
        self.op(out, was_slow);
        if was_slow {
            self.rx_slow_fill(pool, u, st, psn, out);
            return;
        }
        pool.free_unit(u);
        self.rx_unit = None;
        self.advance_to(st.sack_high.next(), out);
        self.ack(out);
    }

    /// Slow path after the fill: RCV-NXT comes from the bitmap and goes back in an AACK;
    /// lost-cnt falls by one, and back at one the bitmap is dropped (fast path again).
    fn rx_slow_fill(
        &mut self,
        pool: &mut dyn SrPoolOps,
        u: UnitId,
        st: SrUnit,
        psn: Psn,
        out: &mut dyn ActionSink,
    ) {
        let end = st.sack_high.next();
        let next = query_rcv_nxt(pool, u, &st, psn);
        pool.release_before(u, next);
        let (lost_cnt, overflow) = lost_cnt_after_fill(pool, u, &st, next);
        self.advance_to(next, out);
        if !next.before(end) {
            // Recovery complete: back to the normal state (and to SR after a fallback).
            pool.free_unit(u);
            self.rx_unit = None;
        } else if let Some(st) = pool.unit_mut(u) {
            st.compression_cnt = 0;
            st.lost_cnt = lost_cnt;
            st.overflow = overflow;
            if !st.overflow && lost_cnt <= 1 {
                // Back on the fast path: only RCV-NXT is missing; drop the bitmap.
                pool.free_chain(u);
            }
        }
        // AACK: RCV-NXT found through the bitmap.
        self.ack(out);
    }

    /// A packet between RCV-NXT and sack-high: a duplicate (SACKed again), or, on the slow
    /// path, a resend of a later hole showing that the retransmission of RCV-NXT was lost.
    fn rx_below_sack_high(
        &mut self,
        pool: &mut dyn SrPoolOps,
        u: UnitId,
        st: SrUnit,
        psn: Psn,
        out: &mut dyn ActionSink,
    ) {
        let was_slow = slow(st.lost_cnt, st.overflow);
        let in_run = span(self.rcv_nxt, psn) <= st.compression_cnt;
        let duplicate = !was_slow || in_run || psn.before(st.bm_base) || pool.get(u, psn);
        if st.gbn || duplicate {
            drop_pkt(out, &mut self.counters, psn);
        }
        if st.gbn {
            self.ack(out);
        } else if duplicate {
            // Received already. Choice: SACKed again (not ACKed), so the requester's
            // bitmap has it and its next RTO action does not resend it.
            self.sack(psn, st.lost_cnt, st.overflow, out);
        } else {
            self.rx_fnack(pool, u, psn, out);
        }
    }

    /// `psn`, a resend of a later hole, came while RCV-NXT is still missing: the resend of
    /// RCV-NXT was lost, an FNACK says so. Choices: `psn` is kept (recorded and placed), not
    /// discarded as in the paper, and lost-cnt does not fall for it.
    fn rx_fnack(
        &mut self,
        pool: &mut dyn SrPoolOps,
        u: UnitId,
        psn: Psn,
        out: &mut dyn ActionSink,
    ) {
        // The paper's reason to discard was the hardware bitmap's latency for intermediate
        // blocks; discarding cost every resend in flight behind a lost one a second resend.
        // The requester sees no fill, and a lost-cnt lower than it expects would hide a
        // later gap from it. The FNACK goes for the 1st, 4th, 16th, 64th such packet at
        // this RCV-NXT, not for each (the requester answers one per new ACK).
        pool.set(u, psn);
        out.push(Action::Deliver { psn });
        self.behind = self.behind.saturating_add(1);
        if !matches!(self.behind, 1 | 4 | 16 | 64) {
            return;
        }
        self.op(out, true);
        send(
            out,
            &mut self.counters,
            Feedback::Fnack {
                rcv_nxt: self.rcv_nxt,
                psn,
            },
        );
    }

    /// New out-of-order data beyond sack-high: lost-cnt grows by the gap, the packet is
    /// recorded (on the slow path) and SACKed; with the pool exhausted, go-back-N.
    fn rx_past_sack_high(
        &mut self,
        pool: &mut dyn SrPoolOps,
        u: UnitId,
        st: SrUnit,
        psn: Psn,
        out: &mut dyn ActionSink,
    ) {
        if st.gbn {
            drop_pkt(out, &mut self.counters, psn);
            self.nak_once(out);
            return;
        }
        let gap = span(st.sack_high.next(), psn);
        let (lost_cnt, overflow) = lost_cnt_after_gap(st.lost_cnt, st.overflow, gap);
        let now_slow = slow(lost_cnt, overflow);
        if now_slow && !self.rx_record(pool, u, &st, psn) {
            self.rx_pool_exhausted(pool, u, &st, psn, out);
            return;
        }
        if let Some(unit) = pool.unit_mut(u) {
            unit.sack_high = psn;
            unit.lost_cnt = lost_cnt;
            unit.overflow = overflow;
        }
        if overflow && !st.overflow {
            count(out, &mut self.counters, EngineEvent::LostCntOverflow, 1);
        }
        self.op(out, now_slow);
        self.deliver_and_sack(psn, lost_cnt, overflow, out);
    }

    /// Records `psn` in the bitmap on the slow path, entering it first from the fast path
    /// (bitmap acceleration); false when the pool is exhausted.
    fn rx_record(&mut self, pool: &mut dyn SrPoolOps, u: UnitId, st: &SrUnit, psn: Psn) -> bool {
        let mut recorded = true;
        if !slow(st.lost_cnt, st.overflow) {
            recorded = self.enter_slow(pool, u, self.rcv_nxt, st.sack_high);
        }
        recorded = recorded && pool.cover(u, psn).is_ok();
        if recorded {
            pool.set(u, psn);
        }
        recorded
    }

    /// Pool exhausted: go-back-N until this recovery completes. What is recorded stays
    /// valid: sack-high and lost-cnt do not take `psn` in, which is dropped and NAKed.
    fn rx_pool_exhausted(
        &mut self,
        pool: &mut dyn SrPoolOps,
        u: UnitId,
        st: &SrUnit,
        psn: Psn,
        out: &mut dyn ActionSink,
    ) {
        // A QP that was on the fast path stays there (only RCV-NXT missing up to sack-high)
        // and gives back the blocks it was trying to take.
        let was_slow = slow(st.lost_cnt, st.overflow);
        if !was_slow {
            pool.free_chain(u);
        }
        if let Some(unit) = pool.unit_mut(u) {
            unit.gbn = true;
            if !was_slow {
                unit.compression_cnt = 0;
            }
        }
        self.fallback(out);
        drop_pkt(out, &mut self.counters, psn);
        self.nak_once(out);
    }
}
