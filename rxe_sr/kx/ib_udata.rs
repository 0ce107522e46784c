// SPDX-License-Identifier: GPL-2.0
//! The user-space side of a verb (include/rdma/ib_verbs.h, `struct ib_udata`): the driver's
//! response, copied out to the caller with `ib_copy_to_udata`, and the caller's user
//! context, where queues shared with the process are registered for `mmap`. A verb called
//! by a kernel consumer has none.

use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::error::to_result;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::mmap_queue::{MappedQueue, SharedQueue};

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

    /// Registers `queue` in the caller's user context for `mmap`; returns the handle (its
    /// drop unregisters the queue) and the offset user space passes to `mmap()`. EINVAL
    /// when the call has no user context.
    pub(crate) fn map_queue(&mut self, queue: SharedQueue) -> Result<(MappedQueue, u64)> {
        // SAFETY: the udata is live (type invariant); the helper finds the call's bundle
        // around it and returns its user context, or null.
        let uctx = unsafe { bindings::rxe_sr_glue_udata_ucontext(self.raw.as_ptr()) };
        if uctx.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: the context of a live uverbs call on one of our devices outlives the call.
        unsafe { MappedQueue::insert(uctx, queue) }
    }

    /// Reads the caller's command (the driver's part of the request) into `cmd`: EINVAL when
    /// the caller passed less, EFAULT when the copy faults.
    pub(crate) fn read(&self, cmd: &mut [u8]) -> Result {
        // SAFETY: the udata is live (type invariant); the helper checks the length against
        // `inlen` and copies from user space into `cmd`.
        to_result(unsafe {
            bindings::rxe_sr_glue_copy_from_udata(
                self.raw.as_ptr(),
                cmd.as_mut_ptr().cast(),
                cmd.len(),
            )
        })
    }

    /// Copies `bytes` to user address `addr` of the calling process (a place its command
    /// named); EFAULT when the copy faults.
    pub(crate) fn write_user(&mut self, addr: u64, bytes: &[u8]) -> Result {
        // SAFETY: a uverbs call runs in the caller's process; the helper copies with
        // copy_to_user, which checks the address and faults safely.
        to_result(unsafe {
            bindings::rxe_sr_glue_copy_to_user(addr, bytes.as_ptr().cast(), bytes.len())
        })
    }
}
