// SPDX-License-Identifier: GPL-2.0
//! The shared queues (rings) of the rdma_rxe user ABI: index arithmetic, validation of the
//! indices user space writes, slot offsets, and slot sizing as rdma_rxe does it.
//!
//! # The ring (`struct rxe_queue_buf`, `drivers/infiniband/sw/rxe/rxe_queue.[ch]`)
//!
//! A queue is one mmapped buffer: a 384-byte header (`log2_elem_size`, `index_mask`, then
//! `producer_index` and `consumer_index` each in its own 128-byte block), then `2^n` slots of
//! `2^log2_elem_size` bytes. Indices are stored already masked (`0..=index_mask`), advance by
//! `(i + 1) & index_mask`, and one slot always stays empty: the queue is empty when
//! `prod == cons` and full when `prod + 1 == cons` (mod `2^n`), so it holds `index_mask`
//! entries at most.
//!
//! Each index has one owner. For `QUEUE_TYPE_FROM_CLIENT` queues (SQ, RQ, SRQ) user space owns
//! `producer_index` and the kernel owns `consumer_index`; for `QUEUE_TYPE_TO_CLIENT` (CQ) the
//! kernel owns `producer_index` and user space owns `consumer_index`. The kernel keeps a private
//! copy of the index it owns (never reading it back from user memory) and publishes it with a
//! release store after the slot is written or consumed; it reads the other side's index with
//! an acquire load. [`FromClientQueue`] and [`ToClientQueue`] are that kernel-side state; the
//! acquire/release accesses themselves belong to the caller (they touch the mapping).
//!
//! # What user space depends on
//!
//! rdma-core's provider (`providers/rxe/rxe_queue.h`, `rxe.c`) reads `log2_elem_size` and
//! `index_mask` from the header and the mapping size from `mminfo.size`, so the exact slot size
//! is not an ABI promise, but: slot 0 starts at offset 384; the slot count is a power of two
//! with one slot left empty; SQ slots hold a `struct rxe_send_wqe` plus `max_send_sge` SGEs or
//! `max_inline_data` inline bytes (the values returned from create QP, which the provider uses
//! for its own checks); RQ/SRQ slots hold a `struct rxe_recv_wqe` plus `max_recv_sge` SGEs;
//! CQ slots hold at least a `struct ib_uverbs_wc`. The sizing functions here reproduce
//! rdma_rxe's `rxe_queue_init`, `rxe_init_sq`, `rxe_init_rq`, `rxe_srq_from_init` and
//! `rxe_cq_from_init` exactly.
//!
//! # How user space drives the rings
//!
//! - Send: the provider writes the WQE at its producer slot, advances `producer_index` with
//!   a release store, then rings the doorbell: a `IB_USER_VERBS_CMD_POST_SEND` write with
//!   `wr_count == 0`, which reaches the driver's `post_send` with an empty WR list. The kernel
//!   then loads `producer_index` (acquire), calls [`FromClientQueue::observe_producer`], copies
//!   each new slot ([`Ring::slot_range`]; at most the unpadded `elem_size` bytes are needed)
//!   and parses the copy with [`super::send_wqe::SendWqe::parse`].
//! - Receive (RQ, SRQ): the provider writes and advances the producer; there is no doorbell.
//!   The kernel observes the producer when a request packet needs a receive WQE.
//! - CQ: the kernel writes a `struct ib_uverbs_wc` at [`ToClientQueue::tail_offset`]
//!   ([`super::cqe::emit_uverbs_wc`]), then publishes [`ToClientQueue::advance_producer`]'s
//!   value with a release store. The provider polls: acquire-loads `producer_index`, copies
//!   the slot at its consumer index, advances `consumer_index`.

use super::field;
use super::layout::{
    QUEUE_DATA_OFF, QUEUE_HEADER_SIZE, QUEUE_INDEX_MASK_OFF, QUEUE_LOG2_ELEM_SIZE_OFF,
    RECV_WQE_SIZE, RXE_CQE_SIZE, SEND_WQE_SIZE, SGE_SIZE,
};
use super::limits::{
    RXE_MAX_INLINE_DATA, RXE_MAX_SGE, RXE_MAX_SRQ_SGE, RXE_MIN_SRQ_SGE, RXE_MIN_SRQ_WR,
};

/// x86_64's usual `cache_line_size()`; rdma_rxe pads every slot to at least one cache line.
pub const DEFAULT_CACHE_LINE_SIZE: u32 = 64;

/// Why an index read from the shared header, or a ring geometry, was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// An index had bits outside `index_mask`: user space never stores such a value.
    IndexOutOfRange,
    /// User space moved its producer index backwards, or past the kernel's consumer index
    /// (it produced more entries than fit).
    ProducerOverrun,
    /// User space moved its consumer index backwards, or past the kernel's producer index
    /// (it consumed entries that were never produced).
    ConsumerOverrun,
    /// The shared copy of a kernel-owned index differs from the kernel's private copy:
    /// user space wrote an index it does not own.
    OwnedIndexChanged,
}

/// The geometry of one ring: `2^n` slots of `2^log2_elem_size` bytes after the header.
///
/// Construction guarantees the whole buffer size fits in a `u32` (`mminfo.size`), so every
/// slot offset computed from a masked index lies inside the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    log2_elem_size: u32,
    index_mask: u32,
}

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

/// A queue sized as `rxe_queue_init(rxe, &num_elem, elem_size, type)` sizes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueGeometry {
    /// The ring: `roundup_pow_of_two(num_elem + 1)` slots of
    /// `roundup_pow_of_two(max(elem_size, cache line))` bytes.
    pub ring: Ring,
    /// Usable entries, `num_slots - 1`: what rdma_rxe writes back as the actual queue depth.
    pub num_elem: u32,
    /// The unpadded element size asked for (rdma_rxe's `q->elem_size`, copied on resize).
    pub elem_size: u32,
}

impl QueueGeometry {
    /// Sizes a queue for `num_elem` entries of `elem_size` bytes, with slots padded to at
    /// least `cache_line_size` (the kernel's `cache_line_size()`, a power of two).
    /// `None` when the sizes overflow or the buffer would not fit in a `u32`.
    pub fn new(num_elem: u32, elem_size: u32, cache_line_size: u32) -> Option<QueueGeometry> {
        let slot = elem_size.max(cache_line_size).checked_next_power_of_two()?;
        let num_slots = num_elem.checked_add(1)?.checked_next_power_of_two()?;
        let ring = Ring::new(num_slots.trailing_zeros(), slot.trailing_zeros())?;
        Some(QueueGeometry {
            ring,
            num_elem: ring.capacity(),
            elem_size,
        })
    }
}

/// Send queue sizing as `rxe_init_sq`, with the capabilities written back to user space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqGeometry {
    /// The queue.
    pub queue: QueueGeometry,
    /// Actual `max_send_wr` (`num_slots - 1`).
    pub max_wr: u32,
    /// Actual `max_send_sge`: `max(max_send_sge * 16, max_inline_data) / 16`.
    pub max_sge: u32,
    /// Actual `max_inline_data`: `max(max_send_sge * 16, max_inline_data)`.
    pub max_inline: u32,
}

/// Sizes a send queue for `max_send_wr` WRs with `max_send_sge` SGEs or `max_inline_data`
/// inline bytes, as `rxe_init_sq` does: slot = `sizeof(struct rxe_send_wqe)` +
/// `max(max_send_sge * sizeof(struct ib_sge), max_inline_data)`. `None` when a request exceeds
/// `RXE_MAX_SGE` / `RXE_MAX_INLINE_DATA` (rdma_rxe's `rxe_qp_chk_cap` refuses those) or the
/// queue does not fit.
pub fn sq_geometry(
    max_send_wr: u32,
    max_send_sge: u32,
    max_inline_data: u32,
    cache_line_size: u32,
) -> Option<SqGeometry> {
    if max_send_sge > RXE_MAX_SGE || max_inline_data > RXE_MAX_INLINE_DATA {
        return None;
    }
    let sge_size = u32::try_from(SGE_SIZE).ok()?;
    let payload = max_send_sge.checked_mul(sge_size)?.max(max_inline_data);
    let elem = payload.checked_add(u32::try_from(SEND_WQE_SIZE).ok()?)?;
    let queue = QueueGeometry::new(max_send_wr, elem, cache_line_size)?;
    Some(SqGeometry {
        queue,
        max_wr: queue.num_elem,
        max_sge: payload / sge_size,
        max_inline: payload,
    })
}

/// Receive queue (or SRQ) sizing, with the capabilities written back to user space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RqGeometry {
    /// The queue.
    pub queue: QueueGeometry,
    /// Actual `max_recv_wr` / SRQ `max_wr` (`num_slots - 1`).
    pub max_wr: u32,
    /// Actual `max_recv_sge` / SRQ `max_sge`.
    pub max_sge: u32,
}

fn recv_geometry(max_wr: u32, max_sge: u32, cache_line_size: u32) -> Option<RqGeometry> {
    let sge_size = u32::try_from(SGE_SIZE).ok()?;
    let elem = max_sge
        .checked_mul(sge_size)?
        .checked_add(u32::try_from(RECV_WQE_SIZE).ok()?)?;
    let queue = QueueGeometry::new(max_wr, elem, cache_line_size)?;
    Some(RqGeometry {
        queue,
        max_wr: queue.num_elem,
        max_sge,
    })
}

/// Sizes a QP's receive queue as `rxe_init_rq`: slot = `sizeof(struct rxe_recv_wqe)` +
/// `max_recv_sge * sizeof(struct ib_sge)`. `None` above `RXE_MAX_SGE` or when too large.
pub fn rq_geometry(
    max_recv_wr: u32,
    max_recv_sge: u32,
    cache_line_size: u32,
) -> Option<RqGeometry> {
    if max_recv_sge > RXE_MAX_SGE {
        return None;
    }
    recv_geometry(max_recv_wr, max_recv_sge, cache_line_size)
}

/// Sizes an SRQ as `rxe_srq_chk_attr` + `rxe_srq_from_init`: `max_wr` must be non-zero and is
/// raised to `RXE_MIN_SRQ_WR`, `max_sge` is raised to `RXE_MIN_SRQ_SGE` and must not exceed
/// `RXE_MAX_SRQ_SGE`. (The device's `max_srq_wr` bound is the caller's to check.)
pub fn srq_geometry(max_wr: u32, max_sge: u32, cache_line_size: u32) -> Option<RqGeometry> {
    if max_wr == 0 || max_sge > RXE_MAX_SRQ_SGE {
        return None;
    }
    recv_geometry(
        max_wr.max(RXE_MIN_SRQ_WR),
        max_sge.max(RXE_MIN_SRQ_SGE),
        cache_line_size,
    )
}

/// Sizes a completion queue for `cqe` entries as `rxe_cq_from_init`: slot =
/// `sizeof(struct rxe_cqe)` (72 bytes, padded to 128). `None` for `cqe == 0` (rdma_rxe's
/// `rxe_cq_chk_attr` refuses it; the device's `max_cqe` bound is the caller's to check).
/// The `num_elem` of the result is the `cqe` value reported back to user space.
pub fn cq_geometry(cqe: u32, cache_line_size: u32) -> Option<QueueGeometry> {
    if cqe == 0 {
        return None;
    }
    QueueGeometry::new(cqe, u32::try_from(RXE_CQE_SIZE).ok()?, cache_line_size)
}

/// Kernel-side state of a `QUEUE_TYPE_FROM_CLIENT` queue (SQ, RQ, SRQ): user space produces,
/// the kernel consumes.
///
/// The kernel owns the consumer index (kept here, published to `consumer_index` with a
/// release store after [`advance_consumer`](Self::advance_consumer)); user space owns the
/// producer index, which the kernel loads with acquire and hands to
/// [`observe_producer`](Self::observe_producer) before reading any slot it exposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FromClientQueue {
    ring: Ring,
    consumer: u32,
    producer: u32,
}

impl FromClientQueue {
    /// A new, empty queue (both indices 0, as in a fresh `vmalloc_user` buffer).
    pub const fn new(ring: Ring) -> Self {
        FromClientQueue {
            ring,
            consumer: 0,
            producer: 0,
        }
    }

    /// A queue resumed at given indices, e.g. after a resize, where rdma_rxe copies the
    /// queued entries to slots `0..count` of the new ring (consumer 0, producer `count`).
    /// `None` if an index exceeds `index_mask`.
    pub const fn with_indices(ring: Ring, consumer: u32, producer: u32) -> Option<Self> {
        if consumer & !ring.index_mask != 0 || producer & !ring.index_mask != 0 {
            return None;
        }
        Some(FromClientQueue {
            ring,
            consumer,
            producer,
        })
    }

    /// The ring geometry.
    pub const fn ring(&self) -> Ring {
        self.ring
    }

    /// The kernel's consumer index: the value to publish to `consumer_index`.
    pub const fn consumer_index(&self) -> u32 {
        self.consumer
    }

    /// The last producer index accepted by [`observe_producer`](Self::observe_producer).
    pub const fn producer_index(&self) -> u32 {
        self.producer
    }

    /// Validates the producer index just loaded (acquire) from the shared header and, when it
    /// is sane, accepts it. Returns the number of queued entries.
    ///
    /// Refused (state unchanged): an unmasked value ([`QueueError::IndexOutOfRange`]), or a
    /// producer that moved backwards or wrapped past the consumer, i.e. fewer entries queued
    /// than before ([`QueueError::ProducerOverrun`]). A producer that laps the consumer by a
    /// whole ring between two observations cannot be told from a valid one; it only
    /// overwrites slots of the user's own queue.
    pub fn observe_producer(&mut self, raw: u32) -> Result<u32, QueueError> {
        let raw = self.ring.check_index(raw)?;
        let old = self.ring.count(self.producer, self.consumer);
        let new = self.ring.count(raw, self.consumer);
        if new < old {
            return Err(QueueError::ProducerOverrun);
        }
        self.producer = raw;
        Ok(new)
    }

    /// Entries queued (as of the last accepted producer index).
    pub const fn count(&self) -> u32 {
        self.ring.count(self.producer, self.consumer)
    }

    /// True when no entry is queued.
    pub const fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// The slot index of the oldest queued entry (`queue_head`), if any.
    pub const fn head(&self) -> Option<u32> {
        if self.is_empty() {
            None
        } else {
            Some(self.consumer)
        }
    }

    /// The slot index of the `n`-th queued entry (0 = oldest), if at least `n + 1` are queued.
    /// (rdma_rxe's requester walks ahead of the completer's consumer index this way.)
    pub const fn nth(&self, n: u32) -> Option<u32> {
        if n < self.count() {
            Some(self.ring.wrap(self.consumer.wrapping_add(n)))
        } else {
            None
        }
    }

    /// True when slot `index` holds a queued entry (lies in `[consumer, producer)`).
    pub const fn contains(&self, index: u32) -> bool {
        index & !self.ring.index_mask == 0 && self.ring.count(index, self.consumer) < self.count()
    }

    /// Byte offset in the mapping of the oldest queued entry, if any.
    pub fn head_offset(&self) -> Option<usize> {
        self.ring.slot_offset(self.head()?)
    }

    /// Consumes the oldest entry (`queue_advance_consumer`). Returns the new consumer index to
    /// publish with a release store, or `None` (nothing changed) when the queue is empty.
    pub fn advance_consumer(&mut self) -> Option<u32> {
        if self.is_empty() {
            return None;
        }
        self.consumer = self.ring.next(self.consumer);
        Some(self.consumer)
    }

    /// Consumes every queued entry at once (IBTA 10.3.1: a QP entering Reset empties its
    /// work queues, with no completions). Returns the consumer index to publish.
    pub fn discard_all(&mut self) -> u32 {
        self.consumer = self.producer;
        self.consumer
    }

    /// Checks the shared `consumer_index` against the kernel's copy: a difference means user
    /// space wrote an index it does not own ([`QueueError::OwnedIndexChanged`]). The kernel
    /// never uses the shared value either way; it may re-publish its own.
    pub const fn check_owned_index(&self, shared_consumer: u32) -> Result<(), QueueError> {
        if shared_consumer == self.consumer {
            Ok(())
        } else {
            Err(QueueError::OwnedIndexChanged)
        }
    }
}

/// Kernel-side state of a `QUEUE_TYPE_TO_CLIENT` queue (CQ): the kernel produces, user space
/// consumes.
///
/// The kernel owns the producer index (kept here, published to `producer_index` with a
/// release store after the slot is written and [`advance_producer`](Self::advance_producer)
/// is called); user space owns the consumer index, which the kernel loads with acquire and
/// hands to [`observe_consumer`](Self::observe_consumer) before testing for a full queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToClientQueue {
    ring: Ring,
    producer: u32,
    consumer: u32,
}

impl ToClientQueue {
    /// A new, empty queue.
    pub const fn new(ring: Ring) -> Self {
        ToClientQueue {
            ring,
            producer: 0,
            consumer: 0,
        }
    }

    /// A queue resumed at given indices (e.g. after a CQ resize). `None` if an index exceeds
    /// `index_mask`.
    pub const fn with_indices(ring: Ring, producer: u32, consumer: u32) -> Option<Self> {
        if consumer & !ring.index_mask != 0 || producer & !ring.index_mask != 0 {
            return None;
        }
        Some(ToClientQueue {
            ring,
            producer,
            consumer,
        })
    }

    /// The ring geometry.
    pub const fn ring(&self) -> Ring {
        self.ring
    }

    /// The kernel's producer index: the value to publish to `producer_index`.
    pub const fn producer_index(&self) -> u32 {
        self.producer
    }

    /// The last consumer index accepted by [`observe_consumer`](Self::observe_consumer).
    pub const fn consumer_index(&self) -> u32 {
        self.consumer
    }

    /// Validates the consumer index just loaded (acquire) from the shared header and, when it
    /// is sane, accepts it. Returns the number of entries still unconsumed.
    ///
    /// Refused (state unchanged): an unmasked value ([`QueueError::IndexOutOfRange`]), or a
    /// consumer that moved backwards or past the producer, i.e. more entries outstanding than
    /// before ([`QueueError::ConsumerOverrun`]).
    pub fn observe_consumer(&mut self, raw: u32) -> Result<u32, QueueError> {
        let raw = self.ring.check_index(raw)?;
        let old = self.ring.count(self.producer, self.consumer);
        let new = self.ring.count(self.producer, raw);
        if new > old {
            return Err(QueueError::ConsumerOverrun);
        }
        self.consumer = raw;
        Ok(new)
    }

    /// Entries not yet consumed (as of the last accepted consumer index).
    pub const fn count(&self) -> u32 {
        self.ring.count(self.producer, self.consumer)
    }

    /// True when another entry would not fit (`queue_full`): a CQ overrun.
    pub const fn is_full(&self) -> bool {
        self.ring.is_full(self.producer, self.consumer)
    }

    /// The slot index the next entry goes to, or `None` when the queue is full.
    pub const fn tail(&self) -> Option<u32> {
        if self.is_full() {
            None
        } else {
            Some(self.producer)
        }
    }

    /// Byte offset in the mapping of the slot the next entry goes to, unless full.
    pub fn tail_offset(&self) -> Option<usize> {
        self.ring.slot_offset(self.tail()?)
    }

    /// Publishes the entry written at [`tail`](Self::tail) (`queue_advance_producer`).
    /// Returns the new producer index to store with release, or `None` (nothing changed) when
    /// the queue is full.
    pub fn advance_producer(&mut self) -> Option<u32> {
        if self.is_full() {
            return None;
        }
        self.producer = self.ring.next(self.producer);
        Some(self.producer)
    }

    /// Checks the shared `producer_index` against the kernel's copy: a difference means user
    /// space wrote an index it does not own ([`QueueError::OwnedIndexChanged`]).
    pub const fn check_owned_index(&self, shared_producer: u32) -> Result<(), QueueError> {
        if shared_producer == self.producer {
            Ok(())
        } else {
            Err(QueueError::OwnedIndexChanged)
        }
    }
}

/// A bounded FIFO over fixed storage (`S` is the slots: an array, or a kernel `KVVec`
/// allocated once): where a kernel consumer's work requests and completions wait. Kernel
/// verbs have no shared ring; the slots hold validated values, not bytes.
pub struct Fifo<T: Copy, S: core::ops::DerefMut<Target = [T]>> {
    slots: S,
    head: usize,
    len: usize,
}

impl<T: Copy, S: core::ops::DerefMut<Target = [T]>> Fifo<T, S> {
    /// An empty FIFO holding at most `slots.len()` values.
    pub fn new(slots: S) -> Self {
        Fifo {
            slots,
            head: 0,
            len: 0,
        }
    }

    /// Capacity.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Values queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when no value fits.
    pub fn is_full(&self) -> bool {
        self.len == self.slots.len()
    }

    /// Appends `v`; gives it back when full.
    pub fn push(&mut self, v: T) -> Result<(), T> {
        let cap = self.slots.len();
        if self.len == cap {
            return Err(v);
        }
        let at = (self.head + self.len) % cap;
        match self.slots.get_mut(at) {
            Some(slot) => {
                *slot = v;
                self.len += 1;
                Ok(())
            }
            None => Err(v),
        }
    }

    /// The oldest value, left in place.
    pub fn peek(&self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.slots.get(self.head).copied()
    }

    /// Takes the oldest value.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = *self.slots.get(self.head)?;
        self.head = (self.head + 1) % self.slots.len();
        self.len -= 1;
        Some(v)
    }

    /// Moves every queued value, oldest first, into `other` (which must have room: values
    /// that do not fit stay here). Returns how many moved.
    pub fn drain_into<S2: core::ops::DerefMut<Target = [T]>>(
        &mut self,
        other: &mut Fifo<T, S2>,
    ) -> usize {
        let mut n = 0;
        while !other.is_full() {
            match self.pop() {
                Some(v) => {
                    let _ = other.push(v);
                    n += 1;
                }
                None => break,
            }
        }
        n
    }
}
