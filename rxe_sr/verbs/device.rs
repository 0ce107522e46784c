// SPDX-License-Identifier: GPL-2.0
//! The rxe_sr device: creating one on a netdev, keeping its port in step with the netdev,
//! and the device and port attributes it reports (the `kx::ib_device::Driver` impl).
//!
//! The limits follow rdma_rxe's (rxe_param.h) so that the stock rdma-core rxe provider and
//! applications written against rdma_rxe see the same device; each limit reported is the
//! constant the verbs enforce it with.

use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::prelude::*;
use kernel::str::CStr;

use crate::kx::ib_device::Device;
use crate::kx::ib_device_ops::{NewDevice, Unregistered};
use crate::kx::ib_driver::Driver;
use crate::kx::ib_qp::WorkDriver;
use crate::kx::netdevice::NetDev;
use crate::kx::rxe::soft_roce::{self, SoftRoce};
use crate::kx::skbuff::SkBuff;
use crate::objects::device::{DeviceState, ObjectLimits, RoceDevice, RoceDeviceRef};
use crate::transport::qp::RoceQp;

use crate::kx::ib_device_attr::RoceV2PortImmutable;
use crate::kx::ib_device_attr::{
    AtomicCap, DeviceAttr, DeviceCaps, PortAttr, PortPhysState, PortState,
};
use crate::kx::ib_device_attr::{OdpCaps, OdpOps};
use crate::kx::ib_hw_stats::{stat_descs, HwStatsDriver, StatDesc};
use crate::kx::ib_mad::{MadDriver, MAD_SIZE};
use crate::kx::ib_pd::PdId;
use crate::kx::ib_umem_odp;
use crate::kx::ib_verbs::PathMtu;
use crate::kx::ib_verbs::QpType;
use crate::objects::counters::{self, Counter};
use crate::objects::device::RxeSr;
use crate::objects::mr::{MAX_MR_INDEX, MAX_MW_INDEX, MIN_MR_INDEX, MIN_MW_INDEX};
use crate::objects::sr_pools;
use crate::proto::fec::FecParams;
use crate::proto::recovery::scheme::Scheme;
use crate::proto::wire::pma;
use crate::uabi::limits;
use crate::verbs::{qp, srq, PORT_NUM};

/// uverbs ABI version of the rxe user ABI (rdma-core's providers/rxe checks it).
pub(crate) const RXE_UVERBS_ABI_VERSION: u32 = 2;
/// The default P_Key, full membership (IBTA 10.9.1.1): the only entry of the P_Key table.
pub(crate) const DEFAULT_PKEY_FULL: u16 = 0xffff;
/// IBTA vendor id "unassigned", as rdma_rxe reports.
const VENDOR_ID: u32 = 0xFF_FFFF;
/// Worst-case bytes below the payload in one RoCEv2 frame: IPv6 (40) + UDP (8) + BTH (12)
/// + RETH (16) + ICRC (4). The path MTU is what is left of the netdev's MTU.
pub(crate) const MAX_HDR_LEN: u32 = 80;
/// Entries in the GID table (RoCE GIDs from the netdev's addresses).
const GID_TBL_LEN: u32 = 1024;
/// Largest message, as rdma_rxe: 2 GiB, the bound the WQE parsers check.
const MAX_MSG_SZ: u32 = limits::RXE_MAX_MSG_SIZE as u32;
const DEFAULT_MAX: u32 = 1 << 20;
/// Protection domains a device lets exist at once (`max_pd`, as rdma_rxe).
pub(crate) const MAX_PD: u32 = DEFAULT_MAX;
/// Completion queues (`max_cq`).
pub(crate) const MAX_CQ: u32 = DEFAULT_MAX;
/// Shared receive queues (`max_srq`, as rdma_rxe: its index range).
pub(crate) const MAX_SRQ: u32 = DEFAULT_MAX - 0x2_0001;
/// Entries in the P_Key table (`max_pkeys`, `pkey_tbl_len`): the default P_Key only.
const PKEY_TBL_LEN: u16 = 1;

static CREATED: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Counts a device allocated by `rdma link add` that the RDMA core will free (its ops,
/// with the `dealloc_driver` that calls [`note_freed`], are installed): counted before the
/// device can be registered, so that a failed registration, or an `rdma link del` racing
/// the end of `rdma link add`, never frees a device not yet counted.
pub(crate) fn note_live() {
    LIVE.fetch_add(1, Ordering::Relaxed);
}

/// Counts a device registered by `rdma link add`.
pub(crate) fn note_created() {
    CREATED.fetch_add(1, Ordering::Relaxed);
}

/// Counts a device freed by the RDMA core.
pub(crate) fn note_freed() {
    LIVE.fetch_sub(1, Ordering::Relaxed);
}

/// Devices created since load.
pub(crate) fn devices_created() -> usize {
    CREATED.load(Ordering::Relaxed)
}

/// Devices not yet freed.
pub(crate) fn devices_live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The node GUID of a device on `nd`: the EUI-64 of its MAC address, or, on a netdev
/// without one (tun and other layer-3 devices), random with the EUI-64 local bit set (a
/// GUID the hardware did not assign), so that two such devices differ.
fn node_guid(nd: &NetDev) -> [u8; 8] {
    match nd.eui48() {
        Some(mac) => guid_from_mac(mac),
        None => {
            let mut guid = [0u8; 8];
            crate::kx::random::fill(&mut guid);
            // Locally administered, unicast.
            guid[0] = (guid[0] | 2) & !1;
            guid
        }
    }
}

/// The node GUID from the netdev's MAC address: modified EUI-64 (RFC 4291 appendix A), as
/// rdma_rxe derives it. Returned in wire (big-endian) byte order.
pub(crate) fn guid_from_mac(mac: [u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

/// The IB path MTU that fits in a netdev MTU of `eth_mtu` bytes.
pub(crate) fn ib_mtu_from_eth_mtu(eth_mtu: u32) -> PathMtu {
    let room = eth_mtu.saturating_sub(MAX_HDR_LEN);
    match room {
        4096.. => PathMtu::Mtu4096,
        2048.. => PathMtu::Mtu2048,
        1024.. => PathMtu::Mtu1024,
        512.. => PathMtu::Mtu512,
        _ => PathMtu::Mtu256,
    }
}

/// The port state for a netdev: ACTIVE when it is running with carrier.
pub(crate) fn port_state(running: bool, carrier: bool) -> PortState {
    if running && carrier {
        PortState::Active
    } else {
        PortState::Down
    }
}

/// Device attributes, as `ibv_query_device` reports them. Each limit is the constant the
/// verbs check (or the size of the index range they allocate from), so what is reported is
/// what is enforced.
/// The object limits of a device: rdma_rxe's, each lowered to `cap` when it is not 0 (the
/// `max_objects` module parameter).
pub(crate) fn object_limits(cap: u32) -> ObjectLimits {
    let lim = |d: u32| if cap == 0 { d } else { d.min(cap) };
    ObjectLimits {
        qp: lim(qp::MAX_QPN - qp::MIN_QPN + 1),
        cq: lim(MAX_CQ),
        srq: lim(MAX_SRQ),
        pd: lim(MAX_PD),
        mr: lim(MAX_MR_INDEX - MIN_MR_INDEX + 1),
        mw: lim(MAX_MW_INDEX - MIN_MW_INDEX + 1),
        ah: lim(crate::objects::ah::MAX_AH_NUM),
    }
}

/// What on-demand paging MRs serve, per transport: every data movement goes through the
/// same MR copies (`objects::mr`), which fault pages in for ODP MRs. UD has no RDMA or
/// atomics.
const ODP_RC: OdpOps = OdpOps::SEND
    .union(OdpOps::RECV)
    .union(OdpOps::WRITE)
    .union(OdpOps::READ)
    .union(OdpOps::ATOMIC)
    .union(OdpOps::SRQ_RECV);
const ODP_UC: OdpOps = OdpOps::SEND.union(OdpOps::RECV).union(OdpOps::WRITE);
const ODP_UD: OdpOps = OdpOps::SEND.union(OdpOps::RECV).union(OdpOps::SRQ_RECV);

pub(crate) fn device_attr(sys_image_guid: u64, max: &ObjectLimits) -> DeviceAttr {
    DeviceAttr {
        sys_image_guid,
        max_mr_size: u64::MAX,
        page_size_cap: limits::RXE_PAGE_SIZE_CAP,
        vendor_id: VENDOR_ID,
        max_qp: max.qp as i32,
        max_qp_wr: qp::MAX_WR as i32,
        device_cap_flags: DeviceCaps::BAD_PKEY_CNTR
            .union(DeviceCaps::BAD_QKEY_CNTR)
            .union(DeviceCaps::SYS_IMAGE_GUID)
            .union(DeviceCaps::RC_RNR_NAK_GEN)
            .union(DeviceCaps::SRQ_RESIZE)
            .union(DeviceCaps::PORT_ACTIVE_EVENT)
            .union(DeviceCaps::MEM_MGT_EXTENSIONS)
            .union(DeviceCaps::MEM_WINDOW)
            .union(DeviceCaps::MEM_WINDOW_TYPE_2B)
            .union(DeviceCaps::FLUSH_GLOBAL),
        allow_user_unreg: true,
        max_send_sge: limits::RXE_MAX_SGE as i32,
        max_recv_sge: limits::RXE_MAX_SGE as i32,
        max_sge_rd: limits::RXE_MAX_SGE as i32,
        max_cq: max.cq as i32,
        max_cqe: super::cq::MAX_CQE,
        max_mr: max.mr as i32,
        max_pd: max.pd as i32,
        max_mw: max.mw as i32,
        max_qp_rd_atom: qp::MAX_RD_ATOMIC as i32,
        max_res_rd_atom: 0x3f000,
        max_qp_init_rd_atom: qp::MAX_RD_ATOMIC as i32,
        atomic_cap: AtomicCap::Hca,
        max_ah: max.ah as i32,
        max_srq: max.srq as i32,
        max_srq_wr: srq::MAX_SRQ_WR as i32,
        max_srq_sge: limits::RXE_MAX_SRQ_SGE as i32,
        max_fast_reg_page_list_len: super::mr::MAX_FAST_REG_PAGES,
        max_pkeys: PKEY_TBL_LEN,
        max_mcast_grp: crate::objects::mcast::MAX_MCAST_GRP as i32,
        max_mcast_qp_attach: crate::objects::mcast::MAX_MCAST_QP_ATTACH as i32,
        max_total_mcast_qp_attach: crate::objects::mcast::MAX_TOTAL_MCAST_QP_ATTACH as i32,
        local_ca_ack_delay: 15,
        odp: ib_umem_odp::supported().then_some(OdpCaps {
            rc: ODP_RC,
            uc: ODP_UC,
            ud: ODP_UD,
        }),
    }
}

/// Port attributes, as `ibv_query_port` reports them (speed and width are filled in from the
/// netdev by the core's `ib_get_eth_speed`).
pub(crate) fn port_attr(state: PortState, active_mtu: PathMtu, netdev_up: bool) -> PortAttr {
    let phys_state = if state == PortState::Active {
        PortPhysState::LinkUp
    } else if netdev_up {
        PortPhysState::Polling
    } else {
        PortPhysState::Disabled
    };
    PortAttr {
        state,
        max_mtu: PathMtu::Mtu4096,
        active_mtu,
        phys_mtu: 4096,
        gid_tbl_len: GID_TBL_LEN as i32,
        cm_supported: true,
        max_msg_sz: MAX_MSG_SZ,
        pkey_tbl_len: PKEY_TBL_LEN,
        max_vl_num: 1,
        phys_state,
    }
}

/// Immutable port properties: RoCEv2 (UDP-encapsulated RoCE), one P_Key, the GID table size.
pub(crate) fn port_immutable() -> RoceV2PortImmutable {
    RoceV2PortImmutable {
        pkey_tbl_len: i32::from(PKEY_TBL_LEN),
        gid_tbl_len: GID_TBL_LEN as i32,
    }
}

/// Creates and registers an rxe_sr device named `name` on `nd`.
pub(crate) fn add(name: &CStr, nd: &NetDev) -> Result {
    if nd.is_vlan() {
        pr_err!(
            "{}: a VLAN device; create the link on the real device\n",
            nd.name()
        );
        return Err(EPERM);
    }
    if RoceDeviceRef::get_by_netdev(nd).is_some() {
        pr_err!("{} already has an rxe_sr device\n", nd.name());
        return Err(EEXIST);
    }
    if RoceDeviceRef::other_driver_on(nd) {
        pr_err!(
            "{} already has an RDMA device of another driver (rdma link show)\n",
            nd.name()
        );
        return Err(EEXIST);
    }
    // The namespace's sockets first: a port held by another driver refuses the link with
    // the owner's name before anything is allocated.
    let ns = crate::net::namespaces::join(name, nd)?;
    let pools = sr_pools::new_pools(crate::kx::rxe::moduleparam::pool_sizes())?;
    let budget = crate::kx::rxe::moduleparam::dev_inflight_psns();
    let state = DeviceState::new(
        port_state(nd.is_running(), nd.carrier_ok()),
        ib_mtu_from_eth_mtu(nd.mtu()),
        object_limits(crate::kx::rxe::moduleparam::max_objects()),
        (
            crate::kx::rxe::moduleparam::recovery(),
            crate::kx::rxe::moduleparam::fec(),
        ),
        pools,
        (budget, crate::objects::inflight::waiter_slots(budget)?),
        ns,
    );
    let new = NewDevice {
        netdev: nd,
        node_guid: node_guid(nd),
        node_desc: b"rxe_sr",
    };
    let ops = soft_roce::device_ops::<RxeSr>();
    Unregistered::<RxeSr>::new(&new, state, &ops)?.register(name)?;
    note_created();
    // The device may be unregistered by now (rdma link del); do not touch it again.
    pr_info!("{}: added on {} (mtu {})\n", name, nd.name(), nd.mtu());
    Ok(())
}

/// Follows the netdev's running/carrier state, telling the core's clients of a change.
pub(crate) fn update_port_state(dev: &RoceDevice, nd: &NetDev) {
    let new = port_state(nd.is_running(), nd.carrier_ok());
    if dev.swap_port_state(new) != new {
        dev.dispatch_port_event(new == PortState::Active);
    }
}

/// The receive queue's datagrams go to the transport's dispatch, the QPs' work items to
/// the transport's QP work.
impl WorkDriver for RxeSr {
    fn receive(dev: &Device<Self>, skb: SkBuff) {
        crate::transport::rx::receive(dev, skb);
        dev.rx_marks().note_taken();
    }

    fn qp_work(qp: &RoceQp) {
        crate::transport::qp_work::qp_work(qp);
    }

    fn qp_slow_path(qp: &RoceQp) {
        crate::transport::qp_work::qp_slow_path(qp);
    }
}

/// The device attributes `recovery` and `fec` are the device's scheme and FEC shim.
impl SoftRoce for RxeSr {
    fn scheme(dev: &Device<Self>) -> Scheme {
        dev.scheme()
    }

    fn set_scheme(dev: &Device<Self>, scheme: Scheme) {
        dev.set_scheme(scheme);
    }

    fn fec(dev: &Device<Self>) -> Option<FecParams> {
        dev.fec()
    }

    fn set_fec(dev: &Device<Self>, fec: Option<FecParams>) {
        dev.set_fec(fec);
    }
}

#[vtable]
impl Driver for RxeSr {
    const UVERBS_ABI_VER: u32 = RXE_UVERBS_ABI_VERSION;

    fn query_device(dev: &Device<Self>) -> DeviceAttr {
        device_attr(dev.node_guid(), &dev.used.max)
    }

    fn query_port(dev: &Device<Self>, port: u32, netdev_up: bool) -> Result<PortAttr> {
        if port != PORT_NUM {
            return Err(EINVAL);
        }
        Ok(port_attr(dev.port_state(), dev.active_mtu(), netdev_up))
    }

    fn port_immutable(_dev: &Device<Self>, port: u32) -> Result<RoceV2PortImmutable> {
        if port != PORT_NUM {
            return Err(EINVAL);
        }
        Ok(port_immutable())
    }

    fn query_pkey(_dev: &Device<Self>, port: u32, index: u16) -> Result<u16> {
        if port != PORT_NUM || index >= PKEY_TBL_LEN {
            return Err(EINVAL);
        }
        Ok(DEFAULT_PKEY_FULL)
    }

    fn live() {
        note_live();
    }

    fn freed() {
        note_freed();
    }

    fn alloc_ucontext(_dev: &Device<Self>) -> Result {
        crate::verbs::pd::alloc_ucontext();
        Ok(())
    }

    fn dealloc_ucontext(_dev: &Device<Self>) {
        crate::verbs::pd::dealloc_ucontext();
    }

    fn disassociate_ucontext(_dev: &Device<Self>) {
        crate::verbs::pd::disassociate_ucontext();
    }

    fn alloc_pd(dev: &Device<Self>, _pd: PdId) -> Result {
        crate::verbs::pd::alloc(dev)
    }

    fn dealloc_pd(dev: &Device<Self>, _pd: PdId) {
        crate::verbs::pd::dealloc(dev);
    }

    fn attach_mcast(
        dev: &Device<Self>,
        qpn: u32,
        qp_type: Option<QpType>,
        mgid: [u8; 16],
    ) -> Result {
        crate::verbs::mcast::attach(dev, qpn, qp_type, mgid)
    }

    fn detach_mcast(dev: &Device<Self>, qpn: u32, mgid: [u8; 16]) -> Result {
        crate::verbs::mcast::detach(dev, qpn, mgid)
    }
}

impl HwStatsDriver for RxeSr {
    const HW_STATS: &'static [StatDesc] = &stat_descs(&counters::NAMES);

    fn hw_stats(dev: &Device<Self>, out: &mut [u64]) {
        let v = dev.counters().snapshot();
        let (sr, melo) = sr_pools::usage(&dev.sr_pools().lock());
        let gauges: [u64; counters::GAUGES] = [
            u64::from(sr.units),
            u64::from(sr.units_peak),
            u64::from(sr.blocks),
            u64::from(sr.blocks_peak),
            sr.exhaustions,
            u64::from(melo.blocks),
            u64::from(melo.blocks_peak),
            melo.exhaustions,
            u64::from(dev.inflight().budget.psns()),
            u64::from(dev.inflight().waiters()),
            u64::from(dev.inflight().budget.budget()),
            u64::from(dev.inflight().budget.budget_peak()),
        ];
        for (o, v) in out.iter_mut().zip(Iterator::chain(v.iter(), gauges.iter())) {
            *o = *v;
        }
    }
}

#[vtable]
impl MadDriver for RxeSr {
    /// The PerfMgt agent's answers (the port's `counters/` in sysfs), from the counters.
    fn local_mad(
        dev: &Device<Self>,
        port: u32,
        req: &[u8; MAD_SIZE],
        resp: &mut [u8; MAD_SIZE],
    ) -> bool {
        let c = dev.counters();
        let now = pma::PortCounters {
            xmit_bytes: c.get(Counter::SentBytes),
            rcv_bytes: c.get(Counter::RcvdBytes),
            xmit_packets: c.get(Counter::SentPkts),
            rcv_packets: c.get(Counter::RcvdPkts),
            multicast_xmit_packets: c.get(Counter::SentMcastPkts),
            multicast_rcv_packets: c.get(Counter::RcvdMcastPkts),
            rcv_errors: c.get(Counter::RcvdMalformed),
            xmit_discards: c.get(Counter::SendBusy),
            link_downed: c.get(Counter::LinkDowned),
        };
        let port = u8::try_from(port).unwrap_or(0);
        pma::answer(req, port, &now, resp) == pma::Answer::Reply
    }
}
