// SPDX-License-Identifier: GPL-2.0
//! Multicast: `attach_mcast` / `detach_mcast`, and the netdev's multicast MAC filter. The
//! groups themselves are `verbs::mcast`; the receive path fans a multicast packet out to
//! the attached QPs (`qp::ud_deliver_mcast`).

use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::objects::device::RoceDevice;
use crate::objects::mcast::Attached;

/// Makes the device's netdev accept (`add`) or stop accepting the Ethernet multicast
/// address of group `mgid`, as rdma_rxe does: a node joins the group's MAC; IP membership
/// (IGMP/MLD) is rdma-cm's business.
fn mac_filter(ibdev: *mut bindings::ib_device, mgid: &[u8; 16], add: bool) -> Result {
    // SAFETY: our device; the reference is dropped below.
    let ndev = unsafe { bindings::ib_device_get_netdev(ibdev, 1) };
    if ndev.is_null() {
        return Err(ENODEV);
    }
    // SAFETY: `ndev` is referenced; `mgid` is 16 readable bytes.
    let ret = unsafe { bindings::rxe_sr_glue_mcast_mac(ndev, mgid.as_ptr(), add) };
    // SAFETY: drops the reference ib_device_get_netdev took.
    unsafe { bindings::rxe_sr_glue_dev_put(ndev) };
    kernel::error::to_result(ret)
}

/// `ib_device_ops.attach_mcast`: attaches a UD QP to multicast group `gid`.
///
/// # Safety
/// Called by the core with a live QP of ours and a valid GID.
pub(crate) unsafe extern "C" fn attach_mcast(
    ibqp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    _lid: u16,
) -> c_int {
    // SAFETY: per this function's contract.
    let (qp_type, qpn, ibdev) = unsafe { ((*ibqp).qp_type, (*ibqp).qp_num, (*ibqp).device) };
    // SAFETY: per this function's contract; `raw` covers the whole union.
    let mgid = unsafe { (*gid).raw };
    if qp_type != bindings::ib_qp_type_IB_QPT_UD {
        return EINVAL.to_errno();
    }
    // SAFETY: a device of ours.
    let dev = unsafe { RoceDevice::from_ib(ibdev) };
    let mut groups = dev.mcast().lock();
    match groups.attach(mgid, qpn) {
        Ok(Attached::NewGroup) => match mac_filter(ibdev, &mgid, true) {
            Ok(()) => 0,
            Err(e) => {
                let _ = groups.detach(mgid, qpn);
                e.to_errno()
            }
        },
        Ok(Attached::Joined) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ib_device_ops.detach_mcast`.
///
/// # Safety
/// As [`attach_mcast`].
pub(crate) unsafe extern "C" fn detach_mcast(
    ibqp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    _lid: u16,
) -> c_int {
    // SAFETY: per this function's contract; `raw` covers the whole union.
    let (qpn, ibdev, mgid) = unsafe { ((*ibqp).qp_num, (*ibqp).device, (*gid).raw) };
    // SAFETY: a device of ours.
    let dev = unsafe { RoceDevice::from_ib(ibdev) };
    let mut groups = dev.mcast().lock();
    match groups.detach(mgid, qpn) {
        Ok(true) => {
            let _ = mac_filter(ibdev, &mgid, false);
            0
        }
        Ok(false) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Detaches a QP being destroyed from every group it is still in.
pub(crate) fn detach_all(dev: &RoceDevice, ibdev: *mut bindings::ib_device, qpn: u32) {
    dev.mcast().lock().detach_all(qpn, |mgid| {
        let _ = mac_filter(ibdev, &mgid, false);
    });
}
