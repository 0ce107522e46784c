// SPDX-License-Identifier: GPL-2.0
//! MELO's shared bits pool (MELO §3.2.3, Fig. 3).
//!
//! The pool is `BLOCKS` bits blocks of `BLOCK_BITS` bits (MELO picks 1 B blocks) with a
//! `next_ptr` per block, and a *free slots array* used as a stack: blocks are allocated
//! from the stack top and returned to the stack top, which `avail_ptr` points to, so both
//! are O(1). A connection's bitmap is a linked list of blocks described by a [`BitsChain`]
//! (MELO's `start_ptr` / `end_ptr` plus the PSN of bit 0) kept in the connection's state.

use crate::proto::psn::Psn;

/// Default number of blocks: MELO's 1 Kb pool of 1 B blocks.
pub const DEFAULT_BLOCKS: usize = 128;
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

    /// Blocks held.
    pub const fn nblocks(&self) -> u16 {
        self.nblocks
    }

    /// True when no block is held.
    pub const fn is_empty(&self) -> bool {
        self.nblocks == 0
    }
}

/// The pool could not provide a block.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NoBits;

/// MELO's shared bits pool; one per device and direction.
#[derive(Clone, Debug)]
pub struct BitsPool<
    const BLOCKS: usize = DEFAULT_BLOCKS,
    const BLOCK_BITS: u32 = DEFAULT_BLOCK_BITS,
> {
    bits: [u64; BLOCKS],
    next_ptr: [u16; BLOCKS],
    /// The free slots array: entries at index >= `avail_ptr` name free blocks.
    avail: [u16; BLOCKS],
    avail_ptr: usize,
    peak: usize,
    failures: u64,
}

impl<const BLOCKS: usize, const BLOCK_BITS: u32> Default for BitsPool<BLOCKS, BLOCK_BITS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const BLOCKS: usize, const BLOCK_BITS: u32> BitsPool<BLOCKS, BLOCK_BITS> {
    const VALID: () = assert!(BLOCK_BITS >= 1 && BLOCK_BITS <= 64 && BLOCKS < NIL as usize);

    /// An empty pool.
    pub fn new() -> Self {
        let () = Self::VALID;
        let mut p = BitsPool {
            bits: [0; BLOCKS],
            next_ptr: [NIL; BLOCKS],
            avail: [0; BLOCKS],
            avail_ptr: 0,
            peak: 0,
            failures: 0,
        };
        for (i, a) in p.avail.iter_mut().enumerate() {
            *a = i as u16;
        }
        p
    }

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
    pub const fn footprint_bytes() -> u32 {
        let ptr = if BLOCKS <= 256 { 1 } else { 2 };
        ((BLOCKS as u32) * BLOCK_BITS).div_ceil(8) + 2 * (BLOCKS as u32) * ptr
    }

    fn alloc(&mut self) -> Result<u16, NoBits> {
        let Some(&b) = self.avail.get(self.avail_ptr) else {
            self.failures = self.failures.saturating_add(1);
            return Err(NoBits);
        };
        self.avail_ptr += 1;
        self.peak = self.peak.max(self.avail_ptr);
        if let Some(x) = self.bits.get_mut(usize::from(b)) {
            *x = 0;
        }
        if let Some(n) = self.next_ptr.get_mut(usize::from(b)) {
            *n = NIL;
        }
        Ok(b)
    }

    fn free_one(&mut self, b: u16) -> u16 {
        let next = self.next_ptr.get(usize::from(b)).copied().unwrap_or(NIL);
        if self.avail_ptr > 0 {
            self.avail_ptr -= 1;
            if let Some(a) = self.avail.get_mut(self.avail_ptr) {
                *a = b;
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
        if need > BLOCKS as u32 {
            self.failures = self.failures.saturating_add(1);
            return Err(NoBits);
        }
        while u32::from(chain.nblocks) < need {
            let b = self.alloc()?;
            if let Some(n) = self.next_ptr.get_mut(usize::from(chain.end_ptr)) {
                *n = b;
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
            b = *self.next_ptr.get(usize::from(b))?;
        }
        Some((b, off % BLOCK_BITS))
    }

    /// Sets the bit of `psn` (no-op if not covered).
    pub fn set(&mut self, chain: &BitsChain, psn: Psn) {
        if let Some((b, bit)) = self.locate(chain, psn) {
            if let Some(x) = self.bits.get_mut(usize::from(b)) {
                *x |= 1u64 << bit;
            }
        }
    }

    /// The bit of `psn` (false if not covered).
    pub fn get(&self, chain: &BitsChain, psn: Psn) -> bool {
        self.locate(chain, psn)
            .and_then(|(b, bit)| {
                self.bits
                    .get(usize::from(b))
                    .map(|x| x & (1u64 << bit) != 0)
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
