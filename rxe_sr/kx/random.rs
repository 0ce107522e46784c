// SPDX-License-Identifier: GPL-2.0
//! Random bytes from the kernel's generator (include/linux/random.h).

use crate::kx::bindings;

/// Fills `buf` with random bytes (`get_random_bytes`; any context).
pub(crate) fn fill(buf: &mut [u8]) {
    // SAFETY: `buf` is valid for writes of its length for the call.
    unsafe { bindings::get_random_bytes(buf.as_mut_ptr().cast(), buf.len()) };
}
