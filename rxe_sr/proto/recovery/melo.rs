// SPDX-License-Identifier: GPL-2.0
//! MELO (Lu et al., "Memory efficient loss recovery for hardware-based transport in
//! datacenter", APNet'17): a shared bits pool and NACKs carrying the three most recent
//! holes.
//!
//! Responder (§3.2.3-3.2.4): per QP only RCV.NXT, RCV.HIGH, the chain's start/end
//! pointers and the three most recent holes; the bits come from the device's shared
//! [`BitsPool`]. An out-of-order packet extends the chain at its end; whenever a new hole
//! forms (a gap between the packet and RCV.HIGH) a NACK with the three most recent holes
//! (closest to RCV.HIGH) goes out at once. A retransmission filling RCV.NXT moves RCV.NXT
//! over the bits from the head and releases head blocks. Packets that would touch the
//! middle of the bitmap (a hole other than RCV.NXT) are dropped: that only happens after
//! a lost retransmission, which the requester's timeout repairs (§3.2.3). When the pool
//! cannot give bits the packet is dropped, i.e. go-back-N for those packets (§3.2.5).
//!
//! Requester: retransmits the holes a NACK names, each once per round (a NACK repeats
//! older holes for redundancy; they are skipped), and on timeout goes back to UNACK. The
//! transport's loss probes (rc/requester/loss_probe.rs), which find a lost resend before
//! the timeout, resend with it the earlier resends in [UNACK, "retransmitted up to")
//! not yet acknowledged, which the responder dropped behind it
//! ([`super::any::AnyEngine::lost_resend_end`]).
//! MELO's sender also rebuilds the receiver's bitmap in its own bits pool; since every
//! retransmission decision here comes straight from the NACK's hole list, this engine
//! keeps only the "retransmitted up to" PSN instead (a choice: same decisions, less
//! state). Its SR memory is the paper's: 20 B per QP plus the pool.

use super::util::{count, drop_pkt, go_back, retransmit, send, send_ack, span, ReqBase};
use super::{
    Action, ActionSink, Counters, EngineEvent, Feedback, Hole, Recovery, ReqEvent, RespEvent,
    RtoConfig, Timer,
};
use crate::proto::pool::bits_pool::BitsChain;
use crate::proto::pool::ops::BitsPoolOps;
use crate::proto::psn::Psn;

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "the simulator's memory accounting")
)]
/// Per-QP SR bytes (MELO §3.2.4): 12 B holes, 6 B RCV.NXT/RCV.HIGH, 2 B pointers.
pub const SR_BYTES_PER_QP: u32 = 20;

/// One QP's MELO state.
#[derive(Clone, Debug)]
pub struct Melo {
    req: ReqBase,
    rto: RtoConfig,
    /// Holes before this PSN were already retransmitted.
    retx_high: Psn,
    rcv_nxt: Psn,
    /// RCV.HIGH: highest PSN received (meaningful while `ooo`).
    rcv_high: Psn,
    ooo: bool,
    /// The current out-of-order episode already counted a fallback.
    fell_back: bool,
    chain: BitsChain,
    /// Most recent first.
    holes: [Hole; 3],
    counters: Counters,
}

impl Melo {
    /// Requester UNACK (first unacknowledged PSN).
    pub const fn una(&self) -> Psn {
        self.req.una
    }

    /// Holes before this PSN were retransmitted already. Past a lost resend at RCV.NXT the
    /// responder dropped every later resend up to here (each filled the middle of its
    /// bitmap, §3.2.3): the paper's timeout then resends everything from the front.
    pub const fn retx_high(&self) -> Psn {
        self.retx_high
    }

    /// Starts the requester side at UNACK `una` with `snd_nxt` already sent (the QP
    /// direction switches to this engine mid-stream, after the capability exchange). Only
    /// before the side saw any event.
    pub fn start_requester(&mut self, una: Psn, snd_nxt: Psn) {
        self.req.start(una, snd_nxt);
        self.retx_high = una;
    }

    /// Starts the responder side expecting `rcv_nxt`, forgetting what it recorded: when the
    /// QP direction switches to this engine mid-stream, or after [`Recovery::release`] when
    /// one request took more PSNs than the side tracks.
    pub fn start_responder(&mut self, rcv_nxt: Psn) {
        self.rcv_nxt = rcv_nxt;
        self.rcv_high = rcv_nxt;
        self.ooo = false;
        self.fell_back = false;
        self.chain = BitsChain::new(rcv_nxt);
        self.holes = [Hole {
            first: rcv_nxt,
            count: 0,
        }; 3];
    }

    /// A QP whose requester starts at `sq_psn` and whose responder expects `rq_psn`.
    pub const fn new(sq_psn: Psn, rq_psn: Psn, rto: RtoConfig) -> Self {
        Melo {
            req: ReqBase::new(sq_psn),
            rto,
            retx_high: sq_psn,
            rcv_nxt: rq_psn,
            rcv_high: rq_psn,
            ooo: false,
            fell_back: false,
            chain: BitsChain::new(rq_psn),
            holes: [Hole {
                first: rq_psn,
                count: 0,
            }; 3],
            counters: Counters::ZERO,
        }
    }

    fn trim_holes(&mut self) {
        let nxt = self.rcv_nxt;
        for h in self.holes.iter_mut() {
            if h.count == 0 {
                continue;
            }
            let end = h.first.add(h.count);
            if !end.after(nxt) {
                h.count = 0;
            } else if h.first.before(nxt) {
                h.count = span(nxt, end);
                h.first = nxt;
            }
        }
    }

    fn nack(&mut self, out: &mut dyn ActionSink) {
        send(
            out,
            &mut self.counters,
            Feedback::Holes {
                rcv_nxt: self.rcv_nxt,
                holes: self.holes,
            },
        );
    }

    /// Acknowledges RCV.NXT.
    fn ack(&mut self, out: &mut dyn ActionSink) {
        send_ack(out, &mut self.counters, self.rcv_nxt);
    }

    /// One data packet, sorted by where it falls against RCV.NXT and RCV.HIGH.
    fn rx(&mut self, pool: &mut dyn BitsPoolOps, psn: Psn, out: &mut dyn ActionSink) {
        if psn == self.rcv_nxt {
            self.rx_fill_rcv_nxt(pool, psn, out);
        } else if psn.before(self.rcv_nxt) || (self.ooo && !psn.after(self.rcv_high)) {
            // Duplicate, or a packet for the middle of the bitmap: drop (MELO §3.2.3).
            drop_pkt(out, &mut self.counters, psn);
            self.ack(out);
        } else {
            self.rx_past_rcv_high(pool, psn, out);
        }
    }

    /// The packet at RCV.NXT: RCV.NXT moves over the bits set after it, and the head
    /// blocks are released (the whole chain once RCV.NXT passes RCV.HIGH).
    fn rx_fill_rcv_nxt(&mut self, pool: &mut dyn BitsPoolOps, psn: Psn, out: &mut dyn ActionSink) {
        out.push(Action::Deliver { psn });
        let mut next = psn.next();
        if self.ooo {
            count(out, &mut self.counters, EngineEvent::SlowPath, 1);
            while !next.after(self.rcv_high) && pool.get(&self.chain, next) {
                next = next.next();
            }
        }
        self.rcv_nxt = next;
        if self.ooo {
            if next.after(self.rcv_high) {
                pool.free(&mut self.chain);
                self.ooo = false;
                self.holes = [Hole {
                    first: next,
                    count: 0,
                }; 3];
            } else {
                pool.release_before(&mut self.chain, next);
                self.trim_holes();
            }
        }
        if !self.ooo {
            // In order again (or still, after a drop for want of bits that opened no
            // episode): the next fallback is counted.
            self.fell_back = false;
        }
        out.push(Action::Advance { rcv_nxt: next });
        self.ack(out);
    }

    /// A packet beyond RCV.HIGH: the chain is extended to it and its bit set; a new hole
    /// (a gap to RCV.HIGH) is NACKed at once with the three most recent holes.
    fn rx_past_rcv_high(&mut self, pool: &mut dyn BitsPoolOps, psn: Psn, out: &mut dyn ActionSink) {
        count(out, &mut self.counters, EngineEvent::SlowPath, 1);
        let high = if self.ooo {
            self.rcv_high
        } else {
            self.rcv_nxt.sub(1)
        };
        let new_hole = psn != high.next();
        if !self.ooo {
            self.chain = BitsChain::new(self.rcv_nxt);
        }
        if pool.cover(&mut self.chain, psn).is_err() {
            self.rx_no_bits(pool, psn, high, new_hole, out);
            return;
        }
        self.ooo = true;
        pool.set(&self.chain, psn);
        self.rcv_high = psn;
        out.push(Action::Deliver { psn });
        if new_hole {
            self.holes.rotate_right(1);
            self.holes[0] = Hole {
                first: high.next(),
                count: span(high.next(), psn),
            };
            self.nack(out);
        } else {
            self.ack(out);
        }
    }

    /// The pool cannot give bits for `psn` (beyond `high`): it is dropped, i.e. go-back-N for
    /// it (§3.2.5), one fallback counted per episode; a new hole is still NACKed, up to and
    /// including `psn`, without being kept among the holes.
    fn rx_no_bits(
        &mut self,
        pool: &mut dyn BitsPoolOps,
        psn: Psn,
        high: Psn,
        new_hole: bool,
        out: &mut dyn ActionSink,
    ) {
        if !self.fell_back {
            self.fell_back = true;
            count(out, &mut self.counters, EngineEvent::GbnFallback, 1);
            out.push(Action::Fallback);
        }
        drop_pkt(out, &mut self.counters, psn);
        if !self.ooo {
            pool.free(&mut self.chain);
        }
        if new_hole {
            // Tell the requester about the gap up to and including this packet.
            let mut holes = self.holes;
            holes.rotate_right(1);
            holes[0] = Hole {
                first: high.next(),
                count: span(high.next(), psn.next()),
            };
            send(
                out,
                &mut self.counters,
                Feedback::Holes {
                    rcv_nxt: self.rcv_nxt,
                    holes,
                },
            );
        }
    }
}

impl Recovery for Melo {
    type Shared = dyn BitsPoolOps;

    fn on_requester(&mut self, _pool: &mut Self::Shared, ev: ReqEvent, out: &mut dyn ActionSink) {
        match ev {
            ReqEvent::Sent { psn, now } => self.req.on_sent(psn, now, &self.rto, out),
            ReqEvent::Feedback { fb, now } => {
                self.req.on_cum_ack(fb.rcv_nxt(), now, &self.rto, out);
                if let Feedback::Holes { holes, .. } = fb {
                    // Oldest first.
                    for h in holes.iter().rev() {
                        let mut first = h.first;
                        let mut end = h.first.add(h.count);
                        if h.count == 0 || !end.after(self.retx_high) {
                            continue;
                        }
                        if first.before(self.retx_high) {
                            first = self.retx_high;
                        }
                        if first.before(self.req.una) {
                            first = self.req.una;
                        }
                        if end.after(self.req.snd_nxt) {
                            end = self.req.snd_nxt;
                        }
                        retransmit(out, &mut self.counters, first, span(first, end));
                        if end.after(self.retx_high) {
                            self.retx_high = end;
                        }
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
                    go_back(out, &mut self.counters, self.req.una);
                    self.retx_high = self.req.snd_nxt;
                    self.req.restart_rto(now, &self.rto, out);
                }
            }
            ReqEvent::Timer { .. } => {}
        }
    }

    fn on_responder(&mut self, pool: &mut Self::Shared, ev: RespEvent, out: &mut dyn ActionSink) {
        if let RespEvent::Data { psn, .. } = ev {
            self.rx(pool, psn, out);
        }
    }

    fn release(&mut self, pool: &mut Self::Shared) {
        pool.free(&mut self.chain);
        self.ooo = false;
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}
