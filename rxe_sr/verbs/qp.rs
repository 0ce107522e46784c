// SPDX-License-Identifier: GPL-2.0
//! Queue pairs: the attributes a QP keeps, and the rules for creating and modifying one
//! (IBTA 11.2.4, 11.2.5; limits as rdma_rxe reports them). The state machine's
//! required/optional attribute masks are the RDMA core's `ib_modify_qp_is_ok`, called by the
//! FFI layer before [`QpAttrs::apply`].

use kernel::prelude::*;

use crate::kx::bindings as b;
use crate::kx::error;
use crate::uabi::queue::{self, RqGeometry, SqGeometry};

/// Smallest QPN for ordinary QPs (0 and 1 are the special QPs; rdma_rxe starts at 16).
pub(crate) const MIN_QPN: u32 = 16;
/// Largest QPN (rdma_rxe's object space; QPNs are 24-bit on the wire).
pub(crate) const MAX_QPN: u32 = (1 << 20) - 1;
/// Most outstanding RDMA READ / atomic operations, each way.
pub(crate) const MAX_RD_ATOMIC: u32 = 128;
/// The standard `enum ib_qp_attr_mask` bits (the kernel's `IB_QP_ATTR_STANDARD_BITS`,
/// GENMASK(20, 0)); anything above is a driver extension rxe_sr does not have.
pub(crate) const ATTR_STANDARD_BITS: u32 = (1 << 21) - 1;
/// Largest work-queue depth.
pub(crate) const MAX_WR: u32 = 1 << 20;

/// The work queues' shapes, as created.
#[derive(Clone, Copy)]
pub(crate) struct QpShape {
    /// `enum ib_qp_type`.
    pub(crate) qp_type: b::ib_qp_type,
    /// The send queue.
    pub(crate) sq: SqGeometry,
    /// The receive queue.
    pub(crate) rq: RqGeometry,
    /// IB_SIGNAL_ALL_WR or IB_SIGNAL_REQ_WR.
    pub(crate) sq_sig_type: b::ib_sig_type,
    /// Receives come from the QP's SRQ: it has no receive queue of its own.
    pub(crate) srq: bool,
}

/// Checks a create request and sizes its queues (the caps written back are these sizes).
pub(crate) fn shape(init: &b::ib_qp_init_attr, cache_line: u32) -> Result<QpShape> {
    match init.qp_type {
        b::ib_qp_type_IB_QPT_RC | b::ib_qp_type_IB_QPT_UC | b::ib_qp_type_IB_QPT_UD => {}
        // QP1, for the kernel's MAD layer (RoCE has no QP0).
        b::ib_qp_type_IB_QPT_GSI if init.port_num == 1 => {}
        _ => return Err(error::eopnotsupp()),
    }
    if init.create_flags != 0 || !init.xrcd.is_null() {
        return Err(error::eopnotsupp());
    }
    if init.send_cq.is_null() || init.recv_cq.is_null() {
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
        qp_type: init.qp_type,
        sq,
        rq,
        sq_sig_type: init.sq_sig_type,
        srq: !init.srq.is_null(),
    })
}

impl QpShape {
    /// The capabilities actually granted.
    pub(crate) fn caps(&self) -> b::ib_qp_cap {
        b::ib_qp_cap {
            max_send_wr: self.sq.max_wr,
            max_recv_wr: if self.srq { 0 } else { self.rq.max_wr },
            max_send_sge: self.sq.max_sge,
            max_recv_sge: if self.srq { 0 } else { self.rq.max_sge },
            max_inline_data: self.sq.max_inline,
            ..Default::default()
        }
    }
}

/// The modifiable attributes of a QP (IBTA 11.2.4.2), as last set.
#[derive(Clone, Copy, Default)]
pub(crate) struct QpAttrs {
    /// `enum ib_qp_state`.
    pub(crate) state: b::ib_qp_state,
    pub(crate) qkey: u32,
    pub(crate) pkey_index: u16,
    pub(crate) port_num: u32,
    pub(crate) qp_access_flags: i32,
    pub(crate) path_mtu: b::ib_mtu,
    /// Next PSN the requester sends (24 bits).
    pub(crate) sq_psn: u32,
    /// ePSN: next PSN the responder expects (24 bits).
    pub(crate) rq_psn: u32,
    pub(crate) dest_qp_num: u32,
    pub(crate) timeout: u8,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    pub(crate) min_rnr_timer: u8,
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) ah_attr: b::rdma_ah_attr,
}

const PSN_MASK: u32 = (1 << 24) - 1;

impl QpAttrs {
    /// Applies a modify request whose state transition and mask the core already checked.
    /// Values are validated first; on error nothing changes.
    pub(crate) fn apply(&mut self, a: &b::ib_qp_attr, mask: u32) -> Result {
        let has = |m: b::ib_qp_attr_mask| mask & m != 0;
        if has(b::ib_qp_attr_mask_IB_QP_PORT) && a.port_num != 1 {
            return Err(EINVAL);
        }
        if has(b::ib_qp_attr_mask_IB_QP_PATH_MTU)
            && !(b::ib_mtu_IB_MTU_256..=b::ib_mtu_IB_MTU_4096).contains(&a.path_mtu)
        {
            return Err(EINVAL);
        }
        if has(b::ib_qp_attr_mask_IB_QP_AV)
            && (a.ah_attr.port_num != 1
                || a.ah_attr.type_ != b::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE)
        {
            return Err(EINVAL);
        }
        if has(b::ib_qp_attr_mask_IB_QP_ALT_PATH) || has(b::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE) {
            return Err(error::eopnotsupp());
        }
        if has(b::ib_qp_attr_mask_IB_QP_TIMEOUT) && a.timeout > 31 {
            return Err(EINVAL);
        }
        if (has(b::ib_qp_attr_mask_IB_QP_RETRY_CNT) && a.retry_cnt > 7)
            || (has(b::ib_qp_attr_mask_IB_QP_RNR_RETRY) && a.rnr_retry > 7)
            || (has(b::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER) && a.min_rnr_timer > 31)
        {
            return Err(EINVAL);
        }
        if (has(b::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC)
            && u32::from(a.max_rd_atomic) > MAX_RD_ATOMIC)
            || (has(b::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC)
                && u32::from(a.max_dest_rd_atomic) > MAX_RD_ATOMIC)
        {
            return Err(EINVAL);
        }
        if has(b::ib_qp_attr_mask_IB_QP_DEST_QPN) && a.dest_qp_num > PSN_MASK {
            return Err(EINVAL);
        }
        if has(b::ib_qp_attr_mask_IB_QP_PKEY_INDEX) && a.pkey_index != 0 {
            return Err(EINVAL);
        }

        if has(b::ib_qp_attr_mask_IB_QP_STATE) {
            self.state = a.qp_state;
        }
        if has(b::ib_qp_attr_mask_IB_QP_QKEY) {
            self.qkey = a.qkey;
        }
        if has(b::ib_qp_attr_mask_IB_QP_PKEY_INDEX) {
            self.pkey_index = a.pkey_index;
        }
        if has(b::ib_qp_attr_mask_IB_QP_PORT) {
            self.port_num = a.port_num;
        }
        if has(b::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS) {
            self.qp_access_flags = a.qp_access_flags;
        }
        if has(b::ib_qp_attr_mask_IB_QP_PATH_MTU) {
            self.path_mtu = a.path_mtu;
        }
        if has(b::ib_qp_attr_mask_IB_QP_SQ_PSN) {
            self.sq_psn = a.sq_psn & PSN_MASK;
        }
        if has(b::ib_qp_attr_mask_IB_QP_RQ_PSN) {
            self.rq_psn = a.rq_psn & PSN_MASK;
        }
        if has(b::ib_qp_attr_mask_IB_QP_DEST_QPN) {
            self.dest_qp_num = a.dest_qp_num;
        }
        if has(b::ib_qp_attr_mask_IB_QP_TIMEOUT) {
            self.timeout = a.timeout;
        }
        if has(b::ib_qp_attr_mask_IB_QP_RETRY_CNT) {
            self.retry_cnt = a.retry_cnt;
        }
        if has(b::ib_qp_attr_mask_IB_QP_RNR_RETRY) {
            self.rnr_retry = a.rnr_retry;
        }
        if has(b::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER) {
            self.min_rnr_timer = a.min_rnr_timer;
        }
        if has(b::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC) {
            self.max_rd_atomic = a.max_rd_atomic;
        }
        if has(b::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC) {
            self.max_dest_rd_atomic = a.max_dest_rd_atomic;
        }
        if has(b::ib_qp_attr_mask_IB_QP_AV) {
            self.ah_attr = a.ah_attr;
            // The core lends the source GID attribute for the call only (it holds no
            // reference for us): never keep it, so query_qp cannot hand it out.
            self.ah_attr.grh.sgid_attr = core::ptr::null();
        }
        Ok(())
    }

    /// The attributes as `ibv_query_qp` reports them.
    pub(crate) fn to_attr(&self, shape: &QpShape) -> b::ib_qp_attr {
        b::ib_qp_attr {
            qp_state: self.state,
            cur_qp_state: self.state,
            path_mtu: self.path_mtu,
            qkey: self.qkey,
            rq_psn: self.rq_psn,
            sq_psn: self.sq_psn,
            dest_qp_num: self.dest_qp_num,
            qp_access_flags: self.qp_access_flags,
            cap: shape.caps(),
            ah_attr: self.ah_attr,
            pkey_index: self.pkey_index,
            max_rd_atomic: self.max_rd_atomic,
            max_dest_rd_atomic: self.max_dest_rd_atomic,
            min_rnr_timer: self.min_rnr_timer,
            port_num: self.port_num,
            timeout: self.timeout,
            retry_cnt: self.retry_cnt,
            rnr_retry: self.rnr_retry,
            ..Default::default()
        }
    }
}
