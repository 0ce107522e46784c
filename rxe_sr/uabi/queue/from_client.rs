// SPDX-License-Identifier: GPL-2.0
//! The consumer side: kernel state of a `QUEUE_TYPE_FROM_CLIENT` queue (SQ, RQ, SRQ), where
//! user space produces and the kernel consumes, validating each producer index it loads.

use super::ring::Ring;
use super::QueueError;

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

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
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
