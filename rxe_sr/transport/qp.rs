// SPDX-License-Identifier: GPL-2.0
//! A queue pair's driver data ([`QpObject`], inside the core's `ib_qp`: `kx::ib_qp::Qp`)
//! and the QP's completion queues as its paths post to them ([`QpCqs`], [`CqEvents`]).
//!
//! A user QP's send and receive queues are rings shared with the process (mapped by the
//! stock rxe provider from the offsets in `struct rxe_create_qp_resp`); post_send with no
//! work request is its doorbell. A kernel consumer's QP (UD, and the GSI QP1 that ib_mad
//! creates for connection management; ULPs' RC QPs) has no rings: post_send and post_recv
//! validate the work requests into [`KernelQueues`], and the QP's work item sends them,
//! because kernel callers may post in atomic context.

use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::prelude::*;
use kernel::sync::Mutex;

use crate::kx::ib_cq::WcQp;
use crate::kx::ib_pd::PdId;
use crate::kx::ib_qp::Qp;
use crate::kx::ib_verbs::{QpCap, QpState};
use crate::kx::netdevice::NetDev;
use crate::kx::rxe::mmap_queue::MappedQueue;
use crate::kx::skbuff::SkbQueue;
use crate::kx::spinlock::IrqSpinLock;
use crate::objects::ah::Av;
use crate::objects::cq::{self, RoceCq};
use crate::objects::device::RoceDevice;
use crate::objects::device::RxeSr;
use crate::objects::inflight::QpInflight;
use crate::objects::live::Counted;
use crate::objects::qp::{QpAttrs, QpShape};
use crate::objects::recv_queue::RecvFifo;
use crate::objects::srq::{self, RoceSrq};
use crate::transport::rc_conn::RcConn;
use crate::uabi::cqe::Completion;
use crate::uabi::queue::{Fifo, FromClientQueue};
use crate::uabi::recv_wqe::RecvWqe;
use crate::uabi::send_wqe::SendWqe;

/// An rxe_sr queue pair.
pub(crate) type RoceQp = Qp<RxeSr>;

/// What the QP's mutex guards: attributes, the rings and the kernel's view of their indices
/// (user space produces both; the kernel consumes), and the connected transport.
pub(crate) struct QpInner {
    pub(crate) attrs: QpAttrs,
    pub(crate) sq: Option<MappedQueue>,
    pub(crate) rq: Option<MappedQueue>,
    pub(crate) sq_q: FromClientQueue,
    pub(crate) rq_q: FromClientQueue,
    /// RC/UC: the transport, from RTR until reset.
    pub(crate) rc: Option<KBox<RcConn>>,
}

/// A kernel consumer's send request: the validated WQE and, for a datagram QP, where it
/// goes.
#[derive(Clone, Copy)]
pub(crate) struct KernelSend {
    pub(crate) wqe: SendWqe,
    pub(crate) av: Option<Av>,
}

/// A kernel consumer's work queues. Requests wait here for the QP's work item (sends) or
/// for a packet (receives).
pub(crate) struct KernelQueues {
    /// The QP state as the posting paths see it (modify_qp keeps it in step).
    pub(crate) state: QpState,
    pub(crate) sq: Fifo<Option<KernelSend>, KVVec<Option<KernelSend>>>,
    pub(crate) rq: RecvFifo,
}

impl KernelQueues {
    /// Empty queues of the depths `caps` grants.
    pub(crate) fn new(caps: &QpCap) -> Result<Self> {
        let len = |n: u32| usize::try_from(n).map_err(|_| EINVAL);
        Ok(KernelQueues {
            state: QpState::Reset,
            sq: Fifo::new(KVVec::from_elem(None, len(caps.max_send_wr)?, GFP_KERNEL)?),
            rq: Fifo::new(KVVec::from_elem(None, len(caps.max_recv_wr)?, GFP_KERNEL)?),
        })
    }

    /// Empties both queues, without completions (IBTA 10.3.1: Reset).
    pub(crate) fn clear(&mut self) {
        while self.sq.pop().is_some() {}
        while self.rq.pop().is_some() {}
    }

    /// The oldest posted receive.
    pub(crate) fn pop_recv(&mut self) -> Option<RecvWqe> {
        self.rq.pop().flatten()
    }
}

/// A kernel QP's queues behind their lock.
pub(crate) type KernelQueueLock = IrqSpinLock<Option<KernelQueues>>;

/// The driver's data in each QP.
#[pin_data]
pub(crate) struct QpObject {
    /// A mutex: the requester allocates and transmits while holding it (process context
    /// only: verbs calls, the doorbell and work items).
    #[pin]
    pub(crate) inner: Mutex<QpInner>,
    /// Kernel QPs: the work queues. Taken after `inner` when both are held; interrupts off,
    /// since kernel consumers post from any context.
    #[pin]
    pub(crate) kq: KernelQueueLock,
    pub(crate) shape: QpShape,
    /// RC: request packets that arrived while READ responses were still going out; they
    /// run in order once the responses are sent (as rdma_rxe's responder takes its packet
    /// queue one at a time).
    pub(crate) held: Option<SkbQueue>,
    /// Its part of the device's in-flight budget that the waker reads (queued to wait for
    /// room, room promised).
    pub(crate) inflight: QpInflight,
    /// Counted among the live QPs while the data lives.
    pub(crate) _live: Counted,
}

/// A QP's send and receive CQs, and the QP their completions name (`ib_wc.qp` for kernel
/// CQs).
#[derive(Clone, Copy)]
pub(crate) struct QpCqs<'a> {
    qp: WcQp,
    send: &'a RoceCq,
    recv: &'a RoceCq,
}

impl<'a> QpCqs<'a> {
    /// The CQs of `qp` (held by it while it lives).
    pub(crate) fn of(qp: &'a RoceQp) -> Self {
        QpCqs {
            qp: qp.wc_qp(),
            send: qp.send_cq(),
            recv: qp.recv_cq(),
        }
    }

    /// Posts a send-queue completion.
    pub(crate) fn send(&self, c: &Completion) -> Result {
        self.send.post(c, self.qp, false)
    }

    /// Posts a receive-queue completion (`solicited`: the message asked for an event).
    pub(crate) fn recv(&self, c: &Completion, solicited: bool) -> Result {
        self.recv.post(c, self.qp, solicited)
    }
}

/// Consumer callbacks made due on a QP's CQs and SRQ, run when dropped, outside its lock.
///
/// The callbacks are the completion handler, the CQ error event and the SRQ limit event
/// that completions posted meanwhile made due. Each path
/// that posts completions while holding the QP's lock creates one before taking the lock,
/// so it is dropped after the lock is released: a handler may then call back into the QP
/// (a ULP that modifies the QP from its completion handler), as rdma_rxe allows.
pub(crate) struct CqEvents<'a>(&'a RoceQp);

impl<'a> CqEvents<'a> {
    /// The events of `qp`'s CQs and SRQ. Drop it with no lock of the driver's held.
    pub(crate) fn new(qp: &'a RoceQp) -> Self {
        CqEvents(qp)
    }
}

impl Drop for CqEvents<'_> {
    fn drop(&mut self) {
        let qp = self.0;
        if let Some(s) = qp.srq() {
            srq::run_due(s);
        }
        let (send, recv) = (qp.send_cq(), qp.recv_cq());
        cq::run_due(send);
        if !recv.is(send) {
            cq::run_due(recv);
        }
    }
}

/// The parts of a live QP the transport needs besides its lock.
pub(crate) struct QpCtx<'a> {
    pub(crate) qp: &'a RoceQp,
    pub(crate) dev: &'a RoceDevice,
    pub(crate) pd: PdId,
    pub(crate) qpn: u32,
    pub(crate) cqs: QpCqs<'a>,
    pub(crate) srq: Option<&'a RoceSrq>,
    pub(crate) st: &'a QpObject,
}

impl<'a> QpCtx<'a> {
    /// The context of `qp`.
    pub(crate) fn new(qp: &'a RoceQp) -> Self {
        QpCtx {
            qp,
            dev: qp.device(),
            pd: qp.pd(),
            qpn: qp.qpn(),
            cqs: QpCqs::of(qp),
            srq: qp.srq(),
            st: qp,
        }
    }

    /// Runs `f` with the device's netdev (referenced for the call), if it has one.
    pub(crate) fn with_netdev<R>(&self, f: impl FnOnce(&NetDev) -> R) -> Option<R> {
        self.dev.with_netdev(f)
    }
}
