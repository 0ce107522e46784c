// SPDX-License-Identifier: GPL-2.0
//! Holding request packets back after a gap until the FEC shim rebuilds the missing one.
//!
//! A repair comes after the last packet of its unit, so the packets after a loss arrive
//! before the packet is rebuilt. Handed to the transport at once, they would show it the
//! gap: a go-back-N responder NAKs and drops everything after it, and the requester sends
//! it all again, which is what FEC is there to avoid. So the shim holds them, each in the
//! slot of its PSN, until the gap is filled (rebuilt or resent), or nothing will fill it
//! (its unit is hopeless, or the packets after it overflow the slots), and then hands
//! them on in PSN order.

use core::ops::DerefMut;

use crate::proto::psn::Psn;

/// Slots used of `n` given: the largest power of two at most `n` (a mask, not a
/// remainder, finds a PSN's slot).
pub(super) fn slots_in_use(n: usize) -> usize {
    match n {
        0 => 0,
        n => 1 << (usize::BITS - 1 - n.leading_zeros()),
    }
}

/// The slot of `psn` among `cap` slots in use.
pub(super) fn slot_of(psn: Psn, cap: usize) -> usize {
    psn.get() as usize & cap.saturating_sub(1)
}

/// Request packets held after a gap, each with the PSNs it stands for (a READ request
/// its responses'). `S` is the slots: the largest power of two of them
/// that fits is used, and it should be at least the PSNs between a loss and its unit's
/// repair (twice a block).
pub struct Holder<P, S: DerefMut<Target = [Option<(P, u32)>]>> {
    /// The PSN expected next in order (none until the first packet).
    next: Option<Psn>,
    slots: S,
    /// Packets held.
    held: usize,
}

impl<P, S: DerefMut<Target = [Option<(P, u32)>]>> Holder<P, S> {
    /// An empty holder over `slots` (emptied).
    pub fn new(mut slots: S) -> Self {
        slots.iter_mut().for_each(|s| *s = None);
        Holder {
            next: None,
            slots,
            held: 0,
        }
    }

    /// Packets held now.
    pub fn held(&self) -> usize {
        self.held
    }

    /// The PSN expected next in order.
    pub fn expected(&self) -> Option<Psn> {
        self.next
    }

    /// The missing PSN the held packets wait for, if any are held.
    pub fn gap(&self) -> Option<Psn> {
        if self.held == 0 {
            return None;
        }
        self.next
    }

    /// Slots in use: the largest power of two at most the slots given (a mask, not a
    /// remainder, finds a PSN's slot).
    fn cap(&self) -> usize {
        slots_in_use(self.slots.len())
    }

    fn slot_of(&self, psn: Psn) -> usize {
        slot_of(psn, self.cap())
    }

    /// A request packet of PSN `psn`, standing for `span` PSNs (1, or a READ's
    /// responses), passed its checks: it is handed to `deliver`, with the held packets it
    /// puts in order, or held when it comes after a gap and `may_hold` (nothing has given
    /// the gap up). A packet too far past the gap to hold releases everything held first.
    pub fn on_packet(
        &mut self,
        psn: Psn,
        span: u32,
        pkt: P,
        may_hold: bool,
        deliver: &mut impl FnMut(P),
    ) {
        let end = psn.add(span.max(1));
        let Some(next) = self.next else {
            self.next = Some(end);
            deliver(pkt);
            return;
        };
        if !psn.after(next) {
            deliver(pkt);
            if end.after(next) {
                self.next = Some(end);
                self.drain(deliver);
            }
            return;
        }
        let dist = psn.distance_from(next) as usize;
        if !may_hold || dist >= self.cap() {
            self.release_before(psn, deliver);
            deliver(pkt);
            self.next = Some(end);
            self.drain(deliver);
            return;
        }
        let at = self.slot_of(psn);
        match self.slots.get_mut(at) {
            Some(s @ None) => {
                *s = Some((pkt, span.max(1)));
                self.held += 1;
            }
            // The same PSN held already: the transport sees the duplicate.
            _ => deliver(pkt),
        }
    }

    /// The packet of PSN `psn`, standing for `span` PSNs, can go straight on without being
    /// handed over: nothing is held, and it is the one expected next (or one before it).
    /// Notes it as passed when so.
    pub fn pass_in_order(&mut self, psn: Psn, span: u32) -> bool {
        if self.held != 0 {
            return false;
        }
        let end = psn.add(span.max(1));
        match self.next {
            Some(next) if psn.after(next) => false,
            Some(next) if !end.after(next) => true,
            _ => {
                self.next = Some(end);
                true
            }
        }
    }

    /// Nothing will fill the gap: the held packets up to the next gap go on (the
    /// transport sees the loss).
    pub fn skip_gap(&mut self, deliver: &mut impl FnMut(P)) {
        let Some(mut next) = self.next else {
            return;
        };
        if self.held == 0 {
            return;
        }
        let at = |h: &Self, p: Psn| h.slots.get(h.slot_of(p)).is_some_and(|s| s.is_some());
        while !at(self, next) {
            next = next.next();
        }
        self.next = Some(next);
        self.drain(deliver);
    }

    /// Hands on every held packet before `psn`, in PSN order.
    fn release_before(&mut self, psn: Psn, deliver: &mut impl FnMut(P)) {
        while let Some(next) = self.next.filter(|n| self.held > 0 && n.before(psn)) {
            let at = self.slot_of(next);
            let mut step = 1;
            if let Some((p, span)) = self.slots.get_mut(at).and_then(Option::take) {
                self.held -= 1;
                deliver(p);
                step = span;
            }
            self.next = Some(next.add(step));
        }
    }

    /// Hands on the held packets that follow `next` without a gap.
    fn drain(&mut self, deliver: &mut impl FnMut(P)) {
        while let Some(next) = self.next {
            let at = self.slot_of(next);
            let Some((p, span)) = self.slots.get_mut(at).and_then(Option::take) else {
                return;
            };
            self.held -= 1;
            deliver(p);
            self.next = Some(next.add(span));
        }
    }

    /// Everything held goes on in PSN order (the QP leaves the state that receives).
    pub fn release_all(&mut self, deliver: &mut impl FnMut(P)) {
        while self.held > 0 {
            self.skip_gap(deliver);
        }
    }
}
