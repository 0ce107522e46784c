// SPDX-License-Identifier: GPL-2.0
//! Memory windows' state. Windows live in the device's MW table; their R_Keys use the index
//! range above the MRs' (`objects::mr::is_mw_key`), so a key names one table or the other.
//! The rules are `proto::rc::mw`; here they are applied under the window's lock, taken with
//! the table's (the MR and MW tables' locks never nest: the regions' bound-window counts
//! are kept after the MW table's lock is released).

use kernel::alloc::KBox;
use kernel::prelude::*;
use kernel::sync::SpinLock;

use crate::kx::ib_pd::PdId;
use crate::objects::device::RoceDevice;
use crate::objects::mr;
use crate::proto::rc::mw::{BindReq, MrView, MwError, Window};

/// An entry of the device's MW table: the window, changed under its lock.
pub(crate) type MwTableEntry = Pin<KBox<SpinLock<Window>>>;

/// The driver's data in each MW: its index in the device's MW table.
pub(crate) struct MwSlot {
    pub(crate) index: u32,
}

/// Runs `f` on the window named by `rkey`'s index, under its lock.
fn with_window<R>(dev: &RoceDevice, rkey: u32, f: impl FnOnce(&mut Window) -> R) -> Option<R> {
    dev.mws().with(rkey >> 8, |w| f(&mut w.lock()))
}

/// A window is being freed: it leaves the table, and the region it was bound to loses its
/// count (its key stops working at once).
pub(crate) fn retire(dev: &RoceDevice, index: u32) {
    // Unbound first (its region may be deregistered after this), then out of the table:
    // after the erase no lookup can reach it.
    let was = dev.mws().with(index, |w| w.lock().mr_lkey.take()).flatten();
    drop(dev.mws().erase(index));
    // Outside the MW table's lock (the tables' locks never nest).
    mr::note_binding(dev, was, None);
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
    // loses its count afterwards.
    let now = mr.filter(|_| req.length != 0).map(|m| m.lkey);
    mr::note_binding(dev, None, now);
    let res = with_window(dev, req.mw_rkey, |w| {
        let was = w.mr_lkey;
        (w.bind(req, qp_pd.get(), qpn, mr), was)
    });
    match res {
        Some((Ok(()), was)) => {
            mr::note_binding(dev, was, None);
            Ok(())
        }
        Some((Err(e), _)) => {
            mr::note_binding(dev, now, None);
            Err(e)
        }
        None => {
            mr::note_binding(dev, now, None);
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
        // The region's count, after the MW table's lock is released.
        mr::note_binding(dev, was, None);
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
