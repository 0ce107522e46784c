// SPDX-License-Identifier: GPL-2.0
//! Fast-registration MRs: `alloc_mr`, `map_mr_sg` (the page list), and the REG_MR and
//! LOCAL_INV work requests that make a key valid and invalid.

use super::*;

/// `ib_device_ops.alloc_mr`: a fast-registration MR of a kernel PD, for up to `max_num_sg`
/// pages; not usable until a REG_MR work request registers it.
///
/// # Safety
/// Called by the core with a live PD of one of our devices.
pub(crate) unsafe extern "C" fn alloc_mr(
    pd: *mut bindings::ib_pd,
    mr_type: bindings::ib_mr_type,
    max_num_sg: u32,
) -> *mut bindings::ib_mr {
    if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
        return crate::kx::error::eopnotsupp().to_ptr();
    }
    if max_num_sg == 0 || max_num_sg > verbs::mr::MAX_FAST_REG_PAGES {
        return EINVAL.to_ptr();
    }
    // SAFETY: a live PD's device is one of ours.
    let ibdev = unsafe { (*pd).device };
    // SAFETY: as above.
    let dev = unsafe { RoceDevice::from_ib(ibdev) };
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
pub(super) unsafe extern "C" fn set_page(ibmr: *mut bindings::ib_mr, addr: u64) -> c_int {
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
    ibmr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    sg_nents: c_int,
    sg_offset: *mut u32,
) -> c_int {
    let mr = ibmr.cast::<RxeSrMr>();
    // SAFETY: per this function's contract; `kind`, `index` and `ibdev` never change.
    let (kind, index, dev) = unsafe { ((*mr).kind, (*mr).index, RoceDevice::from_ib((*mr).ibdev)) };
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
                bindings::ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, Some(set_page))
            }
        })
        .unwrap_or_else(|| EINVAL.to_errno())
}

/// A REG_MR work request through a QP of `pd`: the fast-registration MR named by `key`'s
/// index takes `key`, `access` and the range the last map_mr_sg gave it, and becomes valid.
pub(crate) fn fast_reg(
    dev: &RoceDevice,
    pd: PdId,
    key: u32,
    access: u32,
) -> core::result::Result<(), WcStatus> {
    if verbs::mr::is_mw_key(key) || verbs::mr::check_access(access as i32).is_err() {
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
                if (*mr).kind != Kind::Fast || PdId::of((*mr).ibmr.pd) != pd || (*mr).valid {
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
pub(crate) fn invalidate(dev: &RoceDevice, pd: PdId, key: u32) -> bool {
    dev.mrs()
        .with_entry(key >> 8, |p| {
            let mr = p.cast::<RxeSrMr>();
            // SAFETY: as in fast_reg.
            unsafe {
                let ok = (*mr).kind == Kind::Fast
                    && (*mr).valid
                    && (*mr).key == key
                    && PdId::of((*mr).ibmr.pd) == pd;
                if ok {
                    (*mr).valid = false;
                }
                ok
            }
        })
        .unwrap_or(false)
}
