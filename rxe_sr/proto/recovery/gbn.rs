// SPDX-License-Identifier: GPL-2.0
//! Go-back-N, as rdma_rxe does it (IBTA 9.7.5.1, rxe_resp.c `check_psn()`, rxe_comp.c).
//!
//! Responder: a packet with PSN == ePSN (`rcv_nxt`) is executed and acknowledged; a packet
//! past ePSN is dropped and answered with ONE NAK "PSN sequence error" per gap (rxe's
//! `qp->resp.sent_psn_nak`, cleared when the expected packet arrives); a duplicate (PSN
//! before ePSN) is dropped and re-acknowledged.
//! Requester: ACKs advance UNACK; a NAK sequence error makes it resend everything from the
//! NAK's PSN; the RTO resends everything from UNACK.
//!
//! No SR state at all: `sr_bytes_per_qp` is 0.

use super::util::{drop_pkt, go_back, send_ack, send_nak_once, ReqBase};
use super::{
    Action, ActionSink, Counters, Feedback, Recovery, ReqEvent, RespEvent, RtoConfig, Timer,
};
use crate::proto::psn::Psn;

/// Per-QP SR memory of go-back-N, in bytes: none beyond the base QPC.
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const SR_BYTES_PER_QP: u32 = 0;

/// One QP's go-back-N state.
#[derive(Clone, Debug)]
pub struct Gbn {
    req: ReqBase,
    rto: RtoConfig,
    /// Responder: ePSN, the next expected PSN.
    rcv_nxt: Psn,
    /// Responder: a NAK was sent for the current gap (rxe's `sent_psn_nak`).
    nak_sent: bool,
    counters: Counters,
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl Gbn {
    /// A QP whose requester starts at `sq_psn` and whose responder expects `rq_psn`.
    /// Only `rto.rto_high` is used: rdma_rxe has one retransmission timeout.
    pub const fn new(sq_psn: Psn, rq_psn: Psn, rto: RtoConfig) -> Self {
        Gbn {
            req: ReqBase::new(sq_psn),
            rto: RtoConfig {
                rto_low: rto.rto_high,
                rto_high: rto.rto_high,
                n_low: 0,
            },
            rcv_nxt: rq_psn,
            nak_sent: false,
            counters: Counters::ZERO,
        }
    }

    /// Requester UNACK.
    pub const fn una(&self) -> Psn {
        self.req.una
    }

    /// Starts the requester side at UNACK `una` with `snd_nxt` already sent (the QP
    /// direction switches to this engine mid-stream, after the capability exchange). Only
    /// before the side saw any event.
    pub fn start_requester(&mut self, una: Psn, snd_nxt: Psn) {
        self.req.start(una, snd_nxt);
    }

    /// Starts the responder side expecting `rcv_nxt`, forgetting what it recorded: when the
    /// QP direction switches to this engine mid-stream, or after [`Recovery::release`] when
    /// one request took more PSNs than the side tracks.
    pub fn start_responder(&mut self, rcv_nxt: Psn) {
        self.rcv_nxt = rcv_nxt;
        self.nak_sent = false;
    }

    /// Responder ePSN.
    pub const fn rcv_nxt(&self) -> Psn {
        self.rcv_nxt
    }
}

impl Recovery for Gbn {
    type Shared = ();

    fn on_requester(&mut self, _shared: &mut (), ev: ReqEvent, out: &mut dyn ActionSink) {
        match ev {
            ReqEvent::Sent { psn, now } => self.req.on_sent(psn, now, &self.rto, out),
            ReqEvent::Feedback { fb, now } => {
                self.req.on_cum_ack(fb.rcv_nxt(), now, &self.rto, out);
                if let Feedback::Nak { rcv_nxt } = fb {
                    // rxe_comp: NAK sequence error => retry from the NAK'd PSN, which after
                    // the implied ACK above is UNACK.
                    if self.req.outstanding(rcv_nxt) {
                        go_back(out, &mut self.counters, rcv_nxt);
                        self.req.restart_rto(now, &self.rto, out);
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
                    self.req.restart_rto(now, &self.rto, out);
                }
            }
            ReqEvent::Timer { .. } => {}
        }
    }

    fn on_responder(&mut self, _shared: &mut (), ev: RespEvent, out: &mut dyn ActionSink) {
        let psn = match ev {
            RespEvent::Data { psn, .. } => psn,
            RespEvent::Timer { .. } => return,
        };
        if psn == self.rcv_nxt {
            self.rcv_nxt = psn.next();
            self.nak_sent = false;
            out.push(Action::Deliver { psn });
            out.push(Action::Advance {
                rcv_nxt: self.rcv_nxt,
            });
            send_ack(out, &mut self.counters, self.rcv_nxt);
        } else if psn.after(self.rcv_nxt) {
            drop_pkt(out, &mut self.counters, psn);
            send_nak_once(out, &mut self.counters, &mut self.nak_sent, self.rcv_nxt);
        } else {
            // Duplicate: re-acknowledge so a lost ACK does not stall the requester.
            drop_pkt(out, &mut self.counters, psn);
            send_ack(out, &mut self.counters, self.rcv_nxt);
        }
    }

    fn release(&mut self, _shared: &mut ()) {}

    fn counters(&self) -> &Counters {
        &self.counters
    }
}
