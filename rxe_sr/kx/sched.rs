// SPDX-License-Identifier: GPL-2.0
//! Yielding the CPU (include/linux/sched.h).

use crate::kx::bindings;

/// Lets other tasks run if one is due (`cond_resched`). Only in process context with no
/// spinlock held (the kernel reports a sleep in atomic context).
pub(crate) fn cond_resched() {
    // SAFETY: no memory is touched; the kernel checks the context itself.
    unsafe { bindings::rxe_sr_glue_cond_resched() };
}
