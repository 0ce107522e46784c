// SPDX-License-Identifier: GPL-2.0
//! Shared receive queues (include/rdma/ib_verbs.h, `struct ib_srq`): [`Srq<T>`], the SRQ the
//! core allocates with the driver's data pin-initialised inside it; the limit event; typed
//! attributes; and the SRQ entries of `ib_device_ops`, which call the driver's `SrqDriver`
//! methods.

use core::mem::size_of;
use core::ptr;
use kernel::error::from_result;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::types::Opaque;

use crate::kx::bindings;
use crate::kx::ib_device::{Device, DriverData};
use crate::kx::ib_udata::UData;

/// A driver's shared receive queues: the data in each and the SRQ verbs.
pub(crate) trait SrqDriver: DriverData {
    /// The driver's data in each shared receive queue ([`Srq`]), pin-initialised
    /// there.
    type Srq: Send + Sync;

    /// `create_srq` (a basic SRQ): returns the initialiser of its data and the attributes
    /// it got (reported back to the caller).
    fn create_srq(
        dev: &Device<Self>,
        attr: &SrqAttr,
        udata: Option<UData<'_>>,
    ) -> Result<(impl PinInit<Self::Srq>, SrqAttr)>;

    /// `destroy_srq`, before the SRQ's data is dropped.
    fn destroy_srq(dev: &Device<Self>, srq: &Self::Srq);

    /// `modify_srq`: the attributes `mask` names.
    fn modify_srq(
        srq: &Srq<Self>,
        attr: &SrqAttr,
        mask: SrqAttrMask,
        udata: Option<UData<'_>>,
    ) -> Result;

    /// `query_srq`.
    fn query_srq(srq: &Srq<Self>) -> SrqAttr;

    /// `post_srq_recv`: a kernel consumer's receive work requests (possibly in atomic
    /// context).
    fn post_srq_recv(srq: &Srq<Self>, wrs: RecvWrList<'_>) -> Result;
}
use crate::kx::ib_wr::RecvWrList;

/// A shared receive queue of a `T` device: the core's `struct ib_srq` and the driver's
/// data.
///
/// # Invariants
/// Allocated (zeroed, `size_ib_srq` bytes) and freed by the core, never moved; `data` is
/// initialised from the driver's successful `create_srq` until `destroy_srq` drops it, and
/// every `&Srq<T>` handed out lies within that span.
#[repr(C)]
pub(crate) struct Srq<T: SrqDriver> {
    ib: Opaque<bindings::ib_srq>,
    data: T::Srq,
}

impl<T: SrqDriver> Srq<T> {
    /// `ib` comes first: a pointer to the core's part, which the core hands to every
    /// callback, is one to the whole object (checked at build time).
    const IB_FIRST: () = assert!(core::mem::offset_of!(Self, ib) == 0);

    /// The object whose core part `ib` is: the same address ([`Self::IB_FIRST`]).
    fn container(ib: *mut bindings::ib_srq) -> *mut Self {
        let () = Self::IB_FIRST;
        ib.cast()
    }

    /// The SRQ a QP was created on.
    ///
    /// # Safety
    /// `raw` is an SRQ of a `T` device, created and not destroyed for `'a` (a QP holds its
    /// SRQ while it lives).
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::ib_srq) -> &'a Self {
        // SAFETY: per this function's contract, an initialised `Srq<T>` (`IB_FIRST`: the
        // core's part begins it, checked at build time).
        unsafe { &*Self::container(raw) }
    }

    /// Raises IB_EVENT_SRQ_LIMIT_REACHED to the consumer's event handler; no lock of the
    /// driver's may be held (the handler may post again).
    pub(crate) fn limit_event(&self) {
        let srq = self.ib.get();
        // SAFETY: a live SRQ (type invariant), whose handler and context the core set at
        // creation; the event lives on this stack for the call.
        unsafe {
            if let Some(handler) = (*srq).event_handler {
                let mut ev = bindings::ib_event {
                    device: (*srq).device,
                    element: bindings::ib_event__bindgen_ty_1 { srq },
                    event: bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
                };
                handler(&mut ev, (*srq).srq_context);
            }
        }
    }
}

impl<T: SrqDriver> core::ops::Deref for Srq<T> {
    type Target = T::Srq;

    fn deref(&self) -> &T::Srq {
        &self.data
    }
}

/// SRQ attributes (`struct ib_srq_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SrqAttr {
    /// Depth: receive WQEs it holds.
    pub(crate) max_wr: u32,
    /// SGEs per receive WQE.
    pub(crate) max_sge: u32,
    /// The limit event's threshold (0: disarmed).
    pub(crate) srq_limit: u32,
}

impl SrqAttr {
    fn from_raw(a: &bindings::ib_srq_attr) -> Self {
        SrqAttr {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
        }
    }

    fn to_raw(self) -> bindings::ib_srq_attr {
        bindings::ib_srq_attr {
            max_wr: self.max_wr,
            max_sge: self.max_sge,
            srq_limit: self.srq_limit,
        }
    }
}

/// What a `modify_srq` changes (`enum ib_srq_attr_mask`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SrqAttrMask {
    /// `IB_SRQ_MAX_WR`: resize.
    pub(crate) max_wr: bool,
    /// `IB_SRQ_LIMIT`: arm the limit event.
    pub(crate) limit: bool,
}

impl SrqAttrMask {
    /// The mask; `None` when it names anything else.
    fn from_raw(mask: bindings::ib_srq_attr_mask) -> Option<Self> {
        let known =
            bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR | bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;
        (mask & !known == 0).then_some(SrqAttrMask {
            max_wr: mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0,
            limit: mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0,
        })
    }
}

/// The size the core allocates per SRQ.
pub(super) const fn size<T: SrqDriver>() -> usize {
    size_of::<Srq<T>>()
}

/// `ib_device_ops.create_srq`: the attributes the SRQ got are written back into `init`.
///
/// # Safety
/// Called by the core with a zeroed SRQ object of `T`'s size on a `T` device, a valid,
/// writable init block and null or the call's `udata`.
pub(super) unsafe extern "C" fn create_srq<T: SrqDriver>(
    ibsrq: *mut bindings::ib_srq,
    init: *mut bindings::ib_srq_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: per this function's contract.
        let (dev, init) = unsafe { (Device::<T>::from_raw((*ibsrq).device), &mut *init) };
        if init.srq_type != bindings::ib_srq_type_IB_SRQT_BASIC {
            return Err(crate::kx::error::eopnotsupp());
        }
        // SAFETY: null or the call's user data.
        let udata = unsafe { UData::from_raw(udata) };
        let asked = SrqAttr::from_raw(&init.attr);
        let (data, got) = T::create_srq(dev, &asked, udata)?;
        let srq = Srq::<T>::container(ibsrq);
        // SAFETY: `data` lies in the core's allocation, which never moves; the object is
        // not visible to anyone yet. From here it is initialised (type invariant).
        unsafe { data.__pinned_init(ptr::addr_of_mut!((*srq).data)) }
            .unwrap_or_else(|never| match never {});
        init.attr = got.to_raw();
        Ok(0)
    })
}

/// `ib_device_ops.destroy_srq`.
///
/// # Safety
/// Called by the core once per SRQ it created on a `T` device, when no QP uses it.
pub(super) unsafe extern "C" fn destroy_srq<T: SrqDriver>(
    ibsrq: *mut bindings::ib_srq,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    let srq = Srq::<T>::container(ibsrq);
    // SAFETY: per this function's contract: a live `T` device and an initialised SRQ.
    let (dev, data) = unsafe { (Device::<T>::from_raw((*ibsrq).device), &(*srq).data) };
    T::destroy_srq(dev, data);
    // SAFETY: initialised (type invariant) and unused from here; dropped once.
    unsafe { ptr::drop_in_place(ptr::addr_of_mut!((*srq).data)) };
    0
}

/// `ib_device_ops.modify_srq`.
///
/// # Safety
/// Called by the core with a live SRQ of a `T` device, a valid attribute block and null
/// or the call's `udata`.
pub(super) unsafe extern "C" fn modify_srq<T: SrqDriver>(
    ibsrq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
    mask: bindings::ib_srq_attr_mask,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        let mask = SrqAttrMask::from_raw(mask).ok_or(EINVAL)?;
        // SAFETY: per this function's contract.
        let (srq, attr) = unsafe { (Srq::<T>::from_raw(ibsrq), SrqAttr::from_raw(&*attr)) };
        // SAFETY: null or the call's user data.
        let udata = unsafe { UData::from_raw(udata) };
        T::modify_srq(srq, &attr, mask, udata).map(|()| 0)
    })
}

/// `ib_device_ops.query_srq`.
///
/// # Safety
/// Called by the core with a live SRQ of a `T` device and a writable attribute block.
pub(super) unsafe extern "C" fn query_srq<T: SrqDriver>(
    ibsrq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
) -> c_int {
    // SAFETY: per this function's contract.
    let srq = unsafe { Srq::<T>::from_raw(ibsrq) };
    let a = T::query_srq(srq).to_raw();
    // SAFETY: writable per this function's contract.
    unsafe { attr.write(a) };
    0
}

/// `ib_device_ops.post_srq_recv`: a kernel consumer's receive WRs (possibly in atomic
/// context); the first one not posted is returned in `bad_wr`.
///
/// # Safety
/// Called by the core with a live SRQ of a `T` device, a valid WR chain and a writable
/// `bad_wr`.
pub(super) unsafe extern "C" fn post_srq_recv<T: SrqDriver>(
    ibsrq: *mut bindings::ib_srq,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: per this function's contract.
    let (srq, wrs) = unsafe { (Srq::<T>::from_raw(ibsrq), RecvWrList::from_raw(wr, bad_wr)) };
    from_result(|| T::post_srq_recv(srq, wrs).map(|()| 0))
}
