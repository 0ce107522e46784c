// SPDX-License-Identifier: GPL-2.0
//! Memory regions: the C-ABI entry points and the MR object.
//!
//! A user MR pins its pages through `ib_umem_get` and takes an index in the device's MR
//! table; its L_Key and R_Key are the same key (`verbs::mr::key`). A DMA MR (`get_dma_mr`:
//! every kernel PD gets one, whose key is the PD's `local_dma_lkey`) covers kernel memory:
//! with virtual DMA, the addresses kernel consumers put in their SGEs are kernel virtual
//! addresses. A fast-registration MR (`alloc_mr`, for kernel ULPs) gets its pages from
//! `map_mr_sg` and becomes usable, under the key the ULP chose, when a REG_MR work request
//! runs; LOCAL_INV or SEND with invalidate ends that.
//!
//! This file has the MR object, registration and deregistration; [`access`] resolves keys
//! and copies for the transport; [`fast_reg`] has the fast-registration MRs.

use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::{
    flags::{GFP_KERNEL, GFP_KERNEL_ACCOUNT},
    KBox, KVVec,
};
use kernel::error::from_err_ptr;
use kernel::ffi::c_int;
use kernel::ffi::c_void;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::ib_pd::PdId;
use crate::objects::device::RoceDevice;
use crate::objects::live;
use crate::uabi::cqe::WcStatus;
use crate::verbs;

mod access;
mod fast_reg;

pub(crate) use access::*;
pub(crate) use fast_reg::*;

/// What memory an MR covers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// User memory pinned through a umem; `pages` are `struct page *`.
    User,
    /// A kernel PD's DMA MR: its addresses are kernel virtual addresses.
    Dma,
    /// Fast registration: `pages` are the kernel addresses of the `page_size` blocks
    /// map_mr_sg mapped.
    Fast,
}

/// The MR object: `ibmr` first (the core hands back `&ibmr`); allocated by us. The key,
/// range, rights and validity the data path checks are ours (`ibmr`'s may be changed by a
/// kernel ULP before a REG_MR); they change only under the MR table's lock.
#[repr(C)]
pub(crate) struct RxeSrMr {
    ibmr: bindings::ib_mr,
    kind: Kind,
    /// The key in force (L_Key = R_Key).
    key: u32,
    /// First address and length of the registered range.
    iova: u64,
    length: u64,
    /// False for a fast-registration MR outside REG_MR .. invalidation.
    valid: bool,
    /// Fast registration: pages mapped, and their size.
    npages: usize,
    page_size: u64,
    /// The pinned user pages; null unless `Kind::User`.
    umem: *mut bindings::ib_umem,
    /// Index in the device's MR table.
    index: u32,
    /// The device whose table holds the index.
    ibdev: *mut bindings::ib_device,
    /// `IB_ACCESS_*` granted at registration.
    access: u32,
    /// The pinned pages, in order (`struct page *`): byte `i` of the MR is byte
    /// `first_off + i` of this array's memory, reached without walking the scatterlist.
    pages: KVVec<*mut c_void>,
    /// Offset of the MR's first byte in its first page.
    first_off: usize,
    /// Memory windows bound to it: deregistration is refused while any is (as rdma_rxe's
    /// `num_mw`). Changed under the MR table's lock.
    bound_mws: AtomicU32,
}

impl RxeSrMr {
    /// An MR not yet in the table (no key, not valid).
    fn new(
        kind: Kind,
        ibdev: *mut bindings::ib_device,
        access: u32,
        umem: *mut bindings::ib_umem,
        pages: KVVec<*mut c_void>,
        first_off: usize,
    ) -> Self {
        RxeSrMr {
            ibmr: Default::default(),
            kind,
            key: 0,
            iova: 0,
            length: 0,
            valid: false,
            npages: 0,
            page_size: 0,
            umem,
            index: 0,
            ibdev,
            access,
            pages,
            first_off,
            bound_mws: AtomicU32::new(0),
        }
    }
}

/// What an access check reads of an MR: key, PD, iova, length, access granted, valid.
/// Field by field: no reference covers the embedded `ib_mr`, which the core reads and
/// writes on its own.
///
/// # Safety
/// `mr` is a live entry of the MR table, whose lock is held (every change to these fields
/// is made under it).
unsafe fn checked_fields(mr: *const RxeSrMr) -> (u32, *mut bindings::ib_pd, u64, u64, u32, bool) {
    // SAFETY: per this function's contract.
    unsafe {
        (
            (*mr).key,
            (*mr).ibmr.pd,
            (*mr).iova,
            (*mr).length,
            (*mr).access,
            (*mr).valid,
        )
    }
}

/// Copies between `buf` and byte `off` of an MR's pages (into the MR when `to_mr`).
///
/// # Safety
/// `mr` is a live MR (its table lock held, so it is not deregistered meanwhile) and
/// `buf` is valid for `len` bytes (writable unless `to_mr`).
unsafe fn mr_copy(
    mr: *const RxeSrMr,
    off: usize,
    buf: *mut c_void,
    len: usize,
    to_mr: bool,
) -> bool {
    // SAFETY: per this function's contract.
    let (pages, first, kind) = unsafe { (&(*mr).pages, (*mr).first_off, (*mr).kind) };
    match kind {
        // `off` is a kernel virtual address (the iova is 0). The helper refuses addresses
        // outside the direct map.
        Kind::Dma => {
            // SAFETY: `buf` is valid for `len` bytes per this function's contract.
            return unsafe { bindings::rxe_sr_glue_kva_copy(off as u64, buf, len, to_mr) == 0 };
        }
        // SAFETY: as above.
        Kind::Fast => return unsafe { fast_copy(mr, off, buf, len, to_mr) },
        Kind::User => {}
    }
    let Some(at) = first.checked_add(off) else {
        return false;
    };
    // SAFETY: `pages` holds the MR's pinned pages; the helper checks the range against
    // their number and copies page by page.
    unsafe {
        bindings::rxe_sr_glue_pages_copy(pages.as_ptr(), pages.len(), at, buf, len, to_mr) == 0
    }
}

/// [`mr_copy`] for a fast-registration MR: byte `off` of the range is `off + iova % page_size`
/// bytes into the mapped blocks.
///
/// # Safety
/// As [`mr_copy`].
unsafe fn fast_copy(
    mr: *const RxeSrMr,
    off: usize,
    buf: *mut c_void,
    len: usize,
    to_mr: bool,
) -> bool {
    // SAFETY: per this function's contract.
    let (pages, npages) = unsafe { (&(*mr).pages, (*mr).npages) };
    // SAFETY: as above.
    let (ps, iova) = unsafe { ((*mr).page_size, (*mr).iova) };
    let Ok(ps) = usize::try_from(ps) else {
        return false;
    };
    if ps == 0 {
        return false;
    }
    let Some(mut at) = usize::try_from(iova % ps as u64)
        .ok()
        .and_then(|f| f.checked_add(off))
    else {
        return false;
    };
    let mut done = 0;
    while done < len {
        let (idx, inpage) = (at / ps, at % ps);
        let n = (len - done).min(ps - inpage);
        let Some(&block) = pages.get(idx).filter(|_| idx < npages) else {
            return false;
        };
        // SAFETY: `buf + done` is valid for `n` more bytes; the helper refuses addresses
        // outside the direct map.
        if unsafe {
            bindings::rxe_sr_glue_kva_copy(
                block as u64 + inpage as u64,
                buf.cast::<u8>().add(done).cast(),
                n,
                to_mr,
            )
        } != 0
        {
            return false;
        }
        done += n;
        at += n;
    }
    true
}

/// `ib_device_ops.reg_user_mr`.
///
/// # Safety
/// Called by uverbs with a live PD of one of our devices.
pub(crate) unsafe extern "C" fn reg_user_mr(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    // SAFETY: per this function's contract.
    match unsafe { reg_user_mr_inner(pd, start, length, iova, access) } {
        Ok(mr) => mr,
        Err(e) => e.to_ptr(),
    }
}

/// # Safety
/// As [`reg_user_mr`].
unsafe fn reg_user_mr_inner(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
) -> Result<*mut bindings::ib_mr> {
    let access = verbs::mr::check_access(access)?;
    if length == 0 {
        return Err(EINVAL);
    }
    let start = usize::try_from(start).map_err(|_| EINVAL)?;
    let len = usize::try_from(length).map_err(|_| EINVAL)?;
    // SAFETY: a live PD's device is live.
    let ibdev = unsafe { (*pd).device };
    // SAFETY: a device of ours.
    let dev = unsafe { RoceDevice::from_ib(ibdev) };
    // SAFETY: pins `len` bytes of the calling process at `start`, checking the range and
    // the access rights against the VMAs; returns a umem or an ERR_PTR.
    let umem = from_err_ptr(unsafe { bindings::ib_umem_get(ibdev, start, len, access as c_int) })?;
    // SAFETY: `umem` is the live umem just pinned.
    let (npages, first_off) = unsafe {
        (
            bindings::rxe_sr_glue_umem_npages(umem),
            bindings::rxe_sr_glue_umem_first_offset(umem),
        )
    };
    let pages = KVVec::from_elem(ptr::null_mut::<c_void>(), npages, GFP_KERNEL_ACCOUNT)
        .map_err(Error::from)
        .and_then(|mut v| {
            // SAFETY: `v` has room for `npages` pointers; the helper writes at most that many.
            let n = unsafe { bindings::rxe_sr_glue_umem_pages(umem, v.as_mut_ptr(), v.len()) };
            if n == npages {
                Ok(v)
            } else {
                Err(EFAULT)
            }
        });
    let pages = match pages {
        Ok(p) => p,
        Err(e) => {
            // SAFETY: pinned above, not yet owned by anything else.
            unsafe { bindings::ib_umem_release(umem) };
            return Err(e);
        }
    };
    let mr = KBox::new(
        RxeSrMr::new(Kind::User, ibdev, access, umem, pages, first_off),
        GFP_KERNEL,
    );
    let mr = match mr {
        Ok(m) => m,
        Err(e) => {
            // SAFETY: pinned above, not yet owned by anything else.
            unsafe { bindings::ib_umem_release(umem) };
            return Err(e.into());
        }
    };
    // SAFETY: `iova` and `length` describe the pinned range.
    unsafe { publish(dev, mr, iova, length) }
}

/// Gives a new MR its key and publishes it in the device's table; on failure the MR is
/// freed (and its pages released).
///
/// # Safety
/// `mr.umem` is null or pinned pages the MR now owns; `[iova, iova + length)` is the range
/// its keys may reach.
unsafe fn publish(
    dev: &RoceDevice,
    mr: KBox<RxeSrMr>,
    iova: u64,
    length: u64,
) -> Result<*mut bindings::ib_mr> {
    let mr = KBox::into_raw(mr);
    let release = |mr: *mut RxeSrMr| {
        // SAFETY: `mr` is ours (not in the table): release its pages, free the box.
        unsafe {
            bindings::ib_umem_release((*mr).umem);
            drop(KBox::from_raw(mr));
        }
    };
    let index = match dev
        .mrs()
        .reserve(verbs::mr::MIN_MR_INDEX, verbs::mr::MAX_MR_INDEX)
    {
        Ok(i) => i,
        Err(e) => {
            release(mr);
            return Err(e);
        }
    };
    let key = verbs::mr::key(index, dev.next_key_variant());
    // SAFETY: `mr` is live and, until we return it, only ours to write.
    unsafe {
        (*mr).index = index;
        (*mr).ibmr.lkey = key;
        (*mr).ibmr.rkey = key;
        (*mr).ibmr.iova = iova;
        (*mr).ibmr.length = length;
        (*mr).key = key;
        (*mr).iova = iova;
        (*mr).length = length;
        // A fast-registration MR is usable only once a REG_MR ran.
        (*mr).valid = (*mr).kind != Kind::Fast;
    }
    if let Err(e) = dev.mrs().publish(index, mr.cast()) {
        dev.mrs().erase(index);
        release(mr);
        return Err(e);
    }
    live::LIVE.mrs.inc();
    // SAFETY: `ibmr` is the first field of the live MR.
    Ok(unsafe { ptr::addr_of_mut!((*mr).ibmr) })
}

/// `ib_device_ops.get_dma_mr`: the MR behind a kernel PD's `local_dma_lkey`, covering
/// kernel memory. Local access only: remote access to all of kernel memory
/// (`IB_PD_UNSAFE_GLOBAL_RKEY`) is not offered.
///
/// # Safety
/// Called by the core with a live kernel PD of one of our devices.
pub(crate) unsafe extern "C" fn get_dma_mr(
    pd: *mut bindings::ib_pd,
    access: c_int,
) -> *mut bindings::ib_mr {
    let access = match u32::try_from(access) {
        Ok(a) if a & !bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE == 0 => a,
        _ => return crate::kx::error::eopnotsupp().to_ptr(),
    };
    // SAFETY: a live PD's device is one of ours.
    let ibdev = unsafe { (*pd).device };
    // SAFETY: as above.
    let dev = unsafe { RoceDevice::from_ib(ibdev) };
    let mr = KBox::new(
        RxeSrMr::new(Kind::Dma, ibdev, access, ptr::null_mut(), KVVec::new(), 0),
        GFP_KERNEL,
    );
    let res = match mr {
        // SAFETY: no pages; the whole address space, checked page by page at copy time.
        Ok(mr) => unsafe { publish(dev, mr, 0, u64::MAX) },
        Err(e) => Err(e.into()),
    };
    res.unwrap_or_else(|e| e.to_ptr())
}

/// `ib_device_ops.dereg_mr`.
///
/// # Safety
/// Called once per MR we returned, after its users are gone.
pub(crate) unsafe extern "C" fn dereg_mr(
    ibmr: *mut bindings::ib_mr,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    let mr = ibmr.cast::<RxeSrMr>();
    // SAFETY: every ib_mr we hand out is the first field of a boxed RxeSrMr.
    let (index, umem, ibdev) = unsafe { ((*mr).index, (*mr).umem, (*mr).ibdev) };
    // SAFETY: as above; the counter is atomic.
    if unsafe { (*mr).bound_mws.load(Ordering::Acquire) } != 0 {
        // Windows still bound to it: the application must invalidate or free them first.
        return EBUSY.to_errno();
    }
    // SAFETY: the device we registered the MR on; it outlives its MRs.
    let dev = unsafe { RoceDevice::from_ib(ibdev) };
    dev.mrs().erase(index);
    // SAFETY: the MR is out of the table; release its pages and free it, once.
    unsafe {
        bindings::ib_umem_release(umem);
        drop(KBox::from_raw(mr));
    }
    live::LIVE.mrs.dec();
    0
}
