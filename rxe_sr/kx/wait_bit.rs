// SPDX-License-Identifier: GPL-2.0
//! Waiting for a count to drain (include/linux/wait_bit.h: `wait_var_event`,
//! `wake_up_var`): [`UseCount`], the references a teardown waits out.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::kx::bindings;

/// A count of users that a teardown waits to reach zero, sleeping (no polling).
pub(crate) struct UseCount(AtomicU32);

impl UseCount {
    /// No users.
    pub(crate) const fn new() -> Self {
        UseCount(AtomicU32::new(0))
    }

    /// One more user.
    pub(crate) fn get(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    /// One user fewer; the last one wakes the teardown. The owner of the count may be freed
    /// as soon as the count is zero, so nothing here touches it after the decrement.
    pub(crate) fn put(&self) {
        let ptr = self.0.as_ptr();
        if self.0.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: `wake_up_var` uses the address only as the key of the waiters to wake
            // (it never reads through it), so it is sound even if the count is gone by now.
            unsafe { bindings::rxe_sr_glue_wake_up_var(ptr) };
        }
    }

    /// Sleeps until the count is zero (process context; the caller makes sure no new user
    /// can come, e.g. by taking the object out of its lookup table first).
    pub(crate) fn wait_for_zero(&self) {
        // SAFETY: the count is live for the call (borrowed); the helper sleeps until a `put`
        // brings it to zero and wakes it, or returns at once if it is zero already.
        unsafe { bindings::rxe_sr_glue_wait_var_zero(self.0.as_ptr()) };
    }
}
