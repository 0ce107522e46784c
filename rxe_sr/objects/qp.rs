// SPDX-License-Identifier: GPL-2.0
//! A queue pair's state as the verbs and the transport share it: the shape of its work
//! queues (fixed at create) and its modifiable attributes (IBTA 11.2.4.2). The rules that
//! set them are in `verbs/qp.rs`.

use crate::kx::ib_verbs::{AccessFlags, AhAttr, PathMtu, QpAttr, QpCap, QpInitReply, QpState};
use crate::kx::ib_verbs::{QpType, SigType};
use crate::uabi::queue::{RqGeometry, SqGeometry};
use crate::uabi::send_wqe;

/// The work queues' shapes, as created.
#[derive(Clone, Copy)]
pub(crate) struct QpShape {
    /// The QP's type.
    pub(crate) qp_type: QpType,
    /// The send queue.
    pub(crate) sq: SqGeometry,
    /// The receive queue.
    pub(crate) rq: RqGeometry,
    /// Which send WRs complete with a CQE.
    pub(crate) sq_sig_type: SigType,
    /// Receives come from the QP's SRQ: it has no receive queue of its own.
    pub(crate) srq: bool,
}

impl QpShape {
    /// The QP's type as the send-WQE rules name it.
    pub(crate) fn wqe_qp_type(&self) -> send_wqe::QpType {
        match self.qp_type {
            QpType::Gsi => send_wqe::QpType::Gsi,
            QpType::Rc => send_wqe::QpType::Rc,
            QpType::Uc => send_wqe::QpType::Uc,
            QpType::Ud => send_wqe::QpType::Ud,
        }
    }

    /// The capabilities actually granted.
    pub(crate) fn caps(&self) -> QpCap {
        QpCap {
            max_send_wr: self.sq.max_wr,
            max_recv_wr: if self.srq { 0 } else { self.rq.max_wr },
            max_send_sge: self.sq.max_sge,
            max_recv_sge: if self.srq { 0 } else { self.rq.max_sge },
            max_inline_data: self.sq.max_inline,
        }
    }

    /// The create-time attributes `query_qp` reports.
    pub(crate) fn init_reply(&self) -> QpInitReply {
        QpInitReply {
            qp_type: self.qp_type,
            cap: self.caps(),
            sq_sig_type: self.sq_sig_type,
        }
    }
}

/// The modifiable attributes of a QP (IBTA 11.2.4.2), as last set.
#[derive(Clone, Copy, Default)]
pub(crate) struct QpAttrs {
    pub(crate) state: QpState,
    pub(crate) qkey: u32,
    pub(crate) pkey_index: u16,
    pub(crate) port_num: u32,
    pub(crate) qp_access_flags: AccessFlags,
    pub(crate) path_mtu: PathMtu,
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
    pub(crate) ah_attr: AhAttr,
}

impl QpAttrs {
    /// The attributes as `ibv_query_qp` reports them.
    pub(crate) fn to_attr(self, shape: &QpShape) -> QpAttr {
        QpAttr {
            qp_state: Some(self.state),
            cur_qp_state: Some(self.state),
            path_mtu: Some(self.path_mtu),
            qkey: self.qkey,
            rq_psn: self.rq_psn,
            sq_psn: self.sq_psn,
            dest_qp_num: self.dest_qp_num,
            qp_access_flags: Some(self.qp_access_flags),
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
        }
    }
}
