// SPDX-License-Identifier: GPL-2.0
//! The FEC offer on the requester's side: which requests carry it, and the answer that
//! decides whether the QP sends repair packets ([`crate::proto::wire::fec_caps`]).

use core::ops::DerefMut;

use super::{ReqSr, Requester, SqEntry};
use crate::proto::psn::Psn;
use crate::proto::rc::{RcConfig, Service};
use crate::proto::wire::caps::CapAnswer;
use crate::proto::wire::fec_caps::{FecRequesterCaps, FEC_CODED};

/// The exchange as a QP starts: off unless the device runs FEC on an RC QP (a UC
/// responder answers nothing); with no SR exchange to wait for, the first request
/// carries the offer.
pub(super) fn initial_caps(cfg: &RcConfig, sq_psn: Psn, sr_probes: bool) -> FecRequesterCaps {
    let mut caps = FecRequesterCaps::new(cfg.fec && cfg.service == Service::Rc);
    if !sr_probes {
        caps.start(sq_psn);
    }
    caps
}

impl<S: DerefMut<Target = [SqEntry]>, E: DerefMut<Target = ReqSr>> Requester<S, E> {
    /// True once the peer takes repair packets.
    pub fn fec_on(&self) -> bool {
        self.fec.is_on()
    }

    /// True when every packet of the work posted so far has been sent once: the
    /// requester has nothing more to send now.
    pub fn sent_all(&self) -> bool {
        self.next >= self.len
    }

    /// The SR exchange was decided: the next new request and those after it carry the
    /// offer.
    pub(super) fn start_fec_offer(&mut self) {
        self.fec.start(self.sent_high);
    }

    /// Resv7 of a request: the FEC offer while it is made, else `resv7`.
    pub(super) fn fec_marks(&self, resv7: u8) -> u8 {
        self.fec.marks().unwrap_or(resv7)
    }

    /// The marks of the request packet of PSN `psn`: once repairs are on, a first
    /// transmission is marked as coded.
    pub(super) fn coded_marks(&self, marks: CapAnswer, psn: Psn) -> CapAnswer {
        if self.fec.is_on() && !psn.before(self.sent_high) {
            return CapAnswer {
                resv7: FEC_CODED,
                ..marks
            };
        }
        marks
    }

    /// A response for PSN `psn` (sent, not yet acknowledged) came with Resv7 `resv7`.
    pub(super) fn on_fec_caps(&mut self, psn: Psn, resv7: u8) {
        self.fec.on_response(psn, resv7);
    }

    /// A retransmission timeout: one more unanswered offer, if one is being made.
    pub(super) fn on_fec_probe_timeout(&mut self) {
        self.fec.on_probe_timeout();
    }
}
