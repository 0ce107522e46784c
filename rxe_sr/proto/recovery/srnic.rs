// SPDX-License-Identifier: GPL-2.0
//! SRNIC (Wang et al., NSDI'23 §4.4): header extensions + bitmap onloading.
//!
//! With the header extensions every packet can be placed in the user buffer on arrival
//! (in-place reordering), so the fast path keeps only ePSN (responder) and IACK/UNACK
//! (requester). Out-of-order metadata goes to a slow-path consumer (software, over PCIe)
//! that owns the bitmaps:
//! - responder fast path: PSN == ePSN is handled in hardware; the first PSN != ePSN enters
//!   loss recovery. In recovery, hardware tracks the most advanced run of sequential
//!   packets `[psn_left, psn_right]` itself (§4.4.2, Fig. 8); every other arrival (a jump
//!   past the run, a retransmission) is queued as metadata to the slow path, one entry per
//!   packet (the PSNs an RDMA READ request takes are one);
//! - the slow path is modelled as a FIFO of at most `QUEUE` entries, each served
//!   `delay` ticks after it was queued (a [`Timer::SlowPath`] deadline); a full queue
//!   drops the packet (hardware back-pressure). Software sets the bits, NAKs each new hole
//!   (SRNIC's "stateless requester" option: the responder names exactly what to resend),
//!   names again, once per ePSN, the holes a later retransmission overtook (theirs were
//!   lost; a choice, see `rename_lost`), computes the new ePSN and hands it back; the QP leaves recovery when that ePSN falls
//!   in `[psn_left, psn_right + 1]`, taking ePSN = psn_right + 1 (the fast-exit rule).
//! - requester: stateless besides UNACK: it resends the holes the responder names; its
//!   timeout resends UNACK alone while the responder reported holes (a lost
//!   retransmission) and no timeout did so since the last hole list, else goes back to
//!   UNACK.
//!
//! The delay between arrival and the software's answer is what costs SRNIC goodput as
//! loss or bandwidth grow (FaSR Fig. 2): ACK progress and hole reports wait for it.
//!
//! Choice: SRNIC places a duplicate idempotently (same data, same address), so hardware
//! needs no duplicate check; our [`Action::Deliver`] contract is "exactly once", so the
//! engine checks a packet against the software bitmap, the run and the queued metadata
//! before placing it — a modelling check, not extra hardware state.
//! Per-QP device memory: 12 B (FaSR §V-A); bitmaps live in host memory.

use super::util::{count, drop_pkt, go_back, retransmit, send, send_ack, span, ReqBase, RingBits};
use super::{
    Action, ActionSink, Counters, EngineEvent, Feedback, Hole, Recovery, ReqEvent, RespEvent,
    RtoConfig, Timer,
};
use crate::proto::psn::Psn;
#[cfg(not(MODULE))]
use crate::proto::words::InlineWords;
use crate::proto::words::WindowWords;

/// Default slow-path queue entries per QP.
pub const DEFAULT_QUEUE: usize = 64;
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "the simulator's and host tests' sizes")
)]
/// Default software bitmap size in 64-bit words (1024 PSNs; the simulator's).
pub const DEFAULT_WORDS: usize = 16;
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "the simulator's memory accounting")
)]
/// Per-QP SR bytes on the device (FaSR §V-A: SRNIC adds 12 B per QP).
pub const SR_BYTES_PER_QP: u32 = 12;

#[derive(Clone, Copy, Debug)]
struct Meta {
    first: Psn,
    last: Psn,
    ready_at: u64,
}

const META0: Meta = Meta {
    first: Psn::new(0),
    last: Psn::new(0),
    ready_at: 0,
};

/// One QP's SRNIC state: hardware QPC fields plus the modelled software slow path.
#[derive(Clone, Debug)]
pub struct Srnic<const QUEUE: usize, B> {
    req: ReqBase,
    rto: RtoConfig,
    /// The responder reported holes not yet all acknowledged.
    tx_recovery: bool,
    tx_recovery_psn: Psn,
    /// A timeout resent UNACK alone and no hole was named since.
    una_resent: bool,
    // Responder hardware.
    e_psn: Psn,
    in_recovery: bool,
    psn_left: Psn,
    psn_right: Psn,
    // Slow-path queue.
    queue: [Meta; QUEUE],
    q_head: usize,
    q_len: usize,
    delay: u64,
    // Software.
    sw_bits: RingBits<B>,
    sw_high: Psn,
    /// The ePSN at which software last named again holes whose retransmission was lost.
    renamed_at: Option<Psn>,
    counters: Counters,
}

#[cfg(not(MODULE))]
impl<const QUEUE: usize, const N: usize> Srnic<QUEUE, InlineWords<N>> {
    /// A QP whose requester starts at `sq_psn`, whose responder expects `rq_psn`, and whose
    /// slow path answers `delay` ticks after an entry is queued, its bitmap of `N` words
    /// kept inline.
    pub const fn new(sq_psn: Psn, rq_psn: Psn, rto: RtoConfig, delay: u64) -> Self {
        Self::with_words(sq_psn, rq_psn, rto, delay, InlineWords::ZERO)
    }
}

impl<const QUEUE: usize, B: WindowWords> Srnic<QUEUE, B> {
    /// Requester UNACK (first unacknowledged PSN).
    pub const fn una(&self) -> Psn {
        self.req.una
    }

    /// Starts the requester side at UNACK `una` with `snd_nxt` already sent (the QP
    /// direction switches to this engine mid-stream, after the capability exchange). Only
    /// before the side saw any event.
    pub fn start_requester(&mut self, una: Psn, snd_nxt: Psn) {
        self.req.start(una, snd_nxt);
        self.tx_recovery_psn = una;
        self.una_resent = false;
    }

    /// Starts the responder side expecting `rcv_nxt`, forgetting what it recorded: when the
    /// QP direction switches to this engine mid-stream, or after [`Recovery::release`] when
    /// one request took more PSNs than the side tracks.
    pub fn start_responder(&mut self, rcv_nxt: Psn) {
        self.e_psn = rcv_nxt;
        self.in_recovery = false;
        self.q_len = 0;
        self.renamed_at = None;
        self.psn_left = rcv_nxt;
        self.psn_right = rcv_nxt;
        self.sw_bits.clear(rcv_nxt);
        self.sw_high = rcv_nxt.sub(1);
    }

    /// A QP whose requester starts at `sq_psn`, whose responder expects `rq_psn`, whose
    /// slow path answers `delay` ticks after an entry is queued, and whose software bitmap
    /// is over the words `sw_words` (zeroed).
    pub const fn with_words(
        sq_psn: Psn,
        rq_psn: Psn,
        rto: RtoConfig,
        delay: u64,
        sw_words: B,
    ) -> Self {
        Srnic {
            req: ReqBase::new(sq_psn),
            rto,
            tx_recovery: false,
            tx_recovery_psn: sq_psn,
            una_resent: false,
            e_psn: rq_psn,
            in_recovery: false,
            psn_left: rq_psn,
            psn_right: rq_psn,
            queue: [META0; QUEUE],
            q_head: 0,
            q_len: 0,
            delay,
            sw_bits: RingBits::new(sw_words, rq_psn),
            sw_high: rq_psn.sub(1),
            renamed_at: None,
            counters: Counters::ZERO,
        }
    }

    #[cfg_attr(
        MODULE,
        expect(dead_code, reason = "the simulator's memory accounting")
    )]
    /// Bytes of one QP's SRNIC state the NIC keeps on chip, measured: the engine less what
    /// SRNIC onloads to host memory (the software bitmap, its high PSN and the ePSN of its
    /// last renaming, the slow-path metadata queue) and the modelled software latency (a
    /// parameter, not QP state).
    pub const fn onchip_state_bytes() -> usize {
        core::mem::size_of::<Self>()
            - core::mem::size_of::<[Meta; QUEUE]>()
            - core::mem::size_of::<RingBits<B>>()
            - core::mem::size_of::<Psn>()
            - core::mem::size_of::<Option<Psn>>()
            - core::mem::size_of::<u64>()
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// Responder ePSN.
    pub const fn e_psn(&self) -> Psn {
        self.e_psn
    }

    fn queued(&self, psn: Psn) -> bool {
        (0..self.q_len).any(|k| {
            self.queue
                .get((self.q_head + k) % QUEUE.max(1))
                .is_some_and(|m| !psn.before(m.first) && !psn.after(m.last))
        })
    }

    fn enqueue(&mut self, first: Psn, last: Psn, now: u64, out: &mut dyn ActionSink) -> bool {
        if self.q_len >= QUEUE {
            return false;
        }
        let ready_at = now.saturating_add(self.delay);
        let slot = (self.q_head + self.q_len) % QUEUE.max(1);
        if let Some(m) = self.queue.get_mut(slot) {
            *m = Meta {
                first,
                last,
                ready_at,
            };
        } else {
            return false;
        }
        self.q_len += 1;
        let depth = self.q_len as u64;
        count(out, &mut self.counters, EngineEvent::OnloadQueuePeak, depth);
        if self.q_len == 1 {
            out.push(Action::ArmTimer {
                timer: Timer::SlowPath,
                deadline: ready_at,
            });
        }
        count(out, &mut self.counters, EngineEvent::SlowPath, 1);
        true
    }

    /// The PSNs one request takes arrive in one packet, handed over one by one at one
    /// instant (an RDMA READ request takes a PSN per response): `psn`, right after the
    /// newest queued entry and handed over with it, joins that entry, as the one packet's
    /// metadata. (One entry per PSN filled the queue with a single long READ executed at
    /// ePSN in recovery, and the PSNs past it were dropped although the READ had run: a
    /// hole nothing could fill.)
    fn extend_tail(&mut self, psn: Psn, now: u64, out: &mut dyn ActionSink) -> bool {
        if self.q_len == 0 {
            return false;
        }
        let tail = (self.q_head + self.q_len - 1) % QUEUE.max(1);
        let ready_at = now.saturating_add(self.delay);
        match self.queue.get_mut(tail) {
            Some(m) if m.last.next() == psn && m.ready_at == ready_at => {
                m.last = psn;
                count(out, &mut self.counters, EngineEvent::SlowPath, 1);
                true
            }
            _ => false,
        }
    }

    /// Acknowledges ePSN.
    fn ack(&mut self, out: &mut dyn ActionSink) {
        send_ack(out, &mut self.counters, self.e_psn);
    }

    /// One data packet: a duplicate below ePSN is dropped and ACKed; in the normal state
    /// hardware checks it against ePSN; in recovery it extends the run, repeats part of it
    /// (dropped), jumps past it, or comes before it.
    fn rx(&mut self, psn: Psn, now: u64, out: &mut dyn ActionSink) {
        if psn.before(self.e_psn) {
            drop_pkt(out, &mut self.counters, psn);
            self.ack(out);
        } else if !self.in_recovery {
            self.rx_normal(psn, now, out);
        } else if psn == self.psn_right.next() {
            self.rx_extend_run(psn, out);
        } else if !psn.before(self.psn_left) && !psn.after(self.psn_right) {
            drop_pkt(out, &mut self.counters, psn);
        } else if psn.after(self.psn_right) {
            self.rx_jump(psn, now, out);
        } else {
            self.rx_before_run(psn, now, out);
        }
    }

    /// Normal state: PSN == ePSN is handled in hardware; the first other PSN enters loss
    /// recovery, starts hardware's run and goes to software as metadata.
    fn rx_normal(&mut self, psn: Psn, now: u64, out: &mut dyn ActionSink) {
        if psn == self.e_psn {
            out.push(Action::Deliver { psn });
            self.e_psn = psn.next();
            out.push(Action::Advance {
                rcv_nxt: self.e_psn,
            });
            self.ack(out);
            return;
        }
        // Out of order: enter loss recovery; software starts from ePSN.
        self.sw_bits.clear(self.e_psn);
        self.sw_high = self.e_psn.sub(1);
        if !self.sw_bits_fit(psn) || !self.enqueue(psn, psn, now, out) {
            drop_pkt(out, &mut self.counters, psn);
            return;
        }
        self.in_recovery = true;
        self.psn_left = psn;
        self.psn_right = psn;
        out.push(Action::Deliver { psn });
    }

    /// In recovery, the packet right after the most advanced run `[psn_left, psn_right]`:
    /// hardware only extends the run.
    fn rx_extend_run(&mut self, psn: Psn, out: &mut dyn ActionSink) {
        if !self.sw_bits_fit(psn) {
            drop_pkt(out, &mut self.counters, psn);
            return;
        }
        self.psn_right = psn;
        count(out, &mut self.counters, EngineEvent::FastPath, 1);
        out.push(Action::Deliver { psn });
    }

    /// In recovery, a jump past the run: the finished run goes to software as metadata,
    /// and a new run starts at `psn` (queued too).
    fn rx_jump(&mut self, psn: Psn, now: u64, out: &mut dyn ActionSink) {
        if !self.sw_bits_fit(psn) || self.q_len + 2 > QUEUE {
            drop_pkt(out, &mut self.counters, psn);
            return;
        }
        let (l, r) = (self.psn_left, self.psn_right);
        self.enqueue(l, r, now, out);
        self.enqueue(psn, psn, now, out);
        self.psn_left = psn;
        self.psn_right = psn;
        out.push(Action::Deliver { psn });
    }

    /// In recovery, a packet before the run: a retransmission (or a late original) for
    /// software, placed unless software or its queue already has it.
    fn rx_before_run(&mut self, psn: Psn, now: u64, out: &mut dyn ActionSink) {
        if self.sw_bits.get(psn) || self.queued(psn) {
            drop_pkt(out, &mut self.counters, psn);
            return;
        }
        if !self.extend_tail(psn, now, out) && !self.enqueue(psn, psn, now, out) {
            drop_pkt(out, &mut self.counters, psn);
            return;
        }
        out.push(Action::Deliver { psn });
    }

    /// A timeout in recovery resends UNACK alone (its retransmission was lost), once per
    /// hole list: the next timeout with no hole named since shows that the responder holds
    /// nothing past UNACK (its slow-path queue was full and dropped the packets), and goes
    /// back to UNACK (resending UNACK alone every time would repair that one PSN per
    /// timeout).
    fn on_rto(&mut self) {
        if self.tx_recovery && !self.una_resent {
            self.una_resent = true;
        } else {
            self.tx_recovery = false;
            self.una_resent = false;
        }
    }

    fn sw_bits_fit(&self, psn: Psn) -> bool {
        span(self.e_psn, psn) < self.sw_bits.cap()
    }

    /// The software consumer serves every entry that is due.
    fn slow_path(&mut self, now: u64, out: &mut dyn ActionSink) {
        while self.q_len > 0 {
            let Some(m) = self.queue.get(self.q_head).copied() else {
                return;
            };
            if m.ready_at > now {
                out.push(Action::ArmTimer {
                    timer: Timer::SlowPath,
                    deadline: m.ready_at,
                });
                return;
            }
            self.q_head = (self.q_head + 1) % QUEUE.max(1);
            self.q_len -= 1;
            // The entry waited from its enqueueing (ready_at - delay) to now.
            let waited = now.saturating_sub(m.ready_at.saturating_sub(self.delay));
            count(out, &mut self.counters, EngineEvent::OnloadServed, 1);
            count(out, &mut self.counters, EngineEvent::OnloadDelay, waited);
            self.serve(m, out);
        }
    }

    /// A retransmission arrived for `upto` (at or below what software had seen) while
    /// holes remain below it from `e`: their retransmissions left the requester before this
    /// one (holes are named, and resent, in PSN order) and were lost. Software names the
    /// lowest three again, once per ePSN. Choice: SRNIC's stateless-requester option has
    /// the responder say exactly what to resend, and the paper does not say how a lost
    /// retransmission is found; without this its requester's timeout resends UNACK alone,
    /// one hole per timeout.
    fn rename_lost(&mut self, e: Psn, upto: Psn, out: &mut dyn ActionSink) {
        if self.renamed_at == Some(e) {
            return;
        }
        self.renamed_at = Some(e);
        let mut holes = [Hole::default(); 3];
        let mut k = 0;
        let mut p = e;
        while p.before(upto) && k < holes.len() {
            if self.known(p) {
                p = p.next();
                continue;
            }
            let first = p;
            while p.before(upto) && !self.known(p) {
                p = p.next();
            }
            if let Some(h) = holes.get_mut(k) {
                *h = Hole {
                    first,
                    count: span(first, p),
                };
            }
            k += 1;
        }
        if k > 0 {
            send(
                out,
                &mut self.counters,
                Feedback::Holes { rcv_nxt: e, holes },
            );
        }
    }

    /// `psn` arrived, as far as the responder knows: in the software bitmap, in metadata
    /// still queued for software, or in hardware's current run.
    fn known(&self, psn: Psn) -> bool {
        self.sw_bits.get(psn)
            || self.queued(psn)
            || (!psn.before(self.psn_left) && !psn.after(self.psn_right))
    }

    fn serve(&mut self, m: Meta, out: &mut dyn ActionSink) {
        if !self.in_recovery {
            return;
        }
        let mut p = m.first;
        let mut n = span(m.first, m.last.next());
        while n > 0 {
            self.sw_bits.set(p);
            p = p.next();
            n -= 1;
        }
        // Highest PSN software knows received (at least ePSN - 1).
        let floor = self.e_psn.sub(1);
        let high = if self.sw_high.after(floor) {
            self.sw_high
        } else {
            floor
        };
        if m.first.after(high.next()) {
            let hole = Hole {
                first: high.next(),
                count: span(high.next(), m.first),
            };
            send(
                out,
                &mut self.counters,
                Feedback::Holes {
                    rcv_nxt: self.e_psn,
                    holes: [hole, Hole::default(), Hole::default()],
                },
            );
        }
        if m.last.after(high) {
            self.sw_high = m.last;
        }
        // New ePSN from the bitmap.
        let mut e = self.e_psn;
        while self.sw_bits.get(e) {
            e = e.next();
        }
        if !e.before(self.psn_left) && !e.after(self.psn_right.next()) {
            // Fast exit (Fig. 8).
            e = self.psn_right.next();
            self.in_recovery = false;
        }
        if e != self.e_psn {
            self.e_psn = e;
            self.sw_bits.advance_to(e);
            out.push(Action::Advance { rcv_nxt: e });
            send_ack(out, &mut self.counters, e);
        }
        if self.in_recovery && !m.first.after(high) && e.before(m.first) {
            self.rename_lost(e, m.first, out);
        }
        if !self.in_recovery {
            self.sw_bits.clear(self.e_psn);
            self.sw_high = self.e_psn.sub(1);
            // Metadata still queued belongs to the finished recovery.
            self.q_len = 0;
        }
    }
}

impl<const QUEUE: usize, B: WindowWords> Recovery for Srnic<QUEUE, B> {
    type Shared = ();

    fn on_requester(&mut self, _shared: &mut (), ev: ReqEvent, out: &mut dyn ActionSink) {
        match ev {
            ReqEvent::Sent { psn, now } => self.req.on_sent(psn, now, &self.rto, out),
            ReqEvent::Feedback { fb, now } => {
                self.req.on_cum_ack(fb.rcv_nxt(), now, &self.rto, out);
                if self.tx_recovery && !self.req.una.before(self.tx_recovery_psn) {
                    self.tx_recovery = false;
                    self.una_resent = false;
                }
                if let Feedback::Holes { holes, .. } = fb {
                    for h in holes.iter().rev().filter(|h| h.count > 0) {
                        let mut first = h.first;
                        let mut end = h.first.add(h.count);
                        if first.before(self.req.una) {
                            first = self.req.una;
                        }
                        if end.after(self.req.snd_nxt) {
                            end = self.req.snd_nxt;
                        }
                        retransmit(out, &mut self.counters, first, span(first, end));
                        self.tx_recovery = true;
                        self.tx_recovery_psn = self.req.snd_nxt;
                        self.una_resent = false;
                    }
                }
            }
            ReqEvent::Timer {
                timer: Timer::Rto,
                now,
            } => {
                self.req.rto_armed = false;
                if self.req.in_flight() > 0 {
                    self.counters.rto_fired = self.counters.rto_fired.saturating_add(1);
                    self.on_rto();
                    if self.una_resent {
                        retransmit(out, &mut self.counters, self.req.una, 1);
                    } else {
                        go_back(out, &mut self.counters, self.req.una);
                    }
                    self.req.restart_rto(now, &self.rto, out);
                }
            }
            ReqEvent::Timer { .. } => {}
        }
    }

    fn on_responder(&mut self, _shared: &mut (), ev: RespEvent, out: &mut dyn ActionSink) {
        match ev {
            RespEvent::Data { psn, now } => self.rx(psn, now, out),
            RespEvent::Timer {
                timer: Timer::SlowPath,
                now,
            } => self.slow_path(now, out),
            RespEvent::Timer { .. } => {}
        }
    }

    fn release(&mut self, _shared: &mut ()) {
        self.q_len = 0;
        self.in_recovery = false;
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}
