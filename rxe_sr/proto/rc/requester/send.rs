// SPDX-License-Identifier: GPL-2.0
//! The requester's send cursor (rdma_rxe's rxe_requester): walks the send queue and sends
//! what the unacknowledged-PSN window, the device's in-flight budget, the RDMA READ/atomic
//! limit and fences allow, running local operations (BIND_MW, LOCAL_INV, REG_MR) in order
//! as it reaches them.

use core::ops::DerefMut;

use super::request_packet::{PacketAt, PacketError};
use super::ReqSr;
use super::Requester;
use super::SqEntry;
use super::TX_BUSY_WAIT_US;
use crate::proto::psn::Psn;
use crate::proto::rc::dev_inflight::ADMIT_CHUNK_PSNS;
use crate::proto::rc::responder::RECV_WINDOW;
use crate::proto::rc::{Outcome, RcConfig, RcEnv, Service, MAX_UNACKED_PSNS, SR_MAX_UNACKED_PSNS};
use crate::proto::recovery::ReqEvent;
use crate::uabi::send_wqe::{SendFlags, SendOp};

/// The PSNs of entry `e` from `psn` on that the device's in-flight budget admits at once:
/// a chunk of at most [`ADMIT_CHUNK_PSNS`] of a SEND or WRITE, so that one long message
/// shares the budget with the device's other QPs; the rest of a READ or atomic whole (one
/// request asks for all its responses).
fn admit_chunk(e: &SqEntry, psn: Psn) -> u32 {
    let rest = u32::try_from(e.end_psn().diff(psn)).unwrap_or(0);
    if e.is_rd_atomic() {
        rest
    } else {
        rest.min(ADMIT_CHUNK_PSNS)
    }
}

impl<S: DerefMut<Target = [SqEntry]>, E: DerefMut<Target = ReqSr>> Requester<S, E> {
    /// Sends what the window, the READ/atomic limit and fences allow.
    pub fn run(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) -> Outcome {
        if self.rnr_deadline.is_some() || self.busy_deadline.is_some() {
            return Outcome::Ok;
        }
        let rc = cfg.service == Service::Rc;
        if rc && self.resend_pending() && self.resend_marked(env, cfg) == Outcome::Error {
            return Outcome::Error;
        }
        if self.busy_deadline.is_some() {
            return Outcome::Ok;
        }
        let marks = self.marks();
        let window = if self.sr_active() {
            SR_MAX_UNACKED_PSNS
        } else {
            MAX_UNACKED_PSNS
        } as i32;
        let mut resend = false;
        while self.next < self.len {
            let una = self.una();
            // The entry is read in place (no per-packet copy of the WQE).
            let k = self.idx(self.next);
            let Some(e) = self.slots.get(k) else {
                break;
            };
            if e.npsn == 0 {
                // A local operation: it runs once (a go-back passes over it again), in
                // order with the requests around it, and completes as the requests before it
                // are acknowledged.
                let (op, done, fence) =
                    (e.wqe.op, e.complete, e.wqe.flags.contains(SendFlags::FENCE));
                if !done {
                    if fence && self.rd_atomic_out > 0 {
                        break;
                    }
                    if let Err(status) = env.local_op(&op) {
                        return self.fail_entry(env, cfg, self.next, status);
                    }
                    if let Some(m) = self.entry_mut(self.next) {
                        m.complete = true;
                    }
                }
                self.next += 1;
                self.next_pkt = 0;
                self.retire(env, cfg);
                continue;
            }
            if e.is_rd_atomic() && e.complete {
                // Answered already (in the SR format, ahead of an older READ's missing
                // response): a go-back passes over it; behind an unanswered one it still
                // holds a responder resource (`recount_rd_atomic`).
                if self.rd_atomic_out > 0 {
                    self.rd_atomic_out += 1;
                }
                self.next += 1;
                self.next_pkt = 0;
                continue;
            }
            let (psn, rd_atomic) = (e.first_psn.add(self.next_pkt), e.is_rd_atomic());
            // The pipe keeps the requester's own egress queue short in front of its
            // resends; a READ request adds one small packet there (its responses queue at
            // the responder), so READs are bound by the window alone.
            let is_read = matches!(e.wqe.op, SendOp::RdmaRead { .. });
            if rc && (psn.diff(una) >= window || (!is_read && self.pipe_full(psn))) {
                break;
            }
            if rc
                && is_read
                && window > MAX_UNACKED_PSNS as i32
                && psn != una
                && e.end_psn().diff(una) > window
            {
                // SR format: a READ's responses all fall inside the window, where they are
                // placed out of order (read_response.rs). A READ longer than the window goes
                // once it is the oldest request.
                break;
            }
            if rd_atomic && self.next_pkt == 0 && self.rd_atomic_out >= cfg.max_rd_atomic.max(1) {
                break;
            }
            if e.wqe.flags.contains(SendFlags::FENCE)
                && self.next_pkt == 0
                && self.rd_atomic_out > 0
            {
                break;
            }
            if self.next_pkt == 0 && !self.recv_window_open(e) {
                break;
            }
            if is_read && self.sr_active() && self.read_run(e, self.next_pkt).1 < e.npsn {
                // Gone back to a READ some of whose later responses are placed already (SR
                // format): only its missing runs are asked for again, each by its own
                // request (resend_marked), not the whole rest of the READ.
                let (from, end) = (psn, e.end_psn());
                self.rd_atomic_out += 1;
                self.next += 1;
                self.next_pkt = 0;
                self.mark_rd_holes(from, end);
                resend = true;
                continue;
            }
            if rc && !psn.before(self.admitted_end) {
                // PSNs not admitted yet: the device's in-flight budget admits the next
                // chunk of this message, or the QP waits.
                let n = admit_chunk(e, psn);
                if !env.admit(self.admitted_psns(), n) {
                    self.counters.admit_waits += 1;
                    break;
                }
                self.admitted_end = psn.add(n);
            }
            let last_pkt = self.next_pkt + 1 >= e.npsn;
            let mut next_follows = rc && (!last_pkt || self.next_follows(window));
            let mut stops_after = false;
            if rc && next_follows && !psn.next().before(self.admitted_end) {
                // The PSN after this packet is not admitted yet: it is asked for now, as this
                // packet goes without AckReq only if more follows (the last packet of a
                // message if the next message may follow, any other if its message goes
                // on). Were the budget to stop the stream here, nothing would ask for the
                // acknowledgment of its tail.
                let more = if last_pkt {
                    self.entry(self.next + 1)
                        .map(|n| (n.first_psn, admit_chunk(n, n.first_psn)))
                } else {
                    Some((psn.next(), admit_chunk(e, psn.next())))
                };
                if let Some((from, n)) = more {
                    if env.admit(self.admitted_psns(), n) {
                        self.admitted_end = from.add(n);
                    } else {
                        self.counters.admit_waits += 1;
                        next_follows = false;
                        stops_after = !last_pkt;
                    }
                }
            }
            let sent = Self::send_packet(
                env,
                cfg,
                self.pmtu.get(),
                &mut self.noack_pkts,
                e,
                PacketAt {
                    k: self.next_pkt,
                    next_follows,
                    stops_after,
                },
                marks,
            );
            let (last, used) = match sent {
                Ok(x) => x,
                Err(PacketError::Busy) => {
                    self.wait_busy(env);
                    break;
                }
                Err(PacketError::Failed(status)) => {
                    return self.fail_entry(env, cfg, self.next, status)
                }
            };
            if rc {
                let now = env.now_us();
                self.note_una_sent(psn, now);
                if !psn.before(self.sent_high) {
                    self.sent_high = psn.add(used);
                    if self.rtt_probe.is_none() {
                        self.rtt_probe = Some((psn, now));
                    }
                } else {
                    self.counters.resent_pkts += 1;
                    if self.nak_sample == Some(psn) {
                        self.nak_sample = None;
                        self.rtt_probe = Some((psn, now));
                    }
                }
                let acts = self.feed(
                    env,
                    ReqEvent::Sent {
                        psn: psn.add(used - 1),
                        now,
                    },
                );
                if self.apply(env, cfg, acts, None) == Outcome::Error {
                    return Outcome::Error;
                }
            }
            if last {
                if rd_atomic {
                    self.rd_atomic_out += 1;
                }
                self.next += 1;
                self.next_pkt = 0;
                if !rc {
                    // UC completes once the last packet is out.
                    self.retire(env, cfg);
                }
            } else {
                self.next_pkt += used;
            }
        }
        if resend {
            return self.resend_marked(env, cfg);
        }
        Outcome::Ok
    }

    /// In the SR format, whether message `e` fits the peer's window of receive WQEs: the
    /// responder places a SEND (or the last packet of a WRITE with immediate) only when its
    /// MSN is less than [`RECV_WINDOW`] past the oldest message it has not completed, and
    /// drops it unrecorded otherwise; a scheme whose requester only resends what the
    /// responder names (SRNIC) would then be left with timeouts alone. The oldest entry
    /// consuming a receive WQE that is not yet acknowledged bounds the responder's oldest
    /// uncompleted message from below, so waiting for it keeps every message sent inside.
    /// Always true in the standard format (placed in order, nothing to hold ahead).
    fn recv_window_open(&self, e: &SqEntry) -> bool {
        if !self.sr_active() || !e.consumes_recv() {
            return true;
        }
        let una = self.una();
        let oldest = (0..self.next)
            .filter_map(|i| self.entry(i))
            .find(|o| o.consumes_recv() && o.end_psn().after(una));
        match oldest {
            // 24-bit MSNs: the distance forward from the oldest.
            Some(o) => (e.msn.wrapping_sub(o.msn) & 0x00ff_ffff) < RECV_WINDOW as u32,
            None => true,
        }
    }

    /// Whether the message after the one at the send cursor goes right after it: it is
    /// queued, a WRITE or SEND (not a local operation, READ or atomic), not fenced, its
    /// first packet inside the window and the FaSR pipe, and the responder's receive window
    /// open for it. Only then may the cursor's last packet go without AckReq: were the
    /// stream to stop there, nothing would ask for the acknowledgment of its tail.
    fn next_follows(&self, window: i32) -> bool {
        let Some(n) = self.entry(self.next + 1) else {
            return false;
        };
        if n.npsn == 0 || n.is_rd_atomic() || n.complete || n.wqe.flags.contains(SendFlags::FENCE) {
            return false;
        }
        n.first_psn.diff(self.una()) < window
            && !self.pipe_full(n.first_psn)
            && self.recv_window_open(n)
    }

    /// The PSNs this requester holds of the device's in-flight budget: from UNACK to the
    /// end of the last message admitted (0 once UNACK passed it, as on a UC QP, which
    /// asks for none).
    pub fn admitted_psns(&self) -> u32 {
        u32::try_from(self.admitted_end.diff(self.una())).unwrap_or(0)
    }

    /// The egress queue refused a packet: sending pauses for [`TX_BUSY_WAIT_US`], and the
    /// send cursor (or the resend mark) stays on that packet.
    pub(super) fn wait_busy(&mut self, env: &mut dyn RcEnv) {
        self.busy_deadline = Some(env.now_us().saturating_add(TX_BUSY_WAIT_US));
    }
}
