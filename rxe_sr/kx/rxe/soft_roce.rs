// SPDX-License-Identifier: GPL-2.0
//! What a soft-RoCE device adds to the generic device (include/rdma/ib_verbs.h,
//! `struct ib_device_ops`): the [`SoftRoce`] hooks (the device attribute `recovery`) and
//! [`device_ops`], the operations installed beside [`Driver`]'s: rdma_rxe's driver id, which
//! the stock rdma-core rxe provider binds to, the `mmap` of the queues it shares with user
//! space, and the sysfs attribute group (kx/c/params.c).

use kernel::ffi::c_int;

use crate::kx::bindings;
use crate::kx::ib_device::Device;
use crate::kx::ib_device_ops::ExtraOps;
use crate::kx::ib_driver::Driver;
use crate::kx::rxe::mmap_queue;
use crate::proto::recovery::scheme::Scheme;

/// The hooks of a soft-RoCE driver beyond the verbs.
pub(crate) trait SoftRoce: Driver {
    /// The device attribute `recovery`: the loss-recovery scheme of RC QPs connected from
    /// now on.
    fn scheme(dev: &Device<Self>) -> Scheme;

    /// A write of the device attribute `recovery` (sysfs, process context).
    fn set_scheme(dev: &Device<Self>, scheme: Scheme);
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
    let (get, set) = (scheme_get::<T>, scheme_set::<T>);
    // SAFETY: the accessors hold for every device of this driver (sysfs calls them only
    // while the attribute exists: `scheme_get`'s contract); the returned group is static.
    ops.device_group = unsafe { bindings::rxe_sr_glue_device_group(Some(get), Some(set)) };
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
