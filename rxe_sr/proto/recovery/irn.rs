// SPDX-License-Identifier: GPL-2.0
//! IRN (Mittal et al., "Revisiting network support for RDMA", SIGCOMM'18): per-QP
//! BDP-sized bitmaps, the memory-hungry reference.
//!
//! Responder: a bitmap of BDP-cap bits from RCV-NXT records out-of-order arrivals; each
//! out-of-order packet is placed and answered with a NACK carrying the cumulative ACK and
//! the PSN that triggered it (our [`Feedback::Sack`]); in-order packets are ACKed and the
//! bitmap moves RCV-NXT past the arrivals it holds. Packets beyond BDP-cap are dropped
//! (the requester never sends them: BDP-cap bounds its outstanding packets).
//! Requester: a bitmap of SACKed PSNs from UNACK. The first NACK enters loss recovery
//! (until UNACK passes the PSN sent last when it started); a packet is lost when a later
//! one was SACKed, and each is retransmitted once per recovery round; RTO_low applies
//! when at most N packets are in flight, RTO_high otherwise; a timeout retransmits every
//! un-SACKed outstanding packet.
//!
//! Memory (IRN §4 / FaSR §I): five BDP-cap bitmaps and 20 B of SR state per QP. BDP-cap is
//! sized for the fabric's longest path, not for one flow. The simulator keeps the paper's
//! (about 800, rounded up to [`DEFAULT_WORDS`]); in the module the responder must track the
//! whole SR window past RCV-NXT, so its QPs' bitmaps are as long as the device's SR window
//! (the transport hands them in, [`crate::proto::words`]).
//! This engine itself keeps two of the five (the responder's received bitmap and the
//! requester's SACK bitmap); the other three serve READ responses and message
//! completions, which the transport tracks outside the recovery engine.

use super::util::{count, drop_pkt, retransmit, send, send_ack, span, ReqBase, RingBits};
use super::{
    Action, ActionSink, Counters, EngineEvent, Feedback, Recovery, ReqEvent, RespEvent, RtoConfig,
    Timer,
};
use crate::proto::psn::Psn;
#[cfg(not(MODULE))]
use crate::proto::words::InlineWords;
use crate::proto::words::WindowWords;

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "the simulator's and host tests' sizes")
)]
/// Default bitmap size in 64-bit words: 16 words = 1024 slots, the paper's 800-packet
/// BDP-cap rounded up (the simulator's).
pub const DEFAULT_WORDS: usize = 16;
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "the simulator's and host tests' sizes")
)]
/// Bitmaps per QP in IRN's accounting.
pub const BITMAPS_PER_QP: u32 = 5;
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "the simulator's and host tests' sizes")
)]
/// SR state bytes per QP in IRN's accounting.
pub const STATE_BYTES: u32 = 20;

/// One QP's IRN state over bitmaps of words `B`, whose length in bits is the BDP-cap.
#[derive(Clone, Debug)]
pub struct Irn<B> {
    req: ReqBase,
    rto: RtoConfig,
    sacked: RingBits<B>,
    in_recovery: bool,
    recovery_psn: Psn,
    sack_high: Psn,
    /// Holes before this PSN were already retransmitted in this round.
    retx_nxt: Psn,
    rcv_nxt: Psn,
    received: RingBits<B>,
    counters: Counters,
}

#[cfg(not(MODULE))]
impl<const N: usize> Irn<InlineWords<N>> {
    /// A QP whose requester starts at `sq_psn` and whose responder expects `rq_psn`, with
    /// bitmaps of `N` words kept inline.
    pub const fn new(sq_psn: Psn, rq_psn: Psn, rto: RtoConfig) -> Self {
        Self::with_words(sq_psn, rq_psn, rto, InlineWords::ZERO, InlineWords::ZERO)
    }

    /// Per-QP SR bytes in IRN's accounting: five BDP-cap bitmaps + 20 B state.
    pub const fn sr_bytes_per_qp() -> u32 {
        BITMAPS_PER_QP * (N as u32 * 64 / 8) + STATE_BYTES
    }
}

impl<B: WindowWords> Irn<B> {
    /// BDP-cap: the most PSNs outstanding / tracked.
    pub fn bdp_cap(&self) -> u32 {
        self.received.cap()
    }

    /// Requester UNACK (first unacknowledged PSN).
    pub const fn una(&self) -> Psn {
        self.req.una
    }

    /// Starts the requester side at UNACK `una` with `snd_nxt` already sent (the QP
    /// direction switches to this engine mid-stream, after the capability exchange). Only
    /// before the side saw any event.
    pub fn start_requester(&mut self, una: Psn, snd_nxt: Psn) {
        self.req.start(una, snd_nxt);
        self.sacked.clear(una);
        self.recovery_psn = una;
        self.sack_high = una;
        self.retx_nxt = una;
    }

    /// Starts the responder side expecting `rcv_nxt`, forgetting what it recorded: when the
    /// QP direction switches to this engine mid-stream, or after [`Recovery::release`] when
    /// one request took more PSNs than the side tracks.
    pub fn start_responder(&mut self, rcv_nxt: Psn) {
        self.rcv_nxt = rcv_nxt;
        self.received.clear(rcv_nxt);
    }

    /// A QP whose requester starts at `sq_psn` and whose responder expects `rq_psn`, over
    /// the `sacked` and `received` bitmaps' words (zeroed, of one length).
    pub const fn with_words(
        sq_psn: Psn,
        rq_psn: Psn,
        rto: RtoConfig,
        sacked: B,
        received: B,
    ) -> Self {
        Irn {
            req: ReqBase::new(sq_psn),
            rto,
            sacked: RingBits::new(sacked, sq_psn),
            in_recovery: false,
            recovery_psn: sq_psn,
            sack_high: sq_psn,
            retx_nxt: sq_psn,
            rcv_nxt: rq_psn,
            received: RingBits::new(received, rq_psn),
            counters: Counters::ZERO,
        }
    }

    #[cfg_attr(
        MODULE,
        expect(
            dead_code,
            reason = "the simulator (the transport's SR window is inside the BDP-cap)"
        )
    )]
    /// True when the requester may send new PSN `psn` (BDP-cap).
    pub fn may_send(&self, psn: Psn) -> bool {
        span(self.req.una, psn) < self.bdp_cap()
    }

    fn retransmit_holes(&mut self, from: Psn, to: Psn, out: &mut dyn ActionSink) {
        let c = &mut self.counters;
        let mut emit = |first: Psn, count: u32| retransmit(out, c, first, count);
        self.sacked.zeros(from, to, &mut emit);
    }

    fn on_sack(&mut self, s: Psn, out: &mut dyn ActionSink) {
        if !self.req.outstanding(s) {
            return;
        }
        count(out, &mut self.counters, EngineEvent::SlowPath, 1);
        self.sacked.set(s);
        if !self.in_recovery {
            self.in_recovery = true;
            self.recovery_psn = self.req.snd_nxt;
            self.retx_nxt = self.req.una;
            self.sack_high = s;
        }
        if s.after(self.sack_high) {
            self.sack_high = s;
        }
        let from = if self.retx_nxt.before(self.req.una) {
            self.req.una
        } else {
            self.retx_nxt
        };
        if from.before(self.sack_high) {
            self.retransmit_holes(from, self.sack_high, out);
            self.retx_nxt = self.sack_high;
        }
    }
}

impl<B: WindowWords> Recovery for Irn<B> {
    type Shared = ();

    fn on_requester(&mut self, _shared: &mut (), ev: ReqEvent, out: &mut dyn ActionSink) {
        match ev {
            ReqEvent::Sent { psn, now } => self.req.on_sent(psn, now, &self.rto, out),
            ReqEvent::Feedback { fb, now } => {
                if self.req.on_cum_ack(fb.rcv_nxt(), now, &self.rto, out) {
                    self.sacked.advance_to(self.req.una);
                    if self.in_recovery && !self.req.una.before(self.recovery_psn) {
                        self.in_recovery = false;
                    }
                }
                if let Feedback::Sack { sack_psn, .. } = fb {
                    self.on_sack(sack_psn, out);
                }
            }
            ReqEvent::Timer {
                timer: Timer::Rto,
                now,
            } => {
                self.req.rto_armed = false;
                if self.req.in_flight() > 0 {
                    self.counters.rto_fired = self.counters.rto_fired.saturating_add(1);
                    count(out, &mut self.counters, EngineEvent::SlowPath, 1);
                    let (una, nxt) = (self.req.una, self.req.snd_nxt);
                    self.retransmit_holes(una, nxt, out);
                    self.in_recovery = true;
                    self.recovery_psn = nxt;
                    self.retx_nxt = nxt;
                    self.req.restart_rto(now, &self.rto, out);
                }
            }
            ReqEvent::Timer { .. } => {}
        }
    }

    fn on_responder(&mut self, _shared: &mut (), ev: RespEvent, out: &mut dyn ActionSink) {
        let RespEvent::Data { psn, .. } = ev else {
            return;
        };
        if psn == self.rcv_nxt {
            out.push(Action::Deliver { psn });
            let mut next = psn.next();
            self.received.advance_to(next);
            while self.received.get(next) {
                next = next.next();
                self.received.advance_to(next);
            }
            if next != psn.next() {
                count(out, &mut self.counters, EngineEvent::SlowPath, 1);
            }
            self.rcv_nxt = next;
            out.push(Action::Advance { rcv_nxt: next });
            send_ack(out, &mut self.counters, next);
        } else if psn.after(self.rcv_nxt) && self.received.covers(psn) && !self.received.get(psn) {
            count(out, &mut self.counters, EngineEvent::SlowPath, 1);
            self.received.set(psn);
            out.push(Action::Deliver { psn });
            send(
                out,
                &mut self.counters,
                Feedback::Sack {
                    rcv_nxt: self.rcv_nxt,
                    sack_psn: psn,
                    run_from: psn,
                    lost_cnt: 0,
                    overflow: false,
                },
            );
        } else {
            drop_pkt(out, &mut self.counters, psn);
            send_ack(out, &mut self.counters, self.rcv_nxt);
        }
    }

    fn release(&mut self, _shared: &mut ()) {
        self.sacked.clear(self.req.una);
        self.received.clear(self.rcv_nxt);
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}
