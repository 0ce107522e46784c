// SPDX-License-Identifier: GPL-2.0
//! One rxe_sr device's state: the port as its netdev sets it, the object tables (MR and
//! MW keys, QPNs, AH numbers), counters, multicast groups and resource counts. It lives
//! inside the core's `ib_device` ([`Device`]), created with the device and dropped when
//! the core frees it.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::alloc::KVVec;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex, SpinLock};
use kernel::{new_mutex, new_spinlock};

use crate::kx::ib_device::{Device, DeviceRef, DriverData};
use crate::kx::ib_device_attr::PortState;
use crate::kx::ib_mr::Mr;
use crate::kx::ib_qp::QpTable;
use crate::kx::ib_verbs::PathMtu;
use crate::kx::net_namespace::NetCookie;
use crate::kx::xarray::XArray;
use crate::objects::ah::AhTableEntry;
use crate::objects::counters::{Counter, Counters};
use crate::objects::inflight::{DeviceInflight, QpInflight};
use crate::objects::mcast::McastGroups;
use crate::objects::mw::MwTableEntry;
use crate::objects::rx_marks::RxMarks;
use crate::objects::sr_pools::{DevicePools, DeviceSr};
use crate::proto::fec::FecParams;
use crate::proto::rc::dev_inflight::Waiter;
use crate::proto::recovery::scheme::Scheme;

/// The rxe_sr driver, as kx's traits name it: its devices carry a [`DeviceState`].
pub(crate) struct RxeSr;

impl DriverData for RxeSr {
    type Data = DeviceState;
}

/// An rxe_sr device.
pub(crate) type RoceDevice = Device<RxeSr>;
/// A counted reference on an rxe_sr device.
pub(crate) type RoceDeviceRef = DeviceRef<RxeSr>;
/// An rxe_sr memory region (its state: `objects::mr`).
pub(crate) type RoceMr = Mr<RxeSr>;

/// The driver's data in each device.
#[pin_data]
pub(crate) struct DeviceState {
    /// Port 1's state, MTU and GID table.
    port: Port,
    /// Memory regions by key index.
    #[pin]
    mr_table: XArray<Arc<RoceMr>>,
    /// Queue pairs by QPN.
    #[pin]
    qp_table: QpTable<RxeSr>,
    /// User address handles by AH number.
    #[pin]
    ah_table: XArray<AhTableEntry>,
    /// Memory windows by key index.
    #[pin]
    mw_table: XArray<MwTableEntry>,
    /// Serialises atomics on the device's memory (two MRs may cover the same bytes).
    #[pin]
    atomic_lock: SpinLock<()>,
    /// The low byte of the next key (see `verbs::mr`).
    key_variant: AtomicU32,
    /// What `rdma statistic` shows.
    counters: Counters,
    /// How far the receive work got through its queue.
    rx_marks: RxMarks,
    /// Multicast groups.
    #[pin]
    mcast: Mutex<McastGroups>,
    /// Objects in use that count against a limit the device reports.
    pub(crate) used: ObjectCounts,
    /// The loss-recovery scheme and the SR pools.
    #[pin]
    sr: DeviceSr,
    /// The FEC shim of RC QPs connected from now on: [`FecParams::to_byte`], 0 for none.
    fec: AtomicU32,
    /// The PSNs in flight across the RC requesters, their budget and the QPs waiting for
    /// room.
    #[pin]
    inflight: DeviceInflight,
    /// Its share in the RoCEv2 sockets of its netdev's namespace: dropped last, with the
    /// device.
    _ns: NsShare,
}

/// Port 1, as its netdev has it.
struct Port {
    /// Active: its netdev runs with carrier.
    active: AtomicBool,
    /// The path MTU the netdev's MTU allows (`enum ib_mtu` number).
    active_mtu: AtomicU32,
    /// The GID table is out of date with the netdev's addresses (a netdev whose addresses
    /// the core does not follow): `GID_RESCAN` an address was added, `GID_RESCAN_DELETE`
    /// one was removed.
    gid_rescan: AtomicU32,
}

/// `gid_rescan`: list the netdev's addresses again.
const GID_RESCAN: u32 = 1;
/// `gid_rescan`: delete the netdev's GIDs first.
const GID_RESCAN_DELETE: u32 = 2;

/// A device's share in the RoCEv2 sockets of its netdev's network namespace
/// (`net::namespaces`): given back, by the function it was made with, when it drops.
pub(crate) struct NsShare {
    cookie: NetCookie,
    leave: fn(NetCookie),
}

impl NsShare {
    /// A share in the sockets of namespace `cookie`, given back by `leave`.
    pub(crate) fn new(cookie: NetCookie, leave: fn(NetCookie)) -> Self {
        NsShare { cookie, leave }
    }
}

impl Drop for NsShare {
    fn drop(&mut self) {
        (self.leave)(self.cookie);
    }
}

/// How many objects of each kind a device lets exist at once, as it reports them
/// (`max_qp`, `max_cq`, ...): fixed when the device is created.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ObjectLimits {
    pub(crate) qp: u32,
    pub(crate) cq: u32,
    pub(crate) srq: u32,
    pub(crate) pd: u32,
    pub(crate) mr: u32,
    pub(crate) mw: u32,
    pub(crate) ah: u32,
}

/// The device's object limits, and the objects in use against them.
///
/// PDs, CQs, SRQs and AHs (user and kernel) are counted here; QPs, MRs and MWs are bounded
/// by their index tables, whose ranges hold `max.qp`, `max.mr` and `max.mw` indices.
pub(crate) struct ObjectCounts {
    pub(crate) max: ObjectLimits,
    pub(crate) pds: AtomicU32,
    pub(crate) cqs: AtomicU32,
    pub(crate) srqs: AtomicU32,
    pub(crate) ahs: AtomicU32,
}

impl ObjectCounts {
    const fn new(max: ObjectLimits) -> Self {
        ObjectCounts {
            max,
            pds: AtomicU32::new(0),
            cqs: AtomicU32::new(0),
            srqs: AtomicU32::new(0),
            ahs: AtomicU32::new(0),
        }
    }
}

impl DeviceState {
    /// A new device's state: port as given, empty tables, zero counters, the object
    /// limits `max`, running `scheme` with empty `pools`, an in-flight budget of `budget`
    /// PSNs with its waiters' queue, and its share `ns` in its namespace's sockets.
    pub(crate) fn new(
        port: PortState,
        active_mtu: PathMtu,
        max: ObjectLimits,
        (scheme, fec): (Scheme, Option<FecParams>),
        pools: DevicePools,
        (budget, waiters): (u32, KVVec<Waiter>),
        ns: NsShare,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(DeviceState {
            port: Port {
                active: AtomicBool::new(port == PortState::Active),
                active_mtu: AtomicU32::new(active_mtu.to_raw()),
                gid_rescan: AtomicU32::new(0),
            },
            mr_table <- XArray::new(),
            qp_table <- QpTable::new(),
            ah_table <- XArray::new(),
            mw_table <- XArray::new(),
            atomic_lock <- new_spinlock!((), "rxe_sr_atomic"),
            key_variant: AtomicU32::new(0),
            counters: Counters::new(),
            rx_marks: RxMarks::new(),
            mcast <- new_mutex!(McastGroups::default(), "rxe_sr_mcast"),
            used: ObjectCounts::new(max),
            sr <- DeviceSr::new(scheme, pools),
            fec: AtomicU32::new(fec.map_or(0, |p| u32::from(p.to_byte()))),
            inflight <- DeviceInflight::new(budget, waiters),
            _ns: ns,
        }? Error)
    }

    /// The in-flight budget of the device's RC requesters.
    pub(crate) fn inflight(&self) -> &DeviceInflight {
        &self.inflight
    }

    /// A QP's step ended ([`DeviceInflight::settle`]): the in-flight peak is counted, and
    /// waiters are woken for the room it gave back.
    pub(crate) fn settle_inflight(&self, qp: &QpInflight, held: &mut u32, taken: u32, now: u32) {
        self.inflight.settle(qp, held, taken, now);
        self.counters.max(
            Counter::InflightPeak,
            u64::from(self.inflight.budget.psns()),
        );
        self.wake_inflight();
    }

    /// A requester whose path allowance was `held` (as the device last took it) now has
    /// `now` (0 when it stops): the budget stretches or shrinks with the largest, and
    /// waiters are woken when it grew.
    pub(crate) fn settle_path(&self, held: &mut u32, now: u32) {
        let before = self.inflight.budget.budget();
        self.inflight.budget.settle_path(held, now);
        if self.inflight.budget.budget() > before {
            self.wake_inflight();
        }
    }

    /// A QP's transport is reset, failed or destroyed holding `held` PSNs: they go back,
    /// and waiters are woken for them.
    pub(crate) fn give_back_inflight(&self, held: &mut u32) {
        self.inflight.give_back(held);
        self.wake_inflight();
    }

    /// A QP is destroyed: the room promised to it ends ([`DeviceInflight::forget`]), and
    /// waiters are woken for it.
    pub(crate) fn forget_inflight(&self, qp: &QpInflight) {
        self.inflight.forget(qp);
        self.wake_inflight();
    }

    /// Wakes the QPs waiting for in-flight room that the room lets start: each is found in
    /// the QP table and kicked; one gone gives its room back.
    fn wake_inflight(&self) {
        self.inflight.wake(|w| match self.qps().get(w.qpn) {
            Some(qp) => {
                qp.inflight.woken(w.psns);
                qp.timer().kick();
                true
            }
            None => false,
        });
    }

    /// The loss-recovery scheme of RC QPs connected from now on.
    pub(crate) fn scheme(&self) -> Scheme {
        self.sr.scheme()
    }

    /// The SR pools (lock order: after a QP's lock).
    pub(crate) fn sr_pools(&self) -> &Mutex<DevicePools> {
        self.sr.pools()
    }

    /// Sets the scheme of RC QPs connected from now on.
    pub(crate) fn set_scheme(&self, scheme: Scheme) {
        self.sr.set_scheme(scheme);
    }

    /// Sets the FEC shim of RC QPs connected from now on (`None`: none).
    pub(crate) fn set_fec(&self, fec: Option<FecParams>) {
        self.fec
            .store(fec.map_or(0, |p| u32::from(p.to_byte())), Ordering::Relaxed);
    }

    /// The FEC shim of RC QPs connected from now on (`None`: none).
    pub(crate) fn fec(&self) -> Option<FecParams> {
        let b = self.fec.load(Ordering::Relaxed);
        u8::try_from(b).ok().and_then(FecParams::from_byte)
    }

    /// The device's counters.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// How far the receive work got through its queue.
    pub(crate) fn rx_marks(&self) -> &RxMarks {
        &self.rx_marks
    }

    /// The device's multicast groups.
    pub(crate) fn mcast(&self) -> &Mutex<McastGroups> {
        &self.mcast
    }

    /// The device's atomic lock.
    pub(crate) fn atomic_lock(&self) -> &SpinLock<()> {
        &self.atomic_lock
    }

    /// The device's MR table.
    pub(crate) fn mrs(&self) -> &XArray<Arc<RoceMr>> {
        &self.mr_table
    }

    /// The device's MW table.
    pub(crate) fn mws(&self) -> &XArray<MwTableEntry> {
        &self.mw_table
    }

    /// The device's AH table.
    pub(crate) fn ahs(&self) -> &XArray<AhTableEntry> {
        &self.ah_table
    }

    /// The device's QP table.
    pub(crate) fn qps(&self) -> &QpTable<RxeSr> {
        &self.qp_table
    }

    /// A new key variant (the key's low byte), rolling over.
    pub(crate) fn next_key_variant(&self) -> u8 {
        // Truncation to the low byte is the point.
        (self.key_variant.fetch_add(1, Ordering::Relaxed) & 0xff) as u8
    }

    /// The port's path MTU.
    pub(crate) fn active_mtu(&self) -> PathMtu {
        PathMtu::from_raw(self.port.active_mtu.load(Ordering::Relaxed)).unwrap_or_default()
    }

    /// Follows a netdev MTU change.
    pub(crate) fn set_active_mtu(&self, mtu: PathMtu) {
        self.port.active_mtu.store(mtu.to_raw(), Ordering::Relaxed);
    }

    /// Notes that an address of the netdev was added, or `removed`, for the next
    /// [`DeviceState::take_gid_rescan`].
    pub(crate) fn note_addr_change(&self, removed: bool) {
        let bits = if removed {
            GID_RESCAN | GID_RESCAN_DELETE
        } else {
            GID_RESCAN
        };
        self.port.gid_rescan.fetch_or(bits, Ordering::AcqRel);
    }

    /// Whether the GID table needs a rescan since the last call, and if so whether the
    /// netdev's GIDs must be deleted first (an address was removed).
    pub(crate) fn take_gid_rescan(&self) -> Option<bool> {
        let bits = self.port.gid_rescan.swap(0, Ordering::AcqRel);
        (bits & GID_RESCAN != 0).then_some(bits & GID_RESCAN_DELETE != 0)
    }

    /// Port 1's state.
    pub(crate) fn port_state(&self) -> PortState {
        port_state_of(self.port.active.load(Ordering::Relaxed))
    }

    /// Sets port 1's state; returns the previous one. A port leaving ACTIVE counts a
    /// `link_downed`.
    pub(crate) fn swap_port_state(&self, new: PortState) -> PortState {
        let was = self
            .port
            .active
            .swap(new == PortState::Active, Ordering::Relaxed);
        if was && new != PortState::Active {
            self.counters.inc(Counter::LinkDowned);
        }
        port_state_of(was)
    }
}

fn port_state_of(active: bool) -> PortState {
    if active {
        PortState::Active
    } else {
        PortState::Down
    }
}
