// SPDX-License-Identifier: GPL-2.0
//! `rdma link add NAME type rxe_sr netdev DEV`: the link type and its entry point.

use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CStr;

use super::{device, netdev::NetDev};
use crate::kx::bindings;

/// The registered link type `rxe_sr`; unregistered on drop.
pub(crate) struct LinkTypeRegistration(());

impl LinkTypeRegistration {
    /// Registers the `rxe_sr` link type with the RDMA netlink core.
    pub(crate) fn register() -> Self {
        // SAFETY: registers glue.c's static rdma_link_ops once; undone in `drop`.
        unsafe { bindings::rxe_sr_glue_link_register() };
        LinkTypeRegistration(())
    }
}

impl Drop for LinkTypeRegistration {
    fn drop(&mut self) {
        // SAFETY: the ops were registered in `register`.
        unsafe { bindings::rxe_sr_glue_link_unregister() };
    }
}

/// Creates an rxe_sr device on a netdev (rdma_link_ops.newlink).
///
/// # Safety
/// Called by the RDMA netlink core (under its link-ops lock) with a NUL-terminated device
/// name and a net_device it holds a reference on for the duration of the call.
#[no_mangle]
unsafe extern "C" fn rxe_sr_rs_newlink(
    ibdev_name: *const c_char,
    ndev: *mut bindings::net_device,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(nd) = (unsafe { NetDev::from_raw(ndev) }) else {
        return EINVAL.to_errno();
    };
    if ibdev_name.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: per this function's contract, the name is NUL-terminated and valid.
    let name = unsafe { CStr::from_char_ptr(ibdev_name) };
    match device::add(name, &nd) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
