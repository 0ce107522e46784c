// SPDX-License-Identifier: GPL-2.0
//! rxe_sr links: `rdma link add NAME type rxe_sr netdev DEV` creates a device, and netdev
//! events keep each device in step with its netdev (port state, MTU, removal).

use kernel::prelude::*;
use kernel::str::CStr;

use crate::kx::netdevice::{AddrEvent, GidRescan, NetDev, NetdevEvent, NetdevNotifier};
use crate::kx::rdma_netlink::LinkOps;
use crate::objects::device::RoceDeviceRef;
use crate::verbs::device;

/// The `rxe_sr` link type and the netdev notifier behind its devices.
pub(crate) struct Links;

impl LinkOps for Links {
    fn newlink(name: &CStr, nd: &NetDev) -> Result {
        device::add(name, nd)
    }
}

impl NetdevNotifier for Links {
    fn event(event: NetdevEvent, nd: &NetDev) -> bool {
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

    /// The core lists the addresses of Ethernet netdevs as GIDs and follows them
    /// (roce_gid_mgmt.c); on any other netdev (tun and other layer-3 devices) it lists them
    /// once, when the device registers. rxe_sr follows them there.
    fn addr_event(event: AddrEvent, nd: &NetDev, rescan: &GidRescan) {
        if nd.is_ether() {
            return;
        }
        if let Some(dev) = RoceDeviceRef::get_by_netdev(nd) {
            dev.note_addr_change(event == AddrEvent::Removed);
            rescan.schedule();
        }
    }

    fn rescan_gids() {
        let Ok(devices) = RoceDeviceRef::all() else {
            pr_warn!("out of memory: GID tables not brought up to date\n");
            return;
        };
        for dev in devices.iter() {
            if let Some(removed) = dev.take_gid_rescan() {
                dev.rescan_gids(removed);
            }
        }
    }
}
