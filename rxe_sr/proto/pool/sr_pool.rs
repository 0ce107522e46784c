// SPDX-License-Identifier: GPL-2.0
//! FaSR's two-level shared SR pool (FaSR §III-C, Fig. 5).
//!
//! Level 1, the *shared SR state pool*: `UNITS` fixed-size [`SrUnit`]s and an availability
//! bitmap. A QP's QPC holds only an SR-state pointer ([`UnitId`], null when the QP has no
//! loss); a QP in loss recovery points at one unit holding sack-high, lost-cnt, the
//! compression-cnt and the head/tail pointers of its bitmap chain.
//!
//! Level 2, the *shared bitmap pool*: `BLOCKS` bitmap blocks of `BLOCK_BITS` bits, each with
//! a next pointer, and an availability bitmap. A QP on the slow path owns a singly linked
//! chain of blocks; out-of-order packets touch the tail, retransmissions the head, and blocks
//! are released from the head as RCV-NXT passes them.
//!
//! Both levels keep their availability bitmap as one `in_use` bit per element, and thread
//! the free elements on an intrusive free list, so allocation and release of one element
//! are O(1) (the paper's hardware finds a zero in the availability bitmap with a priority
//! encoder; a free list is the software equivalent).
//! Defaults are the paper's: 20 units, 70 blocks of 16 bits (§III-D, §V-A).

#[cfg(not(MODULE))]
/// Default number of level-1 SR state units.
pub const DEFAULT_UNITS: usize = 20;
#[cfg(not(MODULE))]
/// Default number of level-2 bitmap blocks.
pub const DEFAULT_BLOCKS: usize = 70;
#[cfg(not(MODULE))]
/// Default bits per bitmap block.
pub const DEFAULT_BLOCK_BITS: u32 = 16;
/// Bytes of one SR state unit in the paper's accounting (20 B SR state + 10 B bitmap
/// pointers + compression-cnts + lost-cnts, §III-D).
pub const UNIT_BYTES: u32 = 38;

use super::slots::Slots;
use crate::proto::psn::Psn;

const NIL: u16 = u16::MAX;

/// Index of a level-1 SR state unit (the per-QP "SR state pointer").
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct UnitId(u16);

/// One level-1 SR state unit.
#[derive(Clone, Copy, Debug)]
pub struct SrUnit {
    /// sack-high: the highest PSN received (responder) or SACKed (requester).
    pub sack_high: Psn,
    /// lost-cnt, 3 bits on the wire (0..=7).
    pub lost_cnt: u8,
    /// lost-cnt overflowed during this recovery.
    pub overflow: bool,
    /// compression-cnt (22 bits): PSNs `rcv_nxt + 1 ..= rcv_nxt + compression_cnt` are known
    /// received without bitmap bits (bitmap acceleration, §III-D).
    pub compression_cnt: u32,
    /// The QP fell back to go-back-N and stays there until this recovery completes.
    pub gbn: bool,
    /// PSN of bit 0 of the head bitmap block.
    pub bm_base: Psn,
    head: u16,
    tail: u16,
    nblocks: u16,
    in_use: bool,
    next_free: u16,
}

impl SrUnit {
    /// A free unit (storage filler).
    pub const EMPTY: SrUnit = SrUnit {
        sack_high: Psn::new(0),
        lost_cnt: 0,
        overflow: false,
        compression_cnt: 0,
        gbn: false,
        bm_base: Psn::new(0),
        head: NIL,
        tail: NIL,
        nblocks: 0,
        in_use: false,
        next_free: NIL,
    };

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests' chain checks"))]
    /// Number of bitmap blocks linked to this unit.
    pub const fn nblocks(&self) -> u16 {
        self.nblocks
    }
}

/// One level-2 bitmap block (its bits, the next block of its chain, in use).
#[derive(Clone, Copy, Debug)]
pub struct BitmapBlock {
    bits: u64,
    next: u16,
    in_use: bool,
}

impl BitmapBlock {
    /// A free block (storage filler).
    pub const EMPTY: BitmapBlock = BitmapBlock {
        bits: 0,
        next: NIL,
        in_use: false,
    };
}

/// The pool could not provide an element.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Exhausted;

/// The pool's storage is too large for its 16-bit element indices.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PoolTooBig;

/// FaSR's two-level shared SR pool over unit storage `U` and block storage `B` (arrays on
/// the host, heap slices in the kernel, sized at load); one per device.
#[derive(Clone, Debug)]
pub struct SrPoolIn<U, B, const BLOCK_BITS: u32> {
    units: U,
    blocks: B,
    free_unit: u16,
    free_block: u16,
    pub(super) used_units: u16,
    pub(super) used_blocks: u16,
    pub(super) peak_units: u16,
    pub(super) peak_blocks: u16,
    pub(super) exhaustions: u64,
}

#[cfg(not(MODULE))]
/// An [`SrPoolIn`] over arrays: `UNITS` units, `BLOCKS` blocks of `BLOCK_BITS` bits.
pub type SrPool<
    const UNITS: usize = DEFAULT_UNITS,
    const BLOCKS: usize = DEFAULT_BLOCKS,
    const BLOCK_BITS: u32 = DEFAULT_BLOCK_BITS,
> = SrPoolIn<[SrUnit; UNITS], [BitmapBlock; BLOCKS], BLOCK_BITS>;

// Array storage: the host tests and the simulator (the module sizes its pools at load).
#[cfg(not(MODULE))]
impl<const UNITS: usize, const BLOCKS: usize, const BLOCK_BITS: u32> Default
    for SrPool<UNITS, BLOCKS, BLOCK_BITS>
{
    fn default() -> Self {
        Self::new()
    }
}

// Array storage: the host tests and the simulator (the module sizes its pools at load).
#[cfg(not(MODULE))]
impl<const UNITS: usize, const BLOCKS: usize, const BLOCK_BITS: u32>
    SrPool<UNITS, BLOCKS, BLOCK_BITS>
{
    /// Compile-time check of the parameters.
    const VALID: () = assert!(
        BLOCK_BITS >= 1 && BLOCK_BITS <= 64 && UNITS < NIL as usize && BLOCKS < NIL as usize
    );

    /// An empty pool: every unit and block available.
    pub fn new() -> Self {
        let () = Self::VALID;
        Self::empty([SrUnit::EMPTY; UNITS], [BitmapBlock::EMPTY; BLOCKS])
    }
}

impl<U, B, const BLOCK_BITS: u32> SrPoolIn<U, B, BLOCK_BITS>
where
    U: Slots<SrUnit>,
    B: Slots<BitmapBlock>,
{
    /// Bits per bitmap block.
    pub const BLOCK_BITS: u32 = {
        assert!(BLOCK_BITS >= 1 && BLOCK_BITS <= 64);
        BLOCK_BITS
    };

    /// An empty pool over `units` and `blocks` (their contents are overwritten); fewer than
    /// 65535 of each.
    pub fn with_storage(units: U, blocks: B) -> Result<Self, PoolTooBig> {
        if units.slots().len() >= NIL as usize || blocks.slots().len() >= NIL as usize {
            return Err(PoolTooBig);
        }
        Ok(Self::empty(units, blocks))
    }

    /// An empty pool over storage whose size was checked.
    fn empty(units: U, blocks: B) -> Self {
        let mut p = SrPoolIn {
            units,
            blocks,
            free_unit: NIL,
            free_block: NIL,
            used_units: 0,
            used_blocks: 0,
            peak_units: 0,
            peak_blocks: 0,
            exhaustions: 0,
        };
        p.reset();
        p
    }

    /// Returns every element to the pool and clears the statistics.
    pub fn reset(&mut self) {
        let mut next = NIL;
        for (i, u) in self.units.slots_mut().iter_mut().enumerate().rev() {
            *u = SrUnit::EMPTY;
            u.next_free = next;
            next = i as u16;
        }
        self.free_unit = next;
        let mut next = NIL;
        for (i, b) in self.blocks.slots_mut().iter_mut().enumerate().rev() {
            *b = BitmapBlock::EMPTY;
            b.next = next;
            next = i as u16;
        }
        self.free_block = next;
        self.used_units = 0;
        self.used_blocks = 0;
        self.peak_units = 0;
        self.peak_blocks = 0;
        self.exhaustions = 0;
    }

    #[cfg_attr(
        MODULE,
        expect(
            dead_code,
            reason = "invariant checks of the host tests and the simulator"
        )
    )]
    /// Counts the in-use bits of both availability bitmaps (for invariant checks).
    pub fn count_in_use(&self) -> (usize, usize) {
        (
            self.units.slots().iter().filter(|u| u.in_use).count(),
            self.blocks.slots().iter().filter(|b| b.in_use).count(),
        )
    }

    /// Allocates a level-1 unit, O(1). Fails (and counts it) when all are taken.
    pub fn alloc_unit(&mut self) -> Result<UnitId, Exhausted> {
        let i = self.free_unit;
        let Some(u) = self.units.slots_mut().get_mut(usize::from(i)) else {
            self.exhaustions = self.exhaustions.saturating_add(1);
            return Err(Exhausted);
        };
        self.free_unit = u.next_free;
        *u = SrUnit::EMPTY;
        u.in_use = true;
        self.used_units = self.used_units.saturating_add(1);
        self.peak_units = self.peak_units.max(self.used_units);
        Ok(UnitId(i))
    }

    /// Releases a unit and its whole bitmap chain.
    pub fn free_unit(&mut self, id: UnitId) {
        self.free_chain(id);
        let Some(u) = self.units.slots_mut().get_mut(usize::from(id.0)) else {
            return;
        };
        if !u.in_use {
            return;
        }
        *u = SrUnit::EMPTY;
        u.next_free = self.free_unit;
        self.free_unit = id.0;
        self.used_units = self.used_units.saturating_sub(1);
    }

    /// The unit `id` (None for a stale or foreign id).
    pub fn unit(&self, id: UnitId) -> Option<&SrUnit> {
        self.units
            .slots()
            .get(usize::from(id.0))
            .filter(|u| u.in_use)
    }

    /// The unit `id`, mutably.
    pub fn unit_mut(&mut self, id: UnitId) -> Option<&mut SrUnit> {
        self.units
            .slots_mut()
            .get_mut(usize::from(id.0))
            .filter(|u| u.in_use)
    }

    fn alloc_block(&mut self) -> Result<u16, Exhausted> {
        let i = self.free_block;
        let Some(b) = self.blocks.slots_mut().get_mut(usize::from(i)) else {
            self.exhaustions = self.exhaustions.saturating_add(1);
            return Err(Exhausted);
        };
        self.free_block = b.next;
        *b = BitmapBlock::EMPTY;
        b.in_use = true;
        self.used_blocks = self.used_blocks.saturating_add(1);
        self.peak_blocks = self.peak_blocks.max(self.used_blocks);
        Ok(i)
    }

    fn release_block(&mut self, i: u16) -> u16 {
        let Some(b) = self.blocks.slots_mut().get_mut(usize::from(i)) else {
            return NIL;
        };
        if !b.in_use {
            return NIL;
        }
        let next = b.next;
        b.in_use = false;
        b.bits = 0;
        b.next = self.free_block;
        self.free_block = i;
        self.used_blocks = self.used_blocks.saturating_sub(1);
        next
    }

    /// Releases the whole bitmap chain of `id` (the QP leaves the slow path).
    pub fn free_chain(&mut self, id: UnitId) {
        let Some(u) = self.unit_mut(id) else { return };
        let mut b = u.head;
        u.head = NIL;
        u.tail = NIL;
        u.nblocks = 0;
        // Bounded: a chain never holds more blocks than the pool has.
        let mut guard = self.blocks.slots().len();
        while b != NIL && guard > 0 {
            b = self.release_block(b);
            guard -= 1;
        }
    }

    /// Starts an empty bitmap chain for `id` whose bit 0 is `base`.
    pub fn start_chain(&mut self, id: UnitId, base: Psn) {
        self.free_chain(id);
        if let Some(u) = self.unit_mut(id) {
            u.bm_base = base;
        }
    }

    /// Makes the chain of `id` cover `psn`, appending blocks at the tail. On exhaustion
    /// nothing is appended beyond what fitted, and `Exhausted` is returned.
    pub fn cover(&mut self, id: UnitId, psn: Psn) -> Result<(), Exhausted> {
        let Some(u) = self.unit(id) else {
            return Err(Exhausted);
        };
        let off = psn.diff(u.bm_base);
        if off < 0 {
            return Ok(());
        }
        let need = off.unsigned_abs() / BLOCK_BITS + 1;
        if need as usize > self.blocks.slots().len() {
            self.exhaustions = self.exhaustions.saturating_add(1);
            return Err(Exhausted);
        }
        let mut have = u32::from(u.nblocks);
        while have < need {
            let b = self.alloc_block()?;
            let Some(u) = self.unit_mut(id) else {
                return Err(Exhausted);
            };
            let old_tail = u.tail;
            u.tail = b;
            if old_tail == NIL {
                u.head = b;
            }
            u.nblocks = u.nblocks.saturating_add(1);
            if let Some(t) = self.blocks.slots_mut().get_mut(usize::from(old_tail)) {
                t.next = b;
            }
            have += 1;
        }
        Ok(())
    }

    /// Finds the block holding `psn` in the chain of `id` and the bit index in it. The
    /// tail is reached directly (out-of-order arrivals), anything else by walking from the
    /// head (retransmissions touch the head block).
    fn locate(&self, id: UnitId, psn: Psn) -> Option<(u16, u32)> {
        let u = self.unit(id)?;
        let off = psn.diff(u.bm_base);
        if off < 0 {
            return None;
        }
        let off = off.unsigned_abs();
        let idx = off / BLOCK_BITS;
        let bit = off % BLOCK_BITS;
        if idx >= u32::from(u.nblocks) {
            return None;
        }
        if idx + 1 == u32::from(u.nblocks) {
            return Some((u.tail, bit));
        }
        let mut b = u.head;
        let mut k = 0;
        while k < idx {
            b = self.blocks.slots().get(usize::from(b))?.next;
            k += 1;
        }
        Some((b, bit))
    }

    /// Sets the bit of `psn` (no-op when the chain does not cover it).
    pub fn set(&mut self, id: UnitId, psn: Psn) {
        if let Some((b, bit)) = self.locate(id, psn) {
            if let Some(blk) = self.blocks.slots_mut().get_mut(usize::from(b)) {
                blk.bits |= 1u64 << bit;
            }
        }
    }

    /// The bit of `psn` (false when not covered).
    pub fn get(&self, id: UnitId, psn: Psn) -> bool {
        match self.locate(id, psn) {
            Some((b, bit)) => self
                .blocks
                .slots()
                .get(usize::from(b))
                .is_some_and(|blk| blk.bits & (1u64 << bit) != 0),
            None => false,
        }
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// True when the chain of `id` covers `psn`.
    pub fn covers(&self, id: UnitId, psn: Psn) -> bool {
        self.locate(id, psn).is_some()
    }

    /// Releases every head block that lies wholly before `psn` (RCV-NXT / UNACK moved).
    pub fn release_before(&mut self, id: UnitId, psn: Psn) {
        let mut guard = self.blocks.slots().len();
        while guard > 0 {
            guard -= 1;
            let Some(u) = self.unit(id) else { return };
            if u.head == NIL {
                return;
            }
            let end = u.bm_base.add(BLOCK_BITS);
            if end.after(psn) {
                return;
            }
            let head = u.head;
            let next = self.release_block(head);
            let Some(u) = self.unit_mut(id) else { return };
            u.head = next;
            u.nblocks = u.nblocks.saturating_sub(1);
            u.bm_base = end;
            if next == NIL {
                u.tail = NIL;
            }
        }
    }

    /// Calls `f(first, count)` for every run of clear bits in `[from, from + len)`; PSNs
    /// the chain does not cover count as clear. Walks the chain once.
    pub fn for_each_zero(&self, id: UnitId, from: Psn, len: u32, f: &mut dyn FnMut(Psn, u32)) {
        let mut run_start = from;
        let mut run_len = 0u32;
        let mut p = from;
        let mut cur = self.locate(id, from);
        let mut i = 0;
        while i < len {
            let set = match cur {
                Some((b, bit)) => match self.blocks.slots().get(usize::from(b)) {
                    Some(blk) => {
                        let v = blk.bits & (1u64 << bit) != 0;
                        cur = if bit + 1 < BLOCK_BITS {
                            Some((b, bit + 1))
                        } else if blk.next == NIL {
                            None
                        } else {
                            Some((blk.next, 0))
                        };
                        v
                    }
                    None => false,
                },
                None => false,
            };
            if set {
                if run_len > 0 {
                    f(run_start, run_len);
                    run_len = 0;
                }
            } else {
                if run_len == 0 {
                    run_start = p;
                }
                run_len += 1;
            }
            p = p.next();
            i += 1;
        }
        if run_len > 0 {
            f(run_start, run_len);
        }
    }

    /// Starting at `from`, the first PSN whose bit is clear, looking at most `limit` PSNs
    /// ahead (returns `from + limit` if all are set). Walks the chain once.
    pub fn first_zero(&self, id: UnitId, from: Psn, limit: u32) -> Psn {
        let Some(u) = self.unit(id) else { return from };
        let mut p = from;
        let mut left = limit;
        // Skip to the block holding `from` once, then walk forward block by block.
        let Some((mut b, mut bit)) = self.locate(id, from) else {
            return from;
        };
        let _ = u;
        while left > 0 {
            let Some(blk) = self.blocks.slots().get(usize::from(b)) else {
                return p;
            };
            while bit < BLOCK_BITS && left > 0 {
                if blk.bits & (1u64 << bit) == 0 {
                    return p;
                }
                p = p.next();
                bit += 1;
                left -= 1;
            }
            b = blk.next;
            bit = 0;
            if b == NIL {
                return p;
            }
        }
        p
    }
}

#[cfg_attr(
    MODULE,
    expect(
        dead_code,
        reason = "statistics for the host tests and the simulator; the module reads PoolUsage"
    )
)]
impl<U: Slots<SrUnit>, B: Slots<BitmapBlock>, const BLOCK_BITS: u32> SrPoolIn<U, B, BLOCK_BITS> {
    /// Units in use now.
    pub const fn used_units(&self) -> u16 {
        self.used_units
    }
    /// Blocks in use now.
    pub const fn used_blocks(&self) -> u16 {
        self.used_blocks
    }
    /// Most units ever in use at once.
    pub const fn peak_units(&self) -> u16 {
        self.peak_units
    }
    /// Most blocks ever in use at once.
    pub const fn peak_blocks(&self) -> u16 {
        self.peak_blocks
    }
    /// Allocation requests that failed.
    pub const fn exhaustions(&self) -> u64 {
        self.exhaustions
    }

    /// Device memory of the pool in the paper's accounting, in bytes: units, block bits,
    /// one next pointer per block and the two availability bitmaps.
    pub fn footprint_bytes(&self) -> u32 {
        let (units, blocks) = (
            self.units.slots().len() as u32,
            self.blocks.slots().len() as u32,
        );
        let ptr = if blocks <= 255 { 1 } else { 2 };
        units * UNIT_BYTES
            + blocks * BLOCK_BITS.div_ceil(8)
            + blocks * ptr
            + units.div_ceil(8)
            + blocks.div_ceil(8)
    }

    /// Units in all.
    pub fn capacity_units(&self) -> usize {
        self.units.slots().len()
    }

    /// Blocks in all.
    pub fn capacity_blocks(&self) -> usize {
        self.blocks.slots().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_exhaust_and_recycle() {
        let mut p: SrPool<2, 4, 16> = SrPool::new();
        let a = p.alloc_unit().unwrap();
        let b = p.alloc_unit().unwrap();
        assert_eq!(p.alloc_unit(), Err(Exhausted));
        p.free_unit(a);
        let c = p.alloc_unit().unwrap();
        assert_eq!(c, a);
        p.free_unit(b);
        p.free_unit(c);
        assert_eq!(p.used_units(), 0);
        assert_eq!(p.peak_units(), 2);
        assert_eq!(p.count_in_use(), (0, 0));
    }

    #[test]
    fn chain_grows_at_tail_and_releases_from_head() {
        let mut p: SrPool<2, 4, 16> = SrPool::new();
        let u = p.alloc_unit().unwrap();
        p.start_chain(u, Psn::new(100));
        p.cover(u, Psn::new(140)).unwrap();
        assert_eq!(p.used_blocks(), 3);
        p.set(u, Psn::new(100));
        p.set(u, Psn::new(101));
        p.set(u, Psn::new(120));
        p.set(u, Psn::new(140));
        assert!(p.get(u, Psn::new(120)));
        assert!(!p.get(u, Psn::new(121)));
        assert_eq!(p.first_zero(u, Psn::new(100), 100), Psn::new(102));
        // 100 + 4 * 16 = 164 needs a fifth block: exhausted.
        assert_eq!(p.cover(u, Psn::new(164)), Err(Exhausted));
        p.release_before(u, Psn::new(132));
        assert_eq!(p.used_blocks(), 1);
        assert!(p.get(u, Psn::new(140)));
        assert!(!p.covers(u, Psn::new(120)));
        p.free_unit(u);
        assert_eq!(p.used_blocks(), 0);
        assert_eq!(p.count_in_use(), (0, 0));
    }

    #[test]
    fn default_footprint_is_under_a_kilobyte() {
        // 20 * 38 + 70 * 2 + 70 + 3 + 9
        assert_eq!(SrPool::<20, 70, 16>::new().footprint_bytes(), 982);
    }
}
