// SPDX-License-Identifier: GPL-2.0
//! Creating an RDMA device and the operations it carries (include/rdma/ib_verbs.h,
//! `struct ib_device_ops`, `ib_register_device`): [`Unregistered::new`], then
//! [`Unregistered::register`], and the table of
//! callbacks built from a [`Driver`]'s traits, device-level ones here and each object
//! family's in its file (`ib_ah.rs`, `ib_cq.rs`, ...).

use core::marker::PhantomData;
use core::mem::size_of;
use core::ptr::{self, NonNull};
use kernel::error::{from_result, to_result};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::str::CStr;

use crate::kx::bindings;
use crate::kx::ib_ah;
use crate::kx::ib_cq;
use crate::kx::ib_device::Device;
use crate::kx::ib_device_list;
use crate::kx::ib_driver::Driver;
use crate::kx::ib_hw_stats;
use crate::kx::ib_mad;
use crate::kx::ib_mr;
use crate::kx::ib_mw;
use crate::kx::ib_pd::PdId;
use crate::kx::ib_qp;
use crate::kx::ib_srq;
use crate::kx::ib_verbs::QpType;
use crate::kx::netdevice::NetDev;
use crate::kx::skbuff::SkBuff;

/// Device operations a driver's own part of kx adds to the ones [`Driver`] builds (its
/// user ABI's `mmap`, its sysfs attributes): a function that fills them in before the
/// table is installed.
pub(crate) struct ExtraOps(pub(super) fn(&mut bindings::ib_device_ops));

/// What a new device is set up with besides its data.
pub(crate) struct NewDevice<'a> {
    /// The netdev it carries RoCEv2 on (port 1).
    pub(crate) netdev: &'a NetDev,
    /// Node GUID, in wire byte order.
    pub(crate) node_guid: [u8; 8],
    /// Node description (truncated to the core's 64 bytes).
    pub(crate) node_desc: &'a [u8],
}

/// A device set up and not registered yet: dropping it frees it, its data included.
///
/// # Invariants
/// `raw` is a device [`Unregistered::new`] made for `T`, its data initialised and its operations
/// installed (freeing it runs `dealloc_driver`), not registered.
pub(crate) struct Unregistered<T: Driver> {
    raw: NonNull<Device<T>>,
}

impl<T: Driver> Unregistered<T> {
    /// Allocates a device with data `init` and the operations of `T` and `extra`, bound to
    /// its netdev; [`Unregistered::register`] hands it to the core.
    pub(crate) fn new(
        new: &NewDevice<'_>,
        init: impl PinInit<T::Data, Error>,
        extra: &ExtraOps,
    ) -> Result<Self> {
        // SAFETY: allocates a zeroed ib_device of our size, initialised by the core.
        let raw = unsafe { bindings::_ib_alloc_device(size_of::<Device<T>>()) }.cast::<Device<T>>();
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // SAFETY: `data` lies in the allocation, which never moves.
        if let Err(e) = unsafe { init.__pinned_init(Device::data_slot(raw.as_ptr())) } {
            // SAFETY: not registered, and nothing of ours in it: pin-init initialised
            // nothing on error.
            unsafe { bindings::ib_dealloc_device(raw.as_ptr().cast()) };
            return Err(e);
        }
        // SAFETY: the allocation is ours, not registered yet.
        unsafe { Device::set_up(raw.as_ptr(), new, extra) };
        // INVARIANT: data initialised and operations installed just above; not registered.
        let dev = Unregistered { raw };
        let ibp = raw.as_ptr().cast::<bindings::ib_device>();
        // Listed from here: dealloc_driver unlists it (`DEVICES`' invariant).
        ib_device_list::insert(ibp)?;
        // SAFETY: both live. kx/c/netdev_index.c (not the core's, where rdma_rxe would find
        // it) takes a netdev reference; `dealloc_driver` unbinds it.
        to_result(unsafe { bindings::rxe_sr_glue_ndev_bind(ibp, new.netdev.as_raw()) })?;
        // SAFETY: not registered yet; netdev live, in the link command's namespace (kx/c/netns.c).
        // In exclusive netns mode this puts the device in that namespace.
        unsafe { bindings::rxe_sr_glue_ib_device_home_net(ibp, new.netdev.as_raw()) };
        Ok(dev)
    }
}

impl<T: Driver> Device<T> {
    /// Sets up a new device around its data: the receive queue, the core's fields and the
    /// operations (from then on, freeing the device runs `dealloc_driver`).
    ///
    /// # Safety
    /// `raw` is a device allocated for `T` with its data initialised, not registered and
    /// used by nothing else.
    unsafe fn set_up(raw: *mut Self, new: &NewDevice<'_>, extra: &ExtraOps) {
        // SAFETY: the queue sits in the pinned allocation; its work calls `rx_work::<T>`
        // with this device, which outlives the queue (stopped in dealloc_driver).
        unsafe {
            bindings::rxe_sr_glue_rx_init(Device::rx_queue(raw), Some(rx_work::<T>), raw.cast())
        };
        let ibp = raw.cast::<bindings::ib_device>();
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
        ib.uverbs_cmd_mask |= (1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND)
            | (1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
        let mut ops = Adapter::<T>::ops();
        (extra.0)(&mut ops);
        T::live();
        // SAFETY: a valid unregistered device; the core copies the ops. From here freeing
        // the device runs `dealloc_driver`, which drops the data and calls `T::freed`.
        unsafe { bindings::ib_set_device_ops(ibp, &ops) };
    }
}

impl<T: Driver> Unregistered<T> {
    /// Registers the device as `name`; from then on the core owns it (`rdma link del` or
    /// module unload frees it). On error the device is freed.
    pub(crate) fn register(self, name: &CStr) -> Result {
        let ibp = self.raw.as_ptr().cast::<bindings::ib_device>();
        // SAFETY: a fully set-up device (type invariant); no DMA device (software
        // provider). No reference to the device is held across the call.
        to_result(unsafe {
            bindings::ib_register_device(ibp, name.as_char_ptr(), ptr::null_mut())
        })?;
        // The core owns it now: not freed here.
        core::mem::forget(self);
        Ok(())
    }
}

impl<T: Driver> Drop for Unregistered<T> {
    fn drop(&mut self) {
        // SAFETY: not registered (type invariant): ours to free; dealloc_driver drops the
        // data and unbinds the netdev.
        unsafe { bindings::ib_dealloc_device(self.raw.as_ptr().cast()) };
    }
}

fn this_module() -> *mut bindings::module {
    crate::THIS_MODULE.as_ptr().cast()
}

/// The receive queue's work: hands queued datagrams to `T::receive`, at most
/// `RXE_SR_RX_BUDGET` of them; true when it took that many (the C side queues the work again
/// while datagrams remain, at the priority kx/c/work.c's `rxe_sr_work_queue` picks).
///
/// # Safety
/// `owner` is the live `Device<T>` whose queue's work this is (set by `Unregistered::new`; the
/// work is cancelled before the device is freed).
unsafe extern "C" fn rx_work<T: Driver>(owner: *mut c_void) -> bool {
    // SAFETY: per this function's contract.
    let dev = unsafe { &*owner.cast::<Device<T>>() };
    for _ in 0..bindings::RXE_SR_RX_BUDGET {
        // SAFETY: the queue is initialised and alive (this function's contract).
        let raw = unsafe {
            bindings::rxe_sr_glue_rx_dequeue(Device::rx_queue(owner.cast::<Device<T>>()))
        };
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

/// Builds the `ib_device_ops` of `T` (installing only what `T` implements). Built at device
/// creation rather than a `const`: `owner` is the module's address and the soft-RoCE part
/// fills in a sysfs group that C hands out at run time.
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
                Some(ib_mad::process_mad::<T>)
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
        let dev = unsafe { Device::<T>::from_raw((*uctx).device) };
        from_result(|| T::alloc_ucontext(dev).map(|()| 0))
    }

    /// # Safety
    /// Called by the core once per allocated user context.
    unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: as in `alloc_ucontext`.
        T::dealloc_ucontext(unsafe { Device::<T>::from_raw((*uctx).device) });
    }

    /// # Safety
    /// Called by the core with a user context of a device of ours, before it destroys the
    /// context's objects. The queues the process mapped stay mapped (their pages hold the
    /// references `vm_insert_page` took) until it unmaps them: no VMA of
    /// ours has to be zapped.
    unsafe extern "C" fn disassociate_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: as in `alloc_ucontext`.
        T::disassociate_ucontext(unsafe { Device::<T>::from_raw((*uctx).device) });
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
                Device::<T>::from_raw((*ibqp).device),
                (*ibqp).qp_num,
                QpType::from_raw((*ibqp).qp_type),
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
                Device::<T>::from_raw((*ibqp).device),
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
        let dev = unsafe { Device::<T>::from_raw((*pd).device) };
        from_result(|| T::alloc_pd(dev, PdId::from_raw(pd)).map(|()| 0))
    }

    /// # Safety
    /// Called by the core once per allocated PD, when nothing uses it.
    unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: as in `alloc_pd`.
        let dev = unsafe { Device::<T>::from_raw((*pd).device) };
        T::dealloc_pd(dev, PdId::from_raw(pd));
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
        let dev = unsafe { Device::<T>::from_raw(ibdev) };
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
        let dev = unsafe { Device::<T>::from_raw(ibdev) };
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
        let dev = unsafe { Device::<T>::from_raw(ibdev) };
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
        let dev = unsafe { Device::<T>::from_raw(ibdev) };
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
        let raw = Device::<T>::container(ibdev);
        // SAFETY: nothing uses the device any more (contract) and no datagram can be queued
        // (lookups need it registered): the queue stops first, the data drops once.
        unsafe {
            bindings::rxe_sr_glue_rx_stop(Device::rx_queue(raw));
            Device::drop_data(raw);
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
