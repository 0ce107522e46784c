// SPDX-License-Identifier: GPL-2.0
//! What an RDMA driver implements (include/rdma/ib_verbs.h, `struct ib_device_ops`):
//! the [`Driver`] trait, one method per verb and one associated type per object family
//! whose data lives in the core's object (`ib_ah.rs`, `ib_cq.rs`, `ib_srq.rs`, `ib_mr.rs`,
//! `ib_mw.rs`). `ib_device.rs`'s adapter and the object files build `ib_device_ops` from
//! it; every callback reaches the driver through it, as typed values.

use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::kx::ib_cq::{Cq, CqInitAttr, CqNotify, WcArray};
use crate::kx::ib_device::Device;
use crate::kx::ib_device_attr::{DeviceAttr, PortAttr, RoceV2PortImmutable};
use crate::kx::ib_hw_stats::StatDesc;
use crate::kx::ib_mr::{self, KernelVa, MrRereg, SgMapping, UserMrReq};
use crate::kx::ib_mw::MwType;
use crate::kx::ib_pd::PdId;
use crate::kx::ib_qp::{NewQp, Qp, QpTable};
use crate::kx::ib_srq::{Srq, SrqAttr, SrqAttrMask};
use crate::kx::ib_udata::UData;
use crate::kx::ib_verbs::{AhAttr, QpAttr, QpAttrMask, QpInitAttr, QpInitReply, QpType};
use crate::kx::ib_wr::{RecvWrList, SendWrList};
use crate::kx::skbuff::SkBuff;

/// A soft-RoCE driver: its per-device data and the device-level verbs.
///
/// The data lives inside the `ib_device` allocation the core makes (as `drm::Device` keeps
/// a driver's data), pin-initialised when the device is created and dropped when the core
/// frees it. Optional operations follow `#[vtable]`: what a driver does not implement is
/// not installed in `ib_device_ops`.
#[vtable]
pub(crate) trait Driver: Send + Sync + Sized {
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

    /// A datagram from the device's receive queue (process context, the queue's work
    /// item; datagrams of one device are taken one at a time, in order).
    fn receive(dev: &Device<Self>, skb: SkBuff);

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

    /// The driver's data in each address handle ([`Ah`](crate::kx::ib_ah::Ah)).
    type Ah: Send + Sync;

    /// `create_ah` / `create_user_ah`: an address handle in `pd` for `attr`. A kernel
    /// consumer (`udata` `None`) may call in atomic context: nothing may sleep then.
    fn create_ah(
        dev: &Device<Self>,
        pd: PdId,
        attr: &AhAttr,
        udata: Option<UData<'_>>,
    ) -> Result<Self::Ah>;

    /// `destroy_ah`, before the AH's data is dropped (possibly in atomic context).
    fn destroy_ah(dev: &Device<Self>, ah: &Self::Ah);

    /// The driver's data in each completion queue ([`Cq`]), pin-initialised there.
    type Cq: Send + Sync;

    /// `create_cq`: a CQ for `attr` (`udata` `None` for a kernel consumer); returns the
    /// initialiser of its data and the depth it has (reported as `ib_cq.cqe`).
    fn create_cq(
        dev: &Device<Self>,
        attr: &CqInitAttr,
        udata: Option<UData<'_>>,
    ) -> Result<(impl PinInit<Self::Cq>, u32)>;

    /// `destroy_cq`, before the CQ's data is dropped.
    fn destroy_cq(dev: &Device<Self>, cq: &Self::Cq);

    /// `req_notify_cq`: arms the completion event; true when asked to report missed events
    /// and completions are already waiting.
    fn req_notify_cq(cq: &Cq<Self>, notify: CqNotify) -> bool;

    /// `resize_cq` to `cqe` entries; returns the new depth.
    fn resize_cq(cq: &Cq<Self>, cqe: u32, udata: Option<UData<'_>>) -> Result<u32>;

    /// `poll_cq`: a kernel consumer takes completions, oldest first, into `out`.
    fn poll_cq(cq: &Cq<Self>, out: &mut WcArray<'_>);

    /// The driver's data in each shared receive queue ([`Srq`]), pin-initialised
    /// there.
    type Srq: Send + Sync;

    /// `create_srq` (a basic SRQ): returns the initialiser of its data and the attributes
    /// it got (reported back to the caller).
    fn create_srq(
        dev: &Device<Self>,
        attr: &SrqAttr,
        udata: Option<UData<'_>>,
    ) -> Result<(impl PinInit<Self::Srq>, SrqAttr)>;

    /// `destroy_srq`, before the SRQ's data is dropped.
    fn destroy_srq(dev: &Device<Self>, srq: &Self::Srq);

    /// `modify_srq`: the attributes `mask` names.
    fn modify_srq(
        srq: &Srq<Self>,
        attr: &SrqAttr,
        mask: SrqAttrMask,
        udata: Option<UData<'_>>,
    ) -> Result;

    /// `query_srq`.
    fn query_srq(srq: &Srq<Self>) -> SrqAttr;

    /// `post_srq_recv`: a kernel consumer's receive work requests (possibly in atomic
    /// context).
    fn post_srq_recv(srq: &Srq<Self>, wrs: RecvWrList<'_>) -> Result;

    /// The driver's data in each memory region ([`ib_mr::Mr`]).
    type Mr: Send + Sync;

    /// `reg_user_mr`: an MR of `pd` over the caller's memory.
    fn reg_user_mr(
        dev: &Device<Self>,
        pd: PdId,
        req: &UserMrReq,
    ) -> Result<impl PinInit<Self::Mr, Error>>;

    /// `get_dma_mr`: the MR of a kernel PD that covers kernel memory (`mem`).
    fn get_dma_mr(
        dev: &Device<Self>,
        pd: PdId,
        access: i32,
        mem: KernelVa,
    ) -> Result<impl PinInit<Self::Mr, Error>>;

    /// `alloc_mr`: a fast-registration MR of a kernel PD for up to `max_num_sg` blocks.
    fn alloc_mr(
        dev: &Device<Self>,
        pd: PdId,
        max_num_sg: u32,
    ) -> Result<impl PinInit<Self::Mr, Error>>;

    /// A new MR was built by one of the three above: give it its keys
    /// ([`ib_mr::Mr::set_keys`]) and make it reachable. On error it is dropped.
    fn publish_mr(dev: &Device<Self>, mr: &Arc<ib_mr::Mr<Self>>) -> Result;

    /// `map_mr_sg`: maps a ULP's scatterlist into a fast-registration MR; returns the
    /// entries mapped and the iova and length the core reports.
    fn map_mr_sg(mr: &ib_mr::Mr<Self>, sg: SgMapping<'_>) -> Result<(c_int, u64, u64)>;

    /// `rereg_user_mr`, in place: what `flags` names changes, the PD to `pd`, the rights to
    /// `req.access`, the memory to `req`'s range; an error leaves the MR as it was.
    fn rereg_user_mr(
        dev: &Device<Self>,
        mr: &ib_mr::Mr<Self>,
        flags: MrRereg,
        pd: PdId,
        req: &UserMrReq,
    ) -> Result;

    /// `dereg_mr`: an error refuses it (the MR stays registered); on success the core's
    /// reference goes.
    fn dereg_mr(dev: &Device<Self>, mr: &ib_mr::Mr<Self>) -> Result;

    /// `advise_mr`: prefetch advice for ranges of on-demand paging MRs of `pd`; `flush`
    /// asks for the work to be done before the call returns.
    fn advise_mr(
        dev: &Device<Self>,
        pd: PdId,
        advice: ib_mr::Advice,
        flush: bool,
        sges: impl Iterator<Item = ib_mr::AdviseSge>,
    ) -> Result;

    /// The driver's data in each memory window ([`Mw`](crate::kx::ib_mw::Mw)).
    type Mw: Send + Sync;

    /// `alloc_mw`: a window of `mw_type` in `pd`; returns its data and its R_Key.
    fn alloc_mw(dev: &Device<Self>, pd: PdId, mw_type: MwType) -> Result<(Self::Mw, u32)>;

    /// `dealloc_mw`, before the window's data is dropped.
    fn dealloc_mw(dev: &Device<Self>, mw: &Self::Mw);

    /// A MAD the core addresses to the device itself (`process_mad` with no work
    /// completion: sysfs's port counters): true when `resp` holds the answer, false to
    /// leave it to the MAD layer.
    fn local_mad(
        _dev: &Device<Self>,
        _port: u32,
        _req: &[u8; crate::kx::ib_mad::MAD_SIZE],
        _resp: &mut [u8; crate::kx::ib_mad::MAD_SIZE],
    ) -> bool {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The port counters `rdma statistic` lists (built with [`stat_descs`](crate::kx::ib_hw_stats::stat_descs)).
    const HW_STATS: &'static [StatDesc];

    /// `get_hw_stats`: the current value of each of [`Driver::HW_STATS`], in order.
    fn hw_stats(dev: &Device<Self>, out: &mut [u64]);

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

    /// The driver's data in each queue pair ([`Qp`]), pin-initialised there.
    type Qp: Send + Sync;

    /// The device's QPs by number (the adapter publishes a created QP there and takes a
    /// destroyed one out).
    fn qp_table(dev: &Device<Self>) -> &QpTable<Self>;

    /// `create_qp`: a QP for `attr` (`udata` `None` for a kernel consumer): its data's
    /// initialiser, the number reserved for it in [`Driver::qp_table`] and its capabilities.
    fn create_qp(
        dev: &Device<Self>,
        attr: &QpInitAttr,
        udata: Option<UData<'_>>,
    ) -> Result<NewQp<impl PinInit<Self::Qp, Error>>>;

    /// `destroy_qp`, once the QP is out of the table, its references are gone and its work
    /// is stopped for good, before its data is dropped.
    fn destroy_qp(qp: &Qp<Self>);

    /// `modify_qp` with the attributes `mask` names.
    fn modify_qp(qp: &Qp<Self>, attr: &QpAttr, mask: QpAttrMask) -> Result;

    /// `query_qp`: the attributes and the creation reply.
    fn query_qp(qp: &Qp<Self>) -> (QpAttr, QpInitReply);

    /// `post_send` with work requests (a kernel consumer; possibly in atomic context).
    fn post_send(qp: &Qp<Self>, wrs: SendWrList<'_, Self>) -> Result;

    /// `post_send` without work requests: the rxe user ABI's doorbell (the requests are in
    /// the send ring).
    fn doorbell(qp: &Qp<Self>) -> Result;

    /// `post_recv` (a kernel consumer; possibly in atomic context).
    fn post_recv(qp: &Qp<Self>, wrs: RecvWrList<'_>) -> Result;

    /// The QP's work item ([`Qp::timer`]): process context, no lock held.
    fn qp_work(qp: &Qp<Self>);

    /// The QP's slow-path work item ([`Qp::slow_path`]): process context, no lock held.
    fn qp_slow_path(qp: &Qp<Self>);
}
