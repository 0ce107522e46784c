// SPDX-License-Identifier: GPL-2.0
//! The user-space side of a verb (include/rdma/ib_verbs.h, `struct ib_udata`): the driver's
//! response and command, copied to and from the caller through `kernel::uaccess` (as
//! `ib_copy_to_udata` and `ib_copy_from_udata` do), and the caller's user
//! context, where what the driver shares with the process is registered for `mmap`. A verb called
//! by a kernel consumer has none.

use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::prelude::*;
use kernel::uaccess::UserSlice;

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
        // SAFETY: the udata is live (type invariant); its output buffer is the caller's.
        let (out, outlen) = unsafe { ((*self.raw.as_ptr()).outbuf, (*self.raw.as_ptr()).outlen) };
        if outlen < resp.len() {
            return Err(EINVAL);
        }
        UserSlice::new(out as usize, resp.len())
            .writer()
            .write_slice(resp)
    }

    /// The caller's user context, where a driver registers what it shares for `mmap`;
    /// `None` when the call has none.
    pub(crate) fn ucontext(&mut self) -> Option<NonNull<bindings::ib_ucontext>> {
        // SAFETY: the udata is live (type invariant); the helper finds the call's bundle
        // around it and returns its user context, or null.
        NonNull::new(unsafe { bindings::rxe_sr_glue_udata_ucontext(self.raw.as_ptr()) })
    }

    /// Reads the caller's command (the driver's part of the request) into `cmd`: EINVAL when
    /// the caller passed less, EFAULT when the copy faults.
    pub(crate) fn read(&self, cmd: &mut [u8]) -> Result {
        // SAFETY: the udata is live (type invariant); its input buffer is the caller's.
        let (inbuf, inlen) = unsafe { ((*self.raw.as_ptr()).inbuf, (*self.raw.as_ptr()).inlen) };
        if inlen < cmd.len() {
            return Err(EINVAL);
        }
        UserSlice::new(inbuf as usize, cmd.len())
            .reader()
            .read_slice(cmd)
    }

    /// Copies `bytes` to user address `addr` of the calling process (a place its command
    /// named); EFAULT when the copy faults.
    pub(crate) fn write_user(&mut self, addr: u64, bytes: &[u8]) -> Result {
        let addr = usize::try_from(addr).map_err(|_| EFAULT)?;
        // A uverbs call runs in the caller's process; the copy checks the address.
        UserSlice::new(addr, bytes.len())
            .writer()
            .write_slice(bytes)
    }
}
