// SPDX-License-Identifier: GPL-2.0
//! The completer's side of RDMA READ and atomics: READ response packets placed into the
//! work request's SGEs, and the atomic ACK's original value delivered. In standard RoCEv2
//! responses are taken in order, and one after a missing one makes the requester resend the
//! READ from the missing PSN; in the SR format a response past a missing one is placed where
//! it belongs (up to 127 packets ahead) and only the missing ones are asked for again.

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
        let read = matches!(e.wqe.op, SendOp::RdmaRead { .. });
        if read && psn.after(expect) && self.sr_active() {
            return self.read_response_ahead(env, cfg, p, i, expect, psn);
        }
        if !read || psn != expect {
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
        // A resumed READ's responses start again with FIRST (or ONLY). In the SR format a
        // hole may be asked for alone, so only the lengths are checked there.
        let pos_ok = self.sr_active()
            || p.bth.opcode.info().is_some_and(|x| {
                x.position.ends_message() == last
                    && (e.done_bytes > 0 || x.position.starts_message())
            });
        let placed = match &e.wqe.payload {
            _ if plen != want || !pos_ok => Err(WcStatus::BadRespErr),
            Payload::Sges(list) if plen > 0 => env.scatter(list, e.done_bytes, p.payload),
            _ => Ok(()),
        };
        if let Err(s) = placed {
            return self.fail_entry(env, cfg, i, s);
        }
        // This packet, then those placed ahead of it that now follow on.
        let pmtu = self.pmtu.get();
        let mut ahead = self.rd_ahead >> 1;
        let mut done = e.done_bytes + plen;
        while ahead & 1 == 1 && done < e.wqe.length {
            done += (e.wqe.length - done).min(pmtu);
            ahead >>= 1;
        }
        let (first, length) = (e.first_psn, e.wqe.length);
        self.rd_ahead = ahead;
        let complete = done >= length;
        if let Some(m) = self.entry_mut(i) {
            m.done_bytes = done;
            if complete {
                m.complete = true;
            }
        }
        if complete {
            self.rd_atomic_out = self.rd_atomic_out.saturating_sub(1);
            self.rd_ahead = 0;
            self.rd_asked = None;
        }
        let (o, _) = self.ack_to(env, cfg, first.add(done.div_ceil(pmtu)));
        o
    }

    /// SR: a response of the oldest pending READ past its first missing one (`expect`):
    /// placed where it belongs, and the PSNs between asked for again, once.
    fn read_response_ahead(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        i: usize,
        expect: Psn,
        psn: Psn,
    ) -> Outcome {
        let pmtu = self.pmtu.get();
        let Some(e) = self.entry(i) else {
            return Outcome::Ok;
        };
        let k = psn.distance_from(e.first_psn);
        let j = psn.distance_from(expect);
        if k >= e.npsn || j >= 128 || self.rd_ahead & (1u128 << j) != 0 {
            // Another READ's, too far ahead to track, or placed already.
            self.counters.dup_responses += 1;
            return Outcome::Ok;
        }
        let off = k.saturating_mul(pmtu);
        let want = (e.wqe.length - off).min(pmtu);
        let plen = p.payload.len() as u32;
        let placed = match &e.wqe.payload {
            _ if plen != want => Err(WcStatus::BadRespErr),
            Payload::Sges(list) if plen > 0 => env.scatter(list, off, p.payload),
            _ => Ok(()),
        };
        if let Err(s) = placed {
            return self.fail_entry(env, cfg, i, s);
        }
        self.rd_ahead |= 1u128 << j;
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.counters.read_ahead_placed += 1;
        }
        // The hole up to this packet, from where the last request for holes ended.
        let from = match self.rd_asked {
            Some(a) if a.after(expect) => a,
            _ => expect,
        };
        if from.before(psn) {
            self.rd_asked = Some(psn);
            return self.ask_again(env, cfg, i, from, psn.distance_from(from));
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
