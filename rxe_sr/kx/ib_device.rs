// SPDX-License-Identifier: GPL-2.0
//! RDMA devices (include/rdma/ib_verbs.h, `struct ib_device`): [`Device<T>`], the core's
//! device with a [`Driver`]'s data inside it and a receive queue; [`DeviceRef`], a counted
//! reference; and the device-level `ib_device_ops` built from the driver's trait (the
//! attributes the driver answers with are in `ib_device_attr.rs`).

use core::marker::PhantomData;
use core::mem::size_of;
use core::ptr::{self, NonNull};
use kernel::error::{from_result, to_result};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::types::{Opaque, ScopeGuard};

use crate::kx::bindings;
use crate::kx::ib_ah;
use crate::kx::ib_cq;
use crate::kx::ib_device_list;
use crate::kx::ib_hw_stats;
use crate::kx::ib_mr;
use crate::kx::ib_mw;
use crate::kx::ib_pd::PdId;
use crate::kx::ib_qp;
use crate::kx::ib_srq;
use crate::kx::ib_verbs::QpType;
use crate::kx::netdevice::NetDev;
use crate::kx::skbuff::SkBuff;

pub(crate) use crate::kx::ib_driver::Driver;

/// An rxe_sr-style ib_device: the core's `struct ib_device`, the receive queue the UDP
/// socket feeds, and the driver's data.
///
/// # Invariants
/// Allocated by the core at [`Device::create`] (`_ib_alloc_device` of this type's size);
/// `rx` and `data` are initialised from then until the core calls `dealloc_driver`, and
/// the allocation does not move.
#[repr(C)]
pub(crate) struct Device<T: Driver> {
    ib_dev: Opaque<bindings::ib_device>,
    rx: Opaque<bindings::rxe_sr_rx>,
    data: T,
}

// SAFETY: the core's device is shared across threads by design; `T` is `Send + Sync`.
unsafe impl<T: Driver> Send for Device<T> {}
// SAFETY: as above; the core serialises what it changes in `ib_dev`.
unsafe impl<T: Driver> Sync for Device<T> {}

impl<T: Driver> core::ops::Deref for Device<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.data
    }
}

/// Device operations a driver's own part of kx adds to the ones [`Driver`] builds (its
/// user ABI's `mmap`, its sysfs attributes): a function that fills them in before the
/// table is installed.
pub(crate) struct ExtraOps(pub(super) fn(&mut bindings::ib_device_ops));

/// What a new device is set up with besides its data.
pub(crate) struct NewDevice<'a> {
    /// `rdma link` name, e.g. `sr0`.
    pub(crate) name: &'a CStr,
    /// The netdev it carries RoCEv2 on (port 1).
    pub(crate) netdev: &'a NetDev<'a>,
    /// Node GUID, in wire byte order.
    pub(crate) node_guid: [u8; 8],
    /// Node description (truncated to the core's 64 bytes).
    pub(crate) node_desc: &'a [u8],
}

impl<T: Driver> Device<T> {
    /// The device around an `ib_device` of this driver.
    ///
    /// # Safety
    /// `ibdev` is a live ib_device that [`Device::create`] made for `T` (every
    /// ib_device_ops callback the core makes on such a device satisfies this).
    pub(crate) unsafe fn from_ib<'a>(ibdev: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `ib_dev` is the first field of the `repr(C)` device the core allocated
        // with our size; initialised per the type invariant.
        unsafe { &*ibdev.cast::<Self>() }
    }

    /// The `ib_device`, for calls into the core.
    pub(crate) fn ib_ptr(&self) -> *mut bindings::ib_device {
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
        let ret = unsafe { bindings::rxe_sr_glue_roce_v2_gid(self.ib_ptr(), index, out) };
        (ret == 0).then_some(gid)
    }

    /// Runs `f` with the netdev of port 1 (referenced for the call), if it has one.
    pub(crate) fn with_netdev<R>(&self, f: impl FnOnce(&NetDev<'_>) -> R) -> Option<R> {
        // SAFETY: our live device; the reference is dropped below.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.ib_ptr(), 1) };
        // SAFETY: null or referenced.
        let nd = unsafe { NetDev::from_raw(ndev) }?;
        let r = f(&nd);
        // SAFETY: drops the reference ib_device_get_netdev took.
        unsafe { bindings::rxe_sr_glue_dev_put(ndev) };
        Some(r)
    }

    /// Makes the netdev of port 1 accept (`add`) or stop accepting the Ethernet multicast
    /// address of group `mgid` (the IPv4 or IPv6 mapping, as rdma_rxe does).
    pub(crate) fn mcast_mac_filter(&self, mgid: &[u8; 16], add: bool) -> Result {
        let ret = self.with_netdev(|nd| {
            // SAFETY: `nd` is referenced for the call; `mgid` is 16 readable bytes.
            unsafe { bindings::rxe_sr_glue_mcast_mac(nd.as_ptr(), mgid.as_ptr(), add) }
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
            device: self.ib_ptr(),
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

    /// Creates a device with data `init` and registers it with the core; from then on the
    /// core owns it (`rdma link del` or module unload frees it).
    pub(crate) fn create(
        new: NewDevice<'_>,
        init: impl PinInit<T, Error>,
        extra: &ExtraOps,
    ) -> Result {
        // SAFETY: allocates a zeroed ib_device of our size, initialised by the core.
        let raw = unsafe { bindings::_ib_alloc_device(size_of::<Self>()) }.cast::<Self>();
        if raw.is_null() {
            return Err(ENOMEM);
        }
        // Until the ops (with dealloc_driver) are installed, the device is ours to free
        // with nothing of ours in it to drop.
        let guard = ScopeGuard::new(move || {
            // SAFETY: allocated above, not registered, its data not initialised.
            unsafe { bindings::ib_dealloc_device(raw.cast()) }
        });
        // SAFETY: `data` lies in the allocation, which never moves; on error nothing was
        // initialised (pin-init's contract) and the guard frees the device.
        unsafe { init.__pinned_init(ptr::addr_of_mut!((*raw).data))? };
        // From here the data is live: drop it if the device is freed before registration.
        guard.dismiss();
        let guard = ScopeGuard::new(move || {
            // SAFETY: `data` was initialised above and nothing else uses it; the device is
            // not registered, so it is ours to free.
            unsafe {
                ptr::drop_in_place(ptr::addr_of_mut!((*raw).data));
                bindings::ib_dealloc_device(raw.cast());
            }
        });
        // SAFETY: the queue sits in the pinned allocation; its work calls `rx_work::<T>`
        // with this device, which outlives the queue (stopped in dealloc_driver).
        unsafe { bindings::rxe_sr_glue_rx_init((*raw).rx.get(), Some(rx_work::<T>), raw.cast()) };

        let ibp = raw.cast::<bindings::ib_device>();
        {
            // SAFETY: not registered yet: nothing else reads the core's fields.
            let ib = unsafe { &mut *ibp };
            ib.node_guid = u64::from_ne_bytes(new.node_guid);
            ib.node_type = bindings::RDMA_NODE_IB_CA as u8;
            ib.phys_port_cnt = 1;
            ib.num_comp_vectors = 1;
            ib.local_dma_lkey = 0;
            for (d, s) in ib.node_desc.iter_mut().zip(new.node_desc.iter()) {
                *d = *s;
            }
            // The netdev's parent becomes ours, as siw does: /sys/class/infiniband/DEV/device/
            // net/ then names the netdev, which rdma-core's RDMA-CM tests (and admins) look up.
            // (`dev` is the union member the core initialised; `coredev` begins with it.)
            ib.__bindgen_anon_1.dev.parent = new.netdev.parent();
            ib.uverbs_cmd_mask |= (1u64
                << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND)
                | (1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
        }
        let mut ops = Adapter::<T>::ops();
        (extra.0)(&mut ops);
        T::live();
        // SAFETY: a valid unregistered device; the core copies the ops. From here freeing
        // the device runs `dealloc_driver`, which drops the data and calls `T::freed`.
        unsafe { bindings::ib_set_device_ops(ibp, &ops) };
        guard.dismiss();
        let guard = ScopeGuard::new(move || {
            // SAFETY: not registered: ours to free (dealloc_driver drops the data).
            unsafe { bindings::ib_dealloc_device(ibp) }
        });
        // Listed from here: dealloc_driver unlists it (`DEVICES`' invariant).
        ib_device_list::insert(ibp)?;
        // SAFETY: both live. kx/c/netdev_index.c (not the core's, where rdma_rxe would find
        // it) takes a netdev reference; `dealloc_driver` (the guard's too) unbinds it.
        to_result(unsafe { bindings::rxe_sr_glue_ndev_bind(ibp, new.netdev.as_ptr()) })?;
        // SAFETY: not registered yet; netdev live, in the link command's namespace (kx/c/netns.c).
        // In exclusive netns mode this puts the device in that namespace.
        unsafe { bindings::rxe_sr_glue_ib_device_home_net(ibp, new.netdev.as_ptr()) };
        // SAFETY: a fully set-up device; no DMA device (software provider). No reference to
        // the device is held across the call.
        to_result(unsafe {
            bindings::ib_register_device(ibp, new.name.as_char_ptr(), ptr::null_mut())
        })?;
        guard.dismiss();
        Ok(())
    }
}

fn this_module() -> *mut bindings::module {
    crate::THIS_MODULE.as_ptr().cast()
}

/// A reference on a registered device of this driver; dropped with `ib_device_put`.
///
/// # Invariants
/// `ibdev` is a device [`Device::create`] made for `T`, on which this holds a reference.
pub(crate) struct DeviceRef<T: Driver> {
    ibdev: NonNull<bindings::ib_device>,
    _driver: PhantomData<T>,
}

impl<T: Driver> DeviceRef<T> {
    /// The device bound to `nd`, if any.
    pub(crate) fn get_by_netdev(nd: &NetDev<'_>) -> Option<Self> {
        // SAFETY: `nd` is live; kx/c/netdev_index.c returns a referenced device of ours or null.
        let raw = unsafe { bindings::rxe_sr_glue_ib_device_by_netdev(nd.as_ptr()) };
        // SAFETY: null or a device reference the index took for us.
        unsafe { Self::ours(raw) }
    }

    /// Whether a device of another driver is bound to `nd` in the core's index (rdma_rxe
    /// or a hardware driver's).
    pub(crate) fn other_driver_on(nd: &NetDev<'_>) -> bool {
        // SAFETY: `nd` is live; the core returns a referenced device or null.
        let raw = unsafe {
            bindings::ib_device_get_by_netdev(
                nd.as_ptr(),
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
    pub(crate) fn get_for_rx(nd: &NetDev<'_>) -> Option<Self> {
        Self::get_by_netdev(nd).or_else(|| {
            // SAFETY: `nd` is live and the caller is in an RCU read section; the helper
            // returns a referenced device of ours (kx/c/netdev_index.c), or null.
            let raw = unsafe { bindings::rxe_sr_glue_ib_device_below(nd.as_ptr()) };
            // SAFETY: null or a device reference the helper took for us.
            unsafe { Self::ours(raw) }
        })
    }

    /// Wraps a referenced device of this module (or null).
    ///
    /// # Safety
    /// `raw` is null or a device that [`Device::create`] made for `T`, on which the caller
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

impl<T: Driver> core::ops::Deref for DeviceRef<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        // SAFETY: a referenced device made for `T` (type invariant).
        unsafe { Device::from_ib(self.ibdev.as_ptr()) }
    }
}

impl<T: Driver> Drop for DeviceRef<T> {
    fn drop(&mut self) {
        // SAFETY: drops the reference this holds.
        unsafe { bindings::ib_device_put(self.ibdev.as_ptr()) };
    }
}

/// The receive queue's work: hands queued datagrams to `T::receive`, at most
/// `RXE_SR_RX_BUDGET` of them; true when it took that many (the C side queues the work again
/// while datagrams remain, at the priority kx/c/work.c's `rxe_sr_work_queue` picks).
///
/// # Safety
/// `owner` is the live `Device<T>` whose queue's work this is (set by `Device::create`; the
/// work is cancelled before the device is freed).
unsafe extern "C" fn rx_work<T: Driver>(owner: *mut c_void) -> bool {
    // SAFETY: per this function's contract.
    let dev = unsafe { &*owner.cast::<Device<T>>() };
    for _ in 0..bindings::RXE_SR_RX_BUDGET {
        // SAFETY: the queue is initialised and alive (this function's contract).
        let raw = unsafe { bindings::rxe_sr_glue_rx_dequeue(dev.rx.get()) };
        // SAFETY: a dequeued skb is ours.
        let Some(skb) = (unsafe { SkBuff::from_raw(raw) }) else {
            return false;
        };
        T::receive(dev, skb);
        // Each datagram may answer with many packets: the rest of the system runs between
        // datagrams.
        crate::kx::sched::cond_resched();
    }
    true
}

/// Builds the device-level `ib_device_ops` of `T` (installing only what `T` implements).
struct Adapter<T: Driver>(PhantomData<T>);

impl<T: Driver> Adapter<T> {
    fn ops() -> bindings::ib_device_ops {
        bindings::ib_device_ops {
            owner: this_module(),
            uverbs_abi_ver: T::UVERBS_ABI_VER,
            query_device: Some(Self::query_device),
            query_port: Some(Self::query_port),
            query_pkey: if T::HAS_QUERY_PKEY {
                Some(Self::query_pkey)
            } else {
                None
            },
            process_mad: if T::HAS_LOCAL_MAD {
                Some(crate::kx::ib_mad::process_mad::<T>)
            } else {
                None
            },
            get_port_immutable: Some(Self::get_port_immutable),
            get_link_layer: Some(Self::get_link_layer),
            get_netdev: Some(bindings::rxe_sr_glue_get_netdev),
            dealloc_driver: Some(Self::dealloc_driver),
            alloc_ucontext: Some(Self::alloc_ucontext),
            dealloc_ucontext: Some(Self::dealloc_ucontext),
            // With it, uverbs holds no reference on this module for an open device, the
            // core may move a device between namespaces, and unregistering a device does
            // not wait for the processes that have it open.
            disassociate_ucontext: Some(Self::disassociate_ucontext),
            alloc_pd: Some(Self::alloc_pd),
            dealloc_pd: Some(Self::dealloc_pd),
            create_ah: Some(ib_ah::create_ah::<T>),
            create_user_ah: Some(ib_ah::create_ah::<T>),
            destroy_ah: Some(ib_ah::destroy_ah::<T>),
            create_cq: Some(ib_cq::create_cq::<T>),
            destroy_cq: Some(ib_cq::destroy_cq::<T>),
            req_notify_cq: Some(ib_cq::req_notify_cq::<T>),
            resize_cq: Some(ib_cq::resize_cq::<T>),
            poll_cq: Some(ib_cq::poll_cq::<T>),
            create_srq: Some(ib_srq::create_srq::<T>),
            destroy_srq: Some(ib_srq::destroy_srq::<T>),
            modify_srq: Some(ib_srq::modify_srq::<T>),
            query_srq: Some(ib_srq::query_srq::<T>),
            post_srq_recv: Some(ib_srq::post_srq_recv::<T>),
            reg_user_mr: Some(ib_mr::reg_user_mr::<T>),
            get_dma_mr: Some(ib_mr::get_dma_mr::<T>),
            alloc_mr: Some(ib_mr::alloc_mr::<T>),
            map_mr_sg: Some(ib_mr::map_mr_sg::<T>),
            rereg_user_mr: Some(ib_mr::rereg_user_mr::<T>),
            dereg_mr: Some(ib_mr::dereg_mr::<T>),
            advise_mr: Some(ib_mr::advise_mr::<T>),
            alloc_mw: Some(ib_mw::alloc_mw::<T>),
            dealloc_mw: Some(ib_mw::dealloc_mw::<T>),
            alloc_hw_port_stats: Some(ib_hw_stats::alloc_hw_port_stats::<T>),
            get_hw_stats: Some(ib_hw_stats::get_hw_stats::<T>),
            attach_mcast: Some(Self::attach_mcast),
            detach_mcast: Some(Self::detach_mcast),
            create_qp: Some(ib_qp::create_qp::<T>),
            destroy_qp: Some(ib_qp::destroy_qp::<T>),
            modify_qp: Some(ib_qp::modify_qp::<T>),
            query_qp: Some(ib_qp::query_qp::<T>),
            post_send: Some(ib_qp::post_send::<T>),
            post_recv: Some(ib_qp::post_recv::<T>),
            size_ib_ucontext: size_of::<bindings::ib_ucontext>(),
            size_ib_pd: size_of::<bindings::ib_pd>(),
            size_ib_ah: ib_ah::size::<T>(),
            size_ib_cq: ib_cq::size::<T>(),
            size_ib_srq: ib_srq::size::<T>(),
            size_ib_mw: ib_mw::size::<T>(),
            size_ib_qp: ib_qp::size::<T>(),
            ..Default::default()
        }
    }

    /// # Safety
    /// Called by the core with a user context of a device of ours.
    unsafe extern "C" fn alloc_ucontext(
        uctx: *mut bindings::ib_ucontext,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: the core sets the context's device before the call.
        let dev = unsafe { Device::<T>::from_ib((*uctx).device) };
        from_result(|| T::alloc_ucontext(dev).map(|()| 0))
    }

    /// # Safety
    /// Called by the core once per allocated user context.
    unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: as in `alloc_ucontext`.
        T::dealloc_ucontext(unsafe { Device::<T>::from_ib((*uctx).device) });
    }

    /// # Safety
    /// Called by the core with a user context of a device of ours, before it destroys the
    /// context's objects. The queues the process mapped stay mapped (their pages hold the
    /// references `vm_insert_page` took) until it unmaps them: no VMA of
    /// ours has to be zapped.
    unsafe extern "C" fn disassociate_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: as in `alloc_ucontext`.
        T::disassociate_ucontext(unsafe { Device::<T>::from_ib((*uctx).device) });
    }

    /// # Safety
    /// Called by the core with a live QP of a device of ours and a valid GID.
    unsafe extern "C" fn attach_mcast(
        ibqp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> c_int {
        // SAFETY: per this function's contract; `raw` covers the whole union.
        let (dev, qpn, qp_type, mgid) = unsafe {
            (
                Device::<T>::from_ib((*ibqp).device),
                (*ibqp).qp_num,
                QpType::from_ib((*ibqp).qp_type),
                (*gid).raw,
            )
        };
        from_result(|| T::attach_mcast(dev, qpn, qp_type, mgid).map(|()| 0))
    }

    /// # Safety
    /// As `attach_mcast`.
    unsafe extern "C" fn detach_mcast(
        ibqp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> c_int {
        // SAFETY: per this function's contract; `raw` covers the whole union.
        let (dev, qpn, mgid) = unsafe {
            (
                Device::<T>::from_ib((*ibqp).device),
                (*ibqp).qp_num,
                (*gid).raw,
            )
        };
        from_result(|| T::detach_mcast(dev, qpn, mgid).map(|()| 0))
    }

    /// # Safety
    /// Called by the core with a PD of a device of ours.
    unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: the core sets the PD's device before the call.
        let dev = unsafe { Device::<T>::from_ib((*pd).device) };
        from_result(|| T::alloc_pd(dev, PdId::of(pd)).map(|()| 0))
    }

    /// # Safety
    /// Called by the core once per allocated PD, when nothing uses it.
    unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: as in `alloc_pd`.
        T::dealloc_pd(unsafe { Device::<T>::from_ib((*pd).device) }, PdId::of(pd));
        0
    }

    /// # Safety
    /// Called by the core on a device of ours, with writable `attr` and null or valid
    /// `udata`.
    unsafe extern "C" fn query_device(
        ibdev: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: the core passes a valid udata or null (kernel callers).
        if let Some(u) = unsafe { udata.as_ref() } {
            if u.inlen != 0 || u.outlen != 0 {
                return EINVAL.to_errno();
            }
        }
        // SAFETY: a device of ours, live for the call.
        let dev = unsafe { Device::<T>::from_ib(ibdev) };
        let a = T::query_device(dev).to_raw();
        // SAFETY: `attr` points to writable storage for one ib_device_attr.
        unsafe { attr.write(a) };
        0
    }

    /// # Safety
    /// Called by the core on a device of ours, with writable `attr`.
    unsafe extern "C" fn query_port(
        ibdev: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> c_int {
        // SAFETY: a device of ours, live for the call.
        let dev = unsafe { Device::<T>::from_ib(ibdev) };
        // The one port's netdev (any other port is refused by the driver below).
        let up = dev.with_netdev(|nd| nd.is_up()).unwrap_or(false);
        let mut a = match T::query_port(dev, port, up) {
            Ok(a) => a.to_raw(),
            Err(e) => return e.to_errno(),
        };
        // SAFETY: valid device and out-pointers to our local; the core computes speed and
        // width from the netdev's ethtool link settings.
        unsafe {
            bindings::ib_get_eth_speed(ibdev, port, &mut a.active_speed, &mut a.active_width)
        };
        // SAFETY: `attr` points to writable storage for one ib_port_attr.
        unsafe { attr.write(a) };
        0
    }

    /// # Safety
    /// Called by the core on a device of ours, with writable `pkey`.
    unsafe extern "C" fn query_pkey(
        ibdev: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> c_int {
        // SAFETY: a device of ours, live for the call.
        let dev = unsafe { Device::<T>::from_ib(ibdev) };
        match T::query_pkey(dev, port, index) {
            Ok(p) => {
                // SAFETY: `pkey` points to writable storage.
                unsafe { pkey.write(p) };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    /// Called by the core on a device of ours, with writable `imm`.
    unsafe extern "C" fn get_port_immutable(
        ibdev: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> c_int {
        // SAFETY: a device of ours, live for the call.
        let dev = unsafe { Device::<T>::from_ib(ibdev) };
        match T::port_immutable(dev, port) {
            Ok(i) => {
                // SAFETY: `imm` points to writable storage for one ib_port_immutable.
                unsafe { imm.write(i.to_raw()) };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// Every port of a RoCE device is Ethernet.
    extern "C" fn get_link_layer(
        _ibdev: *mut bindings::ib_device,
        _port: u32,
    ) -> bindings::rdma_link_layer {
        bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET
    }

    /// # Safety
    /// Called by the core once, when the device is being freed and unused (uverbs closed
    /// its objects before, and the destroy verbs took every object out of the data).
    unsafe extern "C" fn dealloc_driver(ibdev: *mut bindings::ib_device) {
        let raw = ibdev.cast::<Device<T>>();
        // SAFETY: nothing uses the device any more (contract) and no datagram can be queued
        // (lookups need it registered): the queue stops first, the data drops once.
        unsafe {
            bindings::rxe_sr_glue_rx_stop((*raw).rx.get());
            ptr::drop_in_place(ptr::addr_of_mut!((*raw).data));
        }
        // SAFETY: the device is ours and live; lookups find it no more (they took no
        // reference: it is unregistered), the netdev reference goes.
        unsafe { bindings::rxe_sr_glue_ndev_unbind(ibdev) };
        // After the data (whose drop may take the global mutex itself), before the core
        // frees the device.
        ib_device_list::remove(ibdev);
        T::freed();
    }
}
