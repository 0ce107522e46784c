// SPDX-License-Identifier: GPL-2.0
//! Memory windows (include/rdma/ib_verbs.h, `struct ib_mw`): [`Mw<T>`], the window the core
//! allocates with the driver's data inside it, and the `alloc_mw` and `dealloc_mw` entries
//! of `ib_device_ops`, which call the driver's `MwDriver` methods.

use core::mem::size_of;
use core::ptr;
use kernel::error::from_result;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::types::Opaque;

use crate::kx::bindings;
use crate::kx::ib_device::{Device, DriverData};
use crate::kx::ib_pd::PdId;

/// A driver's memory windows: the data in each and the verbs that allocate and free one.
pub(crate) trait MwDriver: DriverData {
    /// The driver's data in each memory window ([`Mw`](crate::kx::ib_mw::Mw)).
    type Mw: Send + Sync;

    /// `alloc_mw`: a window of `mw_type` in `pd`; returns its data and its R_Key.
    fn alloc_mw(dev: &Device<Self>, pd: PdId, mw_type: MwType) -> Result<(Self::Mw, u32)>;

    /// `dealloc_mw`, before the window's data is dropped.
    fn dealloc_mw(dev: &Device<Self>, mw: &Self::Mw);
}

/// The window type (`enum ib_mw_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MwType {
    /// `IB_MW_TYPE_1`: bound by the bind verb.
    Type1,
    /// `IB_MW_TYPE_2`: bound by a work request.
    Type2,
}

impl MwType {
    /// The type `raw` names, if it is one.
    pub(crate) fn from_raw(raw: bindings::ib_mw_type) -> Option<Self> {
        match raw {
            bindings::ib_mw_type_IB_MW_TYPE_1 => Some(MwType::Type1),
            bindings::ib_mw_type_IB_MW_TYPE_2 => Some(MwType::Type2),
            _ => None,
        }
    }
}

/// A memory window of a `T` device: the core's `struct ib_mw` and the driver's data.
///
/// # Invariants
/// Allocated (zeroed, `size_ib_mw` bytes) and freed by the core; `data` is initialised
/// from the driver's successful `alloc_mw` until `dealloc_mw` drops it.
#[repr(C)]
pub(crate) struct Mw<T: MwDriver> {
    ib: Opaque<bindings::ib_mw>,
    data: T::Mw,
}

impl<T: MwDriver> Mw<T> {
    /// `ib` comes first: a pointer to the core's part, which the core hands to every
    /// callback, is one to the whole object (checked at build time).
    const IB_FIRST: () = assert!(core::mem::offset_of!(Self, ib) == 0);

    /// The object whose core part `ib` is: the same address ([`Self::IB_FIRST`]).
    fn container(ib: *mut bindings::ib_mw) -> *mut Self {
        let () = Self::IB_FIRST;
        ib.cast()
    }
}

/// The size the core allocates per MW.
pub(super) const fn size<T: MwDriver>() -> usize {
    size_of::<Mw<T>>()
}

/// `ib_device_ops.alloc_mw`: the window's R_Key goes to the core's `ib_mw`.
///
/// # Safety
/// Called by the core with a zeroed MW object of `T`'s size on a `T` device, its device,
/// PD and type set.
pub(super) unsafe extern "C" fn alloc_mw<T: MwDriver>(
    ibmw: *mut bindings::ib_mw,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: per this function's contract.
        let (dev, pd, ty) = unsafe {
            (
                Device::<T>::from_raw((*ibmw).device),
                PdId::from_raw((*ibmw).pd),
                (*ibmw).type_,
            )
        };
        let mw_type = MwType::from_raw(ty).ok_or(EINVAL)?;
        let (data, rkey) = T::alloc_mw(dev, pd, mw_type)?;
        let mw = Mw::<T>::container(ibmw);
        // SAFETY: the object is ours and not yet visible to the core's users; from here it
        // is initialised (type invariant), until `dealloc_mw`.
        unsafe {
            ptr::addr_of_mut!((*mw).data).write(data);
            (*ibmw).rkey = rkey;
        }
        Ok(0)
    })
}

/// `ib_device_ops.dealloc_mw`; the core frees the object after.
///
/// # Safety
/// Called by the core once per MW it allocated on a `T` device.
pub(super) unsafe extern "C" fn dealloc_mw<T: MwDriver>(ibmw: *mut bindings::ib_mw) -> c_int {
    let mw = Mw::<T>::container(ibmw);
    // SAFETY: per this function's contract: a live `T` device and an initialised MW.
    let (dev, data) = unsafe { (Device::<T>::from_raw((*ibmw).device), &(*mw).data) };
    T::dealloc_mw(dev, data);
    // SAFETY: initialised (type invariant) and unused from here; dropped once.
    unsafe { ptr::drop_in_place(ptr::addr_of_mut!((*mw).data)) };
    0
}
