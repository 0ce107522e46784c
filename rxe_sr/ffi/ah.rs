// SPDX-License-Identifier: GPL-2.0
//! Address handles: the C-ABI entry points and the AH object. A user AH gets an AH number,
//! returned in `struct rxe_create_ah_resp`; the rxe provider puts it in UD send WQEs. A
//! kernel consumer's AH (ib_cm, ib_mad) needs no number: its work requests carry the
//! `ib_ah` pointer, and the AV is read from the object.

use core::mem::size_of;
use core::ptr;
use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::objects::ah::{Av, MAX_AH_NUM};
use crate::objects::device::RoceDevice;
use crate::objects::live;
use crate::objects::pd::PdId;
use crate::uabi::{layout, resp, send_wqe};

/// The AH object: `ibah` first (the core allocates `size_of::<RxeSrAh>()` zeroed bytes).
#[repr(C)]
pub(crate) struct RxeSrAh {
    ibah: bindings::ib_ah,
    /// Where it points; written once at create.
    av: Option<Av>,
    /// Its number in the device's AH table (0: none yet).
    ah_num: u32,
}

/// Size the core allocates per AH.
pub(crate) const SIZE: usize = size_of::<RxeSrAh>();

/// The AV of an `rdma_ah_attr`: RoCE type, port 1, a GRH with a RoCEv2 source GID.
///
/// # Safety
/// `attr.grh.sgid_attr` is null or referenced for the call (the core holds it).
pub(crate) unsafe fn av_of(attr: &bindings::rdma_ah_attr) -> Result<Av> {
    if attr.type_ != bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE
        || attr.port_num != 1
        || u32::from(attr.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH == 0
    {
        return Err(EINVAL);
    }
    // SAFETY: per this function's contract.
    let sgid_attr = unsafe { attr.grh.sgid_attr.as_ref() }.ok_or(EINVAL)?;
    if sgid_attr.gid_type != bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP {
        return Err(EINVAL);
    }
    // SAFETY: `union ib_gid` is 16 plain bytes whichever member is read.
    let (sgid, dgid) = unsafe { (sgid_attr.gid.raw, attr.grh.dgid.raw) };
    Av::new(
        sgid,
        dgid,
        attr.grh.flow_label,
        attr.grh.hop_limit,
        attr.grh.traffic_class,
    )
    .ok_or(EINVAL)
}

/// `ib_device_ops.create_user_ah`.
///
/// # Safety
/// Called by uverbs with a zeroed AH object of our size and a valid init attribute block.
pub(crate) unsafe extern "C" fn create_user_ah(
    ibah: *mut bindings::ib_ah,
    init: *mut bindings::rdma_ah_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract.
    match unsafe { create_inner(ibah, &*init, udata) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
/// As [`create_user_ah`].
unsafe fn create_inner(
    ibah: *mut bindings::ib_ah,
    init: &bindings::rdma_ah_init_attr,
    udata: *mut bindings::ib_udata,
) -> Result {
    // SAFETY: the core passes the attribute it holds references for.
    let av = unsafe { av_of(&*init.ah_attr)? };
    // SAFETY: the AH's device is one of ours.
    let dev = unsafe { RoceDevice::from_ib((*ibah).device) };
    let ah_num = dev.ahs().reserve(1, MAX_AH_NUM)?;
    if !udata.is_null() {
        let mut out = [0u8; layout::CREATE_AH_RESP_SIZE];
        let ret = match resp::emit_create_ah_resp(ah_num, &mut out) {
            // SAFETY: `udata` is live; the helper checks outlen and copies to user space.
            Some(()) => unsafe {
                bindings::rxe_sr_glue_copy_to_udata(udata, out.as_ptr().cast(), out.len())
            },
            None => EINVAL.to_errno(),
        };
        if ret != 0 {
            dev.ahs().erase(ah_num);
            return Err(Error::from_errno(ret));
        }
    }
    let ah = ibah.cast::<RxeSrAh>();
    // SAFETY: our zeroed AH object, not yet visible to anyone else.
    unsafe {
        ptr::addr_of_mut!((*ah).av).write(Some(av));
        (*ah).ah_num = ah_num;
    }
    if let Err(e) = dev.ahs().publish(ah_num, ibah.cast()) {
        dev.ahs().erase(ah_num);
        // SAFETY: never visible; the core frees the object when we fail.
        unsafe { (*ah).ah_num = 0 };
        return Err(e);
    }
    live::LIVE.ahs.inc();
    Ok(())
}

/// `ib_device_ops.create_ah`: a kernel consumer's AH. It may be called in atomic context
/// (ib_cm creates response AHs under a lock), so nothing here sleeps or allocates.
///
/// # Safety
/// Called by the core with a zeroed AH object of our size and a valid init attribute block.
pub(crate) unsafe extern "C" fn create_ah(
    ibah: *mut bindings::ib_ah,
    init: *mut bindings::rdma_ah_init_attr,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract; the core holds the attribute's references.
    match unsafe { av_of(&*(*init).ah_attr) } {
        Ok(av) => {
            // SAFETY: our zeroed AH object, not yet visible to anyone else.
            unsafe { ptr::addr_of_mut!((*ibah.cast::<RxeSrAh>()).av).write(Some(av)) };
            live::LIVE.ahs.inc();
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `ib_device_ops.destroy_ah`.
///
/// # Safety
/// Called by the core once per created AH.
pub(crate) unsafe extern "C" fn destroy_ah(ibah: *mut bindings::ib_ah, _flags: u32) -> c_int {
    let ah = ibah.cast::<RxeSrAh>();
    // SAFETY: our AH object; its device is one of ours.
    let (num, created, dev) = unsafe {
        (
            (*ah).ah_num,
            (*ah).av.is_some(),
            RoceDevice::from_ib((*ibah).device),
        )
    };
    if num != 0 {
        dev.ahs().erase(num);
    }
    if created {
        live::LIVE.ahs.dec();
    }
    0
}

/// The AV of a kernel consumer's AH, if it belongs to `pd`.
///
/// # Safety
/// `ibah` is null or a live AH of ours (a kernel work request's, held by its poster).
pub(crate) unsafe fn kernel_av(ibah: *mut bindings::ib_ah, pd: PdId) -> Option<Av> {
    // SAFETY: per this function's contract.
    let ah = unsafe { ibah.cast::<RxeSrAh>().as_ref() }?;
    if super::pd::id(ah.ibah.pd) != pd {
        return None;
    }
    ah.av
}

/// The AV of AH number `ah_num`, if it exists and belongs to `pd`.
pub(crate) fn lookup(dev: &RoceDevice, pd: PdId, ah_num: u32) -> Option<Av> {
    dev.ahs()
        .with_entry(ah_num, |p| {
            let ah = p.cast::<RxeSrAh>();
            // SAFETY: entries of the AH table are live RxeSrAh objects; the table lock keeps
            // this one from being destroyed while we copy its AV.
            unsafe {
                (super::pd::id((*ah).ibah.pd) == pd)
                    .then_some((*ah).av)
                    .flatten()
            }
        })
        .flatten()
}

/// The AV a UD send WQE embeds (`ah_num` 0: rxe providers from before AH numbers), checked
/// against the device's GID table: its `sgid_index` must name a RoCEv2 GID of the same IP
/// version as the destination. `None` for anything else.
pub(crate) fn embedded(dev: &RoceDevice, e: &send_wqe::Av) -> Option<Av> {
    let mut sgid = [0u8; 16];
    // SAFETY: the device is registered while its QPs post; the glue takes and drops its own
    // GID-table reference and writes 16 bytes to `sgid`.
    let ret = unsafe {
        bindings::rxe_sr_glue_roce_v2_gid(dev.ib_ptr(), u32::from(e.sgid_index), sgid.as_mut_ptr())
    };
    if ret != 0 || !e.agrees_with(&sgid) {
        return None;
    }
    Av::new(sgid, e.dgid, e.flow_label, e.hop_limit, e.traffic_class)
}
