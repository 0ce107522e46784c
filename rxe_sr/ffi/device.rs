// SPDX-License-Identifier: GPL-2.0
//! The rxe_sr ib_device: allocation and registration with the RDMA core, the references the
//! core hands out, and the C-ABI `ib_device_ops` entry points, which forward to
//! `verbs::device`.

use core::mem::size_of;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::error::to_result;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::types::{Opaque, ScopeGuard};

use super::{ah, cq, mcast, mr, mw, pd, qp, srq, stats};
use crate::kx::bindings as b;
use crate::kx::ib_device::PortState;
use crate::kx::ib_verbs::PathMtu;
use crate::kx::mmap_queue as queue;
use crate::kx::netdevice::NetDev;
use crate::kx::skbuff::SkBuff;
use crate::kx::xarray::IndexTable;
use crate::objects::counters::{Counter, Counters};
use crate::verbs::device as vd;
use crate::verbs::mcast::McastGroups;
use core::pin::Pin;
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::new_mutex;
use kernel::sync::Mutex;

/// rdma_rxe's driver id: the stock rdma-core rxe provider binds to devices that carry it.
const DRIVER_ID: b::rdma_driver_id = b::rdma_driver_id_RDMA_DRIVER_RXE;

/// One rxe_sr device. `ib_dev` comes first: the RDMA core allocates the whole struct
/// (`_ib_alloc_device(size_of::<RxeSrDev>())`, zeroed) and hands back `&ib_dev`.
#[repr(C)]
pub(crate) struct RxeSrDev {
    ib_dev: b::ib_device,
    /// `enum ib_port_state` of port 1, kept in step with the netdev.
    port_state: AtomicU32,
    /// `enum ib_mtu`: the path MTU the netdev's MTU allows.
    active_mtu: AtomicU32,
    /// Memory regions by key index.
    mr_table: IndexTable,
    /// Queue pairs by QPN.
    qp_table: IndexTable,
    /// Address handles by AH number.
    ah_table: IndexTable,
    /// Memory windows by key index.
    mw_table: IndexTable,
    /// The low byte of the next key (see `verbs::mr`).
    key_variant: AtomicU32,
    /// What `rdma statistic` shows.
    counters: Counters,
    /// Multicast groups; set before registration (all-zero is `None`), freed in
    /// `dealloc_driver`.
    mcast: Option<Pin<KBox<Mutex<McastGroups>>>>,
    /// Received datagrams waiting for the receive work (ffi/rx.rs).
    pub(crate) rx: Opaque<b::rxe_sr_rx>,
    /// PDs, CQs and SRQs in use, against the `max_pd`, `max_cq` and `max_srq` the device
    /// reports (QPs, MRs, MWs and AHs are bounded by their index tables).
    pub(crate) pds_used: AtomicU32,
    pub(crate) cqs_used: AtomicU32,
    pub(crate) srqs_used: AtomicU32,
}

impl RxeSrDev {
    /// The rxe_sr device around an ib_device of ours.
    ///
    /// # Safety
    /// `ibdev` is a live ib_device allocated by [`add`] (every ib_device_ops callback of
    /// ours, and [`DeviceRef`], satisfy this).
    pub(crate) unsafe fn from_ib<'a>(ibdev: *mut b::ib_device) -> &'a RxeSrDev {
        // SAFETY: `ib_dev` is the first field of the `repr(C)` RxeSrDev the core allocated.
        unsafe { &*ibdev.cast::<RxeSrDev>() }
    }

    /// The `ib_device` for calls into the RDMA core that only read it under their own locks.
    pub(crate) fn ib_ptr(&self) -> *mut b::ib_device {
        ptr::addr_of!(self.ib_dev).cast_mut()
    }

    /// The device's MR table.
    pub(crate) fn mrs(&self) -> &IndexTable {
        &self.mr_table
    }

    /// Queues a received skb for the receive work, which frees it.
    pub(crate) fn queue_rx(&self, skb: SkBuff) {
        // SAFETY: the queue was initialised before registration and is stopped only in
        // dealloc_driver, after every reference (the caller holds one) is gone; the skb is
        // handed over (the queue frees it when full).
        if unsafe { b::rxe_sr_glue_rx_queue(self.rx.get(), skb.into_raw().as_ptr()) } != 0 {
            // The queue was full: the datagram is freed and counted.
            self.counters.inc(Counter::RcvdDropped);
        }
    }

    /// The device's counters.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The device's multicast groups.
    pub(crate) fn mcast(&self) -> Option<&Mutex<McastGroups>> {
        self.mcast.as_deref()
    }

    /// The device's MW table.
    pub(crate) fn mws(&self) -> &IndexTable {
        &self.mw_table
    }

    /// The device's AH table.
    pub(crate) fn ahs(&self) -> &IndexTable {
        &self.ah_table
    }

    /// The device's QP table.
    pub(crate) fn qps(&self) -> &IndexTable {
        &self.qp_table
    }

    /// A new key variant (the key's low byte), rolling over.
    pub(crate) fn next_key_variant(&self) -> u8 {
        // Truncation to the low byte is the point.
        (self.key_variant.fetch_add(1, Ordering::Relaxed) & 0xff) as u8
    }

    /// The port's path MTU (`enum ib_mtu`: 1 = 256 .. 5 = 4096 bytes).
    pub(crate) fn active_mtu(&self) -> u32 {
        self.active_mtu.load(Ordering::Relaxed)
    }

    fn set_mtu(&self, netdev_mtu: u32) {
        self.active_mtu.store(
            vd::ib_mtu_from_eth_mtu(netdev_mtu).to_raw(),
            Ordering::Relaxed,
        );
    }
}

/// A reference on a registered rxe_sr device (`ib_device_get_by_netdev`); dropped with
/// `ib_device_put`.
pub(crate) struct DeviceRef {
    ibdev: NonNull<b::ib_device>,
}

impl DeviceRef {
    /// The rxe_sr device bound to `nd`, if any.
    pub(crate) fn get_by_netdev(nd: &NetDev<'_>) -> Option<Self> {
        // SAFETY: `nd` is live; the core returns a referenced device or null.
        let raw = unsafe { b::ib_device_get_by_netdev(nd.as_ptr(), DRIVER_ID) };
        // SAFETY: null or a device reference the core took for us.
        unsafe { Self::ours(raw) }
    }

    /// The rxe_sr device a packet that arrived on `nd` is for: the one bound to `nd`, or
    /// else to a device below it (`nd` a VLAN, or a bond whose slave is bound), whose
    /// addresses the core lists in the port's GID table. Called under RCU (the UDP receive
    /// path).
    pub(crate) fn get_for_rx(nd: &NetDev<'_>) -> Option<Self> {
        Self::get_by_netdev(nd).or_else(|| {
            // SAFETY: `nd` is live and the caller is in an RCU read section; the helper
            // returns a referenced device whose ops are ours, or null.
            let raw = unsafe { b::rxe_sr_glue_ib_device_below(nd.as_ptr()) };
            // SAFETY: null or a device reference the helper took for us.
            unsafe { Self::ours(raw) }
        })
    }

    /// Wraps a referenced device (or null) from the core, keeping it only if its ops are
    /// ours (the reference is dropped otherwise).
    ///
    /// # Safety
    /// `raw` is null or a device on which the caller holds a reference, passed to us.
    unsafe fn ours(raw: *mut b::ib_device) -> Option<Self> {
        let r = DeviceRef {
            ibdev: NonNull::new(raw)?,
        };
        // Same driver id as rdma_rxe: only devices whose ops we installed are ours.
        // SAFETY: the reference keeps the device alive; `ops.owner` is a plain field.
        let owner = unsafe { r.ibdev.as_ref().ops.owner };
        (owner == this_module()).then_some(r)
    }

    /// The device behind the reference.
    pub(crate) fn dev(&self) -> &RxeSrDev {
        // SAFETY: a referenced device whose ops are ours was allocated by `add`.
        unsafe { RxeSrDev::from_ib(self.ibdev.as_ptr()) }
    }

    /// Follows a netdev MTU change.
    pub(crate) fn set_mtu(&self, netdev_mtu: u32) {
        self.dev().set_mtu(netdev_mtu);
    }

    /// Follows the netdev's running/carrier state, telling the core's clients.
    pub(crate) fn update_port_state(&self, nd: &NetDev<'_>) {
        let new = vd::port_state(nd.is_running(), nd.carrier_ok());
        let old = PortState::from_raw(self.dev().port_state.swap(new.to_raw(), Ordering::Relaxed));
        if old == new {
            return;
        }
        if old == PortState::Active {
            self.dev().counters.inc(Counter::LinkDowned);
        }
        let mut ev = b::ib_event {
            device: self.ibdev.as_ptr(),
            event: if new == PortState::Active {
                b::ib_event_type_IB_EVENT_PORT_ACTIVE
            } else {
                b::ib_event_type_IB_EVENT_PORT_ERR
            },
            ..Default::default()
        };
        ev.element.port_num = vd::PORT_NUM;
        // SAFETY: `ev` names a registered device we hold a reference on.
        unsafe { b::ib_dispatch_event(&ev) };
    }

    /// Unregisters the device from a context that cannot wait (the netdev is going away).
    pub(crate) fn unregister_queued(&self) {
        // SAFETY: the device is registered and we hold a reference.
        unsafe { b::ib_unregister_device_queued(self.ibdev.as_ptr()) };
    }
}

impl Drop for DeviceRef {
    fn drop(&mut self) {
        // SAFETY: drops the reference `ib_device_get_by_netdev` took.
        unsafe { b::ib_device_put(self.ibdev.as_ptr()) };
    }
}

fn this_module() -> *mut b::module {
    crate::THIS_MODULE.as_ptr().cast()
}

/// Creates and registers an rxe_sr device named `name` on `nd`.
pub(crate) fn add(name: &CStr, nd: &NetDev<'_>) -> Result {
    if nd.is_vlan() {
        pr_err!(
            "{}: a VLAN device; create the link on the real device\n",
            nd.name()
        );
        return Err(EPERM);
    }
    if DeviceRef::get_by_netdev(nd).is_some() {
        pr_err!("{} already has an rxe_sr device\n", nd.name());
        return Err(EEXIST);
    }

    // SAFETY: allocates a zeroed ib_device of our struct's size, initialised by the core.
    let raw = unsafe { b::_ib_alloc_device(size_of::<RxeSrDev>()) }.cast::<RxeSrDev>();
    if raw.is_null() {
        return Err(ENOMEM);
    }
    // Until registration succeeds the device is ours to free.
    let guard = ScopeGuard::new(move || {
        // SAFETY: allocated above and not registered.
        unsafe { b::ib_dealloc_device(raw.cast()) }
    });
    // Set-up through a unique reference, which ends before the device is handed to the
    // core: from ib_register_device on, the core may call our ops (which take shared
    // references) at any time, so only raw pointers are used from there.
    // SAFETY: freshly allocated and zeroed; nothing else knows it yet. All-zero is a valid
    // `RxeSrDev` (atomics, opaque C structs, and the ib_device the core initialised).
    let dev = unsafe { &mut *raw };
    // SAFETY: the table sits in the device allocation, which does not move; it is
    // destroyed in `dealloc_driver` (an empty, unused table holds no memory before then).
    unsafe {
        IndexTable::init(&mut dev.mr_table);
        IndexTable::init(&mut dev.qp_table);
        IndexTable::init(&mut dev.ah_table);
        IndexTable::init(&mut dev.mw_table);
        b::rxe_sr_glue_rx_init(dev.rx.get());
    }

    dev.mcast = Some(KBox::pin_init(
        new_mutex!(McastGroups::default(), "rxe_sr_mcast"),
        GFP_KERNEL,
    )?);

    let guid = u64::from_ne_bytes(vd::guid_from_mac(nd.mac()));
    let ib = &mut dev.ib_dev;
    ib.node_guid = guid;
    ib.node_type = b::RDMA_NODE_IB_CA as u8;
    ib.phys_port_cnt = 1;
    ib.num_comp_vectors = 1;
    ib.local_dma_lkey = 0;
    let desc = b"rxe_sr";
    for (d, s) in ib.node_desc.iter_mut().zip(desc.iter()) {
        *d = *s;
    }
    // The netdev's parent becomes ours, as siw does: /sys/class/infiniband/DEV/device/net/
    // then names the netdev, which rdma-core's RDMA-CM tests (and admins) look up.
    // (`dev` is the union member the core initialised; `coredev` begins with it.)
    ib.__bindgen_anon_1.dev.parent = nd.parent();
    ib.uverbs_cmd_mask |= (1u64 << b::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND)
        | (1u64 << b::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
    dev.port_state.store(
        vd::port_state(nd.is_running(), nd.carrier_ok()).to_raw(),
        Ordering::Relaxed,
    );
    dev.set_mtu(nd.mtu());

    let ibp: *mut b::ib_device = &mut dev.ib_dev;
    // `dev` is not used past this point.
    let ops = device_ops();
    // From here on, freeing the device (the guard, or the core once registered) runs our
    // `dealloc_driver`, which counts it freed.
    vd::note_live();
    // SAFETY: `ibp` is a valid unregistered device; the core copies the ops.
    unsafe { b::ib_set_device_ops(ibp, &ops) };
    // SAFETY: both are live; the core takes its own netdev reference.
    to_result(unsafe { b::ib_device_set_netdev(ibp, nd.as_ptr(), vd::PORT_NUM) })?;
    // SAFETY: a fully set-up device; no DMA device (software provider). No reference to
    // the device is held across the call.
    to_result(unsafe { b::ib_register_device(ibp, name.as_char_ptr(), ptr::null_mut()) })?;
    guard.dismiss();
    vd::note_created();
    // The device may be unregistered by now (rdma link del); do not touch it again.
    pr_info!("{}: added on {} (mtu {})\n", name, nd.name(), nd.mtu());
    Ok(())
}

/// Unregisters every rxe_sr device (module unload); waits for their users to finish.
pub(crate) fn unregister_all() {
    // SAFETY: only rxe_sr devices carry this driver id (rdma_rxe cannot be loaded beside us:
    // it would need UDP port 4791, which we hold).
    unsafe { b::ib_unregister_driver(DRIVER_ID) };
}

/// The ops table: built at run time, copied by the core into each device.
fn device_ops() -> b::ib_device_ops {
    b::ib_device_ops {
        owner: this_module(),
        driver_id: DRIVER_ID,
        uverbs_abi_ver: vd::RXE_UVERBS_ABI_VERSION,
        query_device: Some(query_device),
        query_port: Some(query_port),
        query_pkey: Some(query_pkey),
        get_port_immutable: Some(get_port_immutable),
        get_link_layer: Some(get_link_layer),
        alloc_ucontext: Some(pd::alloc_ucontext),
        dealloc_ucontext: Some(pd::dealloc_ucontext),
        alloc_pd: Some(pd::alloc_pd),
        dealloc_pd: Some(pd::dealloc_pd),
        create_cq: Some(cq::create_cq),
        destroy_cq: Some(cq::destroy_cq),
        req_notify_cq: Some(cq::req_notify_cq),
        resize_cq: Some(cq::resize_cq),
        poll_cq: Some(cq::poll_cq),
        create_ah: Some(ah::create_ah),
        create_user_ah: Some(ah::create_user_ah),
        destroy_ah: Some(ah::destroy_ah),
        create_qp: Some(qp::create_qp),
        modify_qp: Some(qp::modify_qp),
        query_qp: Some(qp::query_qp),
        destroy_qp: Some(qp::destroy_qp),
        post_send: Some(qp::post_send),
        post_recv: Some(qp::post_recv),
        attach_mcast: Some(mcast::attach_mcast),
        detach_mcast: Some(mcast::detach_mcast),
        create_srq: Some(srq::create_srq),
        modify_srq: Some(srq::modify_srq),
        query_srq: Some(srq::query_srq),
        destroy_srq: Some(srq::destroy_srq),
        post_srq_recv: Some(srq::post_srq_recv),
        get_dma_mr: Some(mr::get_dma_mr),
        alloc_mr: Some(mr::alloc_mr),
        map_mr_sg: Some(mr::map_mr_sg),
        alloc_mw: Some(mw::alloc_mw),
        dealloc_mw: Some(mw::dealloc_mw),
        reg_user_mr: Some(mr::reg_user_mr),
        dereg_mr: Some(mr::dereg_mr),
        mmap: Some(queue::mmap),
        alloc_hw_port_stats: Some(stats::alloc_hw_port_stats),
        get_hw_stats: Some(stats::get_hw_stats),
        mmap_free: Some(queue::mmap_free),
        dealloc_driver: Some(dealloc_driver),
        size_ib_ucontext: size_of::<b::ib_ucontext>(),
        size_ib_pd: size_of::<b::ib_pd>(),
        size_ib_cq: cq::SIZE,
        size_ib_qp: qp::SIZE,
        size_ib_ah: ah::SIZE,
        size_ib_srq: srq::SIZE,
        size_ib_mw: mw::SIZE,
        ..Default::default()
    }
}

unsafe extern "C" fn query_device(
    ibdev: *mut b::ib_device,
    attr: *mut b::ib_device_attr,
    udata: *mut b::ib_udata,
) -> c_int {
    // SAFETY: the core passes a valid udata or null (kernel callers).
    if let Some(u) = unsafe { udata.as_ref() } {
        if u.inlen != 0 || u.outlen != 0 {
            return EINVAL.to_errno();
        }
    }
    // SAFETY: a device of ours, live for the call.
    let dev = unsafe { RxeSrDev::from_ib(ibdev) };
    let a = vd::device_attr(dev.ib_dev.node_guid).to_raw();
    // SAFETY: `attr` points to writable storage for one ib_device_attr.
    unsafe { attr.write(a) };
    0
}

unsafe extern "C" fn query_port(
    ibdev: *mut b::ib_device,
    port: u32,
    attr: *mut b::ib_port_attr,
) -> c_int {
    if port != vd::PORT_NUM {
        return EINVAL.to_errno();
    }
    // SAFETY: a device of ours, live for the call.
    let dev = unsafe { RxeSrDev::from_ib(ibdev) };
    // SAFETY: the netdev reference is the core's, held while the device is registered.
    let ndev = unsafe { b::ib_device_get_netdev(ibdev, port) };
    // SAFETY: `ndev` is null or referenced (dropped below).
    let up = match unsafe { NetDev::from_raw(ndev) } {
        Some(nd) => nd.is_up(),
        None => false,
    };
    let mut a = vd::port_attr(
        PortState::from_raw(dev.port_state.load(Ordering::Relaxed)),
        PathMtu::from_raw(dev.active_mtu.load(Ordering::Relaxed)).unwrap_or_default(),
        up,
    )
    .to_raw();
    if !ndev.is_null() {
        // SAFETY: drops the reference `ib_device_get_netdev` took.
        unsafe { b::rxe_sr_glue_dev_put(ndev) };
    }
    // Speed and width from the netdev's ethtool link settings, as the core computes them.
    // SAFETY: valid device and out-pointers to our local.
    unsafe { b::ib_get_eth_speed(ibdev, port, &mut a.active_speed, &mut a.active_width) };
    // SAFETY: `attr` points to writable storage for one ib_port_attr.
    unsafe { attr.write(a) };
    0
}

unsafe extern "C" fn query_pkey(
    _ibdev: *mut b::ib_device,
    port: u32,
    index: u16,
    pkey: *mut u16,
) -> c_int {
    if port != vd::PORT_NUM || index != 0 {
        return EINVAL.to_errno();
    }
    // SAFETY: `pkey` points to writable storage.
    unsafe { pkey.write(vd::DEFAULT_PKEY_FULL) };
    0
}

unsafe extern "C" fn get_port_immutable(
    _ibdev: *mut b::ib_device,
    port: u32,
    imm: *mut b::ib_port_immutable,
) -> c_int {
    if port != vd::PORT_NUM {
        return EINVAL.to_errno();
    }
    // SAFETY: `imm` points to writable storage for one ib_port_immutable.
    unsafe { imm.write(vd::port_immutable().to_raw()) };
    0
}

unsafe extern "C" fn get_link_layer(_ibdev: *mut b::ib_device, _port: u32) -> b::rdma_link_layer {
    b::rdma_link_layer_IB_LINK_LAYER_ETHERNET
}

unsafe extern "C" fn dealloc_driver(ibdev: *mut b::ib_device) {
    // SAFETY: the core calls this once, when the device is being freed and unused; every
    // MR, QP and AH was destroyed before (uverbs closes its objects before the device goes).
    unsafe {
        // No datagram can be queued any more (lookups need a registered device).
        b::rxe_sr_glue_rx_stop((*ibdev.cast::<RxeSrDev>()).rx.get());
        IndexTable::destroy(&mut (*ibdev.cast::<RxeSrDev>()).mr_table);
        IndexTable::destroy(&mut (*ibdev.cast::<RxeSrDev>()).qp_table);
        IndexTable::destroy(&mut (*ibdev.cast::<RxeSrDev>()).ah_table);
        IndexTable::destroy(&mut (*ibdev.cast::<RxeSrDev>()).mw_table);
        drop((*ibdev.cast::<RxeSrDev>()).mcast.take());
    }
    vd::note_freed();
}
