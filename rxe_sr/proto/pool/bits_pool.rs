// SPDX-License-Identifier: GPL-2.0
//! MELO's shared bits pool (MELO §3.2.3, Fig. 3).
//!
//! The pool is `BLOCKS` bits blocks of `BLOCK_BITS` bits (MELO picks 1 B blocks) with a
//! `next_ptr` per block, and a *free slots array* used as a stack: blocks are allocated
//! from the stack top and returned to the stack top, which `avail_ptr` points to, so both
//! are O(1). A connection's bitmap is a linked list of blocks described by a [`BitsChain`]
//! (MELO's `start_ptr` / `end_ptr` plus the PSN of bit 0) kept in the connection's state.

use super::slots::Slots;
use crate::proto::psn::Psn;

#[cfg(not(MODULE))]
/// Default number of blocks: MELO's 1 Kb pool of 1 B blocks.
pub const DEFAULT_BLOCKS: usize = 128;
#[cfg(not(MODULE))]
/// Default bits per block (MELO: 1 B).
pub const DEFAULT_BLOCK_BITS: u32 = 8;

const NIL: u16 = u16::MAX;

/// One connection's bitmap: a chain of blocks in a [`BitsPool`].
#[derive(Clone, Copy, Debug)]
pub struct BitsChain {
    /// PSN of bit 0 of the first block.
    pub base: Psn,
    start_ptr: u16,
    end_ptr: u16,
    nblocks: u16,
}

impl BitsChain {
    /// An empty chain starting at `base`.
    pub const fn new(base: Psn) -> Self {
        BitsChain {
            base,
            start_ptr: NIL,
            end_ptr: NIL,
            nblocks: 0,
        }
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests' chain checks"))]
    /// Blocks held.
    pub const fn nblocks(&self) -> u16 {
        self.nblocks
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests' chain checks"))]
    /// True when no block is held.
    pub const fn is_empty(&self) -> bool {
        self.nblocks == 0
    }
}

/// The pool could not provide a block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NoBits;

/// One block of the pool: its bits, the next block of its chain, and one entry of the
/// free slots array (which names a block by index; it is not this block's own state).
#[derive(Clone, Copy, Debug)]
pub struct BitsBlock {
    bits: u64,
    next_ptr: u16,
    avail: u16,
}

impl BitsBlock {
    /// Storage filler (the pool sets every field when it starts).
    pub const EMPTY: BitsBlock = BitsBlock {
        bits: 0,
        next_ptr: NIL,
        avail: 0,
    };
}

/// The pool's storage is too large for its 16-bit block indices.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PoolTooBig;

/// MELO's shared bits pool over block storage `S` (an array on the host, heap storage
/// sized at load in the kernel); one per device.
#[derive(Clone, Debug)]
pub struct BitsPoolIn<S, const BLOCK_BITS: u32> {
    blocks: S,
    /// The free slots array (each block's `avail`): entries at index >= `avail_ptr` name
    /// free blocks.
    pub(super) avail_ptr: usize,
    pub(super) peak: usize,
    pub(super) failures: u64,
}

#[cfg(not(MODULE))]
/// A [`BitsPoolIn`] over an array of `BLOCKS` blocks of `BLOCK_BITS` bits.
pub type BitsPool<
    const BLOCKS: usize = DEFAULT_BLOCKS,
    const BLOCK_BITS: u32 = DEFAULT_BLOCK_BITS,
> = BitsPoolIn<[BitsBlock; BLOCKS], BLOCK_BITS>;

// Array storage: the host tests and the simulator (the module sizes its pools at load).
#[cfg(not(MODULE))]
impl<const BLOCKS: usize, const BLOCK_BITS: u32> Default for BitsPool<BLOCKS, BLOCK_BITS> {
    fn default() -> Self {
        Self::new()
    }
}

// Array storage: the host tests and the simulator (the module sizes its pools at load).
#[cfg(not(MODULE))]
impl<const BLOCKS: usize, const BLOCK_BITS: u32> BitsPool<BLOCKS, BLOCK_BITS> {
    const VALID: () = assert!(BLOCK_BITS >= 1 && BLOCK_BITS <= 64 && BLOCKS < NIL as usize);

    /// An empty pool.
    pub fn new() -> Self {
        let () = Self::VALID;
        Self::empty([BitsBlock::EMPTY; BLOCKS])
    }
}

impl<S: Slots<BitsBlock>, const BLOCK_BITS: u32> BitsPoolIn<S, BLOCK_BITS> {
    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// Bits per block.
    pub const BLOCK_BITS: u32 = {
        assert!(BLOCK_BITS >= 1 && BLOCK_BITS <= 64);
        BLOCK_BITS
    };

    /// An empty pool over `blocks` (overwritten); fewer than 65535 of them.
    pub fn with_storage(blocks: S) -> Result<Self, PoolTooBig> {
        if blocks.slots().len() >= NIL as usize {
            return Err(PoolTooBig);
        }
        Ok(Self::empty(blocks))
    }

    /// An empty pool over storage whose size was checked.
    fn empty(blocks: S) -> Self {
        let mut p = BitsPoolIn {
            blocks,
            avail_ptr: 0,
            peak: 0,
            failures: 0,
        };
        p.reset();
        p
    }

    /// Every block free, statistics cleared.
    pub fn reset(&mut self) {
        for (i, b) in self.blocks.slots_mut().iter_mut().enumerate() {
            *b = BitsBlock {
                bits: 0,
                next_ptr: NIL,
                avail: i as u16,
            };
        }
        self.avail_ptr = 0;
        self.peak = 0;
        self.failures = 0;
    }

    /// Blocks in all.
    pub fn capacity(&self) -> usize {
        self.blocks.slots().len()
    }

    fn alloc(&mut self) -> Result<u16, NoBits> {
        let Some(b) = self.blocks.slots().get(self.avail_ptr).map(|x| x.avail) else {
            self.failures = self.failures.saturating_add(1);
            return Err(NoBits);
        };
        self.avail_ptr += 1;
        self.peak = self.peak.max(self.avail_ptr);
        if let Some(x) = self.blocks.slots_mut().get_mut(usize::from(b)) {
            x.bits = 0;
            x.next_ptr = NIL;
        }
        Ok(b)
    }

    fn free_one(&mut self, b: u16) -> u16 {
        let next = self
            .blocks
            .slots()
            .get(usize::from(b))
            .map_or(NIL, |x| x.next_ptr);
        if self.avail_ptr > 0 {
            self.avail_ptr -= 1;
            if let Some(a) = self.blocks.slots_mut().get_mut(self.avail_ptr) {
                a.avail = b;
            }
        }
        next
    }

    /// Returns all blocks of `chain` to the pool.
    pub fn free(&mut self, chain: &mut BitsChain) {
        let mut b = chain.start_ptr;
        let mut guard = chain.nblocks;
        while b != NIL && guard > 0 {
            b = self.free_one(b);
            guard -= 1;
        }
        chain.start_ptr = NIL;
        chain.end_ptr = NIL;
        chain.nblocks = 0;
    }

    /// Extends `chain` at its end so it covers `psn`.
    pub fn cover(&mut self, chain: &mut BitsChain, psn: Psn) -> Result<(), NoBits> {
        let off = psn.diff(chain.base);
        if off < 0 {
            return Ok(());
        }
        let need = off.unsigned_abs() / BLOCK_BITS + 1;
        if need as usize > self.capacity() {
            self.failures = self.failures.saturating_add(1);
            return Err(NoBits);
        }
        while u32::from(chain.nblocks) < need {
            let b = self.alloc()?;
            if let Some(n) = self.blocks.slots_mut().get_mut(usize::from(chain.end_ptr)) {
                n.next_ptr = b;
            }
            if chain.start_ptr == NIL {
                chain.start_ptr = b;
            }
            chain.end_ptr = b;
            chain.nblocks = chain.nblocks.saturating_add(1);
        }
        Ok(())
    }

    fn locate(&self, chain: &BitsChain, psn: Psn) -> Option<(u16, u32)> {
        let off = psn.diff(chain.base);
        if off < 0 {
            return None;
        }
        let off = off.unsigned_abs();
        let idx = off / BLOCK_BITS;
        if idx >= u32::from(chain.nblocks) {
            return None;
        }
        if idx + 1 == u32::from(chain.nblocks) {
            return Some((chain.end_ptr, off % BLOCK_BITS));
        }
        let mut b = chain.start_ptr;
        for _ in 0..idx {
            b = self.blocks.slots().get(usize::from(b))?.next_ptr;
        }
        Some((b, off % BLOCK_BITS))
    }

    /// Sets the bit of `psn` (no-op if not covered).
    pub fn set(&mut self, chain: &BitsChain, psn: Psn) {
        if let Some((b, bit)) = self.locate(chain, psn) {
            if let Some(x) = self.blocks.slots_mut().get_mut(usize::from(b)) {
                x.bits |= 1u64 << bit;
            }
        }
    }

    /// The bit of `psn` (false if not covered).
    pub fn get(&self, chain: &BitsChain, psn: Psn) -> bool {
        self.locate(chain, psn)
            .and_then(|(b, bit)| {
                self.blocks
                    .slots()
                    .get(usize::from(b))
                    .map(|x| x.bits & (1u64 << bit) != 0)
            })
            .unwrap_or(false)
    }

    /// Releases the head blocks that lie wholly before `psn`.
    pub fn release_before(&mut self, chain: &mut BitsChain, psn: Psn) {
        while chain.nblocks > 0 {
            let end = chain.base.add(BLOCK_BITS);
            if end.after(psn) {
                return;
            }
            chain.start_ptr = self.free_one(chain.start_ptr);
            chain.nblocks -= 1;
            chain.base = end;
            if chain.nblocks == 0 {
                chain.start_ptr = NIL;
                chain.end_ptr = NIL;
            }
        }
    }
}

#[cfg_attr(
    MODULE,
    expect(
        dead_code,
        reason = "statistics for the host tests and the simulator; the module reads PoolUsage"
    )
)]
impl<S: Slots<BitsBlock>, const BLOCK_BITS: u32> BitsPoolIn<S, BLOCK_BITS> {
    /// Blocks in use.
    pub const fn used(&self) -> usize {
        self.avail_ptr
    }
    /// Most blocks ever in use at once.
    pub const fn peak(&self) -> usize {
        self.peak
    }
    /// Failed allocations.
    pub const fn failures(&self) -> u64 {
        self.failures
    }

    /// Device memory in MELO's accounting, bytes: the bits, a next_ptr and a free-slot
    /// entry per block.
    pub fn footprint_bytes(&self) -> u32 {
        let blocks = self.capacity() as u32;
        let ptr = if blocks <= 256 { 1 } else { 2 };
        (blocks * BLOCK_BITS).div_ceil(8) + 2 * blocks * ptr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_allocation_and_chain() {
        let mut p: BitsPool<4, 8> = BitsPool::new();
        let mut a = BitsChain::new(Psn::new(10));
        let mut b = BitsChain::new(Psn::new(0));
        p.cover(&mut a, Psn::new(25)).unwrap();
        assert_eq!(p.used(), 2);
        p.cover(&mut b, Psn::new(15)).unwrap();
        assert_eq!(p.cover(&mut a, Psn::new(42)), Err(NoBits));
        p.set(&a, Psn::new(11));
        p.set(&a, Psn::new(25));
        assert!(p.get(&a, Psn::new(25)) && p.get(&a, Psn::new(11)) && !p.get(&a, Psn::new(12)));
        p.release_before(&mut a, Psn::new(18));
        assert_eq!(p.used(), 3);
        assert!(p.get(&a, Psn::new(25)));
        p.free(&mut a);
        p.free(&mut b);
        assert_eq!(p.used(), 0);
        assert_eq!(p.peak(), 4);
    }
}
