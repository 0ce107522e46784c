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
use crate::proto::rc::{Fatal, RcConfig, RcEnv, RcEvent, Service};
use crate::proto::recovery::ReqEvent;
use crate::proto::wire::caps::CapAnswer;
use crate::proto::words::WindowWords;
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

/// Why the send cursor stops for now: the first gate that holds the packet at it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stall {
    /// No entry at the send cursor.
    NoEntry,
    /// A fenced request or local operation waits for the READs and atomics before it.
    Fence,
    /// The packet's PSN is past the unacknowledged-PSN window from UNACK.
    Window,
    /// FaSR: a new packet would overfill the pipe in front of the resends.
    Pipe,
    /// SR format: a READ longer than the window waits until it is the oldest request.
    LongRead,
    /// As many READs and atomics are outstanding as `max_rd_atomic` allows.
    RdAtomicLimit,
    /// SR format: the message is past the peer's window of receive WQEs.
    RecvWindow,
    /// The device's in-flight budget did not admit the message's next chunk.
    Admit,
    /// The egress queue refused the packet: sending waits [`TX_BUSY_WAIT_US`].
    Busy,
}

/// Why a step of the send cursor did not move it on.
enum Halt {
    /// Sending waits (for an acknowledgment, the budget, room in the egress queue).
    Stall(Stall),
    /// `run` ends with this error (a work request failed: the QP enters the Error state).
    Exit(Fatal),
}

impl From<Stall> for Halt {
    fn from(s: Stall) -> Self {
        Halt::Stall(s)
    }
}

impl<S: DerefMut<Target = [SqEntry]>, B: WindowWords, E: DerefMut<Target = ReqSr<B>>>
    Requester<S, E>
{
    /// The PSNs the requester lets be outstanding past UNACK: in the standard format the
    /// go-back-N window (`RcConfig::gbn_window`,
    /// [`MAX_UNACKED_PSNS`](crate::proto::rc::MAX_UNACKED_PSNS) by default), in the
    /// SR format the window in use with the peer
    /// ([`ReqSr::window`]: the peer's advertised one, at most its own SR window,
    /// [`SrSetup::window_log2`](crate::proto::rc::sr::SrSetup::window_log2)).
    pub fn window(&self) -> u32 {
        match self.sr.as_deref() {
            Some(sr) if sr.active => sr.window(),
            _ => self.gbn_window,
        }
    }

    /// Sends what the window, the READ/atomic limit and fences allow, after the PSNs marked
    /// for resending: one `step` of the send cursor at a time until a `Stall`.
    pub fn run(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) -> Result<(), Fatal> {
        if self.rnr_deadline.is_some() || self.busy_deadline.is_some() {
            return Ok(());
        }
        let rc = cfg.service == Service::Rc;
        if rc && self.resend_pending() {
            self.resend_marked(env, cfg)?;
        }
        if self.busy_deadline.is_some() {
            return Ok(());
        }
        let marks = if rc { self.marks() } else { self.uc_marks() };
        let window = i32::try_from(self.window()).unwrap_or(i32::MAX);
        let mut resend = false;
        while self.next < self.len {
            match self.step(env, cfg, marks, window) {
                Ok(read_holes) => resend |= read_holes,
                // Sending waits: an acknowledgment, a timer or room moves the cursor on.
                Err(Halt::Stall(_why)) => break,
                Err(Halt::Exit(f)) => return Err(f),
            }
        }
        if resend {
            return self.resend_marked(env, cfg);
        }
        Ok(())
    }

    /// One step of the send cursor (rdma_rxe's rxe_requester): picks the entry at it, runs
    /// or passes over what sends no packet now, checks the stall gates, sends the next
    /// packet and accounts for it. Returns whether a READ's missing runs were marked.
    fn step(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        marks: CapAnswer,
        window: i32,
    ) -> Result<bool, Halt> {
        let rc = cfg.service == Service::Rc;
        // Pick the entry: it is read in place (no per-packet copy of the WQE).
        let Some(e) = self.entry(self.next) else {
            return Err(Stall::NoEntry.into());
        };
        if e.npsn == 0 {
            return self.run_local_op(env, cfg).map(|()| false);
        }
        if e.is_rd_atomic() && e.complete {
            self.pass_answered();
            return Ok(false);
        }
        let psn = e.first_psn.add(self.next_pkt);
        let (rd_atomic, end, chunk) = (e.is_rd_atomic(), e.end_psn(), admit_chunk(e, psn));
        let last_pkt = self.next_pkt + 1 >= e.npsn;
        // Check the stall gates, then the device's in-flight budget.
        if let Some(stall) = self.check_stall(cfg, e, psn, window) {
            return Err(stall.into());
        }
        if self.asks_read_holes(e) {
            self.pass_to_read_holes(psn, end);
            return Ok(true);
        }
        if rc && !psn.before(self.admitted_end) {
            self.admit(env, psn, chunk)?;
        }
        // Send the packet and account for it.
        let at = self.packet_at(env, rc, psn, last_pkt, window);
        let marks = self.coded_marks(marks, psn);
        let (last, used) = self.send_at(env, cfg, at, marks)?;
        if rc {
            self.account_sent(env, cfg, psn, used)?;
        } else {
            self.note_uc_sent(psn, used);
        }
        self.advance(env, cfg, last, used, rd_atomic);
        Ok(false)
    }

    /// Runs the local operation at the send cursor (BIND_MW, LOCAL_INV, REG_MR) once (a
    /// go-back passes over it again), in order with the requests around it; a fenced one
    /// waits for the READs and atomics before it. It completes as the requests before it
    /// are acknowledged.
    fn run_local_op(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) -> Result<(), Halt> {
        let Some(e) = self.entry(self.next) else {
            return Err(Stall::NoEntry.into());
        };
        let (op, done, fence) = (e.wqe.op, e.complete, e.wqe.flags.contains(SendFlags::FENCE));
        if !done {
            if fence && self.rd_atomic_out > 0 {
                return Err(Stall::Fence.into());
            }
            if let Err(status) = env.local_op(&op) {
                return Err(Halt::Exit(self.fail_entry(env, cfg, self.next, status)));
            }
            if let Some(m) = self.entry_mut(self.next) {
                m.complete = true;
            }
        }
        self.next += 1;
        self.next_pkt = 0;
        self.retire(env, cfg);
        Ok(())
    }

    /// Passes the cursor over a READ or atomic answered already (in the SR format, ahead
    /// of an older READ's missing response) that a go-back reached; behind an unanswered
    /// one it still holds a responder resource (`recount_rd_atomic`).
    fn pass_answered(&mut self) {
        if self.rd_atomic_out > 0 {
            self.rd_atomic_out += 1;
        }
        self.next += 1;
        self.next_pkt = 0;
    }

    /// May packet `psn` of entry `e`, at the send cursor, go now? The gates in order: the
    /// window from UNACK and FaSR's pipe, a READ too long for the SR window, the
    /// READ/atomic limit, a fence, the peer's receive window. Returns the first that holds.
    fn check_stall(&self, cfg: &RcConfig, e: &SqEntry, psn: Psn, window: i32) -> Option<Stall> {
        let rc = cfg.service == Service::Rc;
        let una = self.una();
        let first_pkt = self.next_pkt == 0;
        // The pipe keeps the requester's own egress queue short in front of its resends; a
        // READ request adds one small packet there (its responses queue at the responder),
        // so READs are bound by the window alone.
        let is_read = matches!(e.wqe.op, SendOp::RdmaRead { .. });
        if rc && psn.diff(una) >= window {
            return Some(Stall::Window);
        }
        if rc && !is_read && self.pipe_full(psn) {
            return Some(Stall::Pipe);
        }
        if rc && is_read && self.sr_active() && psn != una && e.end_psn().diff(una) > window {
            // SR format: a READ's responses all fall inside the window, where they are
            // placed out of order (read_response.rs). A READ longer than the window goes
            // once it is the oldest request.
            return Some(Stall::LongRead);
        }
        if e.is_rd_atomic() && first_pkt && self.rd_atomic_out >= cfg.max_rd_atomic.max(1) {
            return Some(Stall::RdAtomicLimit);
        }
        if e.wqe.flags.contains(SendFlags::FENCE) && first_pkt && self.rd_atomic_out > 0 {
            return Some(Stall::Fence);
        }
        if first_pkt && !self.recv_window_open(e) {
            return Some(Stall::RecvWindow);
        }
        None
    }

    /// SR format: whether the cursor went back to READ `e` some of whose later responses are
    /// placed already: only its missing runs are asked for again, each by its own request
    /// (`resend_marked`), not the whole rest of the READ.
    fn asks_read_holes(&self, e: &SqEntry) -> bool {
        matches!(e.wqe.op, SendOp::RdmaRead { .. })
            && self.sr_active()
            && self.read_run(e, self.next_pkt).1 < e.npsn
    }

    /// Passes the cursor over such a READ (it holds a responder resource meanwhile),
    /// marking its missing runs in `[psn, end)` for resending.
    fn pass_to_read_holes(&mut self, psn: Psn, end: Psn) {
        self.rd_atomic_out += 1;
        self.next += 1;
        self.next_pkt = 0;
        self.mark_rd_holes(psn, end);
    }

    /// RC, PSN `psn` not admitted yet: the device's in-flight budget is asked to admit the
    /// next `chunk` PSNs of the cursor's message ([`admit_chunk`]), or the QP waits.
    fn admit(&mut self, env: &mut dyn RcEnv, psn: Psn, chunk: u32) -> Result<(), Stall> {
        if !env.admit(self.admitted_psns(), chunk) {
            self.budget_held = true;
            self.count(env, RcEvent::AdmitWait);
            return Err(Stall::Admit);
        }
        self.admitted_end = psn.add(chunk);
        Ok(())
    }

    /// Packet `psn` at the cursor and what follows it: more of its message, or (after its
    /// `last_pkt`) the next message at once. When the PSN after it is not admitted yet it
    /// is asked for now, as this packet goes without AckReq only if more follows; were the
    /// budget to stop the stream here, nothing would ask for the acknowledgment of its tail.
    fn packet_at(
        &mut self,
        env: &mut dyn RcEnv,
        rc: bool,
        psn: Psn,
        last_pkt: bool,
        window: i32,
    ) -> PacketAt {
        let mut next_follows = rc && (!last_pkt || self.next_follows(window));
        let mut stops_after = false;
        if rc && next_follows && !psn.next().before(self.admitted_end) {
            if let Some((from, n)) = self.chunk_after(psn, last_pkt) {
                if env.admit(self.admitted_psns(), n) {
                    self.admitted_end = from.add(n);
                } else {
                    self.count(env, RcEvent::AdmitWait);
                    next_follows = false;
                    stops_after = !last_pkt;
                }
            }
        }
        PacketAt {
            k: self.next_pkt,
            next_follows,
            stops_after,
        }
    }

    /// The chunk the budget is asked for after packet `psn` of the cursor's entry: from
    /// the next PSN of its message, or after its `last_pkt` from the next message's first.
    fn chunk_after(&self, psn: Psn, last_pkt: bool) -> Option<(Psn, u32)> {
        if last_pkt {
            self.entry(self.next + 1)
                .map(|n| (n.first_psn, admit_chunk(n, n.first_psn)))
        } else {
            self.entry(self.next)
                .map(|e| (psn.next(), admit_chunk(e, psn.next())))
        }
    }

    /// Sends packet `at` of the cursor's entry. Refused by the egress queue, sending
    /// pauses (the cursor stays on the packet); failed, its work request fails.
    /// Returns (the entry is fully sent, PSNs the packet accounts for).
    fn send_at(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        at: PacketAt,
        marks: CapAnswer,
    ) -> Result<(bool, u32), Halt> {
        let k = self.idx(self.next);
        let Some(e) = self.slots.get(k) else {
            return Err(Stall::NoEntry.into());
        };
        let pmtu = self.pmtu.get();
        match Self::send_packet(env, cfg, pmtu, &mut self.noack_pkts, e, at, marks) {
            Ok(x) => Ok(x),
            Err(PacketError::Busy) => {
                self.wait_busy(env);
                Err(Stall::Busy.into())
            }
            Err(PacketError::Failed(status)) => {
                Err(Halt::Exit(self.fail_entry(env, cfg, self.next, status)))
            }
        }
    }

    /// RC: accounts for packet `psn` sent, standing for `used` PSNs: UNACK's send time, the
    /// highest PSN sent (a new packet may start an RTT probe; a resend is counted, and is
    /// the probe a sequence-error NAK waited for), and the engine hears of it.
    fn account_sent(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        psn: Psn,
        used: u32,
    ) -> Result<(), Halt> {
        let now = env.now_us();
        self.note_una_sent(psn, now);
        if !psn.before(self.sent_high) {
            self.sent_high = psn.add(used);
            if self.rtt_probe.is_none() {
                self.rtt_probe = Some((psn, now, self.una()));
                self.budget_held = false;
            }
        } else {
            self.count(env, RcEvent::Resent);
            if self.nak_sample == Some(psn) {
                self.nak_sample = None;
                self.rtt_probe = Some((psn, now, self.una()));
                self.budget_held = false;
            }
        }
        let acts = self.feed(
            env,
            ReqEvent::Sent {
                psn: psn.add(used - 1),
                now,
            },
        );
        self.apply(env, cfg, acts, None).map_err(Halt::Exit)
    }

    /// Moves the cursor past the packet sent: after its message's `last` packet to the
    /// next entry (a READ or atomic then holds a responder resource; UC completes the
    /// message now), else `used` PSNs on.
    fn advance(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        last: bool,
        used: u32,
        rd_atomic: bool,
    ) {
        if last {
            if rd_atomic {
                self.rd_atomic_out += 1;
            }
            self.next += 1;
            self.next_pkt = 0;
            if cfg.service != Service::Rc {
                // UC completes once the last packet is out.
                self.retire(env, cfg);
            }
        } else {
            self.next_pkt += used;
        }
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

    /// The PSNs this requester holds of the device's in-flight budget: those admitted and
    /// not known received, from UNACK (in the SR format, from past the highest PSN a SACK
    /// reported) to the end of the last chunk admitted (0 once UNACK passed it, as on a UC
    /// QP, which asks for none).
    ///
    /// Choice: what a SACK reported is off the path, so it holds none of a budget meant
    /// for the packets on it. Counted from UNACK, a hole held the requester's share while
    /// its repair took a round trip, and a long path stood idle for most of it.
    pub fn admitted_psns(&self) -> u32 {
        let una = self.una();
        let from = self
            .sr
            .as_deref()
            .filter(|s| s.active)
            .and_then(|s| s.received_past(una))
            .map_or(una, Psn::next);
        u32::try_from(self.admitted_end.diff(from)).unwrap_or(0)
    }

    /// The egress queue refused a packet: sending pauses for [`TX_BUSY_WAIT_US`], and the
    /// send cursor (or the resend mark) stays on that packet.
    pub(super) fn wait_busy(&mut self, env: &mut dyn RcEnv) {
        self.busy_deadline = Some(env.now_us().saturating_add(TX_BUSY_WAIT_US));
    }
}
