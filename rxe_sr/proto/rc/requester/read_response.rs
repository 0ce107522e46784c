// SPDX-License-Identifier: GPL-2.0
//! The completer's side of RDMA READ and atomics: READ response packets placed into the
//! work request's SGEs, and the atomic ACK's original value delivered.
//!
//! In standard RoCEv2 READ responses are taken in order, and one after a missing one makes
//! the requester go back to the missing PSN (as rdma_rxe). In the SR format a response is
//! placed where its PSN says (packet `k` of a READ at byte `k * PMTU`, its length checked
//! against that position) also ahead of a missing one, and remembered in a bitmap over the
//! window (`read_placed`); a READ completes when all its responses are placed, in order
//! with the queue. A response past the highest one placed shows the responses and atomic
//! ACKs between as missing: each missing run of a READ's responses is asked for by one READ
//! request for just that run (a duplicate READ, which the responder serves again from its
//! saved resource), each missing atomic ACK by its request, once. A READ longer than the
//! window's bitmap is taken in order, as in the standard format.

use core::ops::DerefMut;

use super::ReqSr;
use super::Requester;
use super::SqEntry;
use crate::proto::psn::Psn;
use crate::proto::rc::{Fatal, RcConfig, RcEnv, RcEvent};
use crate::proto::wire::PacketRepr;
use crate::proto::words::WindowWords;
use crate::uabi::cqe::WcStatus;
use crate::uabi::send_wqe::{Payload, SendOp};

/// Where an SR-format READ response belongs ([`Requester::check_rd_psn`]).
struct RdAt {
    /// The READ's entry, from the head.
    j: usize,
    /// The READ's first PSN and its response packets.
    first: Psn,
    n: u32,
    /// The response's packet in the READ.
    k: u32,
    /// The READ's first missing response (all before it are placed).
    done_k: u32,
}

/// Places SR-format READ response `p`, packet `k` of READ `e`, at byte `k * PMTU` of its
/// SGEs, its length and position checked against that place (execute): a full PMTU but
/// for the last; a run asked for again starts with FIRST and ends with LAST anywhere in
/// the READ, so only the READ's own first and last packets are bound to a position.
fn place_rd_response(
    env: &mut dyn RcEnv,
    e: &SqEntry,
    p: &PacketRepr<'_>,
    k: u32,
    pmtu: u32,
) -> Result<(), WcStatus> {
    let off = k.saturating_mul(pmtu);
    let want = e.wqe.length.saturating_sub(off).min(pmtu);
    let plen = p.payload.len() as u32;
    let last = k + 1 == e.npsn;
    let pos_ok = p.bth.opcode.info().is_some_and(|x| {
        (k != 0 || x.position.starts_message()) && (!last || x.position.ends_message())
    });
    match &e.wqe.payload {
        _ if plen != want || !pos_ok => Err(WcStatus::BadRespErr),
        Payload::Sges(list) if plen > 0 => env.scatter(list, off, p.payload),
        _ => Ok(()),
    }
}

impl<S: DerefMut<Target = [SqEntry]>, B: WindowWords, E: DerefMut<Target = ReqSr<B>>>
    Requester<S, E>
{
    pub(super) fn on_read_response(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Result<(), Fatal> {
        if self.sr_active() {
            return self.on_read_response_sr(env, cfg, p, psn);
        }
        let Some((i, expect)) = self.first_pending_rd_atomic() else {
            self.count(env, RcEvent::DupResponse);
            return Ok(());
        };
        let Some(e) = self.entry(i) else {
            return Ok(());
        };
        if !matches!(e.wqe.op, SendOp::RdmaRead { .. }) || psn != expect {
            if psn.after(expect) {
                // An earlier response was lost.
                return self.retry_from(env, cfg, expect, psn);
            }
            self.count(env, RcEvent::DupResponse);
            return Ok(());
        }
        let rest = e.wqe.length - e.done_bytes;
        let want = rest.min(self.pmtu.get());
        let plen = p.payload.len() as u32;
        let last = rest == want;
        // A resumed READ's responses start again with FIRST (or ONLY).
        let pos_ok = p.bth.opcode.info().is_some_and(|x| {
            x.position.ends_message() == last && (e.done_bytes > 0 || x.position.starts_message())
        });
        let placed = match &e.wqe.payload {
            _ if plen != want || !pos_ok => Err(WcStatus::BadRespErr),
            Payload::Sges(list) if plen > 0 => env.scatter(list, e.done_bytes, p.payload),
            _ => Ok(()),
        };
        if let Err(s) = placed {
            return Err(self.fail_entry(env, cfg, i, s));
        }
        if let Some(m) = self.entry_mut(i) {
            m.done_bytes += plen;
            if last {
                m.complete = true;
            }
        }
        if last {
            self.recount_rd_atomic();
        }
        self.ack_to(env, cfg, psn.next())?;
        Ok(())
    }

    /// A READ response in the SR format: placed by its PSN, also ahead of a missing one.
    /// Checked against its READ ([`Self::check_rd_psn`]), placed ([`place_rd_response`]),
    /// recorded ([`Self::advance_rd_frontier`]); the responses it shows lost are marked.
    fn on_read_response_sr(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Result<(), Fatal> {
        let Some(at) = self.check_rd_psn(env, cfg, psn)? else {
            return Ok(());
        };
        let Some(e) = self.entry(at.j) else {
            return Ok(());
        };
        let length = e.wqe.length;
        if let Err(s) = place_rd_response(env, e, p, at.k, self.pmtu.get()) {
            return Err(self.fail_entry(env, cfg, at.j, s));
        }
        let d = self.advance_rd_frontier(psn, &at, length);
        // The pipe (FaSR) is measured from the highest PSN known through, as for a SACK.
        self.note_sacked(psn);
        if let Some(sr) = self.sr.as_deref_mut() {
            let last = sr.read_last.replace(psn);
            if let Some(l) = last.filter(|l| !l.before(at.first) && psn.after(l.next())) {
                // The responses of one READ come in order: those between were lost.
                self.mark_rd_holes(l.next(), psn);
            }
        }
        self.after_rd_response(env, cfg, psn, at.first.add(d))
    }

    /// Finds the READ that response `psn` belongs to among those sent and checks the PSN
    /// (rdma_rxe's check_psn): a response to no READ waiting, or placed already, is a
    /// duplicate; one ahead of the first missing response of a READ too long for the
    /// bitmap makes the requester go back to that one. `Ok(None)`: nothing more to do with
    /// the response (a duplicate, or one that made the requester go back); `Err`: going
    /// back failed the QP.
    fn check_rd_psn(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        psn: Psn,
    ) -> Result<Option<RdAt>, Fatal> {
        let pmtu = self.pmtu.get();
        let Some(j) = self.find(psn).filter(|&j| j < self.next) else {
            self.count(env, RcEvent::DupResponse);
            return Ok(None);
        };
        let Some(e) = self.entry(j) else {
            return Ok(None);
        };
        if !matches!(e.wqe.op, SendOp::RdmaRead { .. }) || e.complete {
            self.count(env, RcEvent::DupResponse);
            return Ok(None);
        }
        let (first, n) = (e.first_psn, e.npsn);
        let k = psn.distance_from(first);
        let done_k = e.done_bytes / pmtu;
        let frontier = first.add(done_k);
        let Some(sr) = self.sr.as_deref() else {
            return Ok(None);
        };
        let whole_in_span = sr.read_placed.spans(first.add(n.saturating_sub(1)));
        if k < done_k || sr.read_placed.contains(psn) {
            self.count(env, RcEvent::DupResponse);
            return Ok(None);
        }
        if k != done_k && !whole_in_span {
            // Too long for the bitmap: this READ is taken in order.
            self.retry_from(env, cfg, frontier, psn)?;
            return Ok(None);
        }
        Ok(Some(RdAt {
            j,
            first,
            n,
            k,
            done_k,
        }))
    }

    /// Records response `psn` (packet `at.k`) placed: in the bitmap when ahead of the
    /// READ's first missing response, else that frontier moves past it and past the
    /// responses placed ahead. Sets the entry's bytes done (of `length`) and completion;
    /// returns the READ's first missing packet.
    fn advance_rd_frontier(&mut self, psn: Psn, at: &RdAt, length: u32) -> u32 {
        let pmtu = self.pmtu.get();
        let mut d = at.done_k;
        if let Some(sr) = self.sr.as_deref_mut() {
            if at.k != at.done_k {
                sr.read_placed.mark(psn, 1);
            } else {
                d += 1;
                while d < at.n && sr.read_placed.contains(at.first.add(d)) {
                    d += 1;
                }
            }
        }
        let complete = d >= at.n;
        if let Some(m) = self.entry_mut(at.j) {
            m.done_bytes = length.min(d.saturating_mul(pmtu));
            m.complete = complete;
        }
        if complete {
            self.recount_rd_atomic();
        }
        d
    }

    /// A READ response or atomic ACK at `psn` was taken, and every request before `cum` is
    /// known to have reached the responder: the responses missing before `psn` are asked for
    /// (once), and the acknowledgment goes as far as the oldest READ or atomic still
    /// waiting allows.
    fn after_rd_response(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        psn: Psn,
        cum: Psn,
    ) -> Result<(), Fatal> {
        let una = self.una();
        let Some(sr) = self.sr.as_deref_mut() else {
            return Ok(());
        };
        let from = match sr.read_high {
            Some(h) if !h.before(una) => h.next(),
            _ => una,
        };
        if !matches!(sr.read_high, Some(h) if !psn.after(h)) {
            sr.read_high = Some(psn);
        }
        let acked = match sr.read_acked {
            Some(a) if !cum.after(a) => a,
            _ => cum,
        };
        sr.read_acked = Some(acked);
        if psn.after(from) {
            self.mark_rd_holes(from, psn);
        }
        self.ack_to(env, cfg, acked)?;
        // The response may complete an entry UNACK had passed already.
        self.retire(env, cfg);
        // A response to a READ first sent after the last resend of UNACK, with UNACK
        // still missing: that resend was lost.
        self.check_lost_resend(env, self.una(), psn);
        Ok(())
    }

    /// Marks for resending what is missing of the READ responses and atomic ACKs in
    /// `[from, to)`: the first PSN of each run of a READ's responses not placed yet, and
    /// each unanswered atomic.
    pub(super) fn mark_rd_holes(&mut self, from: Psn, to: Psn) {
        let pmtu = self.pmtu.get();
        for i in 0..self.next.min(self.len) {
            let Some(e) = self.entry(i) else {
                break;
            };
            if !e.first_psn.before(to) {
                break;
            }
            if !e.is_rd_atomic() || e.complete || !from.before(e.end_psn()) {
                continue;
            }
            let frontier = e.first_psn.add(e.done_bytes / pmtu);
            let mut q = if from.after(frontier) { from } else { frontier };
            let end = if to.before(e.end_psn()) {
                to
            } else {
                e.end_psn()
            };
            let Some(sr) = self.sr.as_deref_mut() else {
                return;
            };
            let mut placed_before = true;
            while q.before(end) {
                let placed = sr.read_placed.contains(q);
                if !placed && placed_before {
                    sr.resend.mark(q, 1);
                }
                placed_before = placed;
                q = q.next();
            }
        }
    }

    /// The run of READ `e`'s responses missing from its packet `k`: its length in bytes, and
    /// the packet it ends before (the next one placed, or the READ's end).
    pub(super) fn read_run(&self, e: &SqEntry, k: u32) -> (u32, u32) {
        let pmtu = self.pmtu.get();
        let placed = |q: u32| {
            self.sr
                .as_deref()
                .is_some_and(|sr| sr.read_placed.contains(e.first_psn.add(q)))
        };
        let mut end = k.saturating_add(1);
        while end < e.npsn && !placed(end) {
            end += 1;
        }
        let len = e
            .wqe
            .length
            .min(end.saturating_mul(pmtu))
            .saturating_sub(k.saturating_mul(pmtu));
        (len, end)
    }

    /// SR format: the responder dropped READs or atomics that arrived before RCV-NXT
    /// `rcv_nxt` (they run only there, in order) and said so with a NAK sequence error.
    /// Marks RCV-NXT and each sent, unanswered READ or atomic from it on for resending:
    /// selectively, so the WRITE and SEND packets between, placed already, stay put.
    pub(super) fn resend_ordered_from(&mut self, rcv_nxt: Psn) {
        self.mark_resend(rcv_nxt);
        let pmtu = self.pmtu.get();
        for i in 0..self.next.min(self.len) {
            let at = match self.entry(i) {
                Some(e) if e.is_rd_atomic() && !e.complete && !e.first_psn.before(rcv_nxt) => {
                    e.first_psn.add(e.done_bytes / pmtu)
                }
                Some(_) => continue,
                None => break,
            };
            self.mark_resend(at);
        }
    }

    pub(super) fn on_atomic_ack(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Result<(), Fatal> {
        let (Some((i, expect)), Some(ack)) = (self.first_pending_rd_atomic(), p.ext.atomic_ack_eth)
        else {
            self.count(env, RcEvent::DupResponse);
            return Ok(());
        };
        let sr = self.sr_active();
        // In the SR format an atomic ACK is taken also behind a missing READ response.
        let i = match self.find(psn) {
            Some(j) if sr && j < self.next => j,
            _ => i,
        };
        let Some(e) = self.entry(i) else {
            return Ok(());
        };
        let mismatch = matches!(e.wqe.op, SendOp::RdmaRead { .. }) || e.complete;
        if mismatch || (!sr && psn != expect) || (sr && psn != e.first_psn) {
            if !sr && psn.after(expect) {
                return self.retry_from(env, cfg, expect, psn);
            }
            self.count(env, RcEvent::DupResponse);
            return Ok(());
        }
        let placed = match &e.wqe.payload {
            Payload::Sges(list) => env.scatter(list, 0, &ack.orig_rem_data.to_le_bytes()),
            _ => Ok(()),
        };
        if let Err(s) = placed {
            return Err(self.fail_entry(env, cfg, i, s));
        }
        if let Some(m) = self.entry_mut(i) {
            m.complete = true;
        }
        self.recount_rd_atomic();
        if sr {
            return self.after_rd_response(env, cfg, psn, psn.next());
        }
        self.ack_to(env, cfg, psn.next())?;
        Ok(())
    }
}
