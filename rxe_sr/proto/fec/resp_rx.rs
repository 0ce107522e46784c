// SPDX-License-Identifier: GPL-2.0
//! The requester's receiving side of the FEC shim: the responder's coded responses (READ
//! responses and atomic ACKs) decoded, and responses held while one it waits for may
//! still be rebuilt.
//!
//! The responses a requester waits for in order are not the PSNs one after another, as
//! requests are: an ACK stands for many PSNs, a WRITE's PSN gets no response of its own.
//! So the requester names the response it waits for, `owed` (the first READ response or
//! atomic ACK still missing, from its send queue), and a response past `owed` is held
//! while `owed` may still be rebuilt. Handed on at once it would show the requester the
//! loss: a go-back-N requester asks for the READ again from `owed`, an SR one for the
//! missing run, which is what FEC is there to avoid. The caller delivers what
//! [`RespRx::release`] gives after each response the requester took, as `owed` moves.

use core::ops::DerefMut;

use super::decoder::{DataOutcome, RepairOutcome};
use super::hold::{slot_of, slots_in_use};
use super::rx_side::RxSide;
use super::{FecParams, RepairHeader};
use crate::proto::psn::Psn;

/// Responses held after the one the requester waits for, each in the slot of its PSN
/// (with that PSN). All held PSNs lie after `owed` and less than the slots' count past it.
struct RespHold<P, S: DerefMut<Target = [Option<(P, u32)>]>> {
    slots: S,
    held: usize,
    /// No held PSN is before this one.
    low: Psn,
    /// A response too far past `owed` to hold came: everything held goes on first.
    flushing: bool,
}

impl<P, S: DerefMut<Target = [Option<(P, u32)>]>> RespHold<P, S> {
    fn new(mut slots: S) -> Self {
        slots.iter_mut().for_each(|s| *s = None);
        RespHold {
            slots,
            held: 0,
            low: Psn::new(0),
            flushing: false,
        }
    }

    fn cap(&self) -> usize {
        slots_in_use(self.slots.len())
    }

    fn slot_of(&self, psn: Psn) -> usize {
        slot_of(psn, self.cap())
    }

    /// Holds `pkt` of PSN `psn`; gives it back when its PSN is held already (the
    /// duplicate goes on).
    fn hold(&mut self, psn: Psn, pkt: P) -> Option<P> {
        let at = self.slot_of(psn);
        let Some(s @ None) = self.slots.get_mut(at) else {
            return Some(pkt);
        };
        *s = Some((pkt, psn.get()));
        if self.held == 0 || psn.before(self.low) {
            self.low = psn;
        }
        self.held += 1;
        None
    }

    /// The lowest PSN held (kept in `low` from then on), if any is.
    fn lowest(&mut self) -> Option<Psn> {
        if self.held == 0 {
            return None;
        }
        let mut psn = self.low;
        for _ in 0..self.cap() {
            let at = self.slot_of(psn);
            if self
                .slots
                .get(at)
                .is_some_and(|s| s.as_ref().is_some_and(|(_, p)| *p == psn.get()))
            {
                self.low = psn;
                return Some(psn);
            }
            psn = psn.next();
        }
        None
    }

    /// Takes the held response of PSN `psn`.
    fn take(&mut self, psn: Psn) -> Option<P> {
        let at = self.slot_of(psn);
        let (pkt, _) = self.slots.get_mut(at)?.take()?;
        self.held -= 1;
        self.low = psn.next();
        self.flushing &= self.held > 0;
        Some(pkt)
    }
}

/// What [`RespRx::pass`] did with a response.
pub enum RespPass<P> {
    /// Held.
    Held,
    /// To go on now (it is the response waited for, or one before it), then what
    /// [`RespRx::release`] gives.
    Now(P),
    /// To go on after what [`RespRx::release`] gives (nothing will be held for the
    /// response waited for), then what it gives again.
    AfterHeld(P),
}

/// The decoder of a requester's coded responses and the responses held for it.
pub struct RespRx<P, B: DerefMut<Target = [u8]>, H: DerefMut<Target = [Option<(P, u32)>]>> {
    side: RxSide<B>,
    hold: RespHold<P, H>,
}

impl<P, B: DerefMut<Target = [u8]>, H: DerefMut<Target = [Option<(P, u32)>]>> RespRx<P, B, H> {
    /// A receiving side whose device is set to `params`, taking responses in the `window`
    /// PSNs from UNACK, with the decoder's accumulators `buf` and the slots `slots` for
    /// responses held ([`super::rx::HOLD_SLOTS`]).
    pub fn new(params: FecParams, window: u32, buf: B, slots: H) -> Self {
        RespRx {
            side: RxSide::new(params, window, buf),
            hold: RespHold::new(slots),
        }
    }

    /// Responses held now.
    pub fn held(&self) -> usize {
        self.hold.held
    }

    /// A response's bytes (BTH to ICRC, checked) into its unit, if its PSN lies in the
    /// window from the requester's UNACK `una` (only marked responses are coded).
    pub fn code(&mut self, psn: Psn, ip_id: u16, pkt: &[u8], una: Psn) -> DataOutcome {
        if !self.side.in_window(psn, una) {
            return DataOutcome::Stale;
        }
        self.side.code(psn, ip_id, pkt)
    }

    /// The response `pkt` of PSN `psn`, already coded, the requester waiting for the
    /// response of PSN `owed` (none: it waits for no READ response or atomic ACK): held,
    /// or given back to go on before or after the held ones ([`RespPass`]).
    pub fn pass(&mut self, psn: Psn, pkt: P, owed: Option<Psn>) -> RespPass<P> {
        let Some(o) = owed.filter(|&o| psn.after(o)) else {
            return RespPass::Now(pkt);
        };
        if !self.side.armed || self.side.dec.hopeless(o) {
            return RespPass::AfterHeld(pkt);
        }
        if psn.distance_from(o) as usize >= self.hold.cap() {
            self.hold.flushing = self.hold.held > 0;
            return RespPass::AfterHeld(pkt);
        }
        match self.hold.hold(psn, pkt) {
            None => RespPass::Held,
            Some(dup) => RespPass::AfterHeld(dup),
        }
    }

    /// The next held response to go on, the requester now waiting for `owed`: the lowest
    /// held when it is not past `owed`, or nothing will rebuild `owed`, or the requester
    /// waits for none. Called until `None` after each response the requester took.
    pub fn release(&mut self, owed: Option<Psn>) -> Option<P> {
        let low = self.hold.lowest()?;
        let go = match owed {
            None => true,
            Some(o) => self.hold.flushing || !low.after(o) || self.side.dec.hopeless(o),
        };
        if go {
            self.hold.take(low)
        } else {
            None
        }
    }

    /// A repair of responses: what it rebuilds is written to `out`
    /// ([`Decoder::on_repair`]); a response rebuilt before `owed`, or when the requester
    /// waits for none, is [`RepairOutcome::Late`], not to be delivered.
    pub fn on_repair(
        &mut self,
        rh: &RepairHeader,
        payload: &[u8],
        out: &mut [u8],
        owed: Option<Psn>,
    ) -> RepairOutcome {
        let outcome = self.side.on_repair(rh, payload, out);
        match (outcome, owed) {
            (RepairOutcome::Rebuilt { psn, .. }, Some(o)) if !psn.before(o) => outcome,
            (RepairOutcome::Rebuilt { psn, .. }, _) => RepairOutcome::Late { psn },
            (o, _) => o,
        }
    }

    /// The ask to send the responder now, if one is due: the parameter epoch and the
    /// parameters asked for.
    pub fn take_ask(&mut self) -> Option<(u8, FecParams)> {
        self.side.take_ask()
    }
}
