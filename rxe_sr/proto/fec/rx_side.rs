// SPDX-License-Identifier: GPL-2.0
//! What both receiving sides of the shim (of the requests, [`super::rx`], and of the
//! responses, [`super::resp_rx`]) do alike: code the marked packets into their units,
//! judge each repair, and choose the parameters to ask for ([`Asker`]).

use core::ops::DerefMut;

use super::ask::Asker;
use super::decoder::{DataOutcome, Decoder, RepairOutcome};
use super::{FecParams, RepairHeader};
use crate::proto::psn::Psn;

/// A decoder and the choice of its parameters.
pub struct RxSide<B: DerefMut<Target = [u8]>> {
    pub(super) dec: Decoder<B>,
    ask: Asker,
    /// A repair of our geometry arrived: the peer sends them, so a gap is worth waiting
    /// for (before that, holding would only delay the transport's own recovery).
    pub(super) armed: bool,
}

impl<B: DerefMut<Target = [u8]>> RxSide<B> {
    /// A side whose device is set to `params`, taking what comes in `window` PSNs, with
    /// the decoder's accumulators `buf`.
    pub(super) fn new(params: FecParams, window: u32, buf: B) -> Self {
        RxSide {
            dec: Decoder::new(params, window, buf),
            ask: Asker::new(params),
            armed: false,
        }
    }

    /// True when `psn` lies in the side's window from `base` (the responder's ePSN, the
    /// requester's UNACK): a packet before it (a duplicate) or past the window goes
    /// straight to the transport and changes no state of the shim, as no packet outside
    /// the receive window may.
    pub(super) fn in_window(&self, psn: Psn, base: Psn) -> bool {
        psn.distance_from(base) < self.dec.window()
    }

    /// A received packet's bytes (BTH to ICRC, checked; the caller checked its window)
    /// into its unit; a packet of the epoch asked for shows the ask was taken.
    pub(super) fn code(&mut self, psn: Psn, ip_id: u16, pkt: &[u8]) -> DataOutcome {
        let outcome = self.dec.on_data(psn, ip_id, pkt);
        if self
            .ask
            .pending()
            .is_some_and(|(e, _)| e == self.dec.epoch())
        {
            self.ask.taken();
        }
        outcome
    }

    /// A repair: what it rebuilds is written to `out` ([`Decoder::on_repair`]), and what
    /// it found is judged for the next ask.
    pub(super) fn on_repair(
        &mut self,
        rh: &RepairHeader,
        payload: &[u8],
        out: &mut [u8],
    ) -> RepairOutcome {
        self.armed |= rh.params == self.dec.params() && rh.epoch == self.dec.epoch();
        let outcome = self.dec.on_repair(rh, payload, out);
        let current = (self.dec.epoch(), self.dec.params());
        self.ask.on_repair(rh, outcome, current);
        if let Some((epoch, params)) = self.ask.pending() {
            self.dec.expect(epoch, params);
        }
        outcome
    }

    /// The ask to send the peer now, if one is due: the parameter epoch and the
    /// parameters asked for.
    pub(super) fn take_ask(&mut self) -> Option<(u8, FecParams)> {
        self.ask.take_due()
    }
}
