// SPDX-License-Identifier: GPL-2.0
//! Queue pairs: the rules for creating and modifying one (the state they set is
//! `objects/qp.rs`; IBTA 11.2.4, 11.2.5; limits as rdma_rxe reports them), and `create_qp`,
//! `query_qp`, `destroy_qp` (modify is `qp_modify.rs`, posting `qp_post.rs`). The state
//! machine's required/optional attribute masks are the RDMA core's `ib_modify_qp_is_ok`,
//! called (through `kx::ib_verbs::modify_qp_is_ok`) before [`QpAttrs::apply`].

use kernel::new_mutex;
use kernel::prelude::*;

use crate::kx::error;
use crate::kx::ib_device::Device;
use crate::kx::ib_qp::NewQp;
use crate::kx::ib_qp::QpDriver;
use crate::kx::ib_qp::QpTable;
use crate::kx::ib_udata::UData;
use crate::kx::ib_verbs::{PathMtu, QpAttr, QpAttrMask, QpInitAttr, QpInitReply, QpState, QpType};
use crate::kx::ib_wr::RecvWrList;
use crate::kx::ib_wr::SendWrList;
use crate::kx::rxe::mmap_queue::{cache_line_size, MappedQueue, SharedQueue};
use crate::kx::skbuff::SkbQueue;
use crate::kx::spinlock::new_irq_spinlock;
use crate::objects::device::RoceDevice;
use crate::objects::device::RxeSr;
use crate::objects::inflight::QpInflight;
use crate::objects::live::{self, Counted};
use crate::objects::qp::{QpAttrs, QpShape};
use crate::transport::qp::{KernelQueues, QpInner, QpObject, RoceQp};
use crate::transport::rc_conn;
use crate::uabi::queue::{self, FromClientQueue};
use crate::uabi::{layout, resp};

/// Smallest QPN for ordinary QPs (0 and 1 are the special QPs; rdma_rxe starts at 16).
pub(crate) const MIN_QPN: u32 = 16;
/// Largest QPN (rdma_rxe's object space; QPNs are 24-bit on the wire).
pub(crate) const MAX_QPN: u32 = (1 << 20) - 1;
/// Most outstanding RDMA READ / atomic operations, each way (the device's `max_qp_rd_atom`
/// and `max_qp_init_rd_atom`).
pub(crate) const MAX_RD_ATOMIC: u32 = 128;
/// Largest work-queue depth (the device's `max_qp_wr`).
pub(crate) const MAX_WR: u32 = 1 << 20;

/// Checks a create request and sizes its queues (the caps written back are these sizes).
pub(crate) fn shape(init: &QpInitAttr, cache_line: u32) -> Result<QpShape> {
    let qp_type = match init.qp_type {
        Some(t @ (QpType::Rc | QpType::Uc | QpType::Ud)) => t,
        // QP1, for the kernel's MAD layer (RoCE has no QP0).
        Some(QpType::Gsi) if init.port_num == 1 => QpType::Gsi,
        _ => return Err(error::eopnotsupp()),
    };
    if init.create_flags != 0 || init.has_xrcd {
        return Err(error::eopnotsupp());
    }
    if !init.has_cqs {
        return Err(EINVAL);
    }
    let cap = &init.cap;
    if cap.max_send_wr == 0 || cap.max_send_wr > MAX_WR || cap.max_recv_wr > MAX_WR {
        return Err(EINVAL);
    }
    let sq = queue::sq_geometry(
        cap.max_send_wr,
        cap.max_send_sge,
        cap.max_inline_data,
        cache_line,
    )
    .ok_or(EINVAL)?;
    let rq = queue::rq_geometry(cap.max_recv_wr.max(1), cap.max_recv_sge.max(1), cache_line)
        .ok_or(EINVAL)?;
    Ok(QpShape {
        qp_type,
        sq,
        rq,
        sq_sig_type: init.sq_sig_type,
        srq: init.has_srq,
    })
}

const PSN_MASK: u32 = (1 << 24) - 1;

impl QpAttrs {
    /// Applies a modify request whose state transition and mask the core already checked.
    /// Values are validated first; on error nothing changes.
    pub(crate) fn apply(&mut self, a: &QpAttr, mask: QpAttrMask) -> Result {
        let has = |m: QpAttrMask| mask.contains(m);
        if has(QpAttrMask::PORT) && a.port_num != 1 {
            return Err(EINVAL);
        }
        let path_mtu = match a.path_mtu {
            Some(m) => m,
            None if has(QpAttrMask::PATH_MTU) => return Err(EINVAL),
            None => self.path_mtu,
        };
        if has(QpAttrMask::AV) && (a.ah_attr.port_num() != 1 || !a.ah_attr.is_roce()) {
            return Err(EINVAL);
        }
        if has(QpAttrMask::ALT_PATH) || has(QpAttrMask::PATH_MIG_STATE) {
            return Err(error::eopnotsupp());
        }
        if has(QpAttrMask::TIMEOUT) && a.timeout > 31 {
            return Err(EINVAL);
        }
        if (has(QpAttrMask::RETRY_CNT) && a.retry_cnt > 7)
            || (has(QpAttrMask::RNR_RETRY) && a.rnr_retry > 7)
            || (has(QpAttrMask::MIN_RNR_TIMER) && a.min_rnr_timer > 31)
        {
            return Err(EINVAL);
        }
        if (has(QpAttrMask::MAX_QP_RD_ATOMIC) && u32::from(a.max_rd_atomic) > MAX_RD_ATOMIC)
            || (has(QpAttrMask::MAX_DEST_RD_ATOMIC)
                && u32::from(a.max_dest_rd_atomic) > MAX_RD_ATOMIC)
        {
            return Err(EINVAL);
        }
        if has(QpAttrMask::DEST_QPN) && a.dest_qp_num > PSN_MASK {
            return Err(EINVAL);
        }
        if has(QpAttrMask::PKEY_INDEX) && a.pkey_index != 0 {
            return Err(EINVAL);
        }
        let state = match a.qp_state {
            Some(s) => s,
            None if has(QpAttrMask::STATE) => return Err(EINVAL),
            None => self.state,
        };
        let access = match a.qp_access_flags {
            Some(f) => f,
            None if has(QpAttrMask::ACCESS_FLAGS) => return Err(EINVAL),
            None => self.qp_access_flags,
        };

        if has(QpAttrMask::STATE) {
            self.state = state;
        }
        if has(QpAttrMask::QKEY) {
            self.qkey = a.qkey;
        }
        if has(QpAttrMask::PKEY_INDEX) {
            self.pkey_index = a.pkey_index;
        }
        if has(QpAttrMask::PORT) {
            self.port_num = a.port_num;
        }
        if has(QpAttrMask::ACCESS_FLAGS) {
            self.qp_access_flags = access;
        }
        if has(QpAttrMask::PATH_MTU) {
            self.path_mtu = path_mtu;
        }
        if has(QpAttrMask::SQ_PSN) {
            self.sq_psn = a.sq_psn & PSN_MASK;
        }
        if has(QpAttrMask::RQ_PSN) {
            self.rq_psn = a.rq_psn & PSN_MASK;
        }
        if has(QpAttrMask::DEST_QPN) {
            self.dest_qp_num = a.dest_qp_num;
        }
        if has(QpAttrMask::TIMEOUT) {
            self.timeout = a.timeout;
        }
        if has(QpAttrMask::RETRY_CNT) {
            self.retry_cnt = a.retry_cnt;
        }
        if has(QpAttrMask::RNR_RETRY) {
            self.rnr_retry = a.rnr_retry;
        }
        if has(QpAttrMask::MIN_RNR_TIMER) {
            self.min_rnr_timer = a.min_rnr_timer;
        }
        if has(QpAttrMask::MAX_QP_RD_ATOMIC) {
            self.max_rd_atomic = a.max_rd_atomic;
        }
        if has(QpAttrMask::MAX_DEST_RD_ATOMIC) {
            self.max_dest_rd_atomic = a.max_dest_rd_atomic;
        }
        if has(QpAttrMask::AV) {
            // Kept without the source GID attribute the core lends for the call only
            // (`AhAttr`'s invariant), so query_qp cannot hand it out.
            self.ah_attr = a.ah_attr;
        }
        Ok(())
    }
}

/// `create_qp`: checks the request and sizes the queues; a user QP gets its rings mapped
/// into the process, a kernel consumer's QP its kernel queues; every QP has a work item
/// (RC/UC timers and READ responses, datagram sends beyond one call's budget, a kernel
/// consumer's sends), and an RC QP a queue for requests held back behind READ responses.
// Kept out of line: the initialiser it returns would otherwise add to the verb's stack
// frame twice.
#[inline(never)]
pub(crate) fn create(
    dev: &RoceDevice,
    attr: &QpInitAttr,
    udata: Option<UData<'_>>,
) -> Result<NewQp<impl PinInit<QpObject, Error>>> {
    let shape = shape(attr, cache_line_size())?;
    let gsi = shape.qp_type == QpType::Gsi;
    let (sq, rq, kq) = match udata {
        // A kernel consumer (ib_mad's GSI QP, ULPs' RC, UC and UD QPs, on an SRQ or not).
        None => (None, None, Some(KernelQueues::new(&shape.caps())?)),
        // QP1 belongs to the kernel's MAD layer.
        Some(_) if gsi => return Err(EINVAL),
        Some(u) => {
            let (sq, rq) = user_rings(u, &shape)?;
            (sq, rq, None)
        }
    };
    let held = if rc_conn::service(shape.qp_type).is_some() {
        Some(SkbQueue::new()?)
    } else {
        None
    };
    // Reserved now, published by the adapter once the QP is complete (the receive path
    // looks QPs up). QP1 is number 1 on the wire and in the table.
    let qpn = if gsi {
        dev.qps().reserve(1, 1)?
    } else {
        dev.qps()
            .reserve(MIN_QPN, MIN_QPN + (dev.used.max.qp - 1))
            .map_err(crate::verbs::full_is_enomem)?
    };
    let attrs = QpAttrs {
        state: QpState::Reset,
        port_num: 1,
        path_mtu: PathMtu::Mtu256,
        ..Default::default()
    };
    let init = try_pin_init!(QpObject {
        inner <- new_mutex!(
            QpInner {
                attrs,
                sq,
                rq,
                sq_q: FromClientQueue::new(shape.sq.queue.ring),
                rq_q: FromClientQueue::new(shape.rq.queue.ring),
                rc: None,
            },
            "rxe_sr_qp"
        ),
        kq <- new_irq_spinlock!(kq, "rxe_sr_qp_kq"),
        shape,
        held,
        inflight: QpInflight::new(),
        _live: Counted::new(&live::LIVE.qps),
    }? Error);
    Ok(NewQp {
        init,
        qpn,
        caps: shape.caps(),
    })
}

/// A user QP's send ring and (unless it is on an SRQ) receive ring, registered for mmap
/// and described to user space in `struct rxe_create_qp_resp`.
fn user_rings(
    mut udata: UData<'_>,
    shape: &QpShape,
) -> Result<(Option<MappedQueue>, Option<MappedQueue>)> {
    let mminfo = |q: &Option<MappedQueue>, offset: u64| -> Result<resp::MmInfo> {
        let size = q.as_ref().map_or(0, |m| m.queue().len());
        Ok(resp::MmInfo {
            offset,
            size: u32::try_from(size).map_err(|_| EINVAL)?,
        })
    };
    let (sq, sq_off) = MappedQueue::map(&mut udata, SharedQueue::new(shape.sq.queue.ring)?)?;
    // A QP on an SRQ has no receive ring (its mminfo is all zero, as rdma_rxe's). On any
    // error below, dropping the handles unregisters the rings.
    let (rq, rq_off) = if shape.srq {
        (None, 0)
    } else {
        let (rq, off) = MappedQueue::map(&mut udata, SharedQueue::new(shape.rq.queue.ring)?)?;
        (Some(rq), off)
    };
    let sq = Some(sq);
    let mut out = [0u8; layout::CREATE_QP_RESP_SIZE];
    resp::emit_create_qp_resp(mminfo(&rq, rq_off)?, mminfo(&sq, sq_off)?, &mut out)
        .ok_or(EINVAL)?;
    udata.respond(&out)?;
    Ok((sq, rq))
}

/// `destroy_qp`, once the QP is out of the table with no reference left and its work
/// stopped: out of its multicast groups, and its rings' mmap entries unregistered (outside
/// the lock).
pub(crate) fn destroy(qp: &RoceQp) {
    crate::verbs::mcast::detach_all(qp.device(), qp.qpn());
    qp.device().forget_inflight(&qp.inflight);
    let rings = {
        let mut g = qp.inner.lock();
        if let Some(rc) = g.rc.as_mut() {
            rc.release_shared(qp.device());
            // Receive WQEs taken ahead from an SRQ and unused go back to it; a message in
            // progress goes with the QP, as in rdma_rxe.
            let srq = qp.srq();
            rc.resp
                .drop_held(|_| {}, |w| srq.is_some_and(|s| s.give_back(w)));
        }
        (g.sq.take(), g.rq.take())
    };
    drop(rings);
}

/// `query_qp`: the attributes as the transport has them (its current PSNs) and the
/// creation reply.
pub(crate) fn query(qp: &RoceQp) -> (QpAttr, QpInitReply) {
    let a = {
        let g = qp.inner.lock();
        let mut a = g.attrs.to_attr(&qp.shape);
        if let Some(conn) = g.rc.as_ref() {
            a.rq_psn = conn.resp.epsn().get();
            if let Some(req) = conn.req.as_ref() {
                a.sq_psn = req.sq_psn().get();
            }
        }
        a
    };
    (a, qp.shape.init_reply())
}

impl QpDriver for RxeSr {
    type Qp = QpObject;

    fn qp_table(dev: &Device<Self>) -> &QpTable<Self> {
        dev.qps()
    }

    fn create_qp(
        dev: &Device<Self>,
        attr: &QpInitAttr,
        udata: Option<UData<'_>>,
    ) -> Result<NewQp<impl PinInit<QpObject, Error>>> {
        crate::verbs::qp::create(dev, attr, udata)
    }

    fn destroy_qp(qp: &RoceQp) {
        crate::verbs::qp::destroy(qp);
    }

    fn modify_qp(qp: &RoceQp, attr: &QpAttr, mask: QpAttrMask) -> Result {
        crate::verbs::qp_modify::modify(qp, attr, mask)
    }

    fn query_qp(qp: &RoceQp) -> (QpAttr, QpInitReply) {
        crate::verbs::qp::query(qp)
    }

    fn post_send(qp: &RoceQp, wrs: SendWrList<'_, Self>) -> Result {
        crate::verbs::qp_post::post_send(qp, wrs)
    }

    fn doorbell(qp: &RoceQp) -> Result {
        crate::verbs::qp_post::doorbell(qp)
    }

    fn post_recv(qp: &RoceQp, wrs: RecvWrList<'_>) -> Result {
        crate::verbs::qp_post::post_recv(qp, wrs)
    }
}
