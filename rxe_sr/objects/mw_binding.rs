// SPDX-License-Identifier: GPL-2.0
//! Memory windows bound to regions: BIND_MW, invalidation (LOCAL_INV, SEND with
//! invalidate) and a window's retirement, on the device's MW table (`objects::mw`), and
//! the regions' counts of bound windows they keep in its MR table. The two tables' locks
//! never nest: the counts are kept after the MW table's lock is released.

use core::sync::atomic::Ordering;

use crate::kx::ib_pd::PdId;
use crate::objects::device::RoceDevice;
use crate::objects::mw::with_window;
use crate::proto::rc::mw::{BindReq, MrView, MwError};

/// A memory window moved from region `was` to region `now` (L_Keys; None: unbound):
/// keeps each region's count of bound windows. Takes the MR table's lock: never call it
/// with the MW table's held (both are xarray locks of one lock class).
fn note_binding(dev: &RoceDevice, was: Option<u32>, now: Option<u32>) {
    if was == now {
        return;
    }
    // By index alone: a region's key may change while bound, by REG_MR.
    let adjust = |lkey: u32, up: bool| {
        let _ = dev.mrs().with(lkey >> 8, |m| {
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

/// A window is being freed: it leaves the table, and the region it was bound to loses its
/// count (its key stops working at once).
pub(crate) fn retire(dev: &RoceDevice, index: u32) {
    // Unbound first (its region may be deregistered after this), then out of the table:
    // after the erase no lookup can reach it.
    let was = dev.mws().with(index, |w| w.lock().mr_lkey.take()).flatten();
    drop(dev.mws().erase(index));
    // Outside the MW table's lock (the tables' locks never nest).
    note_binding(dev, was, None);
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
    note_binding(dev, None, now);
    let res = with_window(dev.mws(), req.mw_rkey, |w| {
        let was = w.mr_lkey;
        (w.bind(req, qp_pd.get(), qpn, mr), was)
    });
    match res {
        Some((Ok(()), was)) => {
            note_binding(dev, was, None);
            Ok(())
        }
        Some((Err(e), _)) => {
            note_binding(dev, now, None);
            Err(e)
        }
        None => {
            note_binding(dev, now, None);
            Err(MwError::Invalid)
        }
    }
}

/// LOCAL_INV or SEND with invalidate of window key `rkey`, through a QP of PD `qp_pd`.
pub(crate) fn invalidate(dev: &RoceDevice, qp_pd: PdId, rkey: u32) -> Result<(), MwError> {
    let Some((r, was)) = with_window(dev.mws(), rkey, |w| {
        let was = w.mr_lkey;
        (w.invalidate(rkey, qp_pd.get()), was)
    }) else {
        return Err(MwError::Invalid);
    };
    if r.is_ok() {
        // The region's count, after the MW table's lock is released.
        note_binding(dev, was, None);
    }
    r
}
