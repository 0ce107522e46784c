// SPDX-License-Identifier: GPL-2.0
//! The producer side: kernel state of a `QUEUE_TYPE_TO_CLIENT` queue (CQ), where the kernel
//! produces and user space consumes, validating each consumer index it loads.

use super::ring::Ring;
use super::QueueError;

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

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
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
