// SPDX-License-Identifier: GPL-2.0
//! SR format: RDMA READ responses placed out of order. A response packet carries its READ's
//! PSN range position (and MSN-ETH), so the requester places it where it belongs in the READ
//! it answers, whichever pending READ that is, and remembers it in a bitmap over the 128
//! PSNs from the first missing response of the oldest pending READ. A response past a hole
//! makes the requester ask again for just the missing packets before it (one READ request
//! per run of missing packets, each hole once; the responder serves it as a duplicate).
//! READs complete in order as their packets become contiguous; a lost request for a hole is
//! recovered by the retransmission timeout, which asks for the rest of the READ.

use core::ops::DerefMut;

use super::ReqSr;
use super::Requester;
use super::SqEntry;
use crate::proto::psn::Psn;
use crate::proto::rc::{Outcome, RcConfig, RcEnv};
use crate::proto::wire::PacketRepr;
use crate::uabi::cqe::WcStatus;
use crate::uabi::send_wqe::{Payload, SendOp};

/// PSNs the bitmap of placed-ahead responses spans.
const AHEAD_SPAN: u32 = 128;

impl<S: DerefMut<Target = [SqEntry]>, E: DerefMut<Target = ReqSr>> Requester<S, E> {
    /// A READ response in the SR format.
    pub(super) fn sr_read_response(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Outcome {
        let pmtu = self.pmtu.get();
        let (Some(i), Some((_, expect))) = (self.pending_read(psn), self.first_pending_rd_atomic())
        else {
            self.counters.dup_responses += 1;
            return Outcome::Ok;
        };
        self.align_ahead(expect);
        let Some(e) = self.entry(i) else {
            return Outcome::Ok;
        };
        let k = psn.distance_from(e.first_psn);
        let j = psn.diff(self.rd_base);
        if k < e.done_bytes / pmtu || j < 0 || j.unsigned_abs() >= AHEAD_SPAN || self.placed(psn) {
            // Placed already, or too far ahead to keep (it is asked for again later).
            self.counters.dup_responses += 1;
            return self.consume_and_ack(env, cfg, None);
        }
        let off = k.saturating_mul(pmtu);
        let want = e.wqe.length.saturating_sub(off).min(pmtu);
        let plen = p.payload.len() as u32;
        let placed = match &e.wqe.payload {
            _ if plen != want => Err(WcStatus::BadRespErr),
            Payload::Sges(list) if plen > 0 => env.scatter(list, off, p.payload),
            _ => Ok(()),
        };
        if let Err(s) = placed {
            return self.fail_entry(env, cfg, i, s);
        }
        self.rd_ahead |= 1u128 << j.unsigned_abs();
        if psn != expect {
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.counters.read_ahead_placed += 1;
            }
            if self.ask_holes(env, cfg, expect, psn) == Outcome::Error {
                return Outcome::Error;
            }
        }
        self.consume_and_ack(env, cfg, Some(psn))
    }

    /// Completes what became contiguous and acknowledges up to the last response it took
    /// in, or up to `psn` (`ack_to` never passes a READ still waiting): a READ response
    /// means every request before it was executed.
    pub(super) fn consume_and_ack(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        psn: Option<Psn>,
    ) -> Outcome {
        let last = self.consume_ahead();
        let cum = match (last, psn) {
            (Some(l), Some(p)) if p.after(l) => p.next(),
            (Some(l), _) => l.next(),
            (None, Some(p)) => p.next(),
            (None, None) => return Outcome::Ok,
        };
        let (o, _) = self.ack_to(env, cfg, cum);
        o
    }

    /// The pending (sent, incomplete) READ whose responses include `psn`.
    fn pending_read(&self, psn: Psn) -> Option<usize> {
        (0..self.next.min(self.len)).find(|&i| {
            self.entry(i).is_some_and(|e| {
                matches!(e.wqe.op, SendOp::RdmaRead { .. }) && !e.complete && e.covers(psn)
            })
        })
    }

    /// True when the response `psn` was placed ahead.
    fn placed(&self, psn: Psn) -> bool {
        let j = psn.diff(self.rd_base);
        j >= 0 && j.unsigned_abs() < AHEAD_SPAN && self.rd_ahead & (1u128 << j.unsigned_abs()) != 0
    }

    /// Moves the bitmap's base to `base` (the first missing response of the oldest pending
    /// READ), dropping the bits behind it.
    fn align_ahead(&mut self, base: Psn) {
        let d = base.diff(self.rd_base);
        if d > 0 {
            let d = d.unsigned_abs();
            self.rd_ahead = if d >= AHEAD_SPAN {
                0
            } else {
                self.rd_ahead >> d
            };
        } else if d < 0 {
            self.rd_ahead = 0;
        }
        self.rd_base = base;
    }

    /// Completes what became contiguous: the oldest pending READ's responses placed ahead,
    /// READ after READ (also once an atomic before them completed). Returns the last
    /// response PSN it took in.
    fn consume_ahead(&mut self) -> Option<Psn> {
        let pmtu = self.pmtu.get();
        let mut last = None;
        while let Some((h, expect)) = self.first_pending_rd_atomic() {
            self.align_ahead(expect);
            if self.rd_ahead & 1 == 0 {
                return last;
            }
            let Some(e) = self.entry_mut(h) else {
                return last;
            };
            if !matches!(e.wqe.op, SendOp::RdmaRead { .. }) {
                return last;
            }
            e.done_bytes += (e.wqe.length - e.done_bytes).min(pmtu);
            let complete = e.done_bytes >= e.wqe.length;
            if complete {
                e.complete = true;
                self.rd_atomic_out = self.rd_atomic_out.saturating_sub(1);
            }
            self.rd_ahead >>= 1;
            self.rd_base = expect.next();
            last = Some(expect);
        }
        self.rd_ahead = 0;
        self.rd_asked = None;
        last
    }

    /// Asks again for the responses missing before `psn` (from the first missing one,
    /// `expect`, or from where the last such request ended): a READ request per run of
    /// missing packets of each pending READ.
    fn ask_holes(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, expect: Psn, psn: Psn) -> Outcome {
        let mut p = match self.rd_asked {
            Some(a) if a.after(expect) => a,
            _ => expect,
        };
        if !p.before(psn) {
            return Outcome::Ok;
        }
        self.rd_asked = Some(psn);
        let pmtu = self.pmtu.get();
        while p.before(psn) {
            let Some(i) = self.pending_read(p) else {
                p = p.next();
                continue;
            };
            let Some(e) = self.entry(i) else {
                return Outcome::Ok;
            };
            let end = if e.end_psn().before(psn) {
                e.end_psn()
            } else {
                psn
            };
            let resume = e.first_psn.add(e.done_bytes / pmtu);
            if p.before(resume) {
                p = resume;
                continue;
            }
            let start = p;
            while p.before(end) && !self.placed(p) {
                p = p.next();
            }
            if start.before(p) {
                let o = self.ask_again(env, cfg, i, start, p.distance_from(start));
                if o == Outcome::Error {
                    return o;
                }
            }
            while p.before(end) && self.placed(p) {
                p = p.next();
            }
        }
        Outcome::Ok
    }

    /// SR: asks for `count` response packets of READ entry `i` again, from `from`: one
    /// READ request for just those bytes (the responder serves it as a duplicate).
    fn ask_again(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        i: usize,
        from: Psn,
        count: u32,
    ) -> Outcome {
        let marks = self.marks();
        let pmtu = self.pmtu.get();
        let Some(e) = self.slots.get(self.idx(i)) else {
            return Outcome::Ok;
        };
        let k = from.distance_from(e.first_psn);
        let off = k.saturating_mul(pmtu);
        let len = count
            .saturating_mul(pmtu)
            .min(e.wqe.length.saturating_sub(off));
        match Self::send_read_request(env, cfg, pmtu, e, k, len, marks) {
            Ok(()) => {
                self.counters.resent_pkts += 1;
                if let Some(sr) = self.sr.as_deref_mut() {
                    sr.counters.selective_resent += 1;
                }
                Outcome::Ok
            }
            Err(s) => self.fail_entry(env, cfg, i, s),
        }
    }
}
