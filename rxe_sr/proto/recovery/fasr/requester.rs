// SPDX-License-Identifier: GPL-2.0
//! FaSR's requester (FaSR §III-B2): SACKs, FNACKs and timeouts into retransmissions, with
//! its own SR state unit and, on the slow path, a bitmap of the SACKed PSNs (see the
//! parent module for the rules).

use super::{slow, Fasr, LOST_CNT_MAX};
use crate::proto::pool::ops::SrPoolOps;
use crate::proto::pool::sr_pool::{SrUnit, UnitId};
use crate::proto::psn::Psn;
use crate::proto::recovery::util::{go_back, retransmit, span};
use crate::proto::recovery::{ActionSink, Feedback};

/// One SACK as the requester reads it: the SACKed run `first ..= last` (`first` clipped
/// to after UNACK) and the responder's lost-cnt state.
#[derive(Clone, Copy, Debug)]
struct SackedRun {
    first: Psn,
    last: Psn,
    lost_cnt: u8,
    overflow: bool,
}

/// The unit takes the SACK's lost-cnt (the overflow flag sticks); back from the slow path
/// to the fast path it drops the bitmap and compression-cnt.
fn tx_take_lost_cnt(pool: &mut dyn SrPoolOps, u: UnitId, was_slow: bool, sack: SackedRun) {
    let now_slow = slow(sack.lost_cnt, sack.overflow);
    if let Some(st) = pool.unit_mut(u) {
        st.lost_cnt = sack.lost_cnt;
        st.overflow = st.overflow || sack.overflow;
        if was_slow && !now_slow && !st.gbn {
            st.overflow = false;
            st.compression_cnt = 0;
            pool.free_chain(u);
        }
    }
}

impl Fasr {
    fn tx_retransmit(&mut self, from: Psn, to: Psn, out: &mut dyn ActionSink) {
        // Clip to the outstanding window [una, snd_nxt).
        let from = if from.before(self.req.una) {
            self.req.una
        } else {
            from
        };
        let to = if to.after(self.req.snd_nxt) {
            self.req.snd_nxt
        } else {
            to
        };
        retransmit(out, &mut self.counters, from, span(from, to));
    }

    /// The cumulative part of any feedback: true if UNACK moved (to `rcv_nxt`).
    pub(super) fn tx_cum_ack(&mut self, rcv_nxt: Psn, now: u64, out: &mut dyn ActionSink) -> bool {
        if !self.req.on_cum_ack(rcv_nxt, now, &self.rto, out) {
            return false;
        }
        self.fnack_answered = false;
        self.tx_fills = self.tx_fills.saturating_add(1);
        let una = self.req.una;
        if self.tx_gbn && !una.before(self.tx_gbn_until) {
            self.tx_gbn = false;
        }
        if !una.before(self.tx_sr_from) {
            // Every standard-format packet is acknowledged.
            self.tx_std_open = false;
            self.tx_std_resent = false;
        }
        true
    }

    /// Any feedback: its cumulative part first (UNACK may move), then its kind: a NAK, an
    /// FNACK or a SACK.
    pub(super) fn tx_feedback(
        &mut self,
        pool: &mut dyn SrPoolOps,
        fb: Feedback,
        now: u64,
        out: &mut dyn ActionSink,
    ) {
        if self.tx_cum_ack(fb.rcv_nxt(), now, out) {
            self.tx_una_moved(pool, out);
        }
        match fb {
            Feedback::Ack { .. } | Feedback::Holes { .. } => {}
            Feedback::Nak { rcv_nxt } => self.tx_nak(rcv_nxt, now, out),
            Feedback::Fnack { psn, .. } => self.tx_fnack(pool, psn, now, out),
            Feedback::Sack {
                sack_psn,
                run_from,
                lost_cnt,
                overflow,
                ..
            } => {
                let run = (run_from, sack_psn);
                self.tx_sack(pool, run, lost_cnt.min(LOST_CNT_MAX), overflow, out);
                self.tx_fills = 0;
            }
            Feedback::SackGap {
                sack_psn,
                gap_from,
                lost_cnt,
                overflow,
                ..
            } => {
                let gap = (gap_from, sack_psn);
                self.tx_sack_gap(pool, gap, lost_cnt.min(LOST_CNT_MAX), overflow, out);
                self.tx_fills = 0;
            }
        }
    }

    /// A GAP: `gap.1` arrived while `gap.0 ..` `gap.1` were missing. Taken as the two
    /// SACKs it stands for: first the run the responder held up to the gap (from past
    /// sack-high, so no resend, with the lost-cnt before the gap), then the SACK of `gap.1`,
    /// whose lost-cnt grew by the gap: the gap alone is resent.
    fn tx_sack_gap(
        &mut self,
        pool: &mut dyn SrPoolOps,
        gap: (Psn, Psn),
        lost_cnt: u8,
        overflow: bool,
        out: &mut dyn ActionSink,
    ) {
        let (from, s) = gap;
        let held_end = from.sub(1);
        let high = self
            .tx_unit
            .and_then(|u| pool.unit(u))
            .map(|st| st.sack_high);
        if let Some(high) = high.filter(|h| held_end.after(*h) && s.after(held_end)) {
            let before = match u8::try_from(span(from, s)) {
                _ if overflow => lost_cnt,
                Ok(n) => lost_cnt.saturating_sub(n),
                Err(_) => 0,
            };
            self.tx_sack(pool, (high.next(), held_end), before, overflow, out);
            self.tx_fills = 0;
        }
        self.tx_sack(pool, (s, s), lost_cnt, overflow, out);
    }

    /// UNACK moved: the SR unit goes once UNACK passes sack-high (and any go-back-N ended);
    /// else the bitmap's head is released, and a new UNACK taken for received is resent.
    fn tx_una_moved(&mut self, pool: &mut dyn SrPoolOps, out: &mut dyn ActionSink) {
        let una = self.req.una;
        let Some(u) = self.tx_unit else {
            return;
        };
        match pool.unit(u).copied() {
            Some(st) if una.after(st.sack_high) && !(st.gbn && una.before(self.tx_gbn_until)) => {
                pool.free_unit(u);
                self.tx_unit = None;
            }
            Some(st) => {
                // Choice: the new RCV-NXT is a PSN taken for received (in the compressed
                // run or the bitmap; on the fast path, anything up to sack-high): a SACK
                // that reported it lost was lost too. It goes now, not at the next timeout.
                let known = if slow(st.lost_cnt, st.overflow) {
                    una.before(st.bm_base) || pool.get(u, una)
                } else {
                    true
                };
                if known && !st.gbn {
                    self.tx_retransmit(una, una.next(), out);
                }
                pool.release_before(u, una)
            }
            None => self.tx_unit = None,
        }
    }

    /// A NAK sequence error: the standard responder's, for the packets sent before the
    /// switch to the SR format (only they go again), or the SR responder's go-back-N.
    fn tx_nak(&mut self, rcv_nxt: Psn, now: u64, out: &mut dyn ActionSink) {
        if self.tx_std_open && rcv_nxt.before(self.tx_sr_from) && self.tx_unit.is_none() {
            // Choice: the standard responder's NAK. It dropped the standard-format packets
            // after `rcv_nxt`, not the SR-format ones after them, which its SR engine takes
            // in: only the former go again.
            self.tx_std_open = false;
            self.tx_std_resent = true;
            self.tx_retransmit(rcv_nxt, self.tx_sr_from, out);
            self.req.restart_rto(now, &self.rto, out);
        } else if self.req.outstanding(rcv_nxt) {
            // The responder fell back to go-back-N.
            go_back(out, &mut self.counters, rcv_nxt);
            self.req.restart_rto(now, &self.rto, out);
        }
    }

    /// An FNACK: `psn` is recorded, and the first since the last new ACK is answered by
    /// resending UNACK and restarting the RTO.
    fn tx_fnack(&mut self, pool: &mut dyn SrPoolOps, psn: Psn, now: u64, out: &mut dyn ActionSink) {
        let slow_path = self.tx_fnacked(pool, psn);
        if self.fnack_answered || self.req.in_flight() == 0 {
            return;
        }
        self.fnack_answered = true;
        self.counters.fnacks_answered = self.counters.fnacks_answered.saturating_add(1);
        // Choice: the responder keeps the resends behind the lost one (see the parent
        // module), so only UNACK goes again, not every bitmap zero (most of them are
        // resends still in flight).
        self.op(out, slow_path);
        let una = self.req.una;
        self.tx_retransmit(una, una.next(), out);
        self.req.restart_rto(now, &self.rto, out);
    }

    /// A SACK of the PSNs `run.0 ..= run.1` (one, or a run the responder coalesced): the
    /// first enters loss recovery; later ones move sack-high, or fill the bitmap below it.
    fn tx_sack(
        &mut self,
        pool: &mut dyn SrPoolOps,
        run: (Psn, Psn),
        lost_cnt: u8,
        overflow: bool,
        out: &mut dyn ActionSink,
    ) {
        let s = run.1;
        if !self.req.outstanding(s) || s == self.req.una || self.tx_gbn {
            return;
        }
        let una = self.req.una;
        // The run's first PSN, after UNACK (which is missing) and not past `s`.
        let r = if run.0.after(s) {
            s
        } else if !run.0.after(una) {
            una.next()
        } else {
            run.0
        };
        let sack = SackedRun {
            first: r,
            last: s,
            lost_cnt,
            overflow,
        };
        let Some(u) = self.tx_unit.filter(|&u| pool.unit(u).is_some()) else {
            self.tx_enter_recovery(pool, sack, out);
            return;
        };
        let Some(st) = pool.unit(u).copied() else {
            return;
        };
        let was_slow = slow(st.lost_cnt, st.overflow);
        self.op(out, slow(lost_cnt, overflow));
        if s.after(st.sack_high) {
            self.tx_sack_past_high(pool, u, st, sack, out);
        } else if was_slow && !st.gbn && !s.before(st.bm_base) {
            let from = if r.before(st.bm_base) { st.bm_base } else { r };
            pool.set_run(u, from, s.next());
        }
        tx_take_lost_cnt(pool, u, was_slow, sack);
    }

    /// The first SACK: enter loss recovery and retransmit UNACK .. SACK at once, whatever
    /// lost-cnt, then take an SR unit (with a bitmap of the run on the slow path); without
    /// a unit, go-back-N.
    fn tx_enter_recovery(
        &mut self,
        pool: &mut dyn SrPoolOps,
        sack: SackedRun,
        out: &mut dyn ActionSink,
    ) {
        let (una, r, s) = (self.req.una, sack.first, sack.last);
        // Choice: but for the standard-format packets already resent for the standard
        // responder's NAK, unless this SACK names one of them, a resend itself.
        let std_resent = self.tx_std_resent && !s.before(self.tx_sr_from);
        let from = if std_resent { self.tx_sr_from } else { una };
        self.tx_std_open = false;
        self.tx_std_resent = false;
        self.tx_retransmit(from, r, out);
        let Ok(u) = pool.alloc_unit() else {
            self.tx_gbn = true;
            self.tx_gbn_until = self.req.snd_nxt;
            self.fallback(out);
            return;
        };
        self.tx_unit = Some(u);
        let is_slow = slow(sack.lost_cnt, sack.overflow);
        if let Some(st) = pool.unit_mut(u) {
            st.sack_high = s;
            st.lost_cnt = sack.lost_cnt;
            st.overflow = sack.overflow;
        }
        if is_slow {
            pool.start_chain(u, una.next());
            if pool.cover(u, s).is_ok() {
                pool.set_run(u, r, s.next());
            } else {
                self.tx_unit_gbn(pool, u, out);
            }
        }
        self.op(out, is_slow);
    }

    /// A SACK past sack-high. The gap between them is resent when it is new data loss (the
    /// run is not contiguous with sack-high and lost-cnt grew, or overflowed), else its
    /// SACKs were lost; on the slow path the bitmap records the run (with such a gap).
    fn tx_sack_past_high(
        &mut self,
        pool: &mut dyn SrPoolOps,
        u: UnitId,
        st: SrUnit,
        sack: SackedRun,
        out: &mut dyn ActionSink,
    ) {
        let (r, s) = (sack.first, sack.last);
        let discontinuous = r.after(st.sack_high.next());
        // lost-cnt "grew": past what the last SACK said, less one for each fill since.
        let expected = st.lost_cnt.saturating_sub(self.tx_fills);
        let new_loss = discontinuous && (sack.lost_cnt > expected || sack.overflow);
        if new_loss {
            // New data loss (not a lost SACK): retransmit the gap now.
            self.tx_retransmit(st.sack_high.next(), r, out);
        }
        if slow(sack.lost_cnt, sack.overflow) && !st.gbn {
            let mut ok = true;
            if !slow(st.lost_cnt, st.overflow) {
                ok = self.enter_slow(pool, u, self.req.una, st.sack_high);
            }
            ok = ok && pool.cover(u, s).is_ok();
            if ok {
                // Without new loss, what lies between sack-high and this SACK arrived
                // too: its SACKs were lost.
                let from = if new_loss { r } else { st.sack_high.next() };
                pool.set_run(u, from, s.next());
            } else {
                self.tx_unit_gbn(pool, u, out);
            }
        }
        if let Some(st) = pool.unit_mut(u) {
            st.sack_high = s;
        }
    }

    /// An FNACK's PSN arrived (the responder kept it): recorded in the bitmap on the slow
    /// path, so an RTO action does not resend it. Returns whether the QP is on the slow path.
    fn tx_fnacked(&mut self, pool: &mut dyn SrPoolOps, psn: Psn) -> bool {
        let Some((u, st)) = self.tx_unit.and_then(|u| Some((u, *pool.unit(u)?))) else {
            return false;
        };
        let slow_path = slow(st.lost_cnt, st.overflow);
        if slow_path
            && !st.gbn
            && psn.after(self.req.una)
            && !psn.after(st.sack_high)
            && !psn.before(st.bm_base)
        {
            pool.set(u, psn);
        }
        slow_path
    }

    /// The requester's bitmap ran out: it keeps its unit but recovers by go-back-N.
    fn tx_unit_gbn(&mut self, pool: &mut dyn SrPoolOps, u: UnitId, out: &mut dyn ActionSink) {
        if let Some(st) = pool.unit_mut(u) {
            st.gbn = true;
        }
        self.tx_gbn_until = self.req.snd_nxt;
        self.fallback(out);
    }

    /// The RTO action by lost-cnt (also run early for an FNACK).
    pub(super) fn tx_rto_action(&mut self, pool: &mut dyn SrPoolOps, out: &mut dyn ActionSink) {
        let una = self.req.una;
        let st = self.tx_unit.and_then(|u| pool.unit(u).copied());
        match (self.tx_unit, st) {
            (Some(u), Some(st))
                if !st.gbn && st.sack_high.after(una) && slow(st.lost_cnt, st.overflow) =>
            {
                self.op(out, true);
                self.tx_retransmit(una, una.next(), out);
                // Bitmap zeros between UNACK and sack-high; PSNs before bm_base form the
                // compressed run, known received.
                let from = if st.bm_base.after(una) {
                    st.bm_base
                } else {
                    una.next()
                };
                let end = st.sack_high.next();
                let mut emit = |first: Psn, count: u32| {
                    retransmit(out, &mut self.counters, first, count);
                };
                pool.for_each_zero(u, from, span(from, end), &mut emit);
            }
            (Some(_), Some(st)) if !st.gbn && st.sack_high.after(una) && st.lost_cnt == 1 => {
                self.op(out, false);
                self.tx_retransmit(una, una.next(), out);
            }
            _ => {
                // lost-cnt 0: the whole window was lost (or we are in go-back-N). Not an SR
                // operation: nothing is selective about it, so neither path counts it.
                go_back(out, &mut self.counters, una);
            }
        }
    }
}
