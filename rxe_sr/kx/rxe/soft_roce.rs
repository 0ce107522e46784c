// SPDX-License-Identifier: GPL-2.0
//! What a soft-RoCE device adds to the generic device (include/rdma/ib_verbs.h,
//! `struct ib_device_ops`): the [`SoftRoce`] hooks (the device attributes `recovery` and
//! `fec`) and
//! [`device_ops`], the operations installed beside [`Driver`]'s: rdma_rxe's driver id, which
//! the stock rdma-core rxe provider binds to, the `mmap` of the queues it shares with user
//! space, and the sysfs attribute group (kx/c/params.c).

use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CStr;

use crate::kx::bindings;
use crate::kx::ib_device::Device;
use crate::kx::ib_device_ops::ExtraOps;
use crate::kx::ib_driver::Driver;
use crate::kx::rxe::mmap_queue;
use crate::proto::fec::FecParams;
use crate::proto::recovery::scheme::Scheme;

/// The hooks of a soft-RoCE driver beyond the verbs.
pub(crate) trait SoftRoce: Driver {
    /// The device attribute `recovery`: the loss-recovery scheme of RC QPs connected from
    /// now on.
    fn scheme(dev: &Device<Self>) -> Scheme;

    /// A write of the device attribute `recovery` (sysfs, process context).
    fn set_scheme(dev: &Device<Self>, scheme: Scheme);

    /// The device attribute `fec`: the FEC shim of RC and UC QPs connected from now on
    /// (`None`: none).
    fn fec(dev: &Device<Self>) -> Option<FecParams>;

    /// A write of the device attribute `fec` (sysfs, process context).
    fn set_fec(dev: &Device<Self>, fec: Option<FecParams>);
}

/// The operations a `T` device carries besides those [`Driver`] builds.
pub(crate) fn device_ops<T: SoftRoce>() -> ExtraOps {
    ExtraOps(add_ops::<T>)
}

/// Fills in the soft-RoCE operations of a `T` device's table.
fn add_ops<T: SoftRoce>(ops: &mut bindings::ib_device_ops) {
    ops.driver_id = bindings::rdma_driver_id_RDMA_DRIVER_RXE;
    ops.mmap = Some(mmap_queue::mmap);
    ops.mmap_free = Some(mmap_queue::mmap_free);
    let acc = bindings::rxe_sr_dev_accessors {
        scheme_get: Some(scheme_get::<T>),
        scheme_set: Some(scheme_set::<T>),
        fec_get: Some(fec_get::<T>),
        fec_set: Some(fec_set::<T>),
    };
    // SAFETY: the accessors (copied) hold for every device of this driver while sysfs
    // can call them (`scheme_get`'s contract); the group returned is static.
    ops.device_group = unsafe { bindings::rxe_sr_glue_device_group(&acc) };
}

/// Reads the device attribute `recovery`: the scheme's index.
///
/// # Safety
/// `ib` is a registered device `Unregistered::new` (ib_device_ops.rs) made for `T` (sysfs calls this only
/// while the attribute exists, which the core removes before freeing the device).
unsafe extern "C" fn scheme_get<T: SoftRoce>(ib: *mut bindings::ib_device) -> c_int {
    // SAFETY: per this function's contract.
    let dev = unsafe { Device::<T>::from_raw(ib) };
    T::scheme(dev).index()
}

/// Writes the device attribute `recovery` (an index `rxe_sr_rs_recovery_parse` returned).
///
/// # Safety
/// As for [`scheme_get`].
unsafe extern "C" fn scheme_set<T: SoftRoce>(ib: *mut bindings::ib_device, index: c_int) {
    // SAFETY: per this function's contract.
    let dev = unsafe { Device::<T>::from_raw(ib) };
    if let Some(s) = Scheme::from_index(index) {
        T::set_scheme(dev, s);
    }
}

/// Reads the device attribute `fec`: [`FecParams::to_byte`], 0 for none.
///
/// # Safety
/// As for [`scheme_get`].
unsafe extern "C" fn fec_get<T: SoftRoce>(ib: *mut bindings::ib_device) -> c_int {
    // SAFETY: per this function's contract.
    let dev = unsafe { Device::<T>::from_raw(ib) };
    T::fec(dev).map_or(0, |p| c_int::from(p.to_byte()))
}

/// Writes the device attribute `fec` from what was written to it: 0, or `-EINVAL` for
/// anything but "off" or N:D ([`FecParams::from_setting`]).
///
/// # Safety
/// As for [`scheme_get`]; `buf` is the NUL-terminated buffer sysfs hands a store.
unsafe extern "C" fn fec_set<T: SoftRoce>(
    ib: *mut bindings::ib_device,
    buf: *const c_char,
) -> c_int {
    if buf.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: per this function's contract.
    let (dev, s) = unsafe { (Device::<T>::from_raw(ib), CStr::from_char_ptr(buf)) };
    match FecParams::from_setting(s.as_bytes()) {
        Ok(p) => {
            T::set_fec(dev, p);
            0
        }
        Err(_) => EINVAL.to_errno(),
    }
}
