// SPDX-License-Identifier: GPL-2.0
//! RDMA link types (include/rdma/rdma_netlink.h): `rdma link add NAME type rxe_sr netdev
//! DEV` reaches a [`LinkOps`] handler.

use core::pin::Pin;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::alloc::KBox;
use kernel::c_str;
use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::types::Opaque;

use crate::kx::bindings;
use crate::kx::netdevice::NetDev;
use crate::kx::registration::pin_table;

/// What the `rxe_sr` link type does.
pub(crate) trait LinkOps {
    /// Creates a device named `name` on `nd` (under the RDMA netlink core's link-ops lock,
    /// process context).
    fn newlink(name: &CStr, nd: &NetDev) -> Result;
}

/// Whether the `rxe_sr` link type is registered: the core allows one `rdma_link_ops` per
/// type name.
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// The registered link type `rxe_sr`, owning the `rdma_link_ops` the core links into its
/// list; unregistered on drop.
///
/// # Invariants
/// `ops` is registered with the RDMA netlink core until `drop`, and `REGISTERED` is set.
pub(crate) struct LinkTypeRegistration {
    ops: Pin<KBox<Opaque<bindings::rdma_link_ops>>>,
}

// SAFETY: the table is only read by the core (under its link-ops lock) and freed after
// unregistering; its pointers are to static data and a function.
unsafe impl Send for LinkTypeRegistration {}
// SAFETY: no method takes `&self`.
unsafe impl Sync for LinkTypeRegistration {}

impl LinkTypeRegistration {
    /// Registers the `rxe_sr` link type, served by `T` (`EBUSY` if a registration exists).
    pub(crate) fn register<T: LinkOps>() -> Result<Self> {
        if REGISTERED.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        let table = bindings::rdma_link_ops {
            type_: c_str!("rxe_sr").as_char_ptr(),
            newlink: Some(newlink::<T>),
            ..Default::default()
        };
        let ops = pin_table(table, &REGISTERED)?;
        // SAFETY: our table, pinned until `drop` unregisters it, its handler sound for any
        // name and netdev; no other `rxe_sr` table is registered (`REGISTERED` was clear).
        unsafe { bindings::rdma_link_register(ops.get()) };
        // INVARIANT: registered above; `REGISTERED` set.
        Ok(LinkTypeRegistration { ops })
    }
}

impl Drop for LinkTypeRegistration {
    fn drop(&mut self) {
        // SAFETY: registered (type invariant); unregistering takes the core's link-ops lock,
        // so no newlink is running afterwards and the table may be freed.
        unsafe { bindings::rdma_link_unregister(self.ops.get()) };
        REGISTERED.store(false, Ordering::Release);
    }
}

/// `rdma_link_ops.newlink`.
///
/// # Safety
/// Called by the RDMA netlink core (under its link-ops lock) with a NUL-terminated device
/// name and a net_device it holds a reference on for the duration of the call.
unsafe extern "C" fn newlink<T: LinkOps>(
    ibdev_name: *const c_char,
    ndev: *mut bindings::net_device,
) -> c_int {
    // SAFETY: per this function's contract, live for the call.
    let Some(nd) = (unsafe { NetDev::from_raw(ndev) }) else {
        return EINVAL.to_errno();
    };
    if ibdev_name.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: per this function's contract, the name is NUL-terminated and valid.
    let name = unsafe { CStr::from_char_ptr(ibdev_name) };
    match T::newlink(name, nd) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
