// SPDX-License-Identifier: GPL-2.0
//! On-demand paging memory (include/rdma/ib_umem_odp.h): [`OdpPages`], a process's range
//! registered with `IB_ACCESS_ON_DEMAND`. Nothing is pinned: the core's MMU interval
//! notifier tells the glue when the process changes or drops pages of the range, and the
//! glue unmaps them; an access maps (faulting in) the pages it needs and holds the umem's
//! mutex across its copy ([`OdpMapped`]), so no invalidation completes under it.

use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::error::{from_err_ptr, to_result};
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::ib_device::{Device, DriverData};
use crate::kx::skbuff::PayloadSink;

/// The kernel offers on-demand paging (`CONFIG_INFINIBAND_ON_DEMAND_PAGING`).
pub(crate) fn supported() -> bool {
    // SAFETY: reads a build-time constant.
    unsafe { bindings::rxe_sr_glue_odp_supported() }
}

/// A process range registered for on-demand paging.
///
/// # Invariants
/// `odp` is the `ib_umem_odp` this value owns (released once, on drop). `retired` is
/// written only with the umem's mutex held.
pub(crate) struct OdpPages {
    odp: NonNull<bindings::ib_umem_odp>,
    retired: AtomicBool,
}

// SAFETY: the umem is owned by this value and not tied to a thread; every access to its
// pages goes through the glue under the umem's own mutex.
unsafe impl Send for OdpPages {}
// SAFETY: `&self` methods either read fields fixed at registration or take the umem's mutex.
unsafe impl Sync for OdpPages {}

impl OdpPages {
    /// Registers `len` bytes of the calling process at `start` for device `dev` with rights
    /// `access` (IB_ACCESS_*, including ON_DEMAND); no page is faulted in yet.
    pub(crate) fn register<T: DriverData>(
        dev: &Device<T>,
        start: usize,
        len: usize,
        access: u32,
    ) -> Result<Self> {
        let access = i32::try_from(access).map_err(|_| EINVAL)?;
        let raw = from_err_ptr(
            // SAFETY: registers memory of the calling process (a uverbs call) with the
            // device; returns a umem or an ERR_PTR.
            unsafe { bindings::rxe_sr_glue_odp_get(dev.as_raw(), start, len, access) },
        )?;
        // INVARIANT: the umem just registered, owned from here.
        Ok(OdpPages {
            odp: NonNull::new(raw).ok_or(EFAULT)?,
            retired: AtomicBool::new(false),
        })
    }

    /// The process's range (its address and length).
    pub(crate) fn range(&self) -> (usize, usize) {
        let umem = self.umem();
        (umem.address, umem.length)
    }

    /// The rights let the range be written (pages are faulted in writable when needed).
    pub(crate) fn writable(&self) -> bool {
        self.umem().writable() != 0
    }

    /// The umem's fixed part: address, length and rights.
    fn umem(&self) -> &bindings::ib_umem {
        // SAFETY: the umem this value owns (type invariant); `ib_umem_odp_get` set these
        // fields and nothing writes them while it is registered.
        unsafe { &(*self.odp.as_ptr()).umem }
    }

    /// Maps bytes `[off, off + len)` of the range (offsets from its first byte) for reading,
    /// or for writing when `write`, faulting pages in as needed; they stay mapped until the
    /// returned guard goes. May sleep. EFAULT outside the range or when a page cannot be
    /// had, EACCES for a write to a range registered read-only, ENOENT once retired.
    pub(crate) fn map(&self, off: u64, len: u64, write: bool) -> Result<OdpMapped<'_>> {
        // SAFETY: the umem this value owns (type invariant); on success the mutex is held,
        // and the guard releases it.
        to_result(unsafe {
            bindings::rxe_sr_glue_odp_map_lock(self.odp.as_ptr(), off, len, write, true)
        })?;
        let mapped = OdpMapped {
            pages: self,
            off,
            len,
        };
        // Read with the mutex held: `retire` writes it under the same mutex.
        if self.retired.load(Ordering::Relaxed) {
            return Err(ENOENT);
        }
        Ok(mapped)
    }

    /// Maps bytes `[off, off + len)` ahead of use (`ibv_advise_mr`): faulting them in, or,
    /// without `fault`, only those the process already has. May sleep.
    pub(crate) fn prefetch(&self, off: u64, len: u64, write: bool, fault: bool) -> Result {
        // SAFETY: the umem this value owns; the mutex taken on success is released at once.
        unsafe {
            to_result(bindings::rxe_sr_glue_odp_map_lock(
                self.odp.as_ptr(),
                off,
                len,
                write,
                fault,
            ))?;
            bindings::rxe_sr_glue_odp_unlock(self.odp.as_ptr());
        }
        Ok(())
    }

    /// Retires the range (its MR is deregistered): waits for a copy in flight and makes
    /// every later [`Self::map`] fail. May sleep.
    pub(crate) fn retire(&self) {
        // SAFETY: the umem this value owns; its mutex is taken and released here.
        unsafe { bindings::rxe_sr_glue_odp_lock(self.odp.as_ptr()) };
        // INVARIANT: written with the mutex held.
        self.retired.store(true, Ordering::Relaxed);
        // SAFETY: taken just above.
        unsafe { bindings::rxe_sr_glue_odp_unlock(self.odp.as_ptr()) };
    }
}

impl Drop for OdpPages {
    fn drop(&mut self) {
        // SAFETY: the umem this value owns (type invariant), released once; no guard
        // outlives the value it borrows.
        unsafe { bindings::rxe_sr_glue_odp_release(self.odp.as_ptr()) };
    }
}

/// Bytes `[off, off + len)` of an [`OdpPages`] range, mapped, with the umem's mutex held.
///
/// # Invariants
/// The mutex of `pages`' umem is held by this value (released on drop), taken by a map of
/// `[off, off + len)` that succeeded: the pages of that range are mapped.
pub(crate) struct OdpMapped<'a> {
    pages: &'a OdpPages,
    off: u64,
    len: u64,
}

impl OdpMapped<'_> {
    /// Copies `dst.len()` bytes at byte `off` of the range into `dst`; false when they are
    /// not all in the mapped part.
    pub(crate) fn read(&self, off: u64, dst: &mut [u8]) -> bool {
        self.copy(off, dst.as_mut_ptr().cast(), dst.len(), false)
    }

    /// As [`Self::read`], `n` bytes appended to a datagram's payload.
    pub(crate) fn read_into(&self, off: u64, n: usize, dst: &mut PayloadSink<'_>) -> bool {
        // SAFETY: `copy` writes the `n` bytes at the pointer or fails; it writes nothing
        // else.
        unsafe { dst.put_with(n, |p| self.copy(off, p.cast(), n, false)) }
    }

    /// Copies `src` to byte `off` of the range; false when not all in the mapped part.
    pub(crate) fn write(&self, off: u64, src: &[u8]) -> bool {
        self.copy(off, src.as_ptr().cast_mut().cast(), src.len(), true)
    }

    fn copy(&self, off: u64, buf: *mut c_void, len: usize, to_pages: bool) -> bool {
        let Some(end) = off.checked_add(len as u64) else {
            return false;
        };
        if off < self.off || end > self.off + self.len {
            return false;
        }
        if len == 0 {
            return true;
        }
        // SAFETY: the bytes' pages are mapped and held so by the mutex (type invariant); `buf`
        // is valid for `len` bytes (written only when `!to_pages`: from a `&mut`).
        unsafe {
            bindings::rxe_sr_glue_odp_copy(self.pages.odp.as_ptr(), off, buf, len, to_pages) == 0
        }
    }
}

impl Drop for OdpMapped<'_> {
    fn drop(&mut self) {
        // SAFETY: the mutex this value holds (type invariant), released once.
        unsafe { bindings::rxe_sr_glue_odp_unlock(self.pages.odp.as_ptr()) };
    }
}
