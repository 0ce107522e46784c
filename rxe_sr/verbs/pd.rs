// SPDX-License-Identifier: GPL-2.0
//! User contexts and protection domains: the RDMA core allocates and keeps them; rxe_sr
//! counts them (a device refuses a PD past `max_pd`).

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

use crate::objects::device::RoceDevice;
use crate::objects::live;
use crate::uabi::limits;

/// `alloc_ucontext`: the rxe provider's GET_CONTEXT carries no driver data.
pub(crate) fn alloc_ucontext() {
    live::LIVE.ucontexts.inc();
}

/// `dealloc_ucontext`.
pub(crate) fn dealloc_ucontext() {
    live::LIVE.ucontexts.dec();
}

/// User contexts disassociated since the module was loaded (reported at unload).
pub(crate) static DISASSOCIATED: AtomicU64 = AtomicU64::new(0);

/// `disassociate_ucontext`: nothing of the context lives in rxe_sr beyond its objects, which
/// the core destroys next as if the process had destroyed them; counted.
pub(crate) fn disassociate_ucontext() {
    DISASSOCIATED.fetch_add(1, Ordering::Relaxed);
}

/// `alloc_pd`: ENOMEM when the device has `max_pd` already.
pub(crate) fn alloc(dev: &RoceDevice) -> Result {
    if !limits::take(&dev.used.pds, dev.used.max.pd) {
        return Err(ENOMEM);
    }
    live::LIVE.pds.inc();
    Ok(())
}

/// `dealloc_pd`.
pub(crate) fn dealloc(dev: &RoceDevice) {
    limits::give_back(&dev.used.pds);
    live::LIVE.pds.dec();
}
