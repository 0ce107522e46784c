// SPDX-License-Identifier: GPL-2.0
//! Queue pairs: the C-ABI entry points and the QP object. A user QP's send and receive
//! queues are rings shared with the process (mapped by the stock rxe provider from the
//! offsets in `struct rxe_create_qp_resp`); post_send with no work request is its doorbell.
//! A kernel consumer's QP (UD, and the GSI QP1 that ib_mad creates for connection
//! management) has no rings: post_send and post_recv validate the work requests into
//! [`KernelQueues`], and the QP's work item sends them, because kernel callers may post in
//! atomic context.
//!
//! This file has the QP object and create/modify/query/destroy; [`post`] the posting verbs,
//! [`datagram`] UD/GSI sending and delivery, [`connected`] the RC/UC drive loop.

use core::mem::size_of;
use core::pin::Pin;
use core::ptr;
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::sync::Mutex;
use kernel::{new_mutex, pin_init};

use super::rc_env::KEnv;
use crate::kx::bindings;
use crate::kx::ib_pd::PdId;
use crate::kx::ib_verbs::{self, PathMtu, QpAttr, QpAttrMask, QpCap, QpInitAttr, QpState, SigType};
use crate::kx::mmap_queue::{MappedQueue, SharedQueue};
use crate::kx::netdevice::NetDev;
use crate::kx::skbuff::{SkBuff, SkbQueue};
use crate::kx::spinlock::{new_irq_spinlock, IrqSpinLock};
use crate::kx::timer::QpTimer;
use crate::kx::wait_bit::UseCount;
use crate::objects::ah;
use crate::objects::ah::Av;
use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::objects::live;
use crate::objects::qp::{QpAttrs, QpShape};
use crate::objects::recv_queue::{take_from_ring, RecvFifo};
use crate::proto::rc::requester::{PostError, ReqCounters, Requester, SqEntry};
use crate::proto::rc::responder::RespCounters;
use crate::proto::rc::responder::READ_BUDGET;
use crate::proto::rc::{Outcome, RcConfig, Service};
use crate::proto::wire::ip::RoceDatagram;
use crate::proto::wire::opcode::OpKind;
use crate::proto::wire::PacketRepr;
use crate::transport::rc::{self as rc_transport, RcConn};
use crate::transport::ud;
use crate::uabi::cqe::RecvInfo;
use crate::uabi::cqe::{Completion, WcStatus};
use crate::uabi::limits::MAX_SEND_WQE_BYTES;
use crate::uabi::queue::{Fifo, FromClientQueue};
use crate::uabi::recv_wqe::RecvWqe;
use crate::uabi::send_wqe::NetworkType;
use crate::uabi::send_wqe::{InlineData, Remote, SendOp, SendOpcode, UdDest, WrFields};
use crate::uabi::send_wqe::{QpType, SendFlags, SendLimits, SendWqe};
use crate::uabi::sge::SgeList;
use crate::uabi::WqeError;
use crate::uabi::{layout, resp};
use crate::verbs::qp as qp_rules;
use kernel::alloc::KVVec;
use kernel::ffi::c_void;

mod connected;
mod cqs;
mod datagram;
mod post;

pub(crate) use connected::*;
pub(crate) use cqs::{CqEvents, QpCqs};
pub(crate) use datagram::*;
pub(crate) use post::*;

/// What the lock guards: attributes, the rings and the kernel's view of their indices
/// (user space produces both; the kernel consumes).
struct QpInner {
    attrs: QpAttrs,
    sq: Option<MappedQueue>,
    rq: Option<MappedQueue>,
    sq_q: FromClientQueue,
    rq_q: FromClientQueue,
    /// RC/UC: the transport, from RTR until reset.
    rc: Option<RcConn>,
}

/// A kernel consumer's send request: the validated WQE and, for a datagram QP, where it
/// goes.
#[derive(Clone, Copy)]
struct KernelSend {
    wqe: SendWqe,
    av: Option<Av>,
}

/// A kernel consumer's work queues. Requests wait here for the QP's work item (sends) or
/// for a packet (receives).
pub(crate) struct KernelQueues {
    /// The QP state as the posting paths see it (modify_qp keeps it in step).
    state: QpState,
    sq: Fifo<Option<KernelSend>, KVVec<Option<KernelSend>>>,
    rq: RecvFifo,
}

impl KernelQueues {
    fn new(caps: &QpCap) -> Result<Self> {
        let len = |n: u32| usize::try_from(n).map_err(|_| EINVAL);
        Ok(KernelQueues {
            state: QpState::Reset,
            sq: Fifo::new(KVVec::from_elem(None, len(caps.max_send_wr)?, GFP_KERNEL)?),
            rq: Fifo::new(KVVec::from_elem(None, len(caps.max_recv_wr)?, GFP_KERNEL)?),
        })
    }

    fn clear(&mut self) {
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

/// Per-QP state, allocated at create and freed at destroy.
#[pin_data]
struct QpObject {
    /// A mutex: the requester allocates and transmits while holding it (process context
    /// only: verbs calls, the doorbell and work items).
    #[pin]
    inner: Mutex<QpInner>,
    /// Kernel QPs: the work queues. Taken after `inner` when both are held; interrupts off,
    /// since kernel consumers post from any context.
    #[pin]
    kq: KernelQueueLock,
    shape: QpShape,
    /// References held by the receive path ([`QpRef`]); destroy waits for zero.
    users: UseCount,
    /// RC/UC: retransmission and RNR timer; kernel QPs: the send work, kicked by post_send
    /// (its work calls [`qp_timer`]). An RC QP's work also sends the rest of a
    /// READ's responses and then runs the requests held back meanwhile.
    timer: Option<QpTimer>,
    /// RC: request packets that arrived while READ responses were still going out; they
    /// run in order once the responses are sent (as rdma_rxe's responder takes its packet
    /// queue one at a time).
    held: Option<SkbQueue>,
}

/// The QP object: `ibqp` first (the core allocates `size_of::<RxeSrQp>()` zeroed bytes).
#[repr(C)]
pub(crate) struct RxeSrQp {
    ibqp: bindings::ib_qp,
    state: *mut QpObject,
}

/// Size the core allocates per QP.
pub(crate) const SIZE: usize = size_of::<RxeSrQp>();

/// # Safety
/// `ibqp` is a live QP of ours whose create succeeded (or null state).
unsafe fn state<'a>(ibqp: *mut bindings::ib_qp) -> Option<&'a QpObject> {
    // SAFETY: `ibqp` is the first field of a RxeSrQp; `state` is null or the leaked box.
    unsafe { (*ibqp.cast::<RxeSrQp>()).state.as_ref() }
}

fn mminfo(q: &Option<MappedQueue>, offset: u64) -> Result<resp::MmInfo> {
    let size = q.as_ref().map_or(0, |m| m.queue().len());
    Ok(resp::MmInfo {
        offset,
        size: u32::try_from(size).map_err(|_| EINVAL)?,
    })
}

/// `ib_device_ops.create_qp`.
///
/// # Safety
/// Called by the core with a zeroed QP object of our size, valid init attributes, and the
/// caller's udata (null for kernel consumers).
pub(crate) unsafe extern "C" fn create_qp(
    ibqp: *mut bindings::ib_qp,
    init: *mut bindings::ib_qp_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract.
    match unsafe { create_qp_inner(ibqp, &mut *init, udata) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
/// As [`create_qp`].
unsafe fn create_qp_inner(
    ibqp: *mut bindings::ib_qp,
    init: &mut bindings::ib_qp_init_attr,
    udata: *mut bindings::ib_udata,
) -> Result {
    // SAFETY: reads a boot-time constant.
    let shape = qp_rules::shape(&QpInitAttr::from_raw(init), unsafe {
        bindings::rxe_sr_glue_cache_line_size()
    })?;
    let gsi = shape.qp_type == QpType::Gsi;
    // SAFETY: the QP's device is one of ours.
    let dev = unsafe { RoceDevice::from_ib((*ibqp).device) };
    let (sq, rq, kq) = if udata.is_null() {
        // A kernel consumer (ib_mad's GSI QP, ULPs' RC, UC and UD QPs, on an SRQ or not).
        (None, None, Some(KernelQueues::new(&shape.caps())?))
    } else {
        if gsi {
            // QP1 belongs to the kernel's MAD layer.
            return Err(EINVAL);
        }
        // SAFETY: a live udata of a uverbs call.
        let (sq, rq) = unsafe { user_rings(udata, &shape)? };
        (sq, rq, None)
    };

    // Reserved now, published once the QP is complete (the receive path looks QPs up).
    // QP1 is number 1 on the wire and in the table.
    let qpn = if gsi {
        dev.qps().reserve(1, 1)?
    } else {
        dev.qps().reserve(qp_rules::MIN_QPN, qp_rules::MAX_QPN)?
    };
    // Every QP has a work item: RC/UC timers and READ responses, datagram sends beyond one
    // call's budget, a kernel consumer's sends.
    let timer = {
        // SAFETY: the timer is dropped in destroy_qp (or below on error) before `ibqp` is freed;
        // `qp_timer` takes an `ib_qp` of ours in process context.
        match unsafe { QpTimer::new(qp_timer, ibqp.cast::<c_void>()) } {
            Ok(t) => Some(t),
            Err(e) => {
                dev.qps().erase(qpn);
                return Err(e);
            }
        }
    };
    let held = if rc_transport::service(shape.qp_type) == Some(Service::Rc) {
        match SkbQueue::new() {
            Ok(q) => Some(q),
            Err(e) => {
                drop(timer);
                dev.qps().erase(qpn);
                return Err(e);
            }
        }
    } else {
        None
    };
    let attrs = QpAttrs {
        state: QpState::Reset,
        port_num: 1,
        path_mtu: PathMtu::Mtu256,
        ..Default::default()
    };
    let st = KBox::pin_init(
        pin_init!(QpObject {
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
            users: UseCount::new(),
            timer,
            held,
        }),
        GFP_KERNEL,
    );
    let st = match st {
        Ok(s) => s,
        Err(e) => {
            // The initialiser, and the ring handles in it, were dropped.
            dev.qps().erase(qpn);
            return Err(e);
        }
    };
    // SAFETY: the state never moves out of its box; destroy_qp rebuilds the box.
    let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(st) });
    // SAFETY: `ibqp` is our zeroed QP object, not yet visible to anyone else.
    unsafe {
        (*ibqp.cast::<RxeSrQp>()).state = raw;
        (*ibqp).qp_num = qpn;
    }
    if let Err(e) = dev.qps().publish(qpn, ibqp.cast()) {
        dev.qps().erase(qpn);
        // SAFETY: never visible: take the state back and free it (its rings unregister).
        unsafe {
            (*ibqp.cast::<RxeSrQp>()).state = ptr::null_mut();
            drop(KBox::from_raw(raw));
        }
        return Err(e);
    }
    init.cap = shape.caps().to_raw();
    live::LIVE.qps.inc();
    Ok(())
}

/// A user QP's send ring and (unless it is on an SRQ) receive ring, registered for mmap
/// and described to user space in `struct rxe_create_qp_resp`.
///
/// # Safety
/// `udata` is the live udata of a uverbs create_qp call.
unsafe fn user_rings(
    udata: *mut bindings::ib_udata,
    shape: &QpShape,
) -> Result<(Option<MappedQueue>, Option<MappedQueue>)> {
    // SAFETY: a live udata of a uverbs call carries its ucontext.
    let uctx = unsafe { bindings::rxe_sr_glue_udata_ucontext(udata) };
    if uctx.is_null() {
        return Err(EINVAL);
    }
    let sq = SharedQueue::new(shape.sq.queue.ring)?;
    // SAFETY: `uctx` is the caller's live ucontext.
    let (sq, sq_off) = unsafe { MappedQueue::insert(uctx, sq)? };
    // A QP on an SRQ has no receive ring (its mminfo is all zero, as rdma_rxe's).
    let (rq, rq_off) = if shape.srq {
        (None, 0)
    } else {
        let rq = SharedQueue::new(shape.rq.queue.ring)?;
        // SAFETY: as above. On any error below, dropping the handles unregisters the rings.
        let (rq, off) = unsafe { MappedQueue::insert(uctx, rq)? };
        (Some(rq), off)
    };
    let sq = Some(sq);
    let mut out = [0u8; layout::CREATE_QP_RESP_SIZE];
    let filled = match (mminfo(&rq, rq_off), mminfo(&sq, sq_off)) {
        (Ok(r), Ok(s)) => resp::emit_create_qp_resp(r, s, &mut out).is_some(),
        _ => false,
    };
    let ret = if filled {
        // SAFETY: `udata` is live; the helper checks outlen and copies to user space.
        unsafe { bindings::rxe_sr_glue_copy_to_udata(udata, out.as_ptr().cast(), out.len()) }
    } else {
        EINVAL.to_errno()
    };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    Ok((sq, rq))
}

/// `ib_device_ops.destroy_qp`.
///
/// # Safety
/// Called by the core once per created QP, when it has no users left.
pub(crate) unsafe extern "C" fn destroy_qp(
    ibqp: *mut bindings::ib_qp,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // Only raw access to the QP object: the receive path reads its `state` field (under the
    // QP table's lock) until the QP is out of the table.
    let qpp = ibqp.cast::<RxeSrQp>();
    // SAFETY: our QP object; `state` is written only by create and (below) by us.
    let raw = unsafe { (*qpp).state };
    // SAFETY: null or the live state box.
    let Some(st) = (unsafe { raw.as_ref() }) else {
        return 0;
    };
    // SAFETY: the QP's device is one of ours.
    let dev = unsafe { RoceDevice::from_ib((*ibqp).device) };
    // SAFETY: reads the QPN we assigned.
    let qpn = unsafe { (*ibqp).qp_num };
    // Out of its multicast groups and the table first: no new receive-path reference; then
    // wait for the ones held.
    crate::verbs::mcast::detach_all(dev, qpn);
    dev.qps().erase(qpn);
    st.users.wait_for_zero();
    // The timer and its work are the last users: stop them through the shared reference,
    // waiting for a running work item (it takes the QP lock, not held here).
    if let Some(t) = st.timer.as_ref() {
        t.shutdown();
    }
    // Nothing can reach the state any more: out of the table, no receive-path reference,
    // the timer and work stopped for good.
    // SAFETY: `raw` came from KBox::into_raw and is ours again (above); the field is
    // cleared before anyone could read it.
    let st = unsafe {
        (*qpp).state = ptr::null_mut();
        KBox::from_raw(raw)
    };
    // Unregister the rings' mmap entries (outside the lock), then free the state.
    let rings = {
        let mut g = st.inner.lock();
        (g.sq.take(), g.rq.take())
    };
    drop(rings);
    drop(st);
    live::LIVE.qps.dec();
    0
}

/// `ib_device_ops.modify_qp`: a state transition the core's table allows, with attributes
/// rxe_sr can honour.
///
/// # Safety
/// Called by the core with a live QP of ours and a valid attribute block.
pub(crate) unsafe extern "C" fn modify_qp(
    ibqp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    mask: c_int,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract.
    let (Some(st), Some(a)) = (unsafe { state(ibqp) }, unsafe { attr.as_ref() }) else {
        return EINVAL.to_errno();
    };
    let Some(mask) = QpAttrMask::from_raw(mask) else {
        return EINVAL.to_errno();
    };
    // SAFETY: with IB_QP_AV in the mask, the core holds the AV's source GID attribute for
    // the call.
    let a = unsafe { QpAttr::from_core(a, mask) };
    if !mask.within(QpAttrMask::STANDARD) {
        return crate::kx::error::eopnotsupp().to_errno();
    }
    let av = if mask.contains(QpAttrMask::AV) && rc_transport::service(st.shape.qp_type).is_some() {
        match crate::verbs::ah::av_of(&a.ah_attr) {
            Ok(av) => Some(av),
            Err(e) => return e.to_errno(),
        }
    } else {
        None
    };
    // SAFETY: `ibqp` is live, and so are the CQs it holds.
    let (qpn, cqs, ibdev) = unsafe { ((*ibqp).qp_num, QpCqs::of(ibqp), (*ibqp).device) };
    // SAFETY: the QP outlives the call; declared before the lock, so dropped after it.
    let _events = unsafe { CqEvents::new(cqs) };
    let mut g = st.inner.lock();
    // Lock order: QP mutex, then the kernel queues, then a CQ (each takes only its own).
    // The transition starts from the QP's real state: a caller's IB_QP_CUR_STATE that
    // disagrees with it is refused, not believed.
    let cur = g.attrs.state;
    if mask.contains(QpAttrMask::CUR_STATE) && a.cur_qp_state != Some(cur) {
        return EINVAL.to_errno();
    }
    let next = if mask.contains(QpAttrMask::STATE) {
        match a.qp_state {
            Some(s) => s,
            None => return EINVAL.to_errno(),
        }
    } else {
        cur
    };
    if !ib_verbs::modify_qp_is_ok(cur, next, st.shape.qp_type, mask) {
        return EINVAL.to_errno();
    }
    let before = g.attrs;
    if let Err(e) = g.attrs.apply(&a, mask) {
        return e.to_errno();
    }
    if rc_transport::service(st.shape.qp_type).is_some() {
        // SAFETY: a device of ours.
        let dev = unsafe { RoceDevice::from_ib(ibdev) };
        if let Err(e) = connect(&mut g, &st.shape, dev, qpn, cur, next, av) {
            g.attrs = before;
            return e.to_errno();
        }
    }
    if let Some(k) = st.kq.lock().as_mut() {
        k.state = next;
        if next == QpState::Reset {
            // IBTA 10.3.1: Reset empties the work queues, without completions.
            k.clear();
        }
    }
    if next == QpState::Reset {
        if let Some(h) = st.held.as_ref() {
            h.purge();
        }
        // IBTA 10.3.1: Reset empties a user QP's rings too (consumer := producer, published),
        // so nothing posted before it runs after the QP is brought up again.
        let QpInner {
            sq, rq, sq_q, rq_q, ..
        } = &mut *g;
        for (ring, q) in [(sq.as_ref(), sq_q), (rq.as_ref(), rq_q)] {
            if let Some(m) = ring {
                // On a mangled producer index, what was validly queued is discarded.
                let _ = q.observe_producer(m.queue().load_producer());
                m.queue().publish_consumer(q.discard_all());
            }
        }
    }
    if next == QpState::Err && cur != QpState::Err {
        // SAFETY: the QP's CQs outlive it.
        unsafe { enter_error(&mut g, st, qpn, cqs) };
    }
    0
}

/// RC/UC: builds the transport as the QP connects (RTR: responder; RTS: requester),
/// refreshes its view of the attributes in RTS, and drops it at reset.
fn connect(
    g: &mut QpInner,
    shape: &QpShape,
    dev: &RoceDevice,
    qpn: u32,
    cur: QpState,
    next: QpState,
    av: Option<crate::objects::ah::Av>,
) -> Result {
    let cfg = rc_transport::config(&g.attrs, shape, qpn, dev.active_mtu()).ok_or(EINVAL)?;
    match next {
        QpState::Reset => g.rc = None,
        QpState::Rtr if cur != QpState::Rtr => {
            let av = av.ok_or(EINVAL)?;
            g.rc = Some(RcConn::new(cfg, av, g.attrs.rq_psn)?);
        }
        QpState::Rts => {
            let conn = g.rc.as_mut().ok_or(EINVAL)?;
            conn.cfg = cfg;
            if let Some(av) = av {
                conn.av = av;
            }
            if cur == QpState::Rtr {
                conn.start_requester(shape, g.attrs.sq_psn)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Moves the QP to the Error state: what the transport holds is completed as flushed, then
/// the work queues are flushed (IBTA 10.3.1).
///
/// # Safety
/// `g` is the lock of the live QP `st` whose CQs are `cqs`.
unsafe fn enter_error(g: &mut QpInner, st: &QpObject, qpn: u32, cqs: QpCqs) {
    g.attrs.state = QpState::Err;
    if let Some(h) = st.held.as_ref() {
        h.purge();
    }
    let QpInner {
        sq,
        rq,
        sq_q,
        rq_q,
        rc,
        ..
    } = g;
    if let Some(conn) = rc.as_mut() {
        conn.resp.drop_held(|wr_id| {
            let c = Completion::zeroed(wr_id, qpn, WcStatus::WrFlushErr);
            // SAFETY: per this function's contract.
            let _ = unsafe { cqs.recv(&c, false) };
        });
        // The requests the requester took complete first, in order (a kernel QP's are no
        // longer in any queue; a user QP's leave its ring as they complete).
        let RcConn { cfg, req, .. } = conn;
        if let Some(req) = req.as_mut() {
            req.flush(cfg, |c| {
                if let Some(ring) = sq.as_ref() {
                    if let Some(cons) = sq_q.advance_consumer() {
                        ring.queue().publish_consumer(cons);
                    }
                }
                // SAFETY: per this function's contract. A full CQ has raised its error event.
                let _ = unsafe { cqs.send(c) };
            });
        }
    }
    // SAFETY: per this function's contract.
    unsafe {
        flush(sq.as_ref(), sq_q, layout::SEND_WQE_WR_ID_OFF, qpn, |c| {
            cqs.send(c)
        });
        flush(rq.as_ref(), rq_q, layout::RECV_WQE_WR_ID_OFF, qpn, |c| {
            cqs.recv(c, false)
        });
        flush_kernel(st, qpn, cqs);
    }
}

/// Completes what waits in a kernel QP's queues with IB_WC_WR_FLUSH_ERR, oldest first (the
/// Error state; nothing for user QPs). Each request is taken under the queues' lock and
/// completed outside it, so a consumer's completion handler may post again.
///
/// # Safety
/// `cqs` are the live CQs of the QP `st`.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
unsafe fn flush_kernel(st: &QpObject, qpn: u32, cqs: QpCqs) {
    loop {
        let (send, recv) = match st.kq.lock().as_mut() {
            Some(k) => (
                k.sq.pop().flatten(),
                if k.sq.is_empty() {
                    k.rq.pop().flatten()
                } else {
                    None
                },
            ),
            None => return,
        };
        if send.is_none() && recv.is_none() {
            return;
        }
        // SAFETY: per this function's contract. A full CQ has raised its error event.
        unsafe {
            if let Some(s) = send {
                let _ = cqs.send(&Completion::zeroed(s.wqe.wr_id, qpn, WcStatus::WrFlushErr));
            }
            if let Some(r) = recv {
                let _ = cqs.recv(
                    &Completion::zeroed(r.wr_id, qpn, WcStatus::WrFlushErr),
                    false,
                );
            }
        }
    }
}

/// Completes every work request queued in a ring with IB_WC_WR_FLUSH_ERR (IBTA 10.3.1: a
/// QP in the Error state flushes its work queues), oldest first, until the ring is empty or
/// the CQ (through `post`) refuses. Only the WQE's `wr_id` is read; a producer index user
/// space mangled flushes what was validly queued before.
///
/// # Safety
/// `post` posts to a live CQ of ours.
#[inline(never)]
unsafe fn flush(
    ring: Option<&MappedQueue>,
    q: &mut FromClientQueue,
    wr_id_off: usize,
    qpn: u32,
    post: impl Fn(&Completion) -> Result,
) {
    let Some(m) = ring else {
        return;
    };
    let shared = m.queue();
    // On a bad index the kernel's view stays as it was.
    let _ = q.observe_producer(shared.load_producer());
    while let Some(slot) = q.head() {
        let mut head = [0u8; 64];
        let n = shared.read_slot(slot, &mut head);
        let wr_id = head
            .get(wr_id_off..wr_id_off + 8)
            .filter(|_| n >= wr_id_off + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        let c = Completion::zeroed(wr_id, qpn, WcStatus::WrFlushErr);
        if post(&c).is_err() {
            break;
        }
        if let Some(cons) = q.advance_consumer() {
            shared.publish_consumer(cons);
        }
    }
}

/// `ib_device_ops.query_qp`.
///
/// # Safety
/// Called by the core with a live QP of ours and writable attribute blocks.
pub(crate) unsafe extern "C" fn query_qp(
    ibqp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    _mask: c_int,
    init: *mut bindings::ib_qp_init_attr,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(st) = (unsafe { state(ibqp) }) else {
        return EINVAL.to_errno();
    };
    let a = {
        let g = st.inner.lock();
        let mut a = g.attrs.to_attr(&st.shape);
        if let Some(conn) = g.rc.as_ref() {
            a.rq_psn = conn.resp.epsn().get();
            if let Some(req) = conn.req.as_ref() {
                a.sq_psn = req.sq_psn().get();
            }
        }
        a
    };
    // SAFETY: `ibqp` is live; the core set its CQs at create.
    let (send_cq, recv_cq) = unsafe { ((*ibqp).send_cq, (*ibqp).recv_cq) };
    let i = st.shape.init_reply().to_raw(send_cq, recv_cq);
    // SAFETY: both point to writable storage per this function's contract.
    unsafe {
        attr.write(a.to_raw());
        init.write(i);
    }
    0
}
