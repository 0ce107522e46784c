// SPDX-License-Identifier: GPL-2.0
//! Receive queues as QPs and SRQs share them: a user queue is a ring the process posts to
//! ([`take_from_ring`] takes the next WQE, validated); a kernel consumer's receives wait in
//! a [`RecvFifo`].

use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::prelude::*;

use crate::kx::rxe::mmap_queue::MappedQueue;
use crate::uabi::cqe::WcStatus;
use crate::uabi::limits::MAX_RECV_WQE_BYTES;
use crate::uabi::queue::{Fifo, FromClientQueue};
use crate::uabi::recv_wqe::{RecvLimits, RecvWqe};

/// Kernel receive WRs waiting for packets, oldest first (a kernel QP's or SRQ's).
pub(crate) type RecvFifo = Fifo<Option<RecvWqe>, KVVec<Option<RecvWqe>>>;

/// An empty [`RecvFifo`] of `depth` entries.
pub(crate) fn recv_fifo(depth: u32) -> Result<RecvFifo> {
    let n = usize::try_from(depth).map_err(|_| EINVAL)?;
    Ok(Fifo::new(KVVec::from_elem(None, n, GFP_KERNEL)?))
}

/// Takes the next receive WQE from a QP's own receive ring (validated copy); `Err` carries
/// the `wr_id` and status of one that failed validation.
pub(crate) fn take_from_ring(
    ring: Option<&MappedQueue>,
    q: &mut FromClientQueue,
    max_sge: u32,
) -> Option<Result<RecvWqe, (u64, WcStatus)>> {
    let shared = ring?.queue();
    q.observe_producer(shared.load_producer()).ok()?;
    let slot = q.head()?;
    let mut bytes = [0u8; MAX_RECV_WQE_BYTES];
    shared.read_slot(slot, &mut bytes);
    if let Some(cons) = q.advance_consumer() {
        shared.publish_consumer(cons);
    }
    Some(RecvWqe::parse(&bytes, RecvLimits { max_sge }).map_err(|e| {
        let wr_id = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        (wr_id, e.wc_status())
    }))
}
