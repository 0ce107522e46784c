// SPDX-License-Identifier: GPL-2.0
//! User contexts and protection domains: the RDMA core allocates them (sizes in the ops
//! table); rxe_sr only counts them.

use kernel::ffi::c_int;

use kernel::prelude::*;

use crate::kx::bindings;
use crate::objects::device::RoceDevice;
use crate::objects::live;
use crate::objects::pd::PdId;
use crate::uabi::limits;
use crate::verbs::device as vdev;

/// `ib_device_ops.alloc_ucontext`: the rxe provider's GET_CONTEXT carries no driver data.
pub(crate) unsafe extern "C" fn alloc_ucontext(
    _uctx: *mut bindings::ib_ucontext,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    live::LIVE.ucontexts.inc();
    0
}

/// `ib_device_ops.dealloc_ucontext`.
pub(crate) unsafe extern "C" fn dealloc_ucontext(_uctx: *mut bindings::ib_ucontext) {
    live::LIVE.ucontexts.dec();
}

/// `ib_device_ops.alloc_pd`: refused (ENOMEM) when the device has `max_pd` already.
///
/// # Safety
/// Called by the core with a PD of one of our devices.
pub(crate) unsafe extern "C" fn alloc_pd(
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract.
    let dev = unsafe { RoceDevice::from_ib((*pd).device) };
    if !limits::take(&dev.pds_used, vdev::MAX_PD) {
        return ENOMEM.to_errno();
    }
    live::LIVE.pds.inc();
    0
}

/// `ib_device_ops.dealloc_pd`.
///
/// # Safety
/// Called by the core once per allocated PD.
pub(crate) unsafe extern "C" fn dealloc_pd(
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract.
    let dev = unsafe { RoceDevice::from_ib((*pd).device) };
    limits::give_back(&dev.pds_used);
    live::LIVE.pds.dec();
    0
}

/// The identity of the PD `pd` points to (the pointer is compared, never followed).
pub(crate) fn id(pd: *const bindings::ib_pd) -> PdId {
    PdId::from_addr(pd as usize)
}
