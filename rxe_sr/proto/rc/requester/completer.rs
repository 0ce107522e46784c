// SPDX-License-Identifier: GPL-2.0
//! The completer (IBTA 9.7.5.1; rdma_rxe's rxe_comp.c): takes the responder's ACKs, NAKs
//! and RNR NAKs, feeds the cumulative acknowledgements and SR feedback to the engine in use (never past
//! an RDMA READ or atomic still waiting for its response), and retires the acknowledged
//! entries in order into completions, or fails them.

use core::ops::DerefMut;

use super::ReqSr;
use super::Requester;
use super::RetryCause;
use super::SqEntry;
use crate::proto::psn::Psn;
use crate::proto::rc::sr::{decode_feedback, SrAckMeaning};
use crate::proto::rc::{nak, rnr_delay_us, Fatal, RcConfig, RcEnv, RcEvent, Service};
use crate::proto::recovery::{Feedback, ReqEvent};
use crate::proto::wire::ext_headers::AethKind;
use crate::proto::wire::opcode::{OpKind, Position};
use crate::proto::wire::PacketRepr;
use crate::proto::words::WindowWords;
use crate::uabi::cqe::{Completion, WcStatus};
use crate::uabi::send_wqe::{SendFlags, SendOp};

impl<S: DerefMut<Target = [SqEntry]>, B: WindowWords, E: DerefMut<Target = ReqSr<B>>>
    Requester<S, E>
{
    /// A response packet (ACK, NAK, READ response, atomic ACK) from the responder.
    pub fn on_response(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
    ) -> Result<(), Fatal> {
        if cfg.service != Service::Rc {
            return Ok(());
        }
        let psn = p.bth.psn;
        // Only a PSN that was sent and not yet acknowledged means anything; the capability
        // exchange too is decided only by such a response.
        if !self.in_flight(psn) {
            self.count(env, RcEvent::DupResponse);
            return Ok(());
        }
        self.on_caps(env, p.bth.tver, p.bth.resv7);
        self.on_fec_caps(psn, p.bth.resv7);
        self.note_heard(env.now_us());
        let Some(info) = p.bth.opcode.info() else {
            return Ok(());
        };
        let handled = match info.kind {
            OpKind::Acknowledge => self.on_aeth(env, cfg, p, psn),
            // IBTA 1.5 may answer a FLUSH or an ATOMIC WRITE with an RDMA READ RESPONSE ONLY
            // without payload (rdma_rxe does; rxe_sr's responder ACKs them): its AETH then
            // acknowledges as an ACK's does.
            OpKind::RdmaReadResponse if self.acks_flush_or_atomic_write(p, psn) => {
                self.on_aeth(env, cfg, p, psn)
            }
            OpKind::RdmaReadResponse => self.on_read_response(env, cfg, p, psn),
            OpKind::AtomicAcknowledge => self.on_atomic_ack(env, cfg, p, psn),
            _ => {
                self.count(env, RcEvent::DupResponse);
                Ok(())
            }
        };
        handled?;
        self.run(env, cfg)
    }

    /// An AETH (an ACK, NAK or RNR NAK; rdma_rxe's check_ack): SR feedback in the SR
    /// format, else the syndrome decides. An SR acknowledgment the requester takes (its
    /// PSN in flight, and for feedback the PSNs it names too) sets the window in use.
    fn on_aeth(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Result<(), Fatal> {
        let Some(aeth) = p.ext.aeth else {
            return Ok(());
        };
        if let Some(sr) = p.ext.sr_ack_eth {
            let meaning = decode_feedback(psn, &sr, &aeth);
            if let SrAckMeaning::Feedback(fb) = meaning {
                return self.on_sr_feedback(env, cfg, fb, sr.window_log2);
            }
            self.take_window(sr.window_log2);
            if meaning == SrAckMeaning::ReadAck {
                return Ok(());
            }
        }
        match aeth.kind() {
            AethKind::Ack { .. } => self.on_ack(env, cfg, psn),
            AethKind::RnrNak { timer } => self.on_rnr_nak(env, cfg, psn, timer),
            AethKind::Nak { code } if code == nak::PSN_SEQ_ERR => self.on_seq_nak(env, cfg, psn),
            AethKind::Nak { code } => self.on_nak_error(env, cfg, psn, code),
            AethKind::Reserved => Ok(()),
        }
    }

    /// An ACK of every PSN up to `psn`: acknowledged as far as the oldest READ or atomic
    /// still waiting allows, and that one's response asked for again if the ACK passed it.
    fn on_ack(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, psn: Psn) -> Result<(), Fatal> {
        self.count_aack(env, psn.next());
        match self.ack_to(env, cfg, psn.next())? {
            Some(from) => self.retry_from(env, cfg, from, psn.next()),
            None => Ok(()),
        }
    }

    /// An RNR NAK at `psn` (the responder had no receive WQE): what precedes it is
    /// acknowledged, and the requester goes back to it after the NAK's `timer` delay, or
    /// fails its work request once `rnr_retry` is spent (7: without end).
    fn on_rnr_nak(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        psn: Psn,
        timer: u8,
    ) -> Result<(), Fatal> {
        self.count(env, RcEvent::RnrNakRcvd);
        self.ack_to(env, cfg, psn)?;
        let Some(i) = self.find(psn) else {
            return Ok(());
        };
        if self.rnr_left == 0 {
            self.count(env, RcEvent::RnrRetryExceeded);
            return Err(self.fail_entry(env, cfg, i, WcStatus::RnrRetryExcErr));
        }
        if self.rnr_left != 7 {
            self.rnr_left -= 1;
        }
        let now = env.now_us();
        let wake = now.saturating_add(rnr_delay_us(timer));
        self.rnr_deadline = Some(wake);
        // The peer is alive and the path works (the packet at its ePSN arrived):
        // the retries for timeouts and sequence errors start again; RNR waits are
        // bounded by rnr_retry alone.
        self.retries_left = cfg.retry_cnt;
        // The retransmission timer waits for the RNR delay.
        if self.rto_deadline.is_some() {
            self.rto_deadline = Some(wake.saturating_add(cfg.timeout_us));
        }
        self.rewind(psn);
        Ok(())
    }

    /// A NAK "PSN sequence error" with RCV-NXT `psn`: acknowledged up to it, and the engine
    /// decides what goes again (a go-back consumes a retry); in the SR format the READs and
    /// atomics the responder dropped from RCV-NXT on go again too.
    fn on_seq_nak(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, psn: Psn) -> Result<(), Fatal> {
        self.count(env, RcEvent::SeqNakRcvd);
        let lost = self.ack_to(env, cfg, psn)?;
        if self.rnr_deadline.is_some() {
            // Gone back to an RNR NAK's PSN, waiting to resend from it: the NAK
            // reports the packets sent after it, which go again anyway. Going back
            // for it too spent a retry per RNR wait, so a receiver slow to post its
            // receives made the QP die of retries.
            return Ok(());
        }
        if let Some(from) = lost {
            // A READ or atomic before RCV-NXT still waits for a response: asked
            // for again; and in the SR format the ones from RCV-NXT on that the
            // responder dropped go again too (what the NAK says).
            self.retry_from(env, cfg, from, psn)?;
            if self.sr_active() {
                self.resend_ordered_from(psn);
            }
            return Ok(());
        }
        let now = env.now_us();
        let acts = self.feed(
            env,
            ReqEvent::Feedback {
                fb: Feedback::Nak { rcv_nxt: psn },
                now,
            },
        );
        let cursor = (self.next, self.next_pkt);
        self.apply(env, cfg, acts, Some(RetryCause::SeqNak))?;
        if self.sr_active() && (self.next, self.next_pkt) == cursor {
            // The engine did not go back (only FaSR's does, for its fallback): in
            // the SR format this NAK means READs or atomics arrived before RCV-NXT
            // and were dropped.
            self.resend_ordered_from(psn);
        }
        Ok(())
    }

    /// Any other NAK (invalid request, remote access or operation error): what precedes
    /// `psn` is acknowledged, and the request at it fails with the matching status.
    fn on_nak_error(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        psn: Psn,
        code: u8,
    ) -> Result<(), Fatal> {
        self.ack_to(env, cfg, psn)?;
        let status = match code {
            nak::INVALID_REQUEST => WcStatus::RemInvReqErr,
            nak::REMOTE_ACCESS => WcStatus::RemAccessErr,
            nak::REMOTE_OP => WcStatus::RemOpErr,
            nak::INVALID_RD_REQUEST => WcStatus::RemInvRdReqErr,
            _ => WcStatus::BadRespErr,
        };
        let i = self.find(psn).unwrap_or(0);
        Err(self.fail_entry(env, cfg, i, status))
    }

    /// A cumulative acknowledgement up to (not including) `cum`; returns the PSN the
    /// requester must resend from when `cum` passes a READ or atomic that is still waiting.
    pub(super) fn ack_to(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        cum: Psn,
    ) -> Result<Option<Psn>, Fatal> {
        let mut eff = cum;
        let mut lost = None;
        if let Some((_, resume)) = self.first_pending_rd_atomic() {
            if cum.after(resume) {
                eff = resume;
                lost = Some(resume);
            }
        }
        if !eff.after(self.una()) {
            return Ok(lost);
        }
        let now = env.now_us();
        let acts = self.feed(
            env,
            ReqEvent::Feedback {
                fb: Feedback::Ack { rcv_nxt: eff },
                now,
            },
        );
        self.apply(env, cfg, acts, None)?;
        Ok(lost)
    }

    /// Counts an ACK up to (not including) `cum` as an AACK when it moves UNACK while a
    /// later PSN was known received (UNACK was a hole).
    fn count_aack(&mut self, env: &mut dyn RcEnv, cum: Psn) {
        let una = self.una();
        if let Some(sr) = self.sr.as_deref_mut() {
            if cum.after(una) && sr.received_past(una).is_some() {
                sr.count(env, RcEvent::AackRcvd);
            }
        }
    }

    /// SR feedback (SACK, FNACK, a hole): for the engine, unless its cumulative part passes
    /// an RDMA READ or atomic still waiting for its response; then, as for a plain ACK,
    /// acknowledged up to it and that response asked for again.
    fn on_sr_feedback(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        fb: Feedback,
        window_log2: u8,
    ) -> Result<(), Fatal> {
        let ev = match fb {
            Feedback::Sack { .. } | Feedback::SackGap { .. } => Some(RcEvent::SackRcvd),
            Feedback::Fnack { .. } => Some(RcEvent::FnackRcvd),
            Feedback::Holes { .. } => Some(RcEvent::HoleRcvd),
            Feedback::Ack { .. } | Feedback::Nak { .. } => None,
        };
        if let (Some(sr), Some(ev)) = (self.sr.as_deref_mut(), ev) {
            sr.count(env, ev);
        }
        if !self.sr_active() || !self.names_in_flight(&fb) {
            // SR feedback to a requester that never sent SR requests, or naming a PSN it
            // has not sent or has had acknowledged: not ours.
            self.count(env, RcEvent::DupResponse);
            return Ok(());
        }
        self.take_window(window_log2);
        if let Some((_, resume)) = self.first_pending_rd_atomic() {
            if fb.rcv_nxt().after(resume) {
                return match self.ack_to(env, cfg, fb.rcv_nxt())? {
                    Some(from) => self.retry_from(env, cfg, from, fb.rcv_nxt()),
                    None => Ok(()),
                };
            }
        }
        match fb {
            Feedback::Sack { sack_psn, .. } | Feedback::SackGap { sack_psn, .. } => {
                self.note_sacked(sack_psn)
            }
            // A hole exists only before a PSN received: the one after it.
            Feedback::Holes { holes, .. } => {
                for h in holes.iter().filter(|h| h.count > 0) {
                    self.note_sacked(h.first.add(h.count));
                }
            }
            _ => {}
        }
        let now = env.now_us();
        let acts = self.feed(env, ReqEvent::Feedback { fb, now });
        self.apply(env, cfg, acts, None)?;
        if let Feedback::Sack {
            rcv_nxt, sack_psn, ..
        }
        | Feedback::SackGap {
            rcv_nxt, sack_psn, ..
        } = fb
        {
            self.check_lost_resend(env, rcv_nxt, sack_psn);
        }
        Ok(())
    }

    /// True when `psn` was sent and is not acknowledged yet: `[UNACK, the highest sent]`.
    fn in_flight(&self, psn: Psn) -> bool {
        !psn.before(self.una()) && psn.before(self.sent_high)
    }

    /// True when the PSNs that SR feedback `fb` names as received or missing are in flight.
    fn names_in_flight(&self, fb: &Feedback) -> bool {
        match *fb {
            // (Its run may begin before UNACK: a run held back while a fill moved it; so may
            // a gap, which the engine clips.)
            Feedback::Sack { sack_psn, .. } | Feedback::SackGap { sack_psn, .. } => {
                self.in_flight(sack_psn)
            }
            Feedback::Fnack { psn, .. } => self.in_flight(psn),
            Feedback::Holes { holes, .. } => holes
                .iter()
                .filter(|h| h.count > 0)
                .all(|h| self.in_flight(h.first) && self.in_flight(h.first.add(h.count - 1))),
            Feedback::Ack { .. } | Feedback::Nak { .. } => true,
        }
    }

    /// True when `p` is an RDMA READ RESPONSE ONLY without payload for the PSN of a FLUSH
    /// or an ATOMIC WRITE.
    fn acks_flush_or_atomic_write(&self, p: &PacketRepr<'_>, psn: Psn) -> bool {
        let only = p
            .bth
            .opcode
            .info()
            .is_some_and(|x| x.position == Position::Only);
        only && p.payload.is_empty()
            && self.find(psn).and_then(|i| self.entry(i)).is_some_and(|e| {
                matches!(e.wqe.op, SendOp::Flush { .. } | SendOp::AtomicWrite { .. })
            })
    }

    /// Index of the entry holding `psn` among the sent ones.
    pub(super) fn find(&self, psn: Psn) -> Option<usize> {
        (0..self.sent_once().saturating_add(1).min(self.len))
            .find(|&i| self.entry(i).is_some_and(|e| e.covers(psn)))
    }

    /// How many entries from the head were sent at least once: those before the send
    /// cursor and, after a go-back, those the cursor passed before it went back (their PSNs
    /// are below the highest sent). Their responses and acknowledgments still count: a
    /// READ's responses may arrive while the cursor is behind it, and an ACK past a READ
    /// the cursor is behind still says its responses were lost.
    fn sent_once(&self) -> usize {
        let mut n = self.next.min(self.len);
        while let Some(e) = self.entry(n) {
            if e.npsn == 0 || !e.first_psn.before(self.sent_high) {
                break;
            }
            n += 1;
        }
        n
    }

    /// The first entry that is a READ or atomic still waiting for its response, with its
    /// resume PSN.
    pub(super) fn first_pending_rd_atomic(&self) -> Option<(usize, Psn)> {
        (0..self.sent_once()).find_map(|i| {
            let e = self.entry(i)?;
            if !e.is_rd_atomic() || e.complete {
                return None;
            }
            let k = e.done_bytes / self.pmtu;
            Some((i, e.first_psn.add(k)))
        })
    }

    /// Retires the finished entries at the head.
    ///
    /// RC: a request is finished once UNACK passed its last PSN (and a READ's or atomic's
    /// response arrived), whether or not the send cursor is past it: after a go-back (an
    /// RNR or sequence-error NAK, a timeout) an acknowledgment may cover what the cursor
    /// has yet to send again. Waiting for the cursor then left the entry unretired for
    /// good, as UNACK moved no further (found by the forged-packet test: an RNR NAK, then
    /// the ACK of everything). A local operation is finished once it ran.
    pub(super) fn retire(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) {
        let una = self.una();
        while let Some(e) = self.entry(0) {
            let done = match cfg.service {
                Service::Uc => self.next > 0,
                Service::Rc if e.npsn == 0 => {
                    e.complete && !e.end_psn().after(una) && self.next > 0
                }
                Service::Rc => {
                    let acked = !e.end_psn().after(una);
                    acked && (!e.is_rd_atomic() || e.complete)
                }
            };
            if !done {
                break;
            }
            self.pop(env, cfg, WcStatus::Success);
        }
    }

    /// Retires the head entry with `status`.
    fn pop(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, status: WcStatus) {
        let Some(e) = self.entry(0) else {
            return;
        };
        let was_sent = self.next > 0;
        let signaled = cfg.sig_all || e.wqe.flags.contains(SendFlags::SIGNALED);
        let held_rd_atomic = e.is_rd_atomic() && !e.complete;
        let c = Completion::for_send_wqe(&e.wqe, cfg.qpn, status);
        env.retire_send((signaled || status != WcStatus::Success).then_some(&c));
        let cap = self.slots.len().max(1);
        self.head = (self.head + 1) % cap;
        self.len -= 1;
        self.next = self.next.saturating_sub(1);
        if !was_sent {
            // The cursor was inside the entry (gone back into it): it starts the next one.
            self.next_pkt = 0;
        }
        if held_rd_atomic && was_sent {
            self.recount_rd_atomic();
        }
    }

    /// Counts the READs and atomics that hold one of the responder's resources: every
    /// one sent from the oldest unanswered on. The responder keeps the results of its
    /// last `max_dest_rd_atomic` READs and atomics only, so one answered ahead of an older
    /// unanswered one (its response came, the older one's was lost) keeps its place until
    /// the older one is answered: new ones sent in its stead would push the older one's
    /// result out of the responder's memory before it is asked for again (IBTA's in-order
    /// responses give the same count).
    pub(super) fn recount_rd_atomic(&mut self) {
        let (mut n, mut held) = (0, false);
        for i in 0..self.next {
            let Some(e) = self.entry(i) else {
                break;
            };
            if e.is_rd_atomic() {
                held = held || !e.complete;
                n += u32::from(held);
            }
        }
        self.rd_atomic_out = n;
    }

    /// Completes entry `i` with `status`, the unconfirmed entries before and after it as
    /// flushed, in order; the QP then enters the Error state (which flushes what is still
    /// queued behind the requester), as the [`Fatal`] returned says.
    pub(super) fn fail_entry(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        i: usize,
        status: WcStatus,
    ) -> Fatal {
        for _ in 0..i {
            self.pop(env, cfg, WcStatus::WrFlushErr);
        }
        if self.len > 0 {
            self.pop(env, cfg, status);
        }
        self.flush(cfg, |c| env.retire_send(Some(c)));
        Fatal
    }
}
