// SPDX-License-Identifier: GPL-2.0
//! The sending half of the FEC shim: a QP's request packets into repair packets.

use core::ops::DerefMut;

use super::{bit, packet_epoch, xor_into, FecParams, RepairHeader, RhKind};
use crate::proto::psn::Psn;

/// A unit holding fewer packets not yet in a repair than this is not flushed when the
/// requester runs out of work: a repair of one packet is that packet again.
pub const FLUSH_MIN: u32 = 2;

/// What the encoder keeps of one unit of the current block (its bytes are in the
/// encoder's buffer).
#[derive(Clone, Copy, Debug, Default)]
struct EncUnit {
    /// Indices XORed in.
    covered: u32,
    /// Of those, how many no repair has covered yet.
    fresh: u32,
    /// XOR of the covered packets' lengths.
    len_xor: u16,
    /// XOR of their IPv4 Identification fields.
    ip_id_xor: u16,
    /// The longest covered packet: the accumulator's length.
    max_len: usize,
    /// A coded packet did not go out as coded: no repair for this unit.
    broken: bool,
}

/// Accumulators an encoder's buffer holds: one per unit of the deepest interleaving, so
/// that an ask may change the depth.
pub const ENC_UNITS: usize = FecParams::MAX_D as usize;

/// The encoder of one QP's request packets. `S` is its accumulators, [`ENC_UNITS`] slots
/// of equal length, each at least the longest packet the QP sends.
pub struct Encoder<S: DerefMut<Target = [u8]>> {
    params: FecParams,
    /// The parameter epoch `params` belong to.
    epoch: u8,
    /// The next epoch and its parameters, once the requester took the peer's ask: they
    /// apply from the first packet marked with that epoch.
    next: Option<(u8, FecParams)>,
    dest_qpn: u32,
    /// The kind of its repairs: [`RhKind::Repair`] for requests, [`RhKind::RespRepair`]
    /// for a responder's responses.
    kind: RhKind,
    buf: S,
    units: [EncUnit; FecParams::MAX_D as usize],
    /// Block number of the units being filled.
    block: Option<u32>,
    /// Units (bits) completed and not yet repaired.
    due: u32,
}

impl<S: DerefMut<Target = [u8]>> Encoder<S> {
    /// An encoder with `params` for the QP `dest_qpn` of the peer, over `buf` (zeroed).
    pub fn new(params: FecParams, dest_qpn: u32, mut buf: S) -> Self {
        buf.fill(0);
        Encoder {
            params,
            epoch: 0,
            next: None,
            dest_qpn,
            kind: RhKind::Repair,
            buf,
            units: [EncUnit::default(); FecParams::MAX_D as usize],
            block: None,
            due: 0,
        }
    }

    /// The encoder of a responder's coded responses: as [`Self::new`], its repairs of
    /// kind [`RhKind::RespRepair`].
    pub fn for_responses(params: FecParams, dest_qpn: u32, buf: S) -> Self {
        Encoder {
            kind: RhKind::RespRepair,
            ..Self::new(params, dest_qpn, buf)
        }
    }

    /// The parameters in use.
    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    pub fn params(&self) -> FecParams {
        self.params
    }

    /// Bytes of one unit's accumulator.
    fn slot_len(&self) -> usize {
        self.buf.len() / ENC_UNITS
    }

    /// The requester took the peer's ask for `params` as parameter epoch `epoch`: they
    /// apply from the first packet marked with it.
    pub fn take_ask(&mut self, epoch: u8, params: FecParams) {
        self.next = Some((epoch, params));
    }

    /// The packet `pkt` (BTH to ICRC) of PSN `psn` went out with IPv4 Identification
    /// `ip_id`: [`Self::prepare`], [`Self::code`] and [`Self::emit_due`] in one. Returns
    /// true if it was coded.
    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    pub fn on_sent(
        &mut self,
        psn: Psn,
        ip_id: u16,
        pkt: &[u8],
        emit: &mut impl FnMut(&RepairHeader, &[u8]),
    ) -> bool {
        let Some(epoch) = packet_epoch(pkt) else {
            return false;
        };
        self.prepare(psn, epoch, emit);
        let coded = self.code(psn, ip_id, pkt);
        self.emit_due(emit);
        coded
    }

    /// A coded packet of PSN `psn` and parameter epoch `epoch` is about to be built: if it
    /// starts another block, or the next epoch, the repairs of the block it leaves go out
    /// first (their packets are all out).
    pub fn prepare(&mut self, psn: Psn, epoch: u8, emit: &mut impl FnMut(&RepairHeader, &[u8])) {
        if let Some((e, p)) = self.next.filter(|&(e, _)| e == epoch) {
            self.close_block(emit);
            (self.params, self.epoch, self.block, self.next) = (p, e, None, None);
        }
        let (blk, _, _) = self.params.place(psn);
        if self.block != Some(blk) {
            self.close_block(emit);
            self.block = Some(blk);
        }
    }

    /// Codes the packet `pkt` (BTH to ICRC, marked as coded) of PSN `psn`, about to go
    /// out with IPv4 Identification `ip_id`; a unit it completes is due
    /// ([`Self::emit_due`], once the packet is out). A packet that cannot be coded (too
    /// long, not [`Self::prepare`]d, of an epoch whose parameters the encoder lacks, or of
    /// a PSN coded already) breaks its unit: no repair covers it any more.
    pub fn code(&mut self, psn: Psn, ip_id: u16, pkt: &[u8]) -> bool {
        let (blk, j, i) = self.params.place(psn);
        let slot = self.slot_len();
        let ours = packet_epoch(pkt) == Some(self.epoch);
        // A PSN coded twice would leave the unit's XOR matching no packet the peer has.
        let again = self
            .units
            .get(j as usize)
            .is_some_and(|u| u.covered & bit(i) != 0);
        let fits = self.block == Some(blk) && pkt.len() <= slot && ours && !again;
        let (Ok(len), true) = (u16::try_from(pkt.len()), fits) else {
            self.poison(psn);
            return false;
        };
        let Some(acc) = self
            .buf
            .get_mut(j as usize * slot..)
            .and_then(|b| b.get_mut(..slot))
        else {
            return false;
        };
        xor_into(acc, pkt);
        let Some(u) = self.units.get_mut(j as usize) else {
            return false;
        };
        u.covered |= bit(i);
        u.fresh += 1;
        u.len_xor ^= len;
        u.ip_id_xor ^= ip_id;
        u.max_len = u.max_len.max(pkt.len());
        if i == self.params.n() - 1 {
            self.due |= bit(j);
        }
        true
    }

    /// The repairs of the units completed since the last call go out.
    pub fn emit_due(&mut self, emit: &mut impl FnMut(&RepairHeader, &[u8])) {
        let due = core::mem::take(&mut self.due);
        for j in 0..self.params.d() {
            if due & bit(j) != 0 {
                self.emit_unit(j, emit);
            }
        }
    }

    /// The coded packet of PSN `psn` did not go out (or was coded wrong): its unit, in the
    /// current block, gets no repair any more (the peer would rebuild garbage from it).
    pub fn poison(&mut self, psn: Psn) {
        let (blk, j, _) = self.params.place(psn);
        if self.block == Some(blk) {
            if let Some(u) = self.units.get_mut(j as usize) {
                u.broken = true;
            }
        }
    }

    /// The requester has nothing more to send now: each unit holding at least
    /// [`FLUSH_MIN`] packets no repair covers gets one, so a loss at the end of a burst
    /// need not wait for the unit to fill.
    pub fn flush_idle(&mut self, emit: &mut impl FnMut(&RepairHeader, &[u8])) {
        for j in 0..self.params.d() {
            if self
                .units
                .get(j as usize)
                .is_some_and(|u| u.fresh >= FLUSH_MIN)
            {
                self.emit_unit(j, emit);
            }
        }
    }

    /// Hands out unit `j`'s repair if it covers anything new.
    fn emit_unit(&mut self, j: u32, emit: &mut impl FnMut(&RepairHeader, &[u8])) {
        let (Some(blk), slot) = (self.block, self.slot_len()) else {
            return;
        };
        let Some(u) = self.units.get_mut(j as usize) else {
            return;
        };
        if u.fresh == 0 || u.broken {
            return;
        }
        u.fresh = 0;
        let rh = RepairHeader {
            dest_qpn: self.dest_qpn,
            kind: self.kind,
            params: self.params,
            epoch: self.epoch,
            first_psn: Psn::new(blk.wrapping_mul(self.params.block()).wrapping_add(j)),
            covered: u.covered,
            len_xor: u.len_xor,
            ip_id_xor: u.ip_id_xor,
        };
        let at = j as usize * slot;
        if let Some(payload) = self.buf.get(at..at + u.max_len) {
            emit(&rh, payload);
        }
    }

    /// The block ends: its units' last repairs go out and the accumulators are cleared.
    fn close_block(&mut self, emit: &mut impl FnMut(&RepairHeader, &[u8])) {
        let slot = self.slot_len();
        for j in 0..self.params.d() {
            self.emit_unit(j, emit);
            if let Some(u) = self.units.get_mut(j as usize) {
                let at = j as usize * slot;
                if let Some(acc) = self.buf.get_mut(at..at + u.max_len) {
                    acc.fill(0);
                }
                *u = EncUnit::default();
            }
        }
    }
}
