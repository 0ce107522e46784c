// SPDX-License-Identifier: GPL-2.0
//! The completer's side of RDMA READ and atomics: READ response packets placed in order
//! into the work request's SGEs, and the atomic ACK's original value delivered; a response
//! after a missing one makes the requester resend from the missing PSN (in the SR format,
//! only that READ's request, from its first missing response).

use core::ops::DerefMut;

use super::ReqSr;
use super::Requester;
use super::SqEntry;
use crate::proto::psn::Psn;
use crate::proto::rc::{Outcome, RcConfig, RcEnv};
use crate::proto::wire::PacketRepr;
use crate::uabi::cqe::WcStatus;
use crate::uabi::send_wqe::{Payload, SendOp};

impl<S: DerefMut<Target = [SqEntry]>, E: DerefMut<Target = ReqSr>> Requester<S, E> {
    pub(super) fn on_read_response(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Outcome {
        let Some((i, expect)) = self.first_pending_rd_atomic() else {
            self.counters.dup_responses += 1;
            return Outcome::Ok;
        };
        let Some(e) = self.entry(i) else {
            return Outcome::Ok;
        };
        if !matches!(e.wqe.op, SendOp::RdmaRead { .. }) || psn != expect {
            if psn.after(expect) {
                // An earlier response was lost.
                return self.retry_from(env, cfg, expect);
            }
            self.counters.dup_responses += 1;
            return Outcome::Ok;
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
            return self.fail_entry(env, cfg, i, s);
        }
        if let Some(m) = self.entry_mut(i) {
            m.done_bytes += plen;
            if last {
                m.complete = true;
            }
        }
        if last {
            self.rd_atomic_out = self.rd_atomic_out.saturating_sub(1);
        }
        let (o, _) = self.ack_to(env, cfg, psn.next());
        o
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
    ) -> Outcome {
        let (Some((i, expect)), Some(ack)) = (self.first_pending_rd_atomic(), p.ext.atomic_ack_eth)
        else {
            self.counters.dup_responses += 1;
            return Outcome::Ok;
        };
        let Some(e) = self.entry(i) else {
            return Outcome::Ok;
        };
        if matches!(e.wqe.op, SendOp::RdmaRead { .. }) || psn != expect {
            if psn.after(expect) {
                return self.retry_from(env, cfg, expect);
            }
            self.counters.dup_responses += 1;
            return Outcome::Ok;
        }
        let placed = match &e.wqe.payload {
            Payload::Sges(list) => env.scatter(list, 0, &ack.orig_rem_data.to_le_bytes()),
            _ => Ok(()),
        };
        if let Err(s) = placed {
            return self.fail_entry(env, cfg, i, s);
        }
        if let Some(m) = self.entry_mut(i) {
            m.complete = true;
        }
        self.rd_atomic_out = self.rd_atomic_out.saturating_sub(1);
        let (o, _) = self.ack_to(env, cfg, psn.next());
        o
    }
}
