// SPDX-License-Identifier: GPL-2.0
//! What an RDMA driver implements (include/rdma/ib_verbs.h, `struct ib_device_ops`): the
//! [`Driver`] trait, the device-level verbs, over one trait per object family, each in the
//! file of its object (`ib_ah.rs`, `ib_cq.rs`, `ib_srq.rs`, `ib_mr.rs`, `ib_mw.rs`,
//! `ib_qp.rs`), and the port counters' and MADs' (`ib_hw_stats.rs`, `ib_mad.rs`).
//! `ib_device_ops.rs` and the object files build `ib_device_ops` from them; every callback
//! reaches the driver through them, as typed values.

use kernel::prelude::*;

use crate::kx::ib_ah::AhDriver;
use crate::kx::ib_cq::CqDriver;
use crate::kx::ib_device::Device;
use crate::kx::ib_device_attr::{DeviceAttr, PortAttr, RoceV2PortImmutable};
use crate::kx::ib_hw_stats::HwStatsDriver;
use crate::kx::ib_mad::MadDriver;
use crate::kx::ib_mr::MrDriver;
use crate::kx::ib_mw::MwDriver;
use crate::kx::ib_pd::PdId;
use crate::kx::ib_qp::WorkDriver;
use crate::kx::ib_srq::SrqDriver;
use crate::kx::ib_verbs::QpType;

/// An RDMA driver: its per-device data and the device-level verbs, with one trait per
/// object family whose data lives in the core's object ([`AhDriver`], [`CqDriver`],
/// [`SrqDriver`], [`MrDriver`], [`MwDriver`], [`QpDriver`](crate::kx::ib_qp::QpDriver)),
/// the work a software provider does apart from the verbs ([`WorkDriver`]), and the port
/// counters and MADs.
///
/// A marker type implements it (as drm's drivers do); the device's data is its
/// [`DriverData::Data`](crate::kx::ib_device::DriverData::Data), which lives inside the
/// `ib_device` allocation the core makes, pin-initialised when the device is created and
/// dropped when the core frees it. Optional operations follow `#[vtable]`: what a driver
/// does not implement is not installed in `ib_device_ops`.
#[vtable]
pub(crate) trait Driver:
    AhDriver + CqDriver + SrqDriver + MrDriver + MwDriver + WorkDriver + HwStatsDriver + MadDriver
{
    /// uverbs ABI version of the driver's user ABI.
    const UVERBS_ABI_VER: u32;

    /// `query_device`.
    fn query_device(dev: &Device<Self>) -> DeviceAttr;

    /// `query_port` for `port`, whose netdev is administratively up or not.
    fn query_port(dev: &Device<Self>, port: u32, netdev_up: bool) -> Result<PortAttr>;

    /// `get_port_immutable` for `port`.
    fn port_immutable(dev: &Device<Self>, port: u32) -> Result<RoceV2PortImmutable>;

    /// `query_pkey`: entry `index` of `port`'s P_Key table.
    fn query_pkey(_dev: &Device<Self>, _port: u32, _index: u16) -> Result<u16> {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A device was allocated that the core will free: from now on, [`Driver::freed`] is
    /// called exactly once for it.
    fn live();

    /// The core is freeing the device (after the data was dropped).
    fn freed();

    /// `alloc_ucontext`: a user process opened the device (the rxe user ABI passes no
    /// driver data).
    fn alloc_ucontext(dev: &Device<Self>) -> Result;

    /// `dealloc_ucontext`.
    fn dealloc_ucontext(dev: &Device<Self>);

    /// `disassociate_ucontext`: the device is being unregistered, or moved to another
    /// network namespace, while a process still has it open. The core then destroys every
    /// object of the context through the usual destroy calls, without waiting for the
    /// process, which sees EIO from then on; `dealloc_ucontext` follows.
    fn disassociate_ucontext(dev: &Device<Self>);

    /// `alloc_pd`: the core allocated a PD (it keeps the PD's state).
    fn alloc_pd(dev: &Device<Self>, pd: PdId) -> Result;

    /// `dealloc_pd`: the core is freeing a PD nothing uses.
    fn dealloc_pd(dev: &Device<Self>, pd: PdId);

    /// `attach_mcast`: QP `qpn` (of type `qp_type`, `None` for one the driver does not
    /// offer) joins multicast group `mgid`.
    fn attach_mcast(
        dev: &Device<Self>,
        qpn: u32,
        qp_type: Option<QpType>,
        mgid: [u8; 16],
    ) -> Result;

    /// `detach_mcast`: QP `qpn` leaves group `mgid`.
    fn detach_mcast(dev: &Device<Self>, qpn: u32, mgid: [u8; 16]) -> Result;
}
