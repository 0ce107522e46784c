// SPDX-License-Identifier: GPL-2.0
//! The user-space side of a verb (include/rdma/ib_verbs.h, `struct ib_udata`): the driver's
//! response, copied out to the caller with `ib_copy_to_udata`. A verb called by a kernel
//! consumer has none.

use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::error::to_result;
use kernel::prelude::*;

use crate::kx::bindings;

/// The user data of one uverbs call, borrowed for the call.
///
/// # Invariants
/// `raw` is the live `ib_udata` uverbs passed to the verb being served, valid for `'a`.
pub(crate) struct UData<'a> {
    raw: NonNull<bindings::ib_udata>,
    _call: PhantomData<&'a mut bindings::ib_udata>,
}

impl UData<'_> {
    /// The user data a verb received, or `None` for a kernel caller (null).
    ///
    /// # Safety
    /// `raw` is null or the live `ib_udata` of the verb being served, valid for `'a` and not
    /// used through another path meanwhile.
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::ib_udata) -> Option<UData<'a>> {
        // INVARIANT: per this function's contract.
        Some(UData {
            raw: NonNull::new(raw)?,
            _call: PhantomData,
        })
    }

    /// Copies the driver's response `resp` to the caller: EINVAL when the caller's output
    /// buffer is smaller, EFAULT when the copy faults.
    pub(crate) fn respond(&mut self, resp: &[u8]) -> Result {
        // SAFETY: the udata is live (type invariant); the helper checks the length against
        // the caller's `outlen` and copies to user space.
        to_result(unsafe {
            bindings::rxe_sr_glue_copy_to_udata(self.raw.as_ptr(), resp.as_ptr().cast(), resp.len())
        })
    }
}
