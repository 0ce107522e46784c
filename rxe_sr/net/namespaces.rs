// SPDX-License-Identifier: GPL-2.0
//! The RoCEv2 sockets of each network namespace. A namespace's pair (UDP 4791 on IPv4 and
//! IPv6) is opened with the first rxe_sr link on a netdev in it and closed with the last,
//! or when the namespace is dismantled. A namespace's port belongs to one driver: rdma_rxe
//! (whose 6.12 sockets live in the initial namespace from its load on) and rxe_sr share a
//! kernel, each with its own namespaces, and a link whose namespace's port is taken is
//! refused with the name of the port's owner.

#![forbid(unsafe_code)]

use kernel::prelude::*;
use kernel::str::CStr;

use crate::kx::global_mutex::GlobalMutex;
use crate::kx::net_namespace::{NetCookie, NetNs, PernetExit};
use crate::kx::netdevice::NetDev;
use crate::kx::udp_tunnel::PortOwner;
use crate::net::{OpenError, RoceSockets, ROCE_V2_UDP_DPORT};
use crate::objects::device::NsShare;

/// One namespace's sockets and the links that use them.
struct Namespace {
    cookie: NetCookie,
    links: usize,
    _sockets: RoceSockets,
}

/// The namespaces with open sockets; a freed entry's slot is reused, and the vector itself
/// is freed once every slot is (a `static` is never dropped).
static NAMESPACES: GlobalMutex<KVec<Option<Namespace>>> = GlobalMutex::new(KVec::new());

/// A new link named `name` on `nd` takes a share in the sockets of `nd`'s namespace,
/// opening them if it is the namespace's first. A port that is taken is reported with its
/// owner.
pub(crate) fn join(name: &CStr, nd: &NetDev) -> Result<NsShare> {
    let net = NetNs::of_netdev(nd).ok_or(ENODEV)?;
    let cookie = net.cookie();
    let mut table = NAMESPACES.lock();
    if let Some(Some(ns)) = slot_of(&mut table, cookie) {
        ns.links += 1;
        return Ok(NsShare::new(cookie, leave));
    }
    let sockets = RoceSockets::open(&net).map_err(|e| report(name, &net, e))?;
    let ns = Namespace {
        cookie,
        links: 1,
        _sockets: sockets,
    };
    match table.iter_mut().find(|slot| slot.is_none()) {
        Some(slot) => *slot = Some(ns),
        None => table.push(Some(ns), GFP_KERNEL)?,
    }
    Ok(NsShare::new(cookie, leave))
}

/// Gives back a link's share (its device is being freed); the last one closes the
/// namespace's sockets. A namespace already dismantled has no entry left: nothing to do.
fn leave(cookie: NetCookie) {
    let mut table = NAMESPACES.lock();
    let Some(slot) = slot_of(&mut table, cookie) else {
        return;
    };
    let last = slot.as_mut().is_some_and(|ns| {
        ns.links -= 1;
        ns.links == 0
    });
    if last {
        let closed = slot.take();
        shrink(&mut table);
        drop(table);
        // Released outside the lock: closing waits for receivers still in the socket.
        drop(closed);
    }
}

/// The slot of namespace `cookie`, if its sockets are open.
fn slot_of(
    table: &mut KVec<Option<Namespace>>,
    cookie: NetCookie,
) -> Option<&mut Option<Namespace>> {
    table
        .iter_mut()
        .find(|slot| slot.as_ref().is_some_and(|ns| ns.cookie == cookie))
}

/// Frees the vector once no slot is used.
fn shrink(table: &mut KVec<Option<Namespace>>) {
    if table.iter().all(Option::is_none) {
        *table = KVec::new();
    }
}

/// Namespaces whose sockets are open (for the unload message: 0 once every link is gone).
pub(crate) fn open_count() -> usize {
    NAMESPACES.lock().iter().flatten().count()
}

/// Logs why `name`'s namespace's sockets could not be opened, naming who holds the port.
fn report(name: &CStr, net: &NetNs<'_>, e: OpenError) -> Error {
    let family = if e.ipv6 { "IPv6" } else { "IPv4" };
    if e.err != crate::kx::error::eaddrinuse() {
        pr_err!(
            "{}: cannot open the RoCEv2 {} UDP socket in network namespace net:[{}]: {:?}\n",
            name,
            family,
            net.inum(),
            e.err
        );
        return e.err;
    }
    match PortOwner::find(net, e.ipv6, ROCE_V2_UDP_DPORT) {
        Some(owner) => pr_err!(
            "{}: UDP port {} ({}) in network namespace net:[{}] is held by {}: a namespace's RoCEv2 port serves one driver (add the link in another namespace, or free the port: rmmod rdma_rxe if it is rdma_rxe's)\n",
            name,
            ROCE_V2_UDP_DPORT,
            family,
            net.inum(),
            owner
        ),
        None => pr_err!(
            "{}: UDP port {} ({}) in network namespace net:[{}] is taken (by a socket bound to one address)\n",
            name,
            ROCE_V2_UDP_DPORT,
            family,
            net.inum()
        ),
    }
    e.err
}

/// Closes the sockets of namespaces being dismantled.
pub(crate) struct Namespaces;

impl PernetExit for Namespaces {
    /// Every netdev of `net` is gone by now, but a device on one may not be freed yet (its
    /// unregistration is queued): its share then finds no entry, and the sockets, which do
    /// not keep the namespace alive, are closed here.
    fn exit(net: &NetNs<'_>) {
        let cookie = net.cookie();
        let mut table = NAMESPACES.lock();
        let closed = slot_of(&mut table, cookie).and_then(Option::take);
        shrink(&mut table);
        drop(table);
        drop(closed);
    }
}
