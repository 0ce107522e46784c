// SPDX-License-Identifier: GPL-2.0
//! The receiving half of the FEC shim: received request packets and repairs into the
//! packets that were lost.

use core::ops::DerefMut;

use super::{bit, packet_epoch, xor_into, FecParams, RepairHeader};
use crate::proto::psn::Psn;
use crate::proto::wire::{BTH_LEN, ICRC_LEN};

/// Units the decoder keeps: those of the current block and of the one before it, whose
/// repairs come after the first packets of the current one.
pub const DEC_UNITS: usize = 2 * FecParams::MAX_D as usize;

/// What the decoder keeps of one unit (its bytes are in the decoder's buffer).
#[derive(Clone, Copy, Debug, Default)]
struct DecUnit {
    /// The unit's block holds data: the fields below are its.
    live: bool,
    /// Block number.
    block: u32,
    /// Indices received (or rebuilt) and XORed in.
    received: u32,
    /// A packet longer than the accumulator was received: nothing can be rebuilt.
    poisoned: bool,
    /// A repair found two or more of its packets missing (counted once).
    given_up: bool,
    /// Indices some repair of the unit covered: a packet among them still missing after
    /// that repair is not rebuilt by a later one (unless it was two or more).
    seen_covered: u32,
    /// XOR of the received packets' lengths.
    len_xor: u16,
    /// XOR of their IPv4 Identification fields.
    ip_id_xor: u16,
    /// The accumulator's length: the longest packet XORed in.
    max_len: usize,
}

/// What a received packet was to the decoder.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DataOutcome {
    /// XORed into its unit.
    Coded,
    /// Its PSN was already received or rebuilt.
    Duplicate,
    /// Its block is older than the units kept.
    Stale,
    /// It is not marked as coded (a resend, or sent before repairs were on), or coded in
    /// a parameter epoch the decoder has no parameters for (it is not in use, nor asked
    /// for).
    Uncoded,
}

/// What a repair did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RepairOutcome {
    /// The one missing packet of the unit was rebuilt into the caller's buffer: its PSN,
    /// its IPv4 Identification and its length (BTH to ICRC).
    Rebuilt {
        /// The rebuilt packet's PSN.
        psn: Psn,
        /// The IPv4 Identification its datagram had.
        ip_id: u16,
        /// Its length from BTH to ICRC.
        len: usize,
    },
    /// Nothing the repair covers is missing.
    Complete,
    /// Two or more packets the repair covers are missing: the transport recovers them.
    /// `first` is true the first time the unit is found so.
    Unrepairable {
        /// First time for this unit.
        first: bool,
    },
    /// The one missing packet was rebuilt, but the responder's ePSN is past its PSN: it is
    /// not delivered (RC would take it for a duplicate, UC for the start of a message, out
    /// of order). Only [`FecRx`](super::rx::FecRx) says so; the decoder does not know ePSN.
    Late {
        /// The rebuilt packet's PSN.
        psn: Psn,
    },
    /// The repair does not fit what was received (its unit is not kept, a packet outside
    /// its mask or longer than the accumulator was received, or its lengths disagree): it
    /// is ignored.
    Unusable,
}

/// The decoder of the request packets one QP receives. `S` is its accumulators,
/// [`DEC_UNITS`] slots of equal length, each at least the longest packet the peer sends.
pub struct Decoder<S: DerefMut<Target = [u8]>> {
    params: FecParams,
    /// The parameter epoch `params` belong to.
    epoch: u8,
    /// The epoch asked for and its parameters: the first packet coded in it moves the
    /// decoder there.
    next: Option<(u8, FecParams)>,
    /// The first packet of the epoch in use came with this PSN (none before the first
    /// move): a PSN before it was coded in an earlier epoch, and is not rebuilt.
    since: Option<Psn>,
    /// The shim's window from ePSN, PSNs: how far before `since` a PSN is still taken for
    /// one of an earlier epoch.
    window: u32,
    buf: S,
    units: [DecUnit; DEC_UNITS],
}

impl<S: DerefMut<Target = [u8]>> Decoder<S> {
    /// A decoder for units of `params` in a shim whose window from ePSN is `window` PSNs,
    /// over `buf` (zeroed).
    pub fn new(params: FecParams, window: u32, mut buf: S) -> Self {
        buf.fill(0);
        Decoder {
            params,
            epoch: 0,
            next: None,
            since: None,
            window,
            buf,
            units: [DecUnit::default(); DEC_UNITS],
        }
    }

    /// The shim's window from ePSN, PSNs.
    pub fn window(&self) -> u32 {
        self.window
    }

    /// The parameters in use.
    pub fn params(&self) -> FecParams {
        self.params
    }

    /// The parameter epoch in use.
    pub fn epoch(&self) -> u8 {
        self.epoch
    }

    /// The receiving side asked for `params` as parameter epoch `epoch`: the first packet
    /// coded in that epoch moves the decoder to them.
    pub fn expect(&mut self, epoch: u8, params: FecParams) {
        self.next = Some((epoch, params));
    }

    /// The packet of PSN `psn` is the first of the epoch asked for: the units of the epoch
    /// before are dropped (a packet of theirs still missing is recovered by the
    /// transport), and the decoder codes with the new parameters.
    fn move_to(&mut self, epoch: u8, params: FecParams, psn: Psn) {
        for s in 0..DEC_UNITS {
            self.clear(s);
        }
        (self.params, self.epoch, self.next, self.since) = (params, epoch, None, Some(psn));
    }

    /// Bytes of one unit's accumulator.
    fn slot_len(&self) -> usize {
        self.buf.len() / DEC_UNITS
    }

    /// Where the unit `j` of block `blk` is kept.
    fn slot(&self, blk: u32, j: u32) -> usize {
        ((blk & 1) * self.params.d() + j) as usize
    }

    /// True when block `a` comes after block `b` (compared as the PSNs they start at).
    fn after(&self, a: u32, b: u32) -> bool {
        let start = |x: u32| Psn::new(x.wrapping_mul(self.params.block()));
        start(a).after(start(b))
    }

    /// A request packet `pkt` (BTH to ICRC, its ICRC checked) of PSN `psn` arrived in a
    /// datagram with IPv4 Identification `ip_id` (0 over IPv6).
    pub fn on_data(&mut self, psn: Psn, ip_id: u16, pkt: &[u8]) -> DataOutcome {
        match (packet_epoch(pkt), self.next) {
            (Some(e), _) if e == self.epoch => {}
            (Some(e), Some((next, p))) if e == next => self.move_to(e, p, psn),
            _ => return DataOutcome::Uncoded,
        }
        let (blk, j, i) = self.params.place(psn);
        let s = self.slot(blk, j);
        let Some(u) = self.units.get(s).copied() else {
            return DataOutcome::Stale;
        };
        if !u.live || u.block != blk {
            if u.live && !self.after(blk, u.block) {
                return DataOutcome::Stale;
            }
            self.reset(s, blk);
        }
        let slot = self.slot_len();
        let Some(u) = self.units.get_mut(s) else {
            return DataOutcome::Stale;
        };
        if u.received & bit(i) != 0 {
            return DataOutcome::Duplicate;
        }
        u.received |= bit(i);
        let len = match u16::try_from(pkt.len()) {
            Ok(l) if pkt.len() <= slot => l,
            _ => {
                u.poisoned = true;
                return DataOutcome::Coded;
            }
        };
        u.len_xor ^= len;
        u.ip_id_xor ^= ip_id;
        u.max_len = u.max_len.max(pkt.len());
        if let Some(acc) = self.buf.get_mut(s * slot..).and_then(|b| b.get_mut(..slot)) {
            xor_into(acc, pkt);
        }
        DataOutcome::Coded
    }

    /// Slot `s` starts over for block `blk`, nothing received.
    fn reset(&mut self, s: usize, blk: u32) {
        self.clear(s);
        if let Some(u) = self.units.get_mut(s) {
            (u.live, u.block) = (true, blk);
        }
    }

    /// Slot `s` holds no unit, its accumulator zeroed.
    fn clear(&mut self, s: usize) {
        let slot = self.slot_len();
        if let Some(u) = self.units.get_mut(s) {
            if let Some(acc) = self
                .buf
                .get_mut(s * slot..)
                .and_then(|b| b.get_mut(..u.max_len))
            {
                acc.fill(0);
            }
            *u = DecUnit::default();
        }
    }

    /// True when `psn` comes before the first packet received in the epoch in use, within
    /// the shim's window: coded, if at all, in an earlier epoch whose units are gone (or
    /// lost before that packet: not waited for either).
    fn earlier_epoch(&self, psn: Psn) -> bool {
        self.since
            .is_some_and(|s| psn.before(s) && s.distance_from(psn) < self.window)
    }

    /// True when nothing will rebuild `psn` if it is missing: its unit is older than the
    /// units kept, was given up or cannot be decoded, or a repair covering it has come and
    /// gone. A unit no packet has reached yet still may be (its packets are interleaved
    /// with others). A receiver holding packets back for `psn` stops waiting when true.
    pub fn hopeless(&self, psn: Psn) -> bool {
        if self.earlier_epoch(psn) {
            return true;
        }
        let (blk, j, i) = self.params.place(psn);
        let Some(u) = self.units.get(self.slot(blk, j)) else {
            return true;
        };
        if !u.live || (u.block != blk && self.after(blk, u.block)) {
            return false;
        }
        u.block != blk || u.given_up || u.poisoned || u.seen_covered & bit(i) != 0
    }

    /// A repair (its ICRC checked) with its XOR payload: rebuilds into `out` the one
    /// packet of its unit that is missing, if exactly one is.
    pub fn on_repair(
        &mut self,
        rh: &RepairHeader,
        payload: &[u8],
        out: &mut [u8],
    ) -> RepairOutcome {
        if !rh.kind.is_repair() || rh.params != self.params || rh.epoch != self.epoch {
            return RepairOutcome::Unusable;
        }
        let (blk, j, _) = self.params.place(rh.first_psn);
        let s = self.slot(blk, j);
        let slot = self.slot_len();
        let Some(u) = self.units.get_mut(s) else {
            return RepairOutcome::Unusable;
        };
        // A unit with nothing received is not started by a repair: no repair moves the
        // decoder to a block the peer has not sent into.
        let fits = u.live && u.block == blk && !u.poisoned && payload.len() <= slot;
        if u.live && u.block == blk {
            u.seen_covered |= rh.covered;
        }
        if !fits || u.received & !rh.covered != 0 || u.max_len > payload.len() {
            return RepairOutcome::Unusable;
        }
        let missing = rh.covered & !u.received;
        match missing.count_ones() {
            0 => return RepairOutcome::Complete,
            1 => {}
            _ => {
                let first = !u.given_up;
                u.given_up = true;
                return RepairOutcome::Unrepairable { first };
            }
        }
        let len = usize::from(u.len_xor ^ rh.len_xor);
        let ip_id = u.ip_id_xor ^ rh.ip_id_xor;
        let Some(acc) = self
            .buf
            .get_mut(s * slot..)
            .and_then(|b| b.get_mut(..payload.len()))
        else {
            return RepairOutcome::Unusable;
        };
        let Some(dst) = out.get_mut(..payload.len()) else {
            return RepairOutcome::Unusable;
        };
        dst.copy_from_slice(acc);
        xor_into(dst, payload);
        let padded_with_zeros = dst.get(len..).is_some_and(|t| t.iter().all(|&b| b == 0));
        if len < BTH_LEN + ICRC_LEN || len & 3 != 0 || !padded_with_zeros {
            return RepairOutcome::Unusable;
        }
        // The unit now holds the rebuilt packet too: its XOR is the repair's.
        acc.copy_from_slice(payload);
        u.received |= missing;
        u.len_xor = rh.len_xor;
        u.ip_id_xor = rh.ip_id_xor;
        u.max_len = payload.len();
        let i = missing.trailing_zeros();
        RepairOutcome::Rebuilt {
            psn: self.params.psn_of(rh.first_psn, i),
            ip_id,
            len,
        }
    }
}
