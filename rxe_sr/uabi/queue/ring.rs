// SPDX-License-Identifier: GPL-2.0
//! The geometry of one shared ring (`struct rxe_queue_buf`): slot count and size, the
//! index arithmetic of `rxe_queue.h` (`queue_next_index`, `queue_count`, `queue_full`), the
//! check of an index read from user-writable memory, and slot offsets in the mapping.

use crate::uabi::field;
use crate::uabi::layout::{
    QUEUE_DATA_OFF, QUEUE_HEADER_SIZE, QUEUE_INDEX_MASK_OFF, QUEUE_LOG2_ELEM_SIZE_OFF,
};

use super::QueueError;

/// The geometry of one ring: `2^n` slots of `2^log2_elem_size` bytes after the header.
///
/// Construction guarantees the whole buffer size fits in a `u32` (`mminfo.size`), so every
/// slot offset computed from a masked index lies inside the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    log2_elem_size: u32,
    pub(super) index_mask: u32,
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl Ring {
    /// A ring of `2^log2_num_slots` slots of `2^log2_elem_size` bytes, or `None` when the
    /// buffer (header included) would not fit in a `u32`.
    pub fn new(log2_num_slots: u32, log2_elem_size: u32) -> Option<Ring> {
        let num_slots = 1u32.checked_shl(log2_num_slots)?;
        let elem_size = 1u32.checked_shl(log2_elem_size)?;
        let data = u64::from(num_slots).checked_mul(u64::from(elem_size))?;
        let header = u64::try_from(QUEUE_HEADER_SIZE).ok()?;
        let total = data.checked_add(header)?;
        u32::try_from(total).ok()?;
        Some(Ring {
            log2_elem_size,
            index_mask: num_slots - 1,
        })
    }

    /// The ring described by a queue header's `log2_elem_size` and `index_mask`, or `None` if
    /// `index_mask + 1` is not a power of two or the buffer would not fit in a `u32`.
    pub fn from_header_fields(log2_elem_size: u32, index_mask: u32) -> Option<Ring> {
        let num_slots = index_mask.checked_add(1)?;
        if !num_slots.is_power_of_two() {
            return None;
        }
        Ring::new(num_slots.trailing_zeros(), log2_elem_size)
    }

    /// log2 of the slot size (the header's `log2_elem_size`).
    pub const fn log2_elem_size(self) -> u32 {
        self.log2_elem_size
    }

    /// Number of slots - 1 (the header's `index_mask`).
    pub const fn index_mask(self) -> u32 {
        self.index_mask
    }

    /// Number of slots (a power of two, at most `2^31`).
    pub const fn num_slots(self) -> u32 {
        // index_mask < 2^31 by construction (the buffer fits in a u32): never wraps.
        self.index_mask.wrapping_add(1)
    }

    /// Most entries the ring holds at once: one slot always stays empty.
    pub const fn capacity(self) -> u32 {
        self.index_mask
    }

    /// Slot size in bytes.
    pub const fn elem_size(self) -> u32 {
        // log2_elem_size < 32 by construction.
        1u32.wrapping_shl(self.log2_elem_size)
    }

    /// Size of the whole mapping: header plus slots (what `mminfo.size` reports).
    pub fn buf_size(self) -> u32 {
        // Cannot overflow: checked in `new`; saturate rather than panic regardless.
        let header = u32::try_from(QUEUE_HEADER_SIZE).unwrap_or(u32::MAX);
        self.num_slots()
            .saturating_mul(self.elem_size())
            .saturating_add(header)
    }

    /// `index` reduced to a slot number.
    pub const fn wrap(self, index: u32) -> u32 {
        index & self.index_mask
    }

    /// The index after `index` (`queue_next_index`).
    pub const fn next(self, index: u32) -> u32 {
        index.wrapping_add(1) & self.index_mask
    }

    /// Entries between `cons` and `prod` (`queue_count`): always `<= capacity()`.
    pub const fn count(self, prod: u32, cons: u32) -> u32 {
        prod.wrapping_sub(cons) & self.index_mask
    }

    /// Free slots a producer may still fill: `capacity() - count(prod, cons)`.
    pub const fn free(self, prod: u32, cons: u32) -> u32 {
        self.index_mask - self.count(prod, cons)
    }

    /// True when no entry is queued (`queue_empty`).
    pub const fn is_empty(self, prod: u32, cons: u32) -> bool {
        self.count(prod, cons) == 0
    }

    /// True when one more entry would leave no empty slot (`queue_full`).
    pub const fn is_full(self, prod: u32, cons: u32) -> bool {
        prod.wrapping_add(1).wrapping_sub(cons) & self.index_mask == 0
    }

    /// Validates an index read from user-writable memory: it must already be masked, as
    /// every rdma-core store is. Returns the index, or [`QueueError::IndexOutOfRange`].
    pub const fn check_index(self, raw: u32) -> Result<u32, QueueError> {
        if raw & !self.index_mask == 0 {
            Ok(raw)
        } else {
            Err(QueueError::IndexOutOfRange)
        }
    }

    /// Byte offset of slot `index & index_mask` from the start of `data[]`
    /// (`(index & index_mask) << log2_elem_size`).
    pub fn data_offset(self, index: u32) -> Option<usize> {
        let slot = field::usize_from(self.wrap(index))?;
        let elem = field::usize_from(self.elem_size())?;
        slot.checked_mul(elem)
    }

    /// Byte offset of slot `index & index_mask` from the start of the mapping (header
    /// included): `384 + ((index & index_mask) << log2_elem_size)`. Always inside
    /// `buf_size()`; `None` only if the platform's `usize` cannot hold it.
    pub fn slot_offset(self, index: u32) -> Option<usize> {
        self.data_offset(index)?.checked_add(QUEUE_DATA_OFF)
    }

    /// Byte range of slot `index & index_mask` within the mapping.
    pub fn slot_range(self, index: u32) -> Option<core::ops::Range<usize>> {
        let start = self.slot_offset(index)?;
        let end = start.checked_add(field::usize_from(self.elem_size())?)?;
        Some(start..end)
    }

    /// Writes `log2_elem_size` and `index_mask` at the start of a zeroed queue buffer, as
    /// `rxe_queue_init` does (the indices stay 0). `None` if `out` is shorter than the header.
    pub fn write_header(self, out: &mut [u8]) -> Option<()> {
        if out.len() < QUEUE_HEADER_SIZE {
            return None;
        }
        field::put(
            out,
            QUEUE_LOG2_ELEM_SIZE_OFF,
            &self.log2_elem_size.to_le_bytes(),
        )?;
        field::put(out, QUEUE_INDEX_MASK_OFF, &self.index_mask.to_le_bytes())
    }
}
