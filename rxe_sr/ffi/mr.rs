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

use crate::kx::bindings as b;
use crate::objects::device::RxeSrDev;
use crate::objects::live;
use crate::objects::pd::PdId;
use crate::uabi::cqe::WcStatus;
use crate::verbs::mr as vmr;

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
    ibmr: b::ib_mr,
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
    umem: *mut b::ib_umem,
    /// Index in the device's MR table.
    index: u32,
    /// The device whose table holds the index.
    ibdev: *mut b::ib_device,
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
        ibdev: *mut b::ib_device,
        access: u32,
        umem: *mut b::ib_umem,
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
unsafe fn checked_fields(mr: *const RxeSrMr) -> (u32, *mut b::ib_pd, u64, u64, u32, bool) {
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
        // SAFETY: `buf` is valid for `len` bytes per this function's contract.
        Kind::Dma => return unsafe { b::rxe_sr_glue_kva_copy(off as u64, buf, len, to_mr) == 0 },
        // SAFETY: as above.
        Kind::Fast => return unsafe { fast_copy(mr, off, buf, len, to_mr) },
        Kind::User => {}
    }
    let Some(at) = first.checked_add(off) else {
        return false;
    };
    // SAFETY: `pages` holds the MR's pinned pages; the helper checks the range against
    // their number and copies page by page.
    unsafe { b::rxe_sr_glue_pages_copy(pages.as_ptr(), pages.len(), at, buf, len, to_mr) == 0 }
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
    let (pages, npages, ps, iova) =
        unsafe { (&(*mr).pages, (*mr).npages, (*mr).page_size, (*mr).iova) };
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
            b::rxe_sr_glue_kva_copy(
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
    pd: *mut b::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    _udata: *mut b::ib_udata,
) -> *mut b::ib_mr {
    // SAFETY: per this function's contract.
    match unsafe { reg_user_mr_inner(pd, start, length, iova, access) } {
        Ok(mr) => mr,
        Err(e) => e.to_ptr(),
    }
}

/// # Safety
/// As [`reg_user_mr`].
unsafe fn reg_user_mr_inner(
    pd: *mut b::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
) -> Result<*mut b::ib_mr> {
    let access = vmr::check_access(access)?;
    if length == 0 {
        return Err(EINVAL);
    }
    let start = usize::try_from(start).map_err(|_| EINVAL)?;
    let len = usize::try_from(length).map_err(|_| EINVAL)?;
    // SAFETY: a live PD's device is live.
    let ibdev = unsafe { (*pd).device };
    // SAFETY: a device of ours.
    let dev = unsafe { RxeSrDev::from_ib(ibdev) };
    // SAFETY: pins `len` bytes of the calling process at `start`, checking the range and
    // the access rights against the VMAs; returns a umem or an ERR_PTR.
    let umem = from_err_ptr(unsafe { b::ib_umem_get(ibdev, start, len, access as c_int) })?;
    // SAFETY: `umem` is the live umem just pinned.
    let (npages, first_off) = unsafe {
        (
            b::rxe_sr_glue_umem_npages(umem),
            b::rxe_sr_glue_umem_first_offset(umem),
        )
    };
    let pages = KVVec::from_elem(ptr::null_mut::<c_void>(), npages, GFP_KERNEL_ACCOUNT)
        .map_err(Error::from)
        .and_then(|mut v| {
            // SAFETY: `v` has room for `npages` pointers; the helper writes at most that many.
            let n = unsafe { b::rxe_sr_glue_umem_pages(umem, v.as_mut_ptr(), v.len()) };
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
            unsafe { b::ib_umem_release(umem) };
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
            unsafe { b::ib_umem_release(umem) };
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
    dev: &RxeSrDev,
    mr: KBox<RxeSrMr>,
    iova: u64,
    length: u64,
) -> Result<*mut b::ib_mr> {
    let mr = KBox::into_raw(mr);
    let release = |mr: *mut RxeSrMr| {
        // SAFETY: `mr` is ours (not in the table): release its pages, free the box.
        unsafe {
            b::ib_umem_release((*mr).umem);
            drop(KBox::from_raw(mr));
        }
    };
    let index = match dev.mrs().reserve(vmr::MIN_MR_INDEX, vmr::MAX_MR_INDEX) {
        Ok(i) => i,
        Err(e) => {
            release(mr);
            return Err(e);
        }
    };
    let key = vmr::key(index, dev.next_key_variant());
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
pub(crate) unsafe extern "C" fn get_dma_mr(pd: *mut b::ib_pd, access: c_int) -> *mut b::ib_mr {
    let access = match u32::try_from(access) {
        Ok(a) if a & !b::ib_access_flags_IB_ACCESS_LOCAL_WRITE == 0 => a,
        _ => return crate::kx::error::eopnotsupp().to_ptr(),
    };
    // SAFETY: a live PD's device is one of ours.
    let ibdev = unsafe { (*pd).device };
    // SAFETY: as above.
    let dev = unsafe { RxeSrDev::from_ib(ibdev) };
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
pub(crate) unsafe extern "C" fn dereg_mr(ibmr: *mut b::ib_mr, _udata: *mut b::ib_udata) -> c_int {
    let mr = ibmr.cast::<RxeSrMr>();
    // SAFETY: every ib_mr we hand out is the first field of a boxed RxeSrMr.
    let (index, umem, ibdev) = unsafe { ((*mr).index, (*mr).umem, (*mr).ibdev) };
    // SAFETY: as above; the counter is atomic.
    if unsafe { (*mr).bound_mws.load(Ordering::Acquire) } != 0 {
        // Windows still bound to it: the application must invalidate or free them first.
        return EBUSY.to_errno();
    }
    // SAFETY: the device we registered the MR on; it outlives its MRs.
    let dev = unsafe { RxeSrDev::from_ib(ibdev) };
    dev.mrs().erase(index);
    // SAFETY: the MR is out of the table; release its pages and free it, once.
    unsafe {
        b::ib_umem_release(umem);
        drop(KBox::from_raw(mr));
    }
    live::LIVE.mrs.dec();
    0
}

/// What an access needs from an MR (IBTA 10.6.3): a local read needs only the key, PD and
/// range; the others also need the right granted at registration. Remote accesses name
/// the QP they arrived on: an R_Key may name a memory window, and a type 2 window answers
/// only its own QP.
#[derive(Clone, Copy)]
pub(crate) enum Access {
    /// A send's gather (L_Key).
    LocalRead,
    /// A receive's scatter or a READ response's placement (L_Key, local write).
    LocalWrite,
    /// An incoming RDMA READ (R_Key) on QP `.0`.
    RemoteRead(u32),
    /// An incoming RDMA WRITE or ATOMIC WRITE (R_Key) on QP `.0`.
    RemoteWrite(u32),
    /// An incoming atomic (R_Key) on QP `.0`.
    RemoteAtomic(u32),
}

impl Access {
    fn flag(self) -> u32 {
        match self {
            Access::LocalRead => 0,
            Access::LocalWrite => b::ib_access_flags_IB_ACCESS_LOCAL_WRITE,
            Access::RemoteRead(_) => b::ib_access_flags_IB_ACCESS_REMOTE_READ,
            Access::RemoteWrite(_) => b::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
            Access::RemoteAtomic(_) => b::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC,
        }
    }

    fn qpn(self) -> Option<u32> {
        match self {
            Access::RemoteRead(q) | Access::RemoteWrite(q) | Access::RemoteAtomic(q) => Some(q),
            Access::LocalRead | Access::LocalWrite => None,
        }
    }
}

/// The region key and the rights to check on it for an access through `key`: a memory
/// window's R_Key leads, for a remote access the window allows, to the region it is bound
/// to, whose own rights were checked at bind time (IBTA 10.6.7.2).
fn resolve(
    dev: &RxeSrDev,
    pd: PdId,
    key: u32,
    va: u64,
    len: u64,
    access: Access,
) -> Option<(u32, Access)> {
    if !vmr::is_mw_key(key) {
        return Some((key, access));
    }
    let lkey = super::mw::reach(dev, key, pd, access.qpn()?, access.flag(), va, len)?;
    Some((lkey, Access::LocalRead))
}

/// Runs `f(mr, byte offset)` on the MR named by `key` when it is live, carries exactly
/// this key (L_Key and R_Key are the same), belongs to `pd`, grants `access` and covers
/// `[va, va + len)`; the MR table's lock is held across `f`, so the MR cannot be
/// deregistered meanwhile (and atomics are serialised). `None` when any check fails.
fn with_mr<R>(
    dev: &RxeSrDev,
    pd: PdId,
    key: u32,
    va: u64,
    len: u64,
    access: Access,
    f: impl FnOnce(*const RxeSrMr, usize) -> Option<R>,
) -> Option<R> {
    let (key, access) = resolve(dev, pd, key, va, len, access)?;
    dev.mrs()
        .with_entry(key >> 8, |p| {
            let mr = p.cast::<RxeSrMr>();
            // SAFETY: entries of the MR table are live RxeSrMr objects; the table lock keeps
            // this one from being deregistered (and freed) while we read it.
            let (mr_key, mr_pd, iova, mr_len, granted, valid) = unsafe { checked_fields(mr) };
            if !valid
                || mr_key != key
                || super::pd::id(mr_pd) != pd
                || granted & access.flag() != access.flag()
            {
                return None;
            }
            let end = va.checked_add(len)?;
            if va < iova || end > iova.saturating_add(mr_len) {
                return None;
            }
            f(mr, usize::try_from(va - iova).ok()?)
        })
        .flatten()
}

/// Copies `dst.len()` bytes at `va` of the MR named by `key` into `dst`. False when the
/// checks of [`with_mr`] fail.
pub(crate) fn read(
    dev: &RxeSrDev,
    pd: PdId,
    key: u32,
    va: u64,
    dst: &mut [u8],
    access: Access,
) -> bool {
    with_mr(dev, pd, key, va, dst.len() as u64, access, |mr, off| {
        // SAFETY: live under the table lock; `dst` is writable for its length.
        unsafe { mr_copy(mr, off, dst.as_mut_ptr().cast(), dst.len(), false) }.then_some(())
    })
    .is_some()
}

/// Copies `src` to `va` of the MR named by `key`. False when the checks of [`with_mr`] fail.
pub(crate) fn write(
    dev: &RxeSrDev,
    pd: PdId,
    key: u32,
    va: u64,
    src: &[u8],
    access: Access,
) -> bool {
    with_mr(dev, pd, key, va, src.len() as u64, access, |mr, off| {
        // SAFETY: live under the table lock; the helper only reads `src`.
        unsafe { mr_copy(mr, off, src.as_ptr().cast_mut().cast(), src.len(), true) }.then_some(())
    })
    .is_some()
}

/// A send's gather step: a failure is a local protection error (IBTA 10.6.3).
pub(crate) fn gather(
    dev: &RxeSrDev,
    pd: PdId,
    lkey: u32,
    addr: u64,
    dst: &mut [u8],
) -> core::result::Result<(), WcStatus> {
    if read(dev, pd, lkey, addr, dst, Access::LocalRead) {
        Ok(())
    } else {
        Err(WcStatus::LocProtErr)
    }
}

/// A receive's scatter step (local write needed): a failure is a local protection error.
pub(crate) fn scatter(
    dev: &RxeSrDev,
    pd: PdId,
    lkey: u32,
    addr: u64,
    src: &[u8],
) -> core::result::Result<(), WcStatus> {
    if write(dev, pd, lkey, addr, src, Access::LocalWrite) {
        Ok(())
    } else {
        Err(WcStatus::LocProtErr)
    }
}

/// A memory window moved from region `was` to region `now` (L_Keys; None: unbound):
/// keeps each region's count of bound windows. Takes the MR table's lock: never call it
/// with the MW table's held (both are xarray locks of one lock class).
pub(crate) fn note_binding(dev: &RxeSrDev, was: Option<u32>, now: Option<u32>) {
    if was == now {
        return;
    }
    let adjust = |lkey: u32, up: bool| {
        let _ = dev.mrs().with_entry(lkey >> 8, |p| {
            // SAFETY: entries of the MR table are live RxeSrMr objects (held by the lock).
            // (By index alone: a region's key may change while bound, by REG_MR.)
            let m = unsafe { &*p.cast::<RxeSrMr>() };
            if up {
                m.bound_mws.fetch_add(1, Ordering::AcqRel);
            } else {
                let _ = m
                    .bound_mws
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
            }
        });
    };
    if let Some(k) = was {
        adjust(k, false);
    }
    if let Some(k) = now {
        adjust(k, true);
    }
}

/// The bind-time view of the MR with L_Key `lkey` on `pd` (a BIND_MW names it).
pub(crate) fn view(dev: &RxeSrDev, pd: PdId, lkey: u32) -> Option<crate::proto::rc::mw::MrView> {
    if vmr::is_mw_key(lkey) {
        return None;
    }
    dev.mrs()
        .with_entry(lkey >> 8, |p| {
            let mr = p.cast::<RxeSrMr>();
            // SAFETY: entries of the MR table are live RxeSrMr objects (table lock held).
            let (key, mr_pd, iova, length, access, valid) = unsafe { checked_fields(mr) };
            (valid && key == lkey && super::pd::id(mr_pd) == pd).then_some(
                crate::proto::rc::mw::MrView {
                    lkey,
                    pd: pd.get(),
                    iova,
                    length,
                    access,
                },
            )
        })
        .flatten()
}

/// Checks that a remote request may access `[va, va + len)` through `rkey`.
pub(crate) fn remote_check(
    dev: &RxeSrDev,
    pd: PdId,
    rkey: u32,
    va: u64,
    len: u32,
    access: Access,
) -> bool {
    with_mr(dev, pd, rkey, va, u64::from(len), access, |_, _| Some(())).is_some()
}

/// An atomic on the 8 bytes at `va` (host byte order, as rdma_rxe): `op(original)` gives the
/// value to store. Returns the original value. Atomics on all MRs of the device are
/// serialised by the MR table's lock.
pub(crate) fn remote_atomic(
    dev: &RxeSrDev,
    pd: PdId,
    qpn: u32,
    rkey: u32,
    va: u64,
    op: impl FnOnce(u64) -> u64,
) -> Option<u64> {
    with_mr(
        dev,
        pd,
        rkey,
        va,
        8,
        Access::RemoteAtomic(qpn),
        |mr, off| {
            let mut cell = [0u8; 8];
            // SAFETY: live under the table lock; `cell` is 8 writable bytes.
            if !unsafe { mr_copy(mr, off, cell.as_mut_ptr().cast(), 8, false) } {
                return None;
            }
            let orig = u64::from_ne_bytes(cell);
            let mut new = op(orig).to_ne_bytes();
            // SAFETY: as above.
            unsafe { mr_copy(mr, off, new.as_mut_ptr().cast(), 8, true) }.then_some(orig)
        },
    )
}

/// `ib_device_ops.alloc_mr`: a fast-registration MR of a kernel PD, for up to `max_num_sg`
/// pages; not usable until a REG_MR work request registers it.
///
/// # Safety
/// Called by the core with a live PD of one of our devices.
pub(crate) unsafe extern "C" fn alloc_mr(
    pd: *mut b::ib_pd,
    mr_type: b::ib_mr_type,
    max_num_sg: u32,
) -> *mut b::ib_mr {
    if mr_type != b::ib_mr_type_IB_MR_TYPE_MEM_REG {
        return crate::kx::error::eopnotsupp().to_ptr();
    }
    if max_num_sg == 0 || max_num_sg > vmr::MAX_FAST_REG_PAGES {
        return EINVAL.to_ptr();
    }
    // SAFETY: a live PD's device is one of ours.
    let ibdev = unsafe { (*pd).device };
    // SAFETY: as above.
    let dev = unsafe { RxeSrDev::from_ib(ibdev) };
    let res = KVVec::from_elem(ptr::null_mut::<c_void>(), max_num_sg as usize, GFP_KERNEL)
        .map_err(Error::from)
        .and_then(|pages| {
            Ok(KBox::new(
                RxeSrMr::new(Kind::Fast, ibdev, 0, ptr::null_mut(), pages, 0),
                GFP_KERNEL,
            )?)
        })
        // SAFETY: no umem; the range is set by REG_MR.
        .and_then(|mr| unsafe { publish(dev, mr, 0, 0) });
    res.unwrap_or_else(|e| e.to_ptr())
}

/// `ib_sg_to_pages`' callback: appends one mapped block.
///
/// # Safety
/// `ibmr` is a fast-registration MR of ours being mapped by [`map_mr_sg`].
unsafe extern "C" fn set_page(ibmr: *mut b::ib_mr, addr: u64) -> c_int {
    let mr = ibmr.cast::<RxeSrMr>();
    // SAFETY: per this function's contract: map_mr_sg holds the MR table's lock, under
    // which alone the page list is read (the data path) or written (here).
    let (pages, n) = unsafe { (&mut (*mr).pages, &mut (*mr).npages) };
    match pages.get_mut(*n) {
        Some(slot) => {
            *slot = addr as usize as *mut c_void;
            *n += 1;
            0
        }
        None => ENOMEM.to_errno(),
    }
}

/// `ib_device_ops.map_mr_sg`: maps a kernel ULP's scatterlist (`ib_map_mr_sg` set the page
/// size) into a fast-registration MR; the core computes `iova` and `length` into `ibmr`.
///
/// # Safety
/// Called by the core with a fast-registration MR of ours and a DMA-mapped scatterlist.
pub(crate) unsafe extern "C" fn map_mr_sg(
    ibmr: *mut b::ib_mr,
    sg: *mut b::scatterlist,
    sg_nents: c_int,
    sg_offset: *mut u32,
) -> c_int {
    let mr = ibmr.cast::<RxeSrMr>();
    // SAFETY: per this function's contract; `kind`, `index` and `ibdev` never change.
    let (kind, index, dev) = unsafe { ((*mr).kind, (*mr).index, RxeSrDev::from_ib((*mr).ibdev)) };
    if kind != Kind::Fast {
        return EINVAL.to_errno();
    }
    // The page list changes under the MR table's lock, as the data path reads it (a ULP
    // that maps an MR still in use gets its new pages, never a torn list). ib_sg_to_pages
    // does not sleep.
    dev.mrs()
        .with_entry(index, |_| {
            // SAFETY: per this function's contract; the lock is held.
            unsafe {
                (*mr).npages = 0;
                b::ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, Some(set_page))
            }
        })
        .unwrap_or_else(|| EINVAL.to_errno())
}

/// A REG_MR work request through a QP of `pd`: the fast-registration MR named by `key`'s
/// index takes `key`, `access` and the range the last map_mr_sg gave it, and becomes valid.
pub(crate) fn fast_reg(
    dev: &RxeSrDev,
    pd: PdId,
    key: u32,
    access: u32,
) -> core::result::Result<(), WcStatus> {
    if vmr::is_mw_key(key) || vmr::check_access(access as i32).is_err() {
        return Err(WcStatus::LocQpOpErr);
    }
    dev.mrs()
        .with_entry(key >> 8, |p| {
            let mr = p.cast::<RxeSrMr>();
            // Field by field: no reference covers the embedded `ib_mr`, whose page size, iova
            // and length the core writes in ib_map_mr_sg (read here volatile, as C data).
            // SAFETY: entries of the MR table are live RxeSrMr objects; the table lock
            // serialises every change to the fields the data path checks.
            unsafe {
                if (*mr).kind != Kind::Fast || super::pd::id((*mr).ibmr.pd) != pd || (*mr).valid {
                    return Err(WcStatus::LocQpOpErr);
                }
                let ps = u64::from(ptr::read_volatile(ptr::addr_of!((*mr).ibmr.page_size)));
                let iova = ptr::read_volatile(ptr::addr_of!((*mr).ibmr.iova));
                let length = ptr::read_volatile(ptr::addr_of!((*mr).ibmr.length));
                let room = ((*mr).npages as u64)
                    .saturating_mul(ps)
                    .saturating_sub(if ps == 0 { 0 } else { iova % ps });
                if ps == 0 || length > room {
                    return Err(WcStatus::LocQpOpErr);
                }
                (*mr).key = key;
                (*mr).access = access;
                (*mr).iova = iova;
                (*mr).length = length;
                (*mr).page_size = ps;
                (*mr).valid = true;
                Ok(())
            }
        })
        .unwrap_or(Err(WcStatus::LocQpOpErr))
}

/// LOCAL_INV or SEND with invalidate of MR key `key` through a QP of `pd`: only a valid
/// fast-registration MR can be invalidated (as rdma_rxe).
pub(crate) fn invalidate(dev: &RxeSrDev, pd: PdId, key: u32) -> bool {
    dev.mrs()
        .with_entry(key >> 8, |p| {
            let mr = p.cast::<RxeSrMr>();
            // SAFETY: as in fast_reg.
            unsafe {
                let ok = (*mr).kind == Kind::Fast
                    && (*mr).valid
                    && (*mr).key == key
                    && super::pd::id((*mr).ibmr.pd) == pd;
                if ok {
                    (*mr).valid = false;
                }
                ok
            }
        })
        .unwrap_or(false)
}
