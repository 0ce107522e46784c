// SPDX-License-Identifier: GPL-2.0
//! User memory pinned for a memory region (include/rdma/ib_umem.h): [`UserPages`], the
//! pinned pages of a registration, in order, released on drop; and the byte copies in and
//! out of them that the data path makes.

use core::ffi::c_void;
use core::ptr::{self, NonNull};
use kernel::alloc::{flags::GFP_KERNEL_ACCOUNT, KVVec};
use kernel::error::from_err_ptr;
use kernel::page::{PAGE_MASK, PAGE_SIZE};
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::ib_device::{Device, DriverData};
use crate::kx::skbuff::PayloadSink;

/// A process's memory pinned for an MR: byte `i` of the registration is byte
/// `first_off + i` of the pages in `pages`, reached without walking the scatterlist.
///
/// # Invariants
/// `umem` is the pinned umem this value owns (released once, on drop); `pages` holds its
/// pages (`struct page *`), which stay pinned as long as it does.
pub(crate) struct UserPages {
    umem: NonNull<bindings::ib_umem>,
    pages: KVVec<*mut c_void>,
    first_off: usize,
}

// SAFETY: the umem and its pages are owned by this value and not tied to a thread; the
// copies go through helpers that map each page for the call.
unsafe impl Send for UserPages {}
// SAFETY: `&self` only copies through the pinned pages (the helpers map them locally);
// callers serialise copies that must not interleave.
unsafe impl Sync for UserPages {}

impl UserPages {
    /// Pins `len` bytes of the calling process at `start` for device `dev`, checking the
    /// range and the rights `access` (IB_ACCESS_*) against the process's mappings. The page
    /// list is charged to the caller's memory cgroup.
    pub(crate) fn pin<T: DriverData>(
        dev: &Device<T>,
        start: usize,
        len: usize,
        access: u32,
    ) -> Result<Self> {
        let access = i32::try_from(access).map_err(|_| EINVAL)?;
        // SAFETY: pins memory of the calling process (a uverbs call); returns a umem or an
        // ERR_PTR.
        let raw = from_err_ptr(unsafe { bindings::ib_umem_get(dev.as_raw(), start, len, access) })?;
        let umem = NonNull::new(raw).ok_or(EFAULT)?;
        // SAFETY: `umem` is the live umem just pinned; ib_umem_get set these fields.
        let (iova, length, address) = unsafe { ((*raw).iova, (*raw).length, (*raw).address) };
        let (npages, first_off) = page_span(iova, length, address).ok_or(EINVAL)?;
        let pages = KVVec::from_elem(ptr::null_mut::<c_void>(), npages, GFP_KERNEL_ACCOUNT)
            .map_err(Error::from)
            .and_then(|mut v| {
                // SAFETY: `v` has room for `npages` pointers; the helper writes at most that
                // many.
                let n = unsafe { bindings::rxe_sr_glue_umem_pages(raw, v.as_mut_ptr(), v.len()) };
                if n == npages {
                    Ok(v)
                } else {
                    Err(EFAULT)
                }
            });
        match pages {
            // INVARIANT: the umem and its pages, owned from here.
            Ok(pages) => Ok(UserPages {
                umem,
                pages,
                first_off,
            }),
            Err(e) => {
                // SAFETY: pinned above and owned by nothing else.
                unsafe { bindings::ib_umem_release(raw) };
                Err(e)
            }
        }
    }

    /// Copies `dst.len()` bytes at byte `off` of the registration into `dst`; false when
    /// the range runs past the pages.
    pub(crate) fn read(&self, off: usize, dst: &mut [u8]) -> bool {
        self.copy(off, dst.as_mut_ptr().cast(), dst.len(), false)
    }

    /// As [`Self::read`], `n` bytes appended to a datagram's payload.
    /// (A datagram built by reference takes the pages themselves.)
    pub(crate) fn read_into(&self, off: usize, n: usize, dst: &mut PayloadSink<'_>) -> bool {
        let Some(at) = self.first_off.checked_add(off) else {
            return false;
        };
        // SAFETY: `pages` holds the pinned pages (type invariant), which stay pinned while
        // `self` is borrowed; the helpers check the range against them.
        unsafe { dst.put_mem(self.pages.as_ptr(), self.pages.len(), at, n) }
    }

    /// Copies `src` to byte `off` of the registration; false when the range runs past the
    /// pages.
    pub(crate) fn write(&self, off: usize, src: &[u8]) -> bool {
        self.copy(off, src.as_ptr().cast_mut().cast(), src.len(), true)
    }

    /// The process's range these pages were pinned for (its address and length).
    pub(crate) fn range(&self) -> (usize, usize) {
        // SAFETY: the umem this value owns (type invariant); plain fields set at pinning.
        let u = unsafe { self.umem.as_ref() };
        (u.address, u.length)
    }

    /// Pinned for writing (`FOLL_WRITE`: the MR's rights let it be written): writes reach
    /// the process's own pages, not a copy.
    pub(crate) fn writable(&self) -> bool {
        // SAFETY: as in `range`; the bitfield is set at pinning.
        unsafe { self.umem.as_ref().writable() != 0 }
    }

    fn copy(&self, off: usize, buf: *mut c_void, len: usize, to_pages: bool) -> bool {
        let Some(at) = self.first_off.checked_add(off) else {
            return false;
        };
        // SAFETY: `pages` holds the pinned pages (invariant; the helper checks the range against
        // them); `buf` is valid for `len` bytes (written only when `!to_pages`: from a `&mut`).
        unsafe {
            bindings::rxe_sr_glue_pages_copy(
                self.pages.as_ptr(),
                self.pages.len(),
                at,
                buf,
                len,
                to_pages,
            ) == 0
        }
    }
}

impl Drop for UserPages {
    fn drop(&mut self) {
        // SAFETY: the umem this value owns (type invariant), released once.
        unsafe { bindings::ib_umem_release(self.umem.as_ptr()) };
    }
}

/// The pages a pinned range spans and the offset of its first byte in the first, as
/// `ib_umem_num_pages` and `ib_umem_offset` compute them (from the umem's IOVA, length and
/// address); `None` if the range wraps.
fn page_span(iova: u64, length: usize, address: usize) -> Option<(usize, usize)> {
    let page = PAGE_SIZE as u64;
    let end = iova
        .checked_add(length as u64)?
        .checked_next_multiple_of(page)?;
    let npages = usize::try_from((end - (iova & !(page - 1))) / page).ok()?;
    Some((npages, address & !PAGE_MASK))
}
