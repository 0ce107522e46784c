// SPDX-License-Identifier: GPL-2.0
//! RDMA devices (include/rdma/ib_verbs.h, `struct ib_device`): [`Device<T>`], the core's
//! device with a driver's data inside it and a receive queue, and [`DeviceRef`], a counted
//! reference. How a device is created and the `ib_device_ops` it carries are in
//! `ib_device_ops.rs`; the attributes the driver answers with are in `ib_device_attr.rs`.

use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use kernel::error::to_result;
use kernel::prelude::*;
use kernel::types::{ARef, Opaque};

use crate::kx::bindings;
use crate::kx::ib_device_list;
use crate::kx::netdevice::NetDev;
use crate::kx::skbuff::SkBuff;

/// A driver, as a marker type: what its devices carry. Each verbs family's trait
/// (`CqDriver`, `QpDriver`, ..., and `Driver` over them) builds on it.
pub(crate) trait DriverData: Send + Sync + Sized + 'static {
    /// The driver's data in each device, pin-initialised at creation and dropped when the
    /// core frees the device.
    type Data: Send + Sync;
}

/// An rxe_sr-style ib_device: the core's `struct ib_device`, the receive queue the UDP
/// socket feeds, and the driver's data.
///
/// # Invariants
/// Allocated by the core at `Unregistered::new` (ib_device_ops.rs: `_ib_alloc_device` of this type's size);
/// `rx` and `data` are initialised from then until the core calls `dealloc_driver`, and
/// the allocation does not move.
#[repr(C)]
pub(crate) struct Device<T: DriverData> {
    ib_dev: Opaque<bindings::ib_device>,
    rx: Opaque<bindings::rxe_sr_rx>,
    data: T::Data,
}

// SAFETY: the core's device is shared across threads by design; `T` is `Send + Sync`.
unsafe impl<T: DriverData> Send for Device<T> {}
// SAFETY: as above; the core serialises what it changes in `ib_dev`.
unsafe impl<T: DriverData> Sync for Device<T> {}

impl<T: DriverData> core::ops::Deref for Device<T> {
    type Target = T::Data;

    fn deref(&self) -> &T::Data {
        &self.data
    }
}

impl<T: DriverData> Device<T> {
    /// `ib_dev` comes first: a pointer to the core's device, which the core hands to every
    /// callback, is one to the whole device (checked at build time).
    const IB_FIRST: () = assert!(core::mem::offset_of!(Self, ib_dev) == 0);

    /// The device whose core part `ib` is: the same address ([`Self::IB_FIRST`]).
    pub(super) fn container(ib: *mut bindings::ib_device) -> *mut Self {
        let () = Self::IB_FIRST;
        ib.cast()
    }

    /// The device around an `ib_device` of this driver.
    ///
    /// # Safety
    /// `ibdev` is a live ib_device that `Unregistered::new` (ib_device_ops.rs) made for `T`
    /// (every ib_device_ops callback the core makes on such a device satisfies this).
    pub(crate) unsafe fn from_raw<'a>(ibdev: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: the device the core allocated with our size, `ib_dev` at its start
        // (`IB_FIRST`); initialised per the type invariant.
        unsafe { &*Self::container(ibdev) }
    }

    /// The `ib_device`, for calls into the core.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.ib_dev.get()
    }

    /// Node GUID as the core holds it (wire byte order, read as a native integer).
    pub(crate) fn node_guid(&self) -> u64 {
        // SAFETY: set before registration and not changed after.
        unsafe { (*self.ib_dev.get()).node_guid }
    }

    /// The RoCEv2 GID at `index` of port 1's GID table; `None` when the entry is empty or
    /// not a RoCEv2 GID.
    pub(crate) fn roce_v2_gid(&self, index: u32) -> Option<[u8; 16]> {
        let mut gid = [0u8; 16];
        let out = gid.as_mut_ptr();
        // SAFETY: the device is live (we hold `&self`); the helper takes and drops its own
        // GID-table reference and writes 16 bytes to `out`.
        let ret = unsafe { bindings::rxe_sr_glue_roce_v2_gid(self.as_raw(), index, out) };
        (ret == 0).then_some(gid)
    }

    /// The netdev of port 1, held, if it has one.
    pub(crate) fn netdev(&self) -> Option<ARef<NetDev>> {
        // SAFETY: our live device; the core returns a held netdev or null, whose reference
        // passes to the result.
        unsafe { NetDev::from_held(bindings::ib_device_get_netdev(self.as_raw(), 1)) }
    }

    /// Runs `f` with the netdev of port 1 (held for the call), if it has one.
    pub(crate) fn with_netdev<R>(&self, f: impl FnOnce(&NetDev) -> R) -> Option<R> {
        self.netdev().map(|nd| f(&nd))
    }

    /// Makes the netdev of port 1 accept (`add`) or stop accepting the Ethernet multicast
    /// address of group `mgid` (the IPv4 or IPv6 mapping, as rdma_rxe does).
    pub(crate) fn mcast_mac_filter(&self, mgid: &[u8; 16], add: bool) -> Result {
        let ret = self.with_netdev(|nd| {
            // SAFETY: `nd` is referenced for the call; `mgid` is 16 readable bytes.
            unsafe { bindings::rxe_sr_glue_mcast_mac(nd.as_raw(), mgid.as_ptr(), add) }
        });
        to_result(ret.ok_or(ENODEV)?)
    }

    /// Queues a received datagram for the receive work; false when the queue was full (the
    /// datagram is freed).
    pub(crate) fn queue_rx(&self, skb: SkBuff) -> bool {
        // SAFETY: the queue is initialised (invariant), stopped only in dealloc_driver once no
        // reference is left; the skb is handed over (the queue frees it when full).
        unsafe { bindings::rxe_sr_glue_rx_queue(self.rx.get(), skb.into_raw().as_ptr()) == 0 }
    }

    /// Tells the core's clients that port 1 became active or went down.
    pub(crate) fn dispatch_port_event(&self, active: bool) {
        let mut ev = bindings::ib_event {
            device: self.as_raw(),
            event: if active {
                bindings::ib_event_type_IB_EVENT_PORT_ACTIVE
            } else {
                bindings::ib_event_type_IB_EVENT_PORT_ERR
            },
            ..Default::default()
        };
        ev.element.port_num = 1;
        // SAFETY: `ev` names a live device (the caller holds it).
        unsafe { bindings::ib_dispatch_event(&ev) };
    }

    /// The receive queue, for its set-up, the work that drains it and the teardown.
    ///
    /// # Safety
    /// `raw` points into a device allocation of this type.
    pub(super) unsafe fn rx_queue(raw: *mut Self) -> *mut bindings::rxe_sr_rx {
        // SAFETY: per this function's contract; `Opaque` is `repr(transparent)`.
        unsafe { Opaque::raw_get(ptr::addr_of!((*raw).rx)) }
    }

    /// Drops the driver's data in place.
    ///
    /// # Safety
    /// `raw` is a device whose data is initialised and used by no one, and it is not used
    /// again (the core is freeing the device, or it was never registered).
    pub(super) unsafe fn drop_data(raw: *mut Self) {
        // SAFETY: per this function's contract.
        unsafe { ptr::drop_in_place(ptr::addr_of_mut!((*raw).data)) };
    }

    /// Where the driver's data goes, for its initialisation at creation.
    ///
    /// # Safety
    /// `raw` points into a device allocation of this type.
    pub(super) unsafe fn data_slot(raw: *mut Self) -> *mut T::Data {
        // SAFETY: per this function's contract.
        unsafe { ptr::addr_of_mut!((*raw).data) }
    }
}

/// A reference on a registered device of this driver; dropped with `ib_device_put`.
///
/// Not an `ARef<Device<T>>`: the core's count falls to zero while a device unregisters and
/// its callbacks still run, so a reference can only be tried (`ib_device_try_get`), which
/// `AlwaysRefCounted::inc_ref` cannot express.
///
/// # Invariants
/// `ibdev` is a device `Unregistered::new` (ib_device_ops.rs) made for `T`, on which this
/// holds a reference.
pub(crate) struct DeviceRef<T: DriverData> {
    ibdev: NonNull<bindings::ib_device>,
    _driver: PhantomData<T>,
}

impl<T: DriverData> DeviceRef<T> {
    /// The device bound to `nd`, if any.
    pub(crate) fn get_by_netdev(nd: &NetDev) -> Option<Self> {
        // SAFETY: `nd` is live; kx/c/netdev_index.c returns a referenced device of ours or null.
        let raw = unsafe { bindings::rxe_sr_glue_ib_device_by_netdev(nd.as_raw()) };
        // SAFETY: null or a device reference the index took for us.
        unsafe { Self::ours(raw) }
    }

    /// Whether a device of another driver is bound to `nd` in the core's index (rdma_rxe
    /// or a hardware driver's).
    pub(crate) fn other_driver_on(nd: &NetDev) -> bool {
        // SAFETY: `nd` is live; the core returns a referenced device or null.
        let raw = unsafe {
            bindings::ib_device_get_by_netdev(
                nd.as_raw(),
                bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN,
            )
        };
        if raw.is_null() {
            return false;
        }
        // SAFETY: drops the reference the core took for us.
        unsafe { bindings::ib_device_put(raw) };
        true
    }

    /// The device a packet that arrived on `nd` is for: the one bound to `nd`, or else to
    /// a device below it (`nd` a VLAN, or a bond whose slave is bound) whose addresses the
    /// core lists in the port's GID table. Called under RCU (the UDP receive path).
    pub(crate) fn get_for_rx(nd: &NetDev) -> Option<Self> {
        Self::get_by_netdev(nd).or_else(|| {
            // SAFETY: `nd` is live and the caller is in an RCU read section; the helper
            // returns a referenced device of ours (kx/c/netdev_index.c), or null.
            let raw = unsafe { bindings::rxe_sr_glue_ib_device_below(nd.as_raw()) };
            // SAFETY: null or a device reference the helper took for us.
            unsafe { Self::ours(raw) }
        })
    }

    /// Wraps a referenced device of this module (or null).
    ///
    /// # Safety
    /// `raw` is null or a device that `Unregistered::new` (ib_device_ops.rs) made for `T`, on which the caller
    /// holds a reference, passed to us. (kx/c/netdev_index.c and `ib_device_list` hold
    /// this module's devices only, and the module has one driver.)
    unsafe fn ours(raw: *mut bindings::ib_device) -> Option<Self> {
        // INVARIANT: per this function's contract.
        Some(DeviceRef {
            ibdev: NonNull::new(raw)?,
            _driver: PhantomData,
        })
    }

    /// Every registered device of this driver, each referenced (process context).
    pub(crate) fn all() -> Result<KVec<Self>> {
        let raw = ib_device_list::referenced()?;
        let mut all = KVec::with_capacity(raw.len(), GFP_KERNEL);
        for &d in raw.iter() {
            // SAFETY: a device of this module on which `referenced` took a reference for us.
            let dev = unsafe { Self::ours(d) };
            if let (Some(dev), Ok(all)) = (dev, all.as_mut()) {
                // Within the capacity taken above: cannot fail (were it to, `dev` and its
                // reference would be dropped).
                let _ = all.push(dev, GFP_KERNEL);
            }
        }
        all.map_err(|_| ENOMEM)
    }

    /// Lists port 1's GIDs again from its netdev's addresses, deleting every GID of the
    /// netdev first with `removed` (an address went). Process context; takes RTNL.
    pub(crate) fn rescan_gids(&self, removed: bool) {
        // SAFETY: a registered device on which we hold a reference; the core's GID table
        // functions take their own locks.
        unsafe { bindings::rxe_sr_glue_resync_gids(self.ibdev.as_ptr(), removed) };
    }

    /// Unregisters the device from a context that cannot wait (the netdev is going away).
    pub(crate) fn unregister_queued(&self) {
        // SAFETY: the device is registered and we hold a reference.
        unsafe { bindings::ib_unregister_device_queued(self.ibdev.as_ptr()) };
    }
}

impl<T: DriverData> core::ops::Deref for DeviceRef<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        // SAFETY: a referenced device made for `T` (type invariant).
        unsafe { Device::from_raw(self.ibdev.as_ptr()) }
    }
}

impl<T: DriverData> Drop for DeviceRef<T> {
    fn drop(&mut self) {
        // SAFETY: drops the reference this holds.
        unsafe { bindings::ib_device_put(self.ibdev.as_ptr()) };
    }
}
