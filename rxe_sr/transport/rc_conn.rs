// SPDX-License-Identifier: GPL-2.0
//! RC and UC: a connected QP's transport state, built from its attributes when it reaches
//! RTR (the responder) and RTS (the requester), around `proto::rc` (the state machines) and
//! `transport::rc_env` (what they act on: MRs, rings, CQs, skbs).

use kernel::alloc::{flags::GFP_KERNEL, KBox, KVVec};
use kernel::prelude::*;

use crate::kx::ib_verbs::{PathMtu, QpState, QpType, SigType};
use crate::objects::ah::Av;
use crate::objects::device::RoceDevice;
use crate::objects::qp::{QpAttrs, QpShape};
use crate::proto::fec::FecParams;
use crate::proto::psn::Psn;
use crate::proto::rc::requester::{ReqSr, Requester, SqEntry};
use crate::proto::rc::responder::{RdRes, RecvSlot, RespSr, Responder, MAX_RD_RES};
use crate::proto::rc::responder::{RECV_WINDOW, SRQ_RECV_WINDOW};
use crate::proto::rc::sr::SrSetup;
use crate::proto::rc::timer_hold::TimerHold;
use crate::proto::rc::{timeout_us, RcConfig, Service};
use crate::proto::recovery::scheme::Scheme;
use crate::proto::recovery::RtoConfig;
use crate::transport::rc_fec::{
    new_encoder, new_fec_rx, new_resp_rx, FecRxState, KEncoder, RespRxState,
};
use crate::uabi::send_wqe::{Payload, SendFlags, SendOp, SendOpcode, SendWqe};

/// Send WQEs the transport holds at most per QP (fewer when the send queue is smaller):
/// enough for the unacknowledged-PSN window of small messages.
const MAX_SQ_ENTRIES: u32 = 256;

/// The words of a bitmap over a QP's SR window, on the heap.
pub(crate) type KWords = KVVec<u64>;

/// The responder of a connected QP: its READ/atomic resources, receive-WQE window and SR
/// state on the heap.
pub(crate) type KResponder =
    Responder<KVVec<Option<RdRes>>, KVVec<Option<RecvSlot>>, KBox<RespSr<KWords>>>;

/// The requester of a connected QP: its send-queue entries and SR state on the heap.
pub(crate) type KRequester = Requester<KVVec<SqEntry>, KBox<ReqSr<KWords>>>;

/// A connected QP's transport.
pub(crate) struct RcConn {
    /// The attributes the state machines use.
    pub(crate) cfg: RcConfig,
    /// Where packets go.
    pub(crate) av: Av,
    /// UDP source port (per QP, so flows spread across ECMP paths as rdma_rxe's do).
    pub(crate) sport: u16,
    /// The responder (from RTR; on the heap of its own: it holds receive WQEs inline).
    pub(crate) resp: KBox<KResponder>,
    /// The requester and completer (from RTS).
    pub(crate) req: Option<KRequester>,
    /// What the QP's SR engines are built from (`None`: go-back-N only).
    sr: Option<SrSetup>,
    /// The PSNs of the device's in-flight budget the requester held at the end of its last
    /// step (objects::inflight).
    pub(crate) inflight_held: u32,
    /// The requester's path allowance as the device last took it
    /// (`RoceDevice::settle_path`).
    pub(crate) path_held: u32,
    /// The requester's past deadline waiting for the receive work (`proto::rc::timer_hold`).
    pub(crate) timer_hold: Option<TimerHold>,
    /// The FEC shim's parameters (`None`: the device runs none).
    fec: Option<FecParams>,
    /// The FEC encoder of the requests (from RTS, with FEC).
    pub(crate) fec_tx: Option<KBox<KEncoder>>,
    /// The FEC shim's receiving half (from RTR, with FEC).
    pub(crate) fec_rx: Option<KBox<FecRxState>>,
    /// RC with FEC: the responder's encoder of its coded responses (from RTR), and the
    /// requester's receiving half of the peer's (from RTS).
    pub(crate) fec_resp_tx: Option<KBox<KEncoder>>,
    pub(crate) fec_resp_rx: Option<KBox<RespRxState>>,
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
        fec: false,
        gbn_window: crate::kx::rxe::moduleparam::gbn_window_psns(),
    })
}

impl RcConn {
    /// The transport of a QP entering RTR.
    ///
    /// Its READ/atomic resources are on the heap, sized for `max_dest_rd_atomic`; it has the SR
    /// state of `scheme` for an RC QP (its window of receive WQEs taken ahead smaller on a shared
    /// receive queue, `srq`).
    // On the heap, built out of line (as is `start_requester`): it is large.
    #[inline(never)]
    pub(crate) fn new(
        cfg: RcConfig,
        av: Av,
        rq_psn: u32,
        (scheme, fec): (Scheme, Option<FecParams>),
        srq: bool,
    ) -> Result<KBox<RcConn>> {
        let cfg = RcConfig {
            fec: fec.is_some(),
            ..cfg
        };
        let n = (cfg.max_dest_rd_atomic as usize).clamp(1, MAX_RD_RES);
        let res = KVVec::from_elem(None, n, GFP_KERNEL)?;
        // SRNIC's slow path serves its queue in a work item of its own (`qp_slow_path`).
        // (The responder's engine runs no retransmission timer; the requester's timeout is
        // set at RTS.)
        let sr = SrSetup::new(scheme, rto_of(&cfg), 0)
            .filter(|_| cfg.service == Service::Rc)
            .map(|s| SrSetup {
                pipe_psns: crate::kx::rxe::moduleparam::sr_pipe_psns(),
                window_log2: sr_window_log2(),
                ..s
            });
        let psn = Psn::new(rq_psn);
        let (resp_sr, window) = match sr {
            Some(s) => (
                Some(new_resp_sr(s, psn)?),
                KVVec::from_elem(
                    None,
                    if srq { SRQ_RECV_WINDOW } else { RECV_WINDOW },
                    GFP_KERNEL,
                )?,
            ),
            None => (None, KVVec::new()),
        };
        let resp = new_responder(psn, res, resp_sr, window, cfg.fec)?;
        let fec_rx = match fec {
            Some(p) => Some(new_fec_rx(p, 1 << sr_window_log2())?),
            None => None,
        };
        let fec_resp_tx = match fec.filter(|_| cfg.service == Service::Rc) {
            Some(p) => Some(new_encoder(p, cfg.dest_qpn, true)?),
            None => None,
        };
        // Written into its heap slot rather than built on the stack: it holds the requester.
        let slot = KBox::<RcConn>::new_uninit(GFP_KERNEL)?;
        Ok(slot.write(RcConn {
            sport: 0xc000 | (cfg.qpn & 0x3fff) as u16,
            cfg,
            av,
            resp,
            req: None,
            sr,
            inflight_held: 0,
            path_held: 0,
            timer_hold: None,
            fec,
            fec_tx: None,
            fec_rx,
            fec_resp_tx,
            fec_resp_rx: None,
        }))
    }

    /// Gives what the QP holds of the device back: its part of the in-flight budget, and
    /// the SR engines' pool units and blocks. The QP is reset, failed or destroyed.
    pub(crate) fn release_shared(&mut self, dev: &RoceDevice) {
        // The packets the FEC shim held go with the state that receives them.
        self.fec_rx = None;
        self.fec_resp_rx = None;
        dev.give_back_inflight(&mut self.inflight_held);
        dev.settle_path(&mut self.path_held, 0);
        if self.sr.is_none() {
            return;
        }
        let mut pools = dev.sr_pools().lock();
        if let Some(sr) = self.resp.sr_mut() {
            sr.release(&mut *pools);
        }
        if let Some(sr) = self.req.as_mut().and_then(|r| r.sr_mut()) {
            sr.release(&mut *pools);
        }
    }

    /// Adds the requester (the QP enters RTS), its slots sized from the send queue.
    #[inline(never)]
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
        let psn = Psn::new(sq_psn);
        // The local ACK timeout is an RTS attribute: the engine's timeouts come from it.
        let sr = match self.sr {
            Some(s) => Some(new_req_sr(
                SrSetup {
                    rto: rto_of(&self.cfg),
                    ..s
                },
                psn,
            )?),
            None => None,
        };
        if let Some(p) = self.fec.filter(|_| self.cfg.fec) {
            self.fec_tx = Some(new_encoder(p, self.cfg.dest_qpn, false)?);
            if self.cfg.service == Service::Rc {
                self.fec_resp_rx = Some(new_resp_rx(p, 1 << sr_window_log2())?);
            }
        }
        self.req = Some(Requester::new(slots, psn, &self.cfg, sr));
        Ok(())
    }
}

/// The SR window the module was loaded with, as log2 (its value was checked at load).
fn sr_window_log2() -> u8 {
    crate::kx::rxe::moduleparam::sr_window_psns().trailing_zeros() as u8
}

/// The SR engines' retransmission timeouts: the QP's local ACK timeout (the requester
/// stretches it by the measured round trip and by its backoff, as for go-back-N).
fn rto_of(cfg: &RcConfig) -> RtoConfig {
    RtoConfig {
        rto_low: cfg.timeout_us,
        rto_high: cfg.timeout_us,
        n_low: 3,
    }
}

// The SR states are large (an engine each): built out of line, so their temporaries stay
// out of the callers' stack frames.
#[inline(never)]
fn new_responder(
    psn: Psn,
    res: KVVec<Option<RdRes>>,
    sr: Option<KBox<RespSr<KWords>>>,
    window: KVVec<Option<RecvSlot>>,
    fec: bool,
) -> Result<KBox<KResponder>> {
    Ok(KBox::new(
        Responder::new(psn, res, sr, window).with_fec(fec),
        GFP_KERNEL,
    )?)
}

/// Makes `n` zeroed words for a bitmap, as the SR states ask; when an allocation fails it
/// hands out empty words and sets `failed`, and the state built over them is dropped.
fn window_words(failed: &mut bool) -> impl FnMut(usize) -> KWords + '_ {
    move |n| {
        KVVec::from_elem(0u64, n, GFP_KERNEL).unwrap_or_else(|_| {
            *failed = true;
            KVVec::new()
        })
    }
}

#[inline(never)]
fn new_resp_sr(s: SrSetup, psn: Psn) -> Result<KBox<RespSr<KWords>>> {
    let mut failed = false;
    let sr = KBox::new(
        RespSr::new(s, psn, &mut window_words(&mut failed)),
        GFP_KERNEL,
    )?;
    if failed {
        return Err(ENOMEM);
    }
    Ok(sr)
}

#[inline(never)]
fn new_req_sr(s: SrSetup, psn: Psn) -> Result<KBox<ReqSr<KWords>>> {
    let mut failed = false;
    let slot = KBox::<ReqSr<KWords>>::new_uninit(GFP_KERNEL)?;
    let sr = slot.write(ReqSr::new(s, psn, &mut window_words(&mut failed)));
    if failed {
        return Err(ENOMEM);
    }
    Ok(sr)
}

/// True for QP states whose responder takes requests.
pub(crate) fn receiving(state: QpState) -> bool {
    matches!(state, QpState::Rtr | QpState::Rts)
}
