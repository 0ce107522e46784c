// SPDX-License-Identifier: GPL-2.0
//! The pools as the engines see them: object-safe interfaces ([`SrPoolOps`] for FaSR,
//! [`BitsPoolOps`] for MELO), so an engine works with a device's pool whatever its storage
//! and size, and the occupancy the counters report ([`PoolUsage`]).

use super::bits_pool::{BitsBlock, BitsChain, BitsPoolIn, NoBits};
use super::slots::Slots;
use super::sr_pool::{BitmapBlock, Exhausted, SrPoolIn, SrUnit, UnitId};
use crate::proto::psn::Psn;

/// What an engine needs of an SR pool, whatever its storage (object safe: FaSR takes the
/// device's pool as `&mut dyn SrPoolOps`).
pub trait SrPoolOps {
    /// Bits per bitmap block.
    fn block_bits(&self) -> u32;
    /// Allocates a level-1 unit; `Exhausted` (counted) when all are taken.
    fn alloc_unit(&mut self) -> Result<UnitId, Exhausted>;
    /// Releases a unit and its bitmap chain.
    fn free_unit(&mut self, id: UnitId);
    /// The unit `id` (None for a stale or foreign id).
    fn unit(&self, id: UnitId) -> Option<&SrUnit>;
    /// The unit `id`, mutably.
    fn unit_mut(&mut self, id: UnitId) -> Option<&mut SrUnit>;
    /// Releases the bitmap chain of `id`.
    fn free_chain(&mut self, id: UnitId);
    /// Starts an empty chain for `id` whose bit 0 is `base`.
    fn start_chain(&mut self, id: UnitId, base: Psn);
    /// Makes the chain of `id` cover `psn`.
    fn cover(&mut self, id: UnitId, psn: Psn) -> Result<(), Exhausted>;
    /// Sets the bit of `psn`.
    fn set(&mut self, id: UnitId, psn: Psn);
    /// Sets the bits of the PSNs `[first, end)` (those the chain covers).
    fn set_run(&mut self, id: UnitId, first: Psn, end: Psn) {
        let mut p = first;
        while p.before(end) {
            self.set(id, p);
            p = p.next();
        }
    }
    /// The bit of `psn`.
    fn get(&self, id: UnitId, psn: Psn) -> bool;
    /// Releases the head blocks wholly before `psn`.
    fn release_before(&mut self, id: UnitId, psn: Psn);
    /// Calls `f(first, count)` for every run of clear bits in `[from, from + len)`.
    fn for_each_zero(&self, id: UnitId, from: Psn, len: u32, f: &mut dyn FnMut(Psn, u32));
    /// The first clear bit from `from`, at most `limit` ahead.
    fn first_zero(&self, id: UnitId, from: Psn, limit: u32) -> Psn;
    /// Units and blocks in use now, and the most ever in use at once.
    fn usage(&self) -> PoolUsage;
}

/// A pool's occupancy, for the counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolUsage {
    /// Units (level 1) in use.
    pub units: u32,
    /// Most units in use at once.
    pub units_peak: u32,
    /// Blocks (level 2; MELO: bits blocks) in use.
    pub blocks: u32,
    /// Most blocks in use at once.
    pub blocks_peak: u32,
    /// Allocations that failed.
    pub exhaustions: u64,
}

impl<U: Slots<SrUnit>, B: Slots<BitmapBlock>, const BLOCK_BITS: u32> SrPoolOps
    for SrPoolIn<U, B, BLOCK_BITS>
{
    fn block_bits(&self) -> u32 {
        Self::BLOCK_BITS
    }
    fn alloc_unit(&mut self) -> Result<UnitId, Exhausted> {
        SrPoolIn::alloc_unit(self)
    }
    fn free_unit(&mut self, id: UnitId) {
        SrPoolIn::free_unit(self, id)
    }
    fn unit(&self, id: UnitId) -> Option<&SrUnit> {
        SrPoolIn::unit(self, id)
    }
    fn unit_mut(&mut self, id: UnitId) -> Option<&mut SrUnit> {
        SrPoolIn::unit_mut(self, id)
    }
    fn free_chain(&mut self, id: UnitId) {
        SrPoolIn::free_chain(self, id)
    }
    fn start_chain(&mut self, id: UnitId, base: Psn) {
        SrPoolIn::start_chain(self, id, base)
    }
    fn cover(&mut self, id: UnitId, psn: Psn) -> Result<(), Exhausted> {
        SrPoolIn::cover(self, id, psn)
    }
    fn set(&mut self, id: UnitId, psn: Psn) {
        SrPoolIn::set(self, id, psn)
    }
    fn get(&self, id: UnitId, psn: Psn) -> bool {
        SrPoolIn::get(self, id, psn)
    }
    fn release_before(&mut self, id: UnitId, psn: Psn) {
        SrPoolIn::release_before(self, id, psn)
    }
    fn for_each_zero(&self, id: UnitId, from: Psn, len: u32, f: &mut dyn FnMut(Psn, u32)) {
        SrPoolIn::for_each_zero(self, id, from, len, f)
    }
    fn first_zero(&self, id: UnitId, from: Psn, limit: u32) -> Psn {
        SrPoolIn::first_zero(self, id, from, limit)
    }
    fn usage(&self) -> PoolUsage {
        PoolUsage {
            units: u32::from(self.used_units),
            units_peak: u32::from(self.peak_units),
            blocks: u32::from(self.used_blocks),
            blocks_peak: u32::from(self.peak_blocks),
            exhaustions: self.exhaustions,
        }
    }
}

/// What MELO needs of a bits pool, whatever its storage (object safe).
pub trait BitsPoolOps {
    /// Returns all blocks of `chain` to the pool.
    fn free(&mut self, chain: &mut BitsChain);
    /// Extends `chain` so it covers `psn`.
    fn cover(&mut self, chain: &mut BitsChain, psn: Psn) -> Result<(), NoBits>;
    /// Sets the bit of `psn`.
    fn set(&mut self, chain: &BitsChain, psn: Psn);
    /// The bit of `psn`.
    fn get(&self, chain: &BitsChain, psn: Psn) -> bool;
    /// Releases the head blocks wholly before `psn`.
    fn release_before(&mut self, chain: &mut BitsChain, psn: Psn);
    /// Blocks in use now and at most (no units: `units` fields are 0).
    fn usage(&self) -> PoolUsage;
}

impl<S: Slots<BitsBlock>, const BLOCK_BITS: u32> BitsPoolOps for BitsPoolIn<S, BLOCK_BITS> {
    fn free(&mut self, chain: &mut BitsChain) {
        BitsPoolIn::free(self, chain)
    }
    fn cover(&mut self, chain: &mut BitsChain, psn: Psn) -> Result<(), NoBits> {
        BitsPoolIn::cover(self, chain, psn)
    }
    fn set(&mut self, chain: &BitsChain, psn: Psn) {
        BitsPoolIn::set(self, chain, psn)
    }
    fn get(&self, chain: &BitsChain, psn: Psn) -> bool {
        BitsPoolIn::get(self, chain, psn)
    }
    fn release_before(&mut self, chain: &mut BitsChain, psn: Psn) {
        BitsPoolIn::release_before(self, chain, psn)
    }
    fn usage(&self) -> PoolUsage {
        PoolUsage {
            units: 0,
            units_peak: 0,
            blocks: self.avail_ptr as u32,
            blocks_peak: self.peak as u32,
            exhaustions: self.failures,
        }
    }
}
