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

use super::decoder::{DataOutcome, Decoder, RepairOutcome};
use super::hold::Holder;
use super::{FecParams, RepairHeader};
use crate::proto::psn::Psn;

/// The decoder and the held packets of one QP's receiving side.
pub struct FecRx<P, B: DerefMut<Target = [u8]>, H: DerefMut<Target = [Option<P>]>> {
    dec: Decoder<B>,
    hold: Holder<P, H>,
}

impl<P, B: DerefMut<Target = [u8]>, H: DerefMut<Target = [Option<P>]>> FecRx<P, B, H> {
    /// A receiving side for units of `params`, with the decoder's accumulators `buf` and
    /// the slots `slots` for packets held.
    pub fn new(params: FecParams, buf: B, slots: H) -> Self {
        FecRx {
            dec: Decoder::new(params, buf),
            hold: Holder::new(slots),
        }
    }

    /// The decoder's parameters.
    pub fn params(&self) -> FecParams {
        self.dec.params()
    }

    /// Packets held now.
    pub fn held(&self) -> usize {
        self.hold.held()
    }

    /// A request packet's bytes (BTH to ICRC, checked) into its unit.
    pub fn code(&mut self, psn: Psn, ip_id: u16, pkt: &[u8]) -> DataOutcome {
        self.dec.on_data(psn, ip_id, pkt)
    }

    /// The packet `pkt` of PSN `psn`, already coded: delivered, with what it puts in
    /// order, or held.
    pub fn pass(&mut self, psn: Psn, pkt: P, deliver: &mut impl FnMut(P)) {
        let may_hold = self.hold.expected().is_some_and(|n| !self.dec.hopeless(n));
        self.hold.on_packet(psn, pkt, may_hold, deliver);
        self.settle(deliver);
    }

    /// A repair: what it rebuilds is written to `out` ([`Decoder::on_repair`]).
    pub fn on_repair(
        &mut self,
        rh: &RepairHeader,
        payload: &[u8],
        out: &mut [u8],
    ) -> RepairOutcome {
        self.dec.on_repair(rh, payload, out)
    }

    /// The held packets waiting for a gap nothing will fill go on, gap after gap.
    pub fn settle(&mut self, deliver: &mut impl FnMut(P)) {
        while let Some(gap) = self.hold.gap() {
            if !self.dec.hopeless(gap) {
                return;
            }
            self.hold.skip_gap(deliver);
        }
    }

    /// Everything held goes on in PSN order.
    pub fn release_all(&mut self, deliver: &mut impl FnMut(P)) {
        self.hold.release_all(deliver);
    }
}
