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
//!
//! # The parts
//!
//! - `ring.rs`: [`Ring`], the geometry of one ring and its index arithmetic, including the
//!   check of an index read from the shared header.
//! - `geometry.rs`: sizing SQ, RQ, SRQ and CQ rings as rdma_rxe does.
//! - `from_client.rs`: [`FromClientQueue`], the kernel as consumer of a user-produced queue.
//! - `to_client.rs`: [`ToClientQueue`], the kernel as producer of a user-consumed queue.
//! - `fifo.rs`: [`Fifo`], the queue of a kernel consumer, which has no shared ring.
//!
//! This file holds [`QueueError`], why an index from user-shared memory was refused.

mod fifo;
mod from_client;
mod geometry;
mod ring;
mod to_client;

pub use self::fifo::Fifo;
pub use self::from_client::FromClientQueue;
pub use self::geometry::{
    cq_geometry, rq_geometry, sq_geometry, srq_geometry, QueueGeometry, RqGeometry, SqGeometry,
    DEFAULT_CACHE_LINE_SIZE,
};
pub use self::ring::Ring;
pub use self::to_client::ToClientQueue;

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
