// SPDX-License-Identifier: GPL-2.0
//! Queue pairs: the rules for creating and modifying one (the state they set is
//! `objects/qp.rs`; IBTA 11.2.4, 11.2.5; limits as rdma_rxe reports them). The state machine's
//! required/optional attribute masks are the RDMA core's `ib_modify_qp_is_ok`, called by the
//! FFI layer (through `kx::ib_verbs::modify_qp_is_ok`) before [`QpAttrs::apply`].

use kernel::prelude::*;

use crate::kx::error;
use crate::kx::ib_verbs::{QpAttr, QpAttrMask, QpInitAttr, QpType};
use crate::objects::qp::{QpAttrs, QpShape};
use crate::uabi::queue;

/// Smallest QPN for ordinary QPs (0 and 1 are the special QPs; rdma_rxe starts at 16).
pub(crate) const MIN_QPN: u32 = 16;
/// Largest QPN (rdma_rxe's object space; QPNs are 24-bit on the wire).
pub(crate) const MAX_QPN: u32 = (1 << 20) - 1;
/// Most outstanding RDMA READ / atomic operations, each way.
pub(crate) const MAX_RD_ATOMIC: u32 = 128;
/// Largest work-queue depth.
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
