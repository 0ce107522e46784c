// SPDX-License-Identifier: GPL-2.0
//! Management datagrams handed to the driver (include/rdma/ib_verbs.h, `process_mad`):
//! the MADs the RDMA core itself addresses to the device, such as the PerfMgt Gets behind
//! a port's `counters/` directory in sysfs, reach [`MadDriver::local_mad`]; MADs that
//! arrived from the network are left to the MAD layer.

use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::ib_device::{Device, DriverData};
/// Bytes in a MAD (`struct ib_mad`, IBTA 13.4.3).
pub(crate) const MAD_SIZE: usize = bindings::IB_MGMT_MAD_SIZE as usize;

const _: () = assert!(core::mem::size_of::<bindings::ib_mad>() == MAD_SIZE);

/// A driver that answers the MADs the core addresses to the device itself.
#[vtable]
pub(crate) trait MadDriver: DriverData {
    /// A MAD the core addresses to the device itself (`process_mad` with no work
    /// completion: sysfs's port counters): true when `resp` holds the answer, false to
    /// leave it to the MAD layer.
    fn local_mad(
        _dev: &Device<Self>,
        _port: u32,
        _req: &[u8; MAD_SIZE],
        _resp: &mut [u8; MAD_SIZE],
    ) -> bool {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}

const SUCCESS: c_int = bindings::rxe_sr_mad_result_RXE_SR_MAD_RESULT_SUCCESS as c_int;
const REPLY: c_int = bindings::rxe_sr_mad_result_RXE_SR_MAD_RESULT_REPLY as c_int;

/// `process_mad`.
///
/// # Safety
/// Called by the core on a device of ours; `in_mad`, and `out_mad` of `*out_mad_size`
/// bytes, are valid MAD buffers for the call (null pointers are refused).
pub(crate) unsafe extern "C" fn process_mad<T: MadDriver>(
    ibdev: *mut bindings::ib_device,
    _flags: c_int,
    port: u32,
    in_wc: *const bindings::ib_wc,
    _in_grh: *const bindings::ib_grh,
    in_mad: *const bindings::ib_mad,
    out_mad: *mut bindings::ib_mad,
    out_mad_size: *mut usize,
    _out_mad_pkey_index: *mut u16,
) -> c_int {
    // A MAD from the network carries its work completion: the MAD layer's (SUCCESS without
    // REPLY or CONSUMED is what it does with no process_mad at all).
    if !in_wc.is_null() || in_mad.is_null() || out_mad.is_null() || out_mad_size.is_null() {
        return SUCCESS;
    }
    // SAFETY: non-null, and valid for the call (contract).
    if unsafe { *out_mad_size } < MAD_SIZE {
        return SUCCESS;
    }
    // SAFETY: a `struct ib_mad` (MAD_SIZE bytes, checked above at compile time), valid for
    // reads for the call; `u8` arrays have no alignment or validity requirement.
    let req = unsafe { &*in_mad.cast::<[u8; MAD_SIZE]>() };
    // SAFETY: as above, for writes; the core does not read it during the call and it is a
    // distinct buffer from `in_mad`.
    let resp = unsafe { &mut *out_mad.cast::<[u8; MAD_SIZE]>() };
    // SAFETY: a device of ours, live for the call.
    let dev = unsafe { Device::<T>::from_raw(ibdev) };
    if T::local_mad(dev, port, req, resp) {
        // SAFETY: non-null and writable (contract).
        unsafe { *out_mad_size = MAD_SIZE };
        SUCCESS | REPLY
    } else {
        SUCCESS
    }
}
