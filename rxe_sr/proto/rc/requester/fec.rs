// SPDX-License-Identifier: GPL-2.0
//! The FEC offer on the requester's side: which requests carry it, and the answer that
//! decides whether the QP sends repair packets ([`crate::proto::wire::fec_caps`]).

use core::ops::DerefMut;

use super::{ReqSr, Requester, SqEntry};
use crate::proto::psn::Psn;
use crate::proto::rc::{RcConfig, Service};
use crate::proto::wire::caps::CapAnswer;
use crate::proto::wire::fec_caps::{FecRequesterCaps, FEC_OFFER};
use crate::proto::words::WindowWords;

/// The exchange as a QP starts: off unless the device runs FEC; with no SR exchange to
/// wait for (UC has none), the first request carries the offer.
pub(super) fn initial_caps(cfg: &RcConfig, sq_psn: Psn, sr_probes: bool) -> FecRequesterCaps {
    let mut caps = FecRequesterCaps::new(cfg.fec);
    if !sr_probes {
        caps.start(sq_psn);
    }
    caps
}

impl<S: DerefMut<Target = [SqEntry]>, B: WindowWords, E: DerefMut<Target = ReqSr<B>>>
    Requester<S, E>
{
    /// True once the peer takes repair packets.
    pub fn fec_on(&self) -> bool {
        self.fec.is_on()
    }

    /// The PSN of the response the requester waits for next in order: the first READ
    /// response or atomic ACK missing (none when no READ or atomic waits). The FEC shim
    /// holds the responses after it while it may still be rebuilt.
    pub fn owed_response(&self) -> Option<Psn> {
        // Most responses are ACKs with no READ or atomic out: no walk of the queue.
        if self.rd_atomic_out == 0 {
            return None;
        }
        self.first_pending_rd_atomic().map(|(_, psn)| psn)
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

    /// TVer and Resv7 of a UC request: the standard format, and only the FEC shim's marks.
    pub(super) fn uc_marks(&self) -> CapAnswer {
        CapAnswer {
            tver: 0,
            resv7: self.fec_marks(0),
        }
    }

    /// A UC request went out for the first time, PSNs `psn` on for `used`: what the FEC
    /// exchange checks a take and an ask against.
    pub(super) fn note_uc_sent(&mut self, psn: Psn, used: u32) {
        self.sent_high = psn.add(used);
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
    /// stale or forged and changes nothing. UC has no UNACK: an ePSN not past the next
    /// PSN to send will do.
    pub fn on_fec_ask(&mut self, cfg: &RcConfig, epoch: u8, epsn: Psn) -> bool {
        let acked = cfg.service == Service::Uc || !epsn.before(self.una());
        acked && !epsn.after(self.sent_high) && self.fec.take_ask(epoch)
    }

    /// A UC peer's receiving side took the offer, answering the request of PSN `psn` (a
    /// take: UC has no response to echo the offer in): true when repairs are on now. Only
    /// a take for a PSN sent with the offer counts; on RC, where the responses answer, a
    /// take changes nothing.
    pub fn on_fec_take(&mut self, cfg: &RcConfig, psn: Psn) -> bool {
        if cfg.service != Service::Uc || !psn.before(self.sent_high) {
            return false;
        }
        self.fec.on_response(psn, FEC_OFFER);
        self.fec.is_on()
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
