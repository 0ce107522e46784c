// SPDX-License-Identifier: GPL-2.0
//! The module's own RDMA devices (include/rdma/ib_verbs.h's `struct ib_device`, in a list
//! kept beside the core's): rdma_rxe's devices carry
//! the same driver id (the stock rdma-core provider binds by it), so module unload cannot
//! use `ib_unregister_driver`, which would take rdma_rxe's devices down too.

use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::global_mutex::GlobalMutex;

/// The module's devices with their ops installed and not yet freed (`ib_device`
/// addresses; 0 is a free slot): module unload unregisters these, and not every device of
/// the driver id, which rdma_rxe's devices carry too.
///
/// # Invariants
/// An address is entered by `Unregistered::new` (ib_device_ops.rs) once
/// the device's ops (with `dealloc_driver`) are installed, and removed by
/// `dealloc_driver`, under the lock, before the device is freed: while the lock is held,
/// each listed device is allocated.
static DEVICES: GlobalMutex<KVec<usize>> = GlobalMutex::new(KVec::new());

/// Lists a device whose ops are installed (its `dealloc_driver` will unlist it).
pub(super) fn insert(ibdev: *mut bindings::ib_device) -> Result {
    let mut t = DEVICES.lock();
    match t.iter_mut().find(|a| **a == 0) {
        Some(slot) => *slot = ibdev as usize,
        None => t.push(ibdev as usize, GFP_KERNEL)?,
    }
    Ok(())
}

/// Unlists a device (its `dealloc_driver`, before the core frees it).
pub(super) fn remove(ibdev: *mut bindings::ib_device) {
    let mut t = DEVICES.lock();
    if let Some(slot) = t.iter_mut().find(|a| **a == ibdev as usize) {
        *slot = 0;
    }
    if t.iter().all(|a| *a == 0) {
        // A static is never dropped: free the vector once it holds nothing.
        *t = KVec::new();
    }
}

/// The module's registered devices, a reference taken on each (`ib_device_try_get`; a
/// device being unregistered is left out): the caller drops each with `ib_device_put`.
pub(super) fn referenced() -> Result<KVec<*mut bindings::ib_device>> {
    let t = DEVICES.lock();
    let mut got = KVec::with_capacity(t.len(), GFP_KERNEL)?;
    for &a in t.iter().filter(|a| **a != 0) {
        // SAFETY: listed under the lock, so allocated (the invariant of `DEVICES`); the
        // reference taken, if any, is ours.
        if unsafe { bindings::rxe_sr_glue_ib_device_try_get(a as *mut _) } {
            // Within the capacity taken above: this push does not allocate or fail.
            let _ = got.push(a as *mut _, GFP_KERNEL);
        }
    }
    Ok(got)
}

/// Unregisters every device of this module (module unload); waits for their users, and
/// for devices whose unregistration another thread has begun to be freed.
pub(crate) fn unregister_all() {
    loop {
        let mut busy = false;
        let mut got = None;
        {
            let t = DEVICES.lock();
            for &a in t.iter().filter(|a| **a != 0) {
                // SAFETY: listed under the lock, so allocated (the invariant of `DEVICES`);
                // the reference taken, if any, is ours.
                if unsafe { bindings::rxe_sr_glue_ib_device_try_get(a as *mut _) } {
                    got = Some(a);
                    break;
                }
                // Being unregistered: its dealloc_driver will unlist it.
                busy = true;
            }
        }
        match got {
            // SAFETY: a registered device on which we hold the reference taken above, which
            // the call drops; it waits for the device's users.
            Some(a) => unsafe { bindings::ib_unregister_device_and_put(a as *mut _) },
            // SAFETY: sleeping in process context (module unload), no lock held.
            None if busy => unsafe { bindings::msleep(10) },
            None => break,
        }
    }
}
