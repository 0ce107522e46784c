// SPDX-License-Identifier: GPL-2.0
//! The FEC offer on the requester's side: which requests carry it, and the answer that
//! decides whether the QP sends repair packets ([`crate::proto::wire::fec_caps`]).

use core::ops::DerefMut;

use super::{ReqSr, Requester, SqEntry};
use crate::proto::psn::Psn;
use crate::proto::rc::{RcConfig, Service};
use crate::proto::wire::caps::CapAnswer;
use crate::proto::wire::fec_caps::FecRequesterCaps;

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
        match self.fec.coded_marks() {
            Some(resv7) if !psn.before(self.sent_high) => CapAnswer { resv7, ..marks },
            _ => marks,
        }
    }

    /// The peer's receiving side asked for other coding parameters as parameter epoch
    /// `epoch`, when its ePSN was `epsn`: true when taken, and the requests sent for the
    /// first time from now on carry that epoch. Only an ask whose ePSN lies between UNACK
    /// and the next PSN to send (inclusive) can come from the peer now; any other is
    /// stale or forged and changes nothing.
    pub fn on_fec_ask(&mut self, epoch: u8, epsn: Psn) -> bool {
        let sent = !epsn.before(self.una()) && !epsn.after(self.sent_high);
        sent && self.fec.take_ask(epoch)
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
