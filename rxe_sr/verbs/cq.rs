// SPDX-License-Identifier: GPL-2.0
//! Completion queues: sizing rules.
//!
//! A CQ is a ring shared with user space (uabi::queue); user space reads the slot size from
//! the queue header.

use kernel::prelude::*;

use crate::uabi::queue::{self, QueueGeometry};

/// Largest CQ depth (as rdma_rxe: 2^15 - 1).
pub(crate) const MAX_CQE: i32 = (1 << 15) - 1;

/// Checks a requested depth against the device's limit and sizes the ring as rdma_rxe does
/// (the depth plus the slot kept empty, rounded up to a power of two; the usable depth is
/// `num_elem`).
pub(crate) fn geometry(cqe: u32, cache_line_size: u32) -> Result<QueueGeometry> {
    match i32::try_from(cqe) {
        Ok(n) if n > 0 && n <= MAX_CQE => {}
        _ => return Err(EINVAL),
    }
    queue::cq_geometry(cqe, cache_line_size).ok_or(EINVAL)
}
