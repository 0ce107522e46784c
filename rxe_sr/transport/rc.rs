// SPDX-License-Identifier: GPL-2.0
//! RC and UC: a connected QP's transport state, built from its attributes when it reaches
//! RTR (the responder) and RTS (the requester), around `proto::rc` (the state machines) and
//! `transport::rc_env` (what they act on: MRs, rings, CQs, skbs).

use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::prelude::*;

use crate::kx::ib_verbs::{PathMtu, QpType, SigType};
use crate::objects::ah::Av;
use crate::objects::qp::{QpAttrs, QpShape};
use crate::proto::psn::Psn;
use crate::proto::rc::requester::{Requester, SqEntry};
use crate::proto::rc::responder::{RdRes, Responder, MAX_RD_RES};
use crate::proto::rc::{timeout_us, RcConfig, Service};
use crate::uabi::send_wqe::{Payload, SendFlags, SendOp, SendOpcode, SendWqe};

/// Send WQEs the transport holds at most per QP (fewer when the send queue is smaller):
/// enough for the unacknowledged-PSN window of small messages.
const MAX_SQ_ENTRIES: u32 = 256;

/// A connected QP's transport.
pub(crate) struct RcConn {
    /// The attributes the state machines use.
    pub(crate) cfg: RcConfig,
    /// Where packets go.
    pub(crate) av: Av,
    /// UDP source port (per QP, so flows spread across ECMP paths as rdma_rxe's do).
    pub(crate) sport: u16,
    /// The responder (from RTR).
    pub(crate) resp: Responder<KVVec<Option<RdRes>>>,
    /// The requester and completer (from RTS).
    pub(crate) req: Option<Requester<KVVec<SqEntry>>>,
}

/// The service of a connected QP type.
pub(crate) fn service(qp_type: QpType) -> Option<Service> {
    match qp_type {
        QpType::Rc => Some(Service::Rc),
        QpType::Uc => Some(Service::Uc),
        _ => None,
    }
}

/// The transport's view of the attributes.
pub(crate) fn config(
    attrs: &QpAttrs,
    shape: &QpShape,
    qpn: u32,
    active_mtu: PathMtu,
) -> Option<RcConfig> {
    let service = service(shape.qp_type)?;
    Some(RcConfig {
        service,
        qpn,
        dest_qpn: attrs.dest_qp_num,
        pmtu: attrs.path_mtu.min(active_mtu).bytes(),
        timeout_us: timeout_us(attrs.timeout),
        retry_cnt: attrs.retry_cnt,
        rnr_retry: attrs.rnr_retry,
        min_rnr_timer: attrs.min_rnr_timer,
        max_rd_atomic: u32::from(attrs.max_rd_atomic),
        max_dest_rd_atomic: u32::from(attrs.max_dest_rd_atomic),
        sig_all: shape.sq_sig_type == SigType::AllWr,
        port: 1,
    })
}

impl RcConn {
    /// The transport of a QP entering RTR (its READ/atomic resources on the heap, sized for
    /// `max_dest_rd_atomic`).
    pub(crate) fn new(cfg: RcConfig, av: Av, rq_psn: u32) -> Result<RcConn> {
        let n = (cfg.max_dest_rd_atomic as usize).clamp(1, MAX_RD_RES);
        let res = KVVec::from_elem(None, n, GFP_KERNEL)?;
        Ok(RcConn {
            sport: 0xc000 | (cfg.qpn & 0x3fff) as u16,
            cfg,
            av,
            resp: Responder::new(Psn::new(rq_psn), res),
            req: None,
        })
    }

    /// Adds the requester (the QP enters RTS), its slots sized from the send queue.
    pub(crate) fn start_requester(&mut self, shape: &QpShape, sq_psn: u32) -> Result {
        let n = shape.sq.max_wr.clamp(1, MAX_SQ_ENTRIES) as usize;
        let filler = SqEntry::empty(SendWqe {
            wr_id: 0,
            opcode: SendOpcode::Send,
            flags: SendFlags::from_bits_truncate(0),
            op: SendOp::Send,
            ud: None,
            payload: Payload::None,
            length: 0,
        });
        let slots = KVVec::from_elem(filler, n, GFP_KERNEL)?;
        self.req = Some(Requester::new(slots, Psn::new(sq_psn), &self.cfg));
        Ok(())
    }
}
