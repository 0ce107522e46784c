// SPDX-License-Identifier: GPL-2.0
//! Multicast: `attach_mcast` / `detach_mcast` and the netdev's multicast MAC filter. The
//! groups themselves are `objects::mcast`; the receive path fans a multicast packet out to
//! the attached QPs.

use kernel::prelude::*;

use crate::kx::ib_verbs::QpType;
use crate::objects::device::RoceDevice;
use crate::objects::mcast::Attached;

/// `attach_mcast`: attaches a UD QP to multicast group `mgid`; the first member makes the
/// netdev accept the group's Ethernet address (a node joins the group's MAC, as rdma_rxe
/// does; IP membership, IGMP/MLD, is rdma-cm's business).
pub(crate) fn attach(
    dev: &RoceDevice,
    qpn: u32,
    qp_type: Option<QpType>,
    mgid: [u8; 16],
) -> Result {
    if qp_type != Some(QpType::Ud) {
        return Err(EINVAL);
    }
    let mut groups = dev.mcast().lock();
    match groups.attach(mgid, qpn)? {
        Attached::NewGroup => dev.mcast_mac_filter(&mgid, true).inspect_err(|_| {
            let _ = groups.detach(mgid, qpn);
        }),
        Attached::Joined => Ok(()),
    }
}

/// `detach_mcast`; the last member to leave drops the group's Ethernet address.
pub(crate) fn detach(dev: &RoceDevice, qpn: u32, mgid: [u8; 16]) -> Result {
    let mut groups = dev.mcast().lock();
    if groups.detach(mgid, qpn)? {
        let _ = dev.mcast_mac_filter(&mgid, false);
    }
    Ok(())
}

/// Detaches a QP being destroyed from every group it is still in.
pub(crate) fn detach_all(dev: &RoceDevice, qpn: u32) {
    dev.mcast().lock().detach_all(qpn, |mgid| {
        let _ = dev.mcast_mac_filter(&mgid, false);
    });
}
