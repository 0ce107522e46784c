// SPDX-License-Identifier: GPL-2.0
//! Address handles (include/rdma/ib_verbs.h, `struct ib_ah`): [`Ah<T>`], the AH the core
//! allocates with the driver's data inside it, and the `create_ah`, `create_user_ah` and
//! `destroy_ah` entries of `ib_device_ops`, which call the driver's
//! [`AhDriver::create_ah`] and [`AhDriver::destroy_ah`].

use core::mem::size_of;
use core::ptr;
use kernel::error::from_result;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::types::Opaque;

use crate::kx::bindings;
use crate::kx::ib_device::{Device, DriverData};
use crate::kx::ib_pd::PdId;
use crate::kx::ib_udata::UData;
use crate::kx::ib_verbs::AhAttr;

/// A driver's address handles: the data in each and the verbs that make and destroy one.
pub(crate) trait AhDriver: DriverData {
    /// The driver's data in each address handle ([`Ah`](crate::kx::ib_ah::Ah)).
    type Ah: Send + Sync;

    /// `create_ah` / `create_user_ah`: an address handle in `pd` for `attr`. A kernel
    /// consumer (`udata` `None`) may call in atomic context: nothing may sleep then.
    fn create_ah(
        dev: &Device<Self>,
        pd: PdId,
        attr: &AhAttr,
        udata: Option<UData<'_>>,
    ) -> Result<Self::Ah>;

    /// `destroy_ah`, before the AH's data is dropped (possibly in atomic context).
    fn destroy_ah(dev: &Device<Self>, ah: &Self::Ah);
}

/// An address handle of a `T` device: the core's `struct ib_ah` and the driver's data.
///
/// # Invariants
/// Allocated (zeroed, `size_ib_ah` bytes) and freed by the core; `data` is initialised from
/// the driver's successful `create_ah` until `destroy_ah` drops it, and every `&Ah<T>`
/// handed out lies within that span (the core never passes an AH it failed to create).
#[repr(C)]
pub(crate) struct Ah<T: AhDriver> {
    ib: Opaque<bindings::ib_ah>,
    data: T::Ah,
}

impl<T: AhDriver> Ah<T> {
    /// `ib` comes first: a pointer to the core's part, which the core hands to every
    /// callback, is one to the whole object (checked at build time).
    const IB_FIRST: () = assert!(core::mem::offset_of!(Self, ib) == 0);

    /// The object whose core part `ib` is: the same address ([`Self::IB_FIRST`]).
    fn container(ib: *mut bindings::ib_ah) -> *mut Self {
        let () = Self::IB_FIRST;
        ib.cast()
    }

    /// The AH a kernel consumer's work request names.
    ///
    /// # Safety
    /// `raw` is null or an AH of a `T` device, created and not yet destroyed, for `'a` (the
    /// poster of a work request keeps its AH until the request is taken).
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::ib_ah) -> Option<&'a Self> {
        // SAFETY: per this function's contract, an initialised `Ah<T>` (`IB_FIRST`: the
        // core's part begins it, checked at build time).
        unsafe { Self::container(raw).as_ref() }
    }

    /// The PD it was created in.
    pub(crate) fn pd(&self) -> PdId {
        // SAFETY: the core sets `pd` before `create_ah` and never changes it.
        PdId::from_raw(unsafe { (*self.ib.get()).pd })
    }
}

impl<T: AhDriver> core::ops::Deref for Ah<T> {
    type Target = T::Ah;

    fn deref(&self) -> &T::Ah {
        &self.data
    }
}

/// The size the core allocates per AH.
pub(super) const fn size<T: AhDriver>() -> usize {
    size_of::<Ah<T>>()
}

/// `ib_device_ops.create_ah` (kernel consumers: `udata` null, possibly in atomic context)
/// and `create_user_ah` (uverbs).
///
/// # Safety
/// Called by the core with a zeroed AH object of `T`'s size on a `T` device, its `device`
/// and `pd` set, a valid init attribute block whose source GID attribute the core holds for
/// the call, and null or the call's `udata`.
pub(super) unsafe extern "C" fn create_ah<T: AhDriver>(
    ibah: *mut bindings::ib_ah,
    init: *mut bindings::rdma_ah_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: per this function's contract, the device is a live `T` device.
        let dev = unsafe { Device::<T>::from_raw((*ibah).device) };
        // SAFETY: `pd` is set by the core before the call.
        let pd = PdId::from_raw(unsafe { (*ibah).pd });
        // SAFETY: the init block and its address attribute are valid for the call, and the
        // core holds the source GID attribute's reference meanwhile.
        let attr = unsafe { AhAttr::from_core(&*(*init).ah_attr) };
        // SAFETY: null or the call's user data.
        let udata = unsafe { UData::from_raw(udata) };
        let data = T::create_ah(dev, pd, &attr, udata)?;
        // SAFETY: the object is ours and not yet visible to anyone; from here it is
        // initialised (type invariant), until `destroy_ah`.
        unsafe { ptr::addr_of_mut!((*Ah::<T>::container(ibah)).data).write(data) };
        Ok(0)
    })
}

/// `ib_device_ops.destroy_ah`: possibly in atomic context (unless `flags` says it may
/// sleep); the core frees the object after.
///
/// # Safety
/// Called by the core once per AH it created on a `T` device, when nothing uses it.
pub(super) unsafe extern "C" fn destroy_ah<T: AhDriver>(
    ibah: *mut bindings::ib_ah,
    _flags: u32,
) -> c_int {
    let ah = Ah::<T>::container(ibah);
    // SAFETY: per this function's contract: a live `T` device and an initialised AH.
    let (dev, data) = unsafe { (Device::<T>::from_raw((*ibah).device), &(*ah).data) };
    T::destroy_ah(dev, data);
    // SAFETY: initialised (type invariant) and unused from here; dropped once, as the core
    // destroys an AH once.
    unsafe { ptr::drop_in_place(ptr::addr_of_mut!((*ah).data)) };
    0
}
