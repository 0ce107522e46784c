// SPDX-License-Identifier: GPL-2.0
//! RDMA link types (include/rdma/rdma_netlink.h): `rdma link add NAME type rxe_sr netdev
//! DEV` reaches a [`LinkOps`] handler.

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CStr;

use crate::kx::bindings;
use crate::kx::netdevice::NetDev;

/// What the `rxe_sr` link type does.
pub(crate) trait LinkOps {
    /// Creates a device named `name` on `nd` (under the RDMA netlink core's link-ops lock,
    /// process context).
    fn newlink(name: &CStr, nd: &NetDev<'_>) -> Result;
}

/// kx/c/registrations.c has one `rdma_link_ops`: at most one registration at a time.
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// The registered link type `rxe_sr`; unregistered on drop.
pub(crate) struct LinkTypeRegistration(());

impl LinkTypeRegistration {
    /// Registers the `rxe_sr` link type, served by `T` (`EBUSY` if a registration exists).
    pub(crate) fn register<T: LinkOps>() -> Result<Self> {
        if REGISTERED.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        // SAFETY: registers kx/c/registrations.c's static rdma_link_ops, not registered (checked above),
        // with a handler sound for any name and netdev the core passes; undone in `drop`.
        unsafe { bindings::rxe_sr_glue_link_register(Some(newlink::<T>)) };
        Ok(LinkTypeRegistration(()))
    }
}

impl Drop for LinkTypeRegistration {
    fn drop(&mut self) {
        // SAFETY: the ops were registered in `register`; unregistering takes the core's
        // link-ops lock, so no newlink is running afterwards.
        unsafe { bindings::rxe_sr_glue_link_unregister() };
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
    match T::newlink(name, &nd) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
