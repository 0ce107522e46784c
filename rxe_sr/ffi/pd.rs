// SPDX-License-Identifier: GPL-2.0
//! User contexts and protection domains: the RDMA core allocates them (sizes in the ops
//! table); rxe_sr only counts them.

use kernel::ffi::c_int;

use super::bindings as b;
use crate::verbs::objects;

/// `ib_device_ops.alloc_ucontext`: the rxe provider's GET_CONTEXT carries no driver data.
pub(crate) unsafe extern "C" fn alloc_ucontext(_uctx: *mut b::ib_ucontext, _udata: *mut b::ib_udata) -> c_int {
    objects::LIVE.ucontexts.inc();
    0
}

/// `ib_device_ops.dealloc_ucontext`.
pub(crate) unsafe extern "C" fn dealloc_ucontext(_uctx: *mut b::ib_ucontext) {
    objects::LIVE.ucontexts.dec();
}

/// `ib_device_ops.alloc_pd`.
pub(crate) unsafe extern "C" fn alloc_pd(_pd: *mut b::ib_pd, _udata: *mut b::ib_udata) -> c_int {
    objects::LIVE.pds.inc();
    0
}

/// `ib_device_ops.dealloc_pd`.
pub(crate) unsafe extern "C" fn dealloc_pd(_pd: *mut b::ib_pd, _udata: *mut b::ib_udata) -> c_int {
    objects::LIVE.pds.dec();
    0
}
