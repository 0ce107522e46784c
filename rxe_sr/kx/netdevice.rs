// SPDX-License-Identifier: GPL-2.0
//! Net devices (include/linux/netdevice.h): [`NetDev`], borrowed or held, and
//! the netdev and address event notifiers (the address chains of include/linux/inetdevice.h
//! and include/net/addrconf.h), whose events go to a [`NetdevNotifier`], with a work item
//! for what an address event starts that must sleep.

use core::pin::Pin;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::alloc::KBox;
use kernel::c_str;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::types::{ARef, AlwaysRefCounted, Opaque};

use crate::kx::bindings;
use crate::kx::registration::pin_table;

/// A `struct net_device`: borrowed as `&NetDev` for a callback, or held as `ARef<NetDev>`
/// (`dev_hold` / `dev_put`).
///
/// # Invariants
/// A `NetDev` is a live net_device: every `&NetDev` is valid for its lifetime.
#[repr(transparent)]
pub(crate) struct NetDev(Opaque<bindings::net_device>);

// SAFETY: a net_device is shared between contexts by design; the fields read here are read
// as the kernel's own accessors do.
unsafe impl Send for NetDev {}
// SAFETY: as above.
unsafe impl Sync for NetDev {}

// SAFETY: `dev_hold` keeps the net_device allocated until the matching `dev_put`, and a
// `&NetDev` is live (type invariant), so holding it again is always allowed.
unsafe impl AlwaysRefCounted for NetDev {
    fn inc_ref(&self) {
        // SAFETY: a live net_device (type invariant).
        unsafe { bindings::rxe_sr_glue_dev_hold(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller gives back a reference it held.
        unsafe { bindings::rxe_sr_glue_dev_put(obj.as_ptr().cast()) };
    }
}

impl NetDev {
    /// The net_device at `ptr`, borrowed for `'a`.
    ///
    /// # Safety
    /// `ptr` is null or points to a live net_device for the returned lifetime.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> Option<&'a NetDev> {
        // INVARIANT: null or live for `'a` (this function's contract).
        // SAFETY: as above; `NetDev` is a transparent wrapper of the C type.
        unsafe { ptr.cast::<NetDev>().as_ref() }
    }

    /// A held net_device, the reference passed to the result.
    ///
    /// # Safety
    /// `ptr` is null or a net_device on which the caller holds a reference it gives up.
    pub(crate) unsafe fn from_held(ptr: *mut bindings::net_device) -> Option<ARef<NetDev>> {
        let ptr = NonNull::new(ptr.cast::<NetDev>())?;
        // SAFETY: a held reference, passed on (this function's contract).
        Some(unsafe { ARef::from_raw(ptr) })
    }

    fn fields(&self) -> &bindings::net_device {
        // SAFETY: live for our lifetime (type invariant); we only read plain fields.
        unsafe { &*self.0.get() }
    }

    /// The raw pointer, for calls into the kernel.
    pub(crate) fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// Its name, e.g. `eth0`.
    pub(crate) fn name(&self) -> &CStr {
        let bytes = &self.fields().name;
        let len = bytes
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(bytes.len() - 1);
        CStr::from_bytes_with_nul(&bytes[..=len]).unwrap_or(c_str!("?"))
    }

    /// The device it sits on (e.g. the virtio or PCI device), null for virtual ones.
    pub(crate) fn parent(&self) -> *mut bindings::device {
        self.fields().dev.parent
    }

    /// Its MTU in bytes.
    pub(crate) fn mtu(&self) -> u32 {
        self.fields().mtu
    }

    /// Administratively up (IFF_UP).
    pub(crate) fn is_up(&self) -> bool {
        self.fields().flags & bindings::net_device_flags_IFF_UP != 0
    }

    /// Whether bit `bit` of its `state` is set, as `test_bit` reads it: one volatile load
    /// of the word, which the core changes with atomic bit operations at any time.
    fn state_bit(&self, bit: bindings::netdev_state_t) -> bool {
        let nd = self.as_raw();
        // SAFETY: live netdev (type invariant); an aligned word read by one volatile load, as
        // x86's `test_bit` does, racing only with the core's atomic bit operations.
        let state = unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*nd).state)) };
        state & (1 << bit) != 0
    }

    /// Up and running (`netif_running`: `__LINK_STATE_START`).
    pub(crate) fn is_running(&self) -> bool {
        self.state_bit(bindings::netdev_state_t___LINK_STATE_START)
    }

    /// Has carrier (`netif_carrier_ok`: no `__LINK_STATE_NOCARRIER`).
    pub(crate) fn carrier_ok(&self) -> bool {
        !self.state_bit(bindings::netdev_state_t___LINK_STATE_NOCARRIER)
    }

    /// A VLAN device (rxe_sr, as rdma_rxe, binds to real devices only): `is_vlan_dev`, the
    /// `IFF_802_1Q_VLAN` private flag, which is never set when the kernel has no 802.1Q.
    pub(crate) fn is_vlan(&self) -> bool {
        if !cfg!(CONFIG_VLAN_8021Q) {
            return false;
        }
        // SAFETY: both members of the union are the same `priv_flags_fast` group (a
        // `struct_group`), plain integers; the flag is set before the VLAN netdev registers.
        let flags = unsafe { self.fields().__bindgen_anon_1.priv_flags_fast.priv_flags() };
        flags & bindings::netdev_priv_flags_IFF_802_1Q_VLAN as c_ulong != 0
    }

    /// Its EUI-48 (MAC) address, if it has one (not a tun or other layer-3 device).
    pub(crate) fn eui48(&self) -> Option<[u8; 6]> {
        let d = self.fields();
        let mut mac = [0u8; 6];
        if d.dev_addr.is_null() || usize::from(d.addr_len) != mac.len() {
            return None;
        }
        // SAFETY: `dev_addr` points to `addr_len` bytes owned by the netdev.
        let src = unsafe { core::slice::from_raw_parts(d.dev_addr, mac.len()) };
        mac.copy_from_slice(src);
        Some(mac)
    }

    /// An Ethernet device (`ARPHRD_ETHER`): the only kind whose addresses the core's RoCE
    /// GID management (roce_gid_mgmt.c) follows.
    pub(crate) fn is_ether(&self) -> bool {
        // SAFETY: a live netdev (type invariant); its type is set when it is created.
        let kind = unsafe { (*self.as_raw()).type_ };
        u32::from(kind) == bindings::ARPHRD_ETHER
    }
}

/// Netdev events rxe_sr follows (`enum netdev_cmd`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum NetdevEvent {
    /// NETDEV_UP: administratively up.
    Up,
    /// NETDEV_DOWN: administratively down.
    Down,
    /// NETDEV_CHANGE: carrier or other state changed.
    Change,
    /// NETDEV_CHANGEMTU: the MTU changed.
    ChangeMtu,
    /// NETDEV_UNREGISTER: the netdev is going away.
    Unregister,
}

impl NetdevEvent {
    fn from_cmd(cmd: c_ulong) -> Option<Self> {
        match u32::try_from(cmd).ok()? {
            bindings::netdev_cmd_NETDEV_UP => Some(Self::Up),
            bindings::netdev_cmd_NETDEV_DOWN => Some(Self::Down),
            bindings::netdev_cmd_NETDEV_CHANGE => Some(Self::Change),
            bindings::netdev_cmd_NETDEV_CHANGEMTU => Some(Self::ChangeMtu),
            bindings::netdev_cmd_NETDEV_UNREGISTER => Some(Self::Unregister),
            _ => None,
        }
    }
}

/// Address events (`NETDEV_UP`/`NETDEV_DOWN` on the IPv4 and IPv6 address chains).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum AddrEvent {
    /// An address was added.
    Added,
    /// An address was removed.
    Removed,
}

/// Receives netdev events and address events.
pub(crate) trait NetdevNotifier {
    /// `event` happened to `nd` (under RTNL, process context); true when it concerned the
    /// handler (`NOTIFY_OK`), false otherwise (`NOTIFY_DONE`).
    fn event(event: NetdevEvent, nd: &NetDev) -> bool;

    /// An address of `nd` was added or removed. May be called in atomic context (the IPv6
    /// address chain): must not sleep; work that sleeps goes to [`GidRescan::schedule`].
    fn addr_event(event: AddrEvent, nd: &NetDev, rescan: &GidRescan);

    /// The work [`GidRescan::schedule`] asked for (process context, may sleep): bring the
    /// GID tables of the devices whose netdev the core does not follow up to date.
    fn rescan_gids();
}

/// The module's GID rescan work item (kx/c/gid_table.c's one `work_struct`), handed to
/// [`NetdevNotifier::addr_event`] only: the notifiers are unregistered, and the work
/// cancelled, before the module's code goes.
pub(crate) struct GidRescan(());

impl GidRescan {
    /// Has [`NetdevNotifier::rescan_gids`] run soon (once, however often this is asked
    /// before it runs); fine in atomic context.
    pub(crate) fn schedule(&self) {
        // SAFETY: the work's handler was set at registration, which outlives every
        // `GidRescan` (only lent to the notifier callbacks); `Drop` cancels it.
        unsafe { bindings::rxe_sr_glue_gid_work_schedule() };
    }
}

/// gid_table.c has one work item, whose handler a registration sets: at most one
/// registration at a time.
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// A notifier_block of ours calling `call`, pinned for a chain to link in.
fn notifier_block(
    call: unsafe extern "C" fn(*mut bindings::notifier_block, c_ulong, *mut c_void) -> c_int,
) -> Result<Pin<KBox<Opaque<bindings::notifier_block>>>> {
    let block = bindings::notifier_block {
        notifier_call: Some(call),
        ..Default::default()
    };
    pin_table(block, &REGISTERED)
}

/// The registered netdev notifier and IPv4 and IPv6 address notifiers, their
/// notifier_blocks owned here; unregistered on drop.
///
/// # Invariants
/// `nb` is on the netdev chain, `inet` on the IPv4 address chain and `inet6` on the IPv6
/// one until `drop`, and `REGISTERED` is set.
pub(crate) struct NotifierRegistration {
    nb: Pin<KBox<Opaque<bindings::notifier_block>>>,
    inet: Pin<KBox<Opaque<bindings::notifier_block>>>,
    inet6: Pin<KBox<Opaque<bindings::notifier_block>>>,
}

// SAFETY: the blocks are only used by their notifier chains and freed after unregistering;
// their one pointer is to a function.
unsafe impl Send for NotifierRegistration {}
// SAFETY: no method takes `&self`.
unsafe impl Sync for NotifierRegistration {}

impl NotifierRegistration {
    /// Starts delivering netdev and address events to `T` (`EBUSY` if a registration
    /// exists).
    pub(crate) fn register<T: NetdevNotifier>() -> Result<Self> {
        if REGISTERED.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        // The tables first: a failed allocation (which releases `REGISTERED`) leaves nothing
        // registered.
        let nb = notifier_block(notifier_call::<T>)?;
        let inet = notifier_block(inetaddr_call::<T>)?;
        let inet6 = notifier_block(inet6addr_call::<T>)?;
        // SAFETY: our block, pinned until `drop` unregisters it, with a handler sound for any
        // event and netdev the chain passes.
        let ret = unsafe { bindings::register_netdevice_notifier(nb.get()) };
        if let Err(e) = kernel::error::to_result(ret) {
            REGISTERED.store(false, Ordering::Release);
            return Err(e);
        }
        let work = Some(gid_work::<T> as unsafe extern "C" fn());
        // SAFETY: sets gid_table.c's work handler; the work is not queued (nothing can queue
        // it before the address notifiers below are registered).
        unsafe { bindings::rxe_sr_glue_gid_work_init(work) };
        // SAFETY: our block, pinned until `drop` unregisters it, with a handler sound for any
        // event and address the IPv4 address chain passes.
        let ret = unsafe { bindings::register_inetaddr_notifier(inet.get()) };
        if let Err(e) = kernel::error::to_result(ret) {
            // SAFETY: registered just above.
            unsafe { bindings::unregister_netdevice_notifier(nb.get()) };
            REGISTERED.store(false, Ordering::Release);
            return Err(e);
        }
        // SAFETY: as for IPv4, on the IPv6 address chain (atomic: the handler does not sleep).
        let ret = unsafe { bindings::register_inet6addr_notifier(inet6.get()) };
        if let Err(e) = kernel::error::to_result(ret) {
            // SAFETY: registered just above; unregistering waits for running callbacks.
            unsafe { bindings::unregister_inetaddr_notifier(inet.get()) };
            // SAFETY: registered just above.
            unsafe { bindings::unregister_netdevice_notifier(nb.get()) };
            REGISTERED.store(false, Ordering::Release);
            return Err(e);
        }
        // INVARIANT: all registered above; `REGISTERED` set.
        Ok(NotifierRegistration { nb, inet, inet6 })
    }
}

impl Drop for NotifierRegistration {
    fn drop(&mut self) {
        // SAFETY: registered (type invariant); unregistering waits for running callbacks
        // (the atomic chain by an RCU grace period), so the block may be freed.
        unsafe { bindings::unregister_inet6addr_notifier(self.inet6.get()) };
        // SAFETY: registered (type invariant); unregistering waits for running callbacks.
        unsafe { bindings::unregister_inetaddr_notifier(self.inet.get()) };
        // SAFETY: registered (type invariant); unregistering waits for running callbacks,
        // so the block may be freed.
        unsafe { bindings::unregister_netdevice_notifier(self.nb.get()) };
        // SAFETY: nothing can queue the work any more (the address notifiers are gone);
        // waits for a run in progress.
        unsafe { bindings::rxe_sr_glue_gid_work_cancel_sync() };
        REGISTERED.store(false, Ordering::Release);
    }
}

/// The notifier's callback (`notifier_block.notifier_call`).
///
/// # Safety
/// Called by the netdev notifier chain (RTNL held) with a `netdev_notifier_info` whose
/// net_device is valid for the call (`netdev_notifier_info_to_dev`).
unsafe extern "C" fn notifier_call<T: NetdevNotifier>(
    _nb: *mut bindings::notifier_block,
    event: c_ulong,
    info: *mut c_void,
) -> c_int {
    const NOTIFY_DONE: c_int = bindings::NOTIFY_DONE as c_int;
    const NOTIFY_OK: c_int = bindings::NOTIFY_OK as c_int;
    let info = info.cast::<bindings::netdev_notifier_info>();
    if info.is_null() {
        return NOTIFY_DONE;
    }
    // SAFETY: per this function's contract, the info and its device are live for the call.
    let Some(nd) = (unsafe { NetDev::from_raw((*info).dev) }) else {
        return NOTIFY_DONE;
    };
    match NetdevEvent::from_cmd(event) {
        Some(ev) if T::event(ev, nd) => NOTIFY_OK,
        _ => NOTIFY_DONE,
    }
}

/// The IPv4 address notifier's callback: `arg` is the `in_ifaddr` added or removed.
///
/// # Safety
/// Called by the IPv4 address chain (process context) with an address whose `in_device`
/// and net_device are live for the call.
unsafe extern "C" fn inetaddr_call<T: NetdevNotifier>(
    _nb: *mut bindings::notifier_block,
    event: c_ulong,
    arg: *mut c_void,
) -> c_int {
    let ifa = arg.cast::<bindings::in_ifaddr>();
    if !ifa.is_null() {
        // SAFETY: per this function's contract, the address and its in_device are live.
        let ndev = unsafe { (*(*ifa).ifa_dev).dev };
        // SAFETY: per this function's contract, the net_device is live for the call.
        unsafe { addr_event::<T>(event, ndev) };
    }
    bindings::NOTIFY_DONE as c_int
}

/// The IPv6 address notifier's callback: `arg` is the `inet6_ifaddr` added or removed.
///
/// # Safety
/// Called by the IPv6 address chain (atomic context) with an address whose `inet6_dev` and
/// net_device are live for the call.
unsafe extern "C" fn inet6addr_call<T: NetdevNotifier>(
    _nb: *mut bindings::notifier_block,
    event: c_ulong,
    arg: *mut c_void,
) -> c_int {
    let ifa = arg.cast::<bindings::inet6_ifaddr>();
    if !ifa.is_null() {
        // SAFETY: per this function's contract, the address and its inet6_dev are live.
        let ndev = unsafe { (*(*ifa).idev).dev };
        // SAFETY: per this function's contract, the net_device is live for the call.
        unsafe { addr_event::<T>(event, ndev) };
    }
    bindings::NOTIFY_DONE as c_int
}

/// An address event on `ndev`, for `T` (both address notifiers' common part).
///
/// # Safety
/// `ndev` is null or a net_device live for the call; possibly in atomic context.
unsafe fn addr_event<T: NetdevNotifier>(event: c_ulong, ndev: *mut bindings::net_device) {
    // SAFETY: per this function's contract, live for the call.
    let Some(nd) = (unsafe { NetDev::from_raw(ndev) }) else {
        return;
    };
    let rescan = GidRescan(());
    match u32::try_from(event) {
        Ok(bindings::netdev_cmd_NETDEV_UP) => T::addr_event(AddrEvent::Added, nd, &rescan),
        Ok(bindings::netdev_cmd_NETDEV_DOWN) => T::addr_event(AddrEvent::Removed, nd, &rescan),
        _ => {}
    }
}

/// The GID rescan work's handler (kx/c/gid_table.c's rxe_sr_gid_work_run).
///
/// # Safety
/// Called by the workqueue in process context.
unsafe extern "C" fn gid_work<T: NetdevNotifier>() {
    T::rescan_gids();
}
