// SPDX-License-Identifier: GPL-2.0
//! Completion queues: sizing rules.
//!
//! A CQ is a ring shared with user space. Its slots hold one `struct ib_uverbs_wc` (48 bytes)
//! padded to a cache line; user space reads the slot size from the queue header, so any
//! power of two that holds a CQE works.

use kernel::prelude::*;

/// log2 of a CQ slot's size (64 bytes).
pub(crate) const CQE_LOG2_SIZE: u32 = 6;

/// Largest CQ depth (as rdma_rxe: 2^15 - 1).
pub(crate) const MAX_CQE: i32 = (1 << 15) - 1;

/// Checks a requested depth and returns the ring's slot count: the depth plus the slot
/// kept empty, rounded up to a power of two (the usable depth is `slots - 1`).
pub(crate) fn ring_slots(cqe: i32) -> Result<u32> {
    if cqe <= 0 || cqe > MAX_CQE {
        return Err(EINVAL);
    }
    // 1 ..= 2^15 fits; the round-up stays within u32.
    let want = u32::try_from(cqe).map_err(|_| EINVAL)? + 1;
    want.checked_next_power_of_two().ok_or(EINVAL)
}
