// SPDX-License-Identifier: GPL-2.0
//! Rate limits on kernel log messages (include/linux/ratelimit.h).

use crate::kx::bindings;

/// Whether a warning that a remote peer can cause (a refused request, exhausted retries)
/// may be printed now. One limit covers all of them, the kernel's default (10 messages in
/// 5 s); the kernel logs how many it held back ("callbacks suppressed"), so a peer that
/// sends bad requests in a loop cannot flood the log, and the counters still count each.
pub(crate) fn remote_warning_allowed() -> bool {
    // SAFETY: the state is a static of helpers/ratelimit.c, initialised at build time;
    // `__ratelimit` takes its lock, so any context on any CPU may call this.
    unsafe { bindings::rxe_sr_glue_remote_warning_ratelimit() }
}
