// SPDX-License-Identifier: GPL-2.0
//! rxe_sr links: `rdma link add NAME type rxe_sr netdev DEV` creates a device, and netdev
//! events keep each device in step with its netdev (port state, MTU, removal).

use kernel::prelude::*;
use kernel::str::CStr;

use crate::kx::netdevice::{NetDev, NetdevEvent, NetdevNotifier};
use crate::kx::rdma_netlink::LinkOps;
use crate::objects::device::RoceDeviceRef;
use crate::verbs::device;

/// The `rxe_sr` link type and the netdev notifier behind its devices.
pub(crate) struct Links;

impl LinkOps for Links {
    fn newlink(name: &CStr, nd: &NetDev<'_>) -> Result {
        device::add(name, nd)
    }
}

impl NetdevNotifier for Links {
    fn event(event: NetdevEvent, nd: &NetDev<'_>) -> bool {
        let Some(dev) = RoceDeviceRef::get_by_netdev(nd) else {
            return false;
        };
        match event {
            NetdevEvent::Unregister => dev.unregister_queued(),
            NetdevEvent::ChangeMtu => dev.set_active_mtu(device::ib_mtu_from_eth_mtu(nd.mtu())),
            NetdevEvent::Up | NetdevEvent::Down | NetdevEvent::Change => {
                device::update_port_state(&dev, nd)
            }
        }
        true
    }
}
