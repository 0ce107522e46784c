// SPDX-License-Identifier: GPL-2.0
//! The receiving side of the FEC shim for one QP: the decoder and the packets held for it.
//!
//! For each request packet that passed its checks the caller first lets the decoder code
//! its bytes ([`FecRx::code`]), then hands the packet over ([`FecRx::pass`]), which
//! delivers it, or holds it while a gap before it may still be rebuilt. A repair goes to
//! [`FecRx::on_repair`]; a packet it rebuilds goes through the receive checks like any
//! other and then through `code` and `pass`; [`FecRx::settle`] afterwards lets go of the
//! packets held for a gap the repair did not fill.

use core::ops::DerefMut;

use super::decoder::{DataOutcome, RepairOutcome};
use super::hold::Holder;
use super::rx_side::RxSide;
use super::{FecParams, RepairHeader};
use crate::proto::psn::Psn;
use crate::proto::wire::fec_caps::FEC_OFFER;

/// Slots for held packets a receiving side needs: twice the largest block, as an ask may
/// move it to any parameters.
pub const HOLD_SLOTS: usize = 2 * (FecParams::MAX_N * FecParams::MAX_D) as usize;

/// The decoder and the held packets of one QP's receiving side.
pub struct FecRx<P, B: DerefMut<Target = [u8]>, H: DerefMut<Target = [Option<(P, u32)>]>> {
    side: RxSide<B>,
    hold: Holder<P, H>,
    /// UC requests carrying the offer to pass before the next take ([`Self::take_for`]).
    offers_to_take: u32,
}

/// A UC receiving side answers the first request carrying the FEC offer with a take, then
/// every this many more, as a take may be lost.
pub const TAKE_EVERY: u32 = 32;

impl<P, B: DerefMut<Target = [u8]>, H: DerefMut<Target = [Option<(P, u32)>]>> FecRx<P, B, H> {
    /// A receiving side whose device is set to `params`, holding what comes in the
    /// `window` PSNs from ePSN, with the decoder's accumulators `buf` and the slots `slots`
    /// for packets held ([`HOLD_SLOTS`]).
    pub fn new(params: FecParams, window: u32, buf: B, slots: H) -> Self {
        FecRx {
            side: RxSide::new(params, window, buf),
            hold: Holder::new(slots),
            offers_to_take: 0,
        }
    }

    /// The decoder's parameters.
    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    pub fn params(&self) -> FecParams {
        self.side.dec.params()
    }

    /// Packets held now.
    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    pub fn held(&self) -> usize {
        self.hold.held()
    }

    /// A request packet's bytes (BTH to ICRC, checked) into its unit, if its PSN lies in
    /// the window from the responder's ePSN `epsn`.
    pub fn code(&mut self, psn: Psn, ip_id: u16, pkt: &[u8], epsn: Psn) -> DataOutcome {
        if !self.side.in_window(psn, epsn) {
            return DataOutcome::Stale;
        }
        self.side.code(psn, ip_id, pkt)
    }

    /// The ask to send the peer now, if one is due ([`Asker`]): the parameter epoch and
    /// the parameters asked for.
    pub fn take_ask(&mut self) -> Option<(u8, FecParams)> {
        self.side.take_ask()
    }

    /// A request of PSN `psn` with BTH Resv7 `resv7` arrived on a UC QP (`uc`) whose peer
    /// QP is `dest_qpn`: the take to send that peer, if one is due. A UC responder has no
    /// response to echo the offer in, so the first request carrying exactly the offer, and
    /// then every [`TAKE_EVERY`] more, is answered by a take (the requester stops offering
    /// once one reached it).
    pub fn take_for(
        &mut self,
        uc: bool,
        resv7: u8,
        psn: Psn,
        dest_qpn: u32,
    ) -> Option<RepairHeader> {
        if !uc || resv7 != FEC_OFFER {
            return None;
        }
        let due = self.offers_to_take == 0;
        self.offers_to_take = match self.offers_to_take {
            0 => TAKE_EVERY - 1,
            n => n - 1,
        };
        due.then(|| RepairHeader::take(dest_qpn, self.side.dec.params(), psn))
    }

    /// The packet `pkt` of PSN `psn`, standing for `span` PSNs (a READ request for its
    /// responses'), already coded: delivered, with what it puts in
    /// order, or held. Outside the window from `epsn` it is delivered and changes nothing
    /// here.
    pub fn pass(&mut self, psn: Psn, span: u32, pkt: P, epsn: Psn, deliver: &mut impl FnMut(P)) {
        if !self.side.in_window(psn, epsn) {
            deliver(pkt);
            return;
        }
        let may_hold = self.side.armed
            && self
                .hold
                .expected()
                .is_some_and(|n| !self.side.dec.hopeless(n));
        self.hold.on_packet(psn, span, pkt, may_hold, deliver);
        self.settle(deliver);
    }

    /// True when the packet of PSN `psn` (standing for `span` PSNs) goes straight to the
    /// transport, without [`Self::pass`]: outside the window, or in order with nothing
    /// held (noted as passed).
    pub fn pass_in_order(&mut self, psn: Psn, span: u32, epsn: Psn) -> bool {
        !self.side.in_window(psn, epsn) || self.hold.pass_in_order(psn, span)
    }

    /// A repair: what it rebuilds is written to `out` ([`Decoder::on_repair`]); a packet
    /// rebuilt behind the responder's ePSN `epsn` is [`RepairOutcome::Late`], not to be
    /// delivered.
    pub fn on_repair(
        &mut self,
        rh: &RepairHeader,
        payload: &[u8],
        out: &mut [u8],
        epsn: Psn,
    ) -> RepairOutcome {
        match self.side.on_repair(rh, payload, out) {
            RepairOutcome::Rebuilt { psn, .. } if psn.before(epsn) => RepairOutcome::Late { psn },
            o => o,
        }
    }

    /// The held packets waiting for a gap nothing will fill go on, gap after gap.
    pub fn settle(&mut self, deliver: &mut impl FnMut(P)) {
        while let Some(gap) = self.hold.gap() {
            if !self.side.dec.hopeless(gap) {
                return;
            }
            self.hold.skip_gap(deliver);
        }
    }

    /// Everything held goes on in PSN order.
    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    pub fn release_all(&mut self, deliver: &mut impl FnMut(P)) {
        self.hold.release_all(deliver);
    }
}
