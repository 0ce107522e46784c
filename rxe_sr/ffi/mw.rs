// SPDX-License-Identifier: GPL-2.0
//! Memory windows: the C-ABI entry points and the MW object. Windows live in the device's
//! MW table; their R_Keys use the index range above the MRs' (`verbs::mr::is_mw_key`), so
//! a key names one table or the other. The rules are `proto::rc::mw`; here they are applied
//! under the table's lock, which also keeps a window from being freed while in use.

use core::mem::size_of;
use core::ptr;
use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::ib_pd::PdId;
use crate::objects::device::RoceDevice;
use crate::objects::live;
use crate::proto::rc::mw::{BindReq, MrView, MwError, MwType, Window};
use crate::verbs;

/// The MW object: `ibmw` first (the core allocates `size_of::<RxeSrMw>()` zeroed bytes).
#[repr(C)]
pub(crate) struct RxeSrMw {
    ibmw: bindings::ib_mw,
    /// Index in the device's MW table (0: not allocated).
    index: u32,
    /// The window, changed only under the MW table's lock.
    win: Option<Window>,
}

/// Size the core allocates per MW.
pub(crate) const SIZE: usize = size_of::<RxeSrMw>();

/// `ib_device_ops.alloc_mw`: type 1 or type 2 (2B) windows.
///
/// # Safety
/// Called by the core with a zeroed MW object of our size, its PD and type set.
pub(crate) unsafe extern "C" fn alloc_mw(
    ibmw: *mut bindings::ib_mw,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract.
    let (ty, pd, ibdev) = unsafe { ((*ibmw).type_, (*ibmw).pd, (*ibmw).device) };
    let Some(mw_type) = MwType::from_ib(ty) else {
        return EINVAL.to_errno();
    };
    // SAFETY: a device of ours.
    let dev = unsafe { RoceDevice::from_ib(ibdev) };
    let index = match dev
        .mws()
        .reserve(verbs::mr::MIN_MW_INDEX, verbs::mr::MAX_MW_INDEX)
    {
        Ok(i) => i,
        Err(e) => return e.to_errno(),
    };
    let rkey = verbs::mr::key(index, dev.next_key_variant());
    let mw = ibmw.cast::<RxeSrMw>();
    // SAFETY: our zeroed MW object, not yet visible to anyone else.
    unsafe {
        (*mw).index = index;
        ptr::addr_of_mut!((*mw).win).write(Some(Window::new(mw_type, rkey, PdId::of(pd).get())));
        (*ibmw).rkey = rkey;
    }
    if let Err(e) = dev.mws().publish(index, mw.cast()) {
        dev.mws().erase(index);
        return e.to_errno();
    }
    live::LIVE.mws.inc();
    0
}

/// `ib_device_ops.dealloc_mw`: the window's key stops working at once.
///
/// # Safety
/// Called by the core once per allocated MW.
pub(crate) unsafe extern "C" fn dealloc_mw(ibmw: *mut bindings::ib_mw) -> c_int {
    let mw = ibmw.cast::<RxeSrMw>();
    // SAFETY: our MW object; its device is one of ours.
    let (index, dev) = unsafe { ((*mw).index, RoceDevice::from_ib((*ibmw).device)) };
    // Unbound first (its region may be deregistered after this), then out of the table:
    // after the erase no lookup can reach it (lookups run under the table's lock).
    let was = dev
        .mws()
        .with_entry(index, |p| {
            let mw = p.cast::<RxeSrMw>();
            // SAFETY: a live entry of the MW table, changed only under its lock (held).
            unsafe { (*mw).win.as_mut() }.and_then(|w| w.mr_lkey.take())
        })
        .flatten();
    dev.mws().erase(index);
    // Outside the MW table's lock (the tables' locks never nest).
    super::mr::note_binding(dev, was, None);
    live::LIVE.mws.dec();
    0
}

/// Runs `f` on the window named by `rkey`'s index, under the MW table's lock.
fn with_window<R>(dev: &RoceDevice, rkey: u32, f: impl FnOnce(&mut Window) -> R) -> Option<R> {
    dev.mws()
        .with_entry(rkey >> 8, |p| {
            let mw = p.cast::<RxeSrMw>();
            // SAFETY: entries of the MW table are live RxeSrMw objects; the table lock keeps
            // this one from being freed, and serialises every change to its window.
            unsafe { (*mw).win.as_mut() }.map(f)
        })
        .flatten()
}

/// A BIND_MW work request through QP `qpn` of PD `qp_pd`; `mr` is the region it names
/// (looked up by the caller; None when the request's length is 0).
pub(crate) fn bind(
    dev: &RoceDevice,
    req: &BindReq,
    qp_pd: PdId,
    qpn: u32,
    mr: Option<MrView>,
) -> Result<(), MwError> {
    // The region named is counted first, so it cannot be deregistered between the bind and
    // its count; the count is undone if the bind fails, and the region the window leaves
    // loses its count afterwards. (The MR and MW tables' locks never nest.)
    let now = mr.filter(|_| req.length != 0).map(|m| m.lkey);
    super::mr::note_binding(dev, None, now);
    let res = with_window(dev, req.mw_rkey, |w| {
        let was = w.mr_lkey;
        (w.bind(req, qp_pd.get(), qpn, mr), was)
    });
    match res {
        Some((Ok(()), was)) => {
            super::mr::note_binding(dev, was, None);
            Ok(())
        }
        Some((Err(e), _)) => {
            super::mr::note_binding(dev, now, None);
            Err(e)
        }
        None => {
            super::mr::note_binding(dev, now, None);
            Err(MwError::Invalid)
        }
    }
}

/// LOCAL_INV or SEND with invalidate of window key `rkey`, through a QP of PD `qp_pd`.
pub(crate) fn invalidate(dev: &RoceDevice, qp_pd: PdId, rkey: u32) -> Result<(), MwError> {
    let Some((r, was)) = with_window(dev, rkey, |w| {
        let was = w.mr_lkey;
        (w.invalidate(rkey, qp_pd.get()), was)
    }) else {
        return Err(MwError::Invalid);
    };
    if r.is_ok() {
        // The region's count, after the MW table's lock is released: the two tables' locks
        // never nest.
        super::mr::note_binding(dev, was, None);
    }
    r
}

/// The region (its L_Key) a remote request through QP `qpn` of PD `qp_pd` reaches with
/// window key `rkey`, if the window allows `access` on `[va, va + len)`.
pub(crate) fn reach(
    dev: &RoceDevice,
    rkey: u32,
    qp_pd: PdId,
    qpn: u32,
    access: u32,
    va: u64,
    len: u64,
) -> Option<u32> {
    with_window(dev, rkey, |w| {
        w.reach(rkey, qp_pd.get(), qpn, access, va, len)
    })
    .flatten()
}
