// SPDX-License-Identifier: GPL-2.0
//! Queue pairs: the C-ABI entry points and the QP object. A user QP's send and receive
//! queues are rings shared with the process (mapped by the stock rxe provider from the
//! offsets in `struct rxe_create_qp_resp`); post_send with no work request is its doorbell.
//! A kernel consumer's QP (UD, and the GSI QP1 that ib_mad creates for connection
//! management) has no rings: post_send and post_recv validate the work requests into
//! [`KernelQueues`], and the QP's work item sends them, because kernel callers may post in
//! atomic context.

use core::mem::size_of;
use core::pin::Pin;
use core::ptr;
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::sync::Mutex;
use kernel::{new_mutex, pin_init};

use super::ah;
use super::cq::{CqEvents, QpCqs};
use super::rc_env::KEnv;
use crate::kx::bindings as b;
use crate::kx::ib_verbs::{self, PathMtu, QpAttr, QpAttrMask, QpCap, QpInitAttr, QpState, SigType};
use crate::kx::mmap_queue::{MappedQueue, SharedQueue};
use crate::kx::netdevice::NetDev;
use crate::kx::skbuff::{SkBuff, SkbQueue};
use crate::kx::spinlock::{new_irq_spinlock, IrqSpinLock};
use crate::kx::timer::QpTimer;
use crate::objects::ah::Av;
use crate::objects::counters::Counter;
use crate::objects::device::RxeSrDev;
use crate::objects::live;
use crate::objects::pd::PdId;
use crate::objects::qp::{QpAttrs, QpShape};
use crate::proto::rc::requester::{PostError, ReqCounters, Requester, SqEntry};
use crate::proto::rc::responder::RespCounters;
use crate::proto::rc::responder::READ_BUDGET;
use crate::proto::rc::{Outcome, RcConfig, Service};
use crate::proto::wire::ip::RoceDatagram;
use crate::proto::wire::opcode::OpKind;
use crate::proto::wire::PacketRepr;
use crate::transport::rc::{self as trc, RcConn};
use crate::transport::ud;
use crate::uabi::cqe::RecvInfo;
use crate::uabi::cqe::{Completion, WcStatus};
use crate::uabi::limits::{MAX_RECV_WQE_BYTES, MAX_SEND_WQE_BYTES};
use crate::uabi::queue::{Fifo, FromClientQueue};
use crate::uabi::recv_wqe::{RecvLimits, RecvWqe};
use crate::uabi::send_wqe::NetworkType;
use crate::uabi::send_wqe::{InlineData, Remote, SendOp, SendOpcode, UdDest, WrFields};
use crate::uabi::send_wqe::{QpType, SendFlags, SendLimits, SendWqe};
use crate::uabi::sge::{Sge, SgeList};
use crate::uabi::WqeError;
use crate::uabi::{layout, resp};
use crate::verbs::qp as vqp;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::KVVec;
use kernel::ffi::c_void;

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
    users: AtomicU32,
    /// RC/UC: retransmission and RNR timer; kernel QPs: the send work, kicked by post_send
    /// (its work calls [`rxe_sr_rs_qp_timer`]). An RC QP's work also sends the rest of a
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
    ibqp: b::ib_qp,
    state: *mut QpObject,
}

/// Size the core allocates per QP.
pub(crate) const SIZE: usize = size_of::<RxeSrQp>();

/// # Safety
/// `ibqp` is a live QP of ours whose create succeeded (or null state).
unsafe fn state<'a>(ibqp: *mut b::ib_qp) -> Option<&'a QpObject> {
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
    ibqp: *mut b::ib_qp,
    init: *mut b::ib_qp_init_attr,
    udata: *mut b::ib_udata,
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
    ibqp: *mut b::ib_qp,
    init: &mut b::ib_qp_init_attr,
    udata: *mut b::ib_udata,
) -> Result {
    // SAFETY: reads a boot-time constant.
    let shape = vqp::shape(&QpInitAttr::from_raw(init), unsafe {
        b::rxe_sr_glue_cache_line_size()
    })?;
    let gsi = shape.qp_type == QpType::Gsi;
    // SAFETY: the QP's device is one of ours.
    let dev = unsafe { RxeSrDev::from_ib((*ibqp).device) };
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
        dev.qps().reserve(vqp::MIN_QPN, vqp::MAX_QPN)?
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
    let held = if trc::service(shape.qp_type) == Some(Service::Rc) {
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
            users: AtomicU32::new(0),
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
    udata: *mut b::ib_udata,
    shape: &QpShape,
) -> Result<(Option<MappedQueue>, Option<MappedQueue>)> {
    // SAFETY: a live udata of a uverbs call carries its ucontext.
    let uctx = unsafe { b::rxe_sr_glue_udata_ucontext(udata) };
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
        unsafe { b::rxe_sr_glue_copy_to_udata(udata, out.as_ptr().cast(), out.len()) }
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
pub(crate) unsafe extern "C" fn destroy_qp(ibqp: *mut b::ib_qp, _udata: *mut b::ib_udata) -> c_int {
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
    let dev = unsafe { RxeSrDev::from_ib((*ibqp).device) };
    // SAFETY: reads the QPN we assigned.
    let qpn = unsafe { (*ibqp).qp_num };
    // Out of its multicast groups and the table first: no new receive-path reference; then
    // wait for the ones held.
    // SAFETY: the QP's device is live.
    super::mcast::detach_all(dev, unsafe { (*ibqp).device }, qpn);
    dev.qps().erase(qpn);
    while st.users.load(Ordering::Acquire) != 0 {
        // SAFETY: plain sleep in process context.
        unsafe { b::rxe_sr_glue_msleep(1) };
    }
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
    ibqp: *mut b::ib_qp,
    attr: *mut b::ib_qp_attr,
    mask: c_int,
    _udata: *mut b::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract.
    let (Some(st), Some(a)) = (unsafe { state(ibqp) }, unsafe { attr.as_ref() }) else {
        return EINVAL.to_errno();
    };
    let a = QpAttr::from_raw(a);
    let Some(mask) = QpAttrMask::from_raw(mask) else {
        return EINVAL.to_errno();
    };
    if !mask.within(QpAttrMask::STANDARD) {
        return crate::kx::error::eopnotsupp().to_errno();
    }
    let av = if mask.contains(QpAttrMask::AV) && trc::service(st.shape.qp_type).is_some() {
        // SAFETY: the core holds the AV's source GID attribute for the call.
        match unsafe { super::ah::av_of(&(*attr).ah_attr) } {
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
    if trc::service(st.shape.qp_type).is_some() {
        // SAFETY: a device of ours.
        let dev = unsafe { RxeSrDev::from_ib(ibdev) };
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
    dev: &RxeSrDev,
    qpn: u32,
    cur: QpState,
    next: QpState,
    av: Option<crate::objects::ah::Av>,
) -> Result {
    let cfg = trc::config(&g.attrs, shape, qpn, dev.active_mtu()).ok_or(EINVAL)?;
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
    ibqp: *mut b::ib_qp,
    attr: *mut b::ib_qp_attr,
    _mask: c_int,
    init: *mut b::ib_qp_init_attr,
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

/// `ib_device_ops.post_send`. From user space it is the rxe ABI's doorbell (no WRs: the
/// work is in the send ring) and the requester runs in the caller's context. A kernel
/// consumer's WRs are validated into the QP's kernel send queue and sent by its work item.
///
/// # Safety
/// Called by the core with a live QP of ours; `bad_wr` is writable when `wr` is not null.
pub(crate) unsafe extern "C" fn post_send(
    ibqp: *mut b::ib_qp,
    wr: *const b::ib_send_wr,
    bad_wr: *mut *const b::ib_send_wr,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(st) = (unsafe { state(ibqp) }) else {
        return EINVAL.to_errno();
    };
    if !wr.is_null() {
        // SAFETY: per this function's contract.
        return unsafe { post_send_kernel(ibqp, st, wr, bad_wr) };
    }
    if trc::service(st.shape.qp_type).is_some() {
        // SAFETY: per this function's contract.
        return unsafe { post_send_connected(ibqp, st) };
    }
    if st.shape.qp_type != QpType::Ud {
        return crate::kx::error::eopnotsupp().to_errno();
    }
    // SAFETY: per this function's contract.
    let ctx = unsafe { QpCtx::new(ibqp, st) };
    // SAFETY: the QP outlives the call; dropped after the lock.
    let _events = unsafe { CqEvents::new(ctx.cqs) };
    ctx.with_netdev(|nd| {
        let mut g = st.inner.lock();
        // SAFETY: the QP's CQs outlive it.
        unsafe { run_ud_requester(&mut g, &ctx, nd) }
    })
    .unwrap_or_else(|| EINVAL.to_errno())
}

/// A kernel consumer's post_send: validates each WR of the chain into the kernel send
/// queue and kicks the QP's work. May run in atomic context: takes no mutex, allocates
/// nothing. The first WR that cannot be queued is returned in `bad_wr` (the ones before it
/// are queued), as IBTA's Post Send requires.
///
/// # Safety
/// `ibqp` is a live QP of ours with state `st`; `wr` is a valid chain of `ib_ud_wr`s (the
/// core's contract for the datagram QPs that kernel consumers may create here); `bad_wr`
/// is writable.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
unsafe fn post_send_kernel(
    ibqp: *mut b::ib_qp,
    st: &QpObject,
    wr: *const b::ib_send_wr,
    bad_wr: *mut *const b::ib_send_wr,
) -> c_int {
    // SAFETY: per this function's contract.
    let pd = super::pd::id(unsafe { (*ibqp).pd });
    let mut cur = wr;
    let mut err = 0;
    // Each WR is decoded into this one value (a WQE by value per call costs stack).
    let mut ks = KernelSend {
        wqe: SendWqe::EMPTY,
        av: None,
    };
    {
        let mut kq = st.kq.lock();
        match kq.as_mut() {
            // As rdma_rxe: a QP that cannot send yet refuses; in Error the work flushes.
            Some(k) if matches!(k.state, QpState::Rts | QpState::Err) => {
                while !cur.is_null() {
                    // SAFETY: per this function's contract.
                    if unsafe { kernel_send(cur, &st.shape, pd, &mut ks) }.is_none() {
                        err = EINVAL.to_errno();
                        break;
                    }
                    if k.sq.push(Some(ks)).is_err() {
                        err = ENOMEM.to_errno();
                        break;
                    }
                    // SAFETY: a valid chain.
                    cur = unsafe { (*cur).next };
                }
            }
            _ => err = EINVAL.to_errno(),
        }
    }
    if err != 0 {
        // SAFETY: per this function's contract.
        unsafe { bad_wr.write(cur) };
    }
    if let Some(t) = st.timer.as_ref() {
        t.kick();
    }
    err
}

/// A kernel consumer's SGE array (`ib_sge` has `rxe_sge`'s fields) as a validated list.
///
/// # Safety
/// `sg_list` holds `num_sge` entries (or `num_sge` is 0).
unsafe fn kernel_sges(
    sg_list: *const b::ib_sge,
    num_sge: c_int,
    max_sge: u32,
) -> Result<(SgeList, u32), WqeError> {
    let mut list = SgeList::EMPTY;
    // SAFETY: per this function's contract.
    let total = unsafe { kernel_sges_into(sg_list, num_sge, max_sge, &mut list) }?;
    Ok((list, total))
}

/// [`kernel_sges`] into `list`, returning the total length.
///
/// # Safety
/// `sg_list` holds `num_sge` entries (or `num_sge` is 0).
unsafe fn kernel_sges_into(
    sg_list: *const b::ib_sge,
    num_sge: c_int,
    max_sge: u32,
    list: &mut SgeList,
) -> Result<u32, WqeError> {
    let n = u32::try_from(num_sge).map_err(|_| WqeError::TooManySge)?;
    list.collect_into(n, max_sge, |i| {
        // SAFETY: `i < num_sge` (SgeList::collect's contract), inside the caller's array.
        let s = unsafe { &*sg_list.add(i) };
        Ok(Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        })
    })
}

/// Kernel receive WRs waiting for packets, oldest first (a kernel QP's or SRQ's).
pub(crate) type RecvFifo = Fifo<Option<RecvWqe>, KVVec<Option<RecvWqe>>>;

/// Validates a chain of kernel receive WRs into `q`, in order. The first one that is
/// invalid (EINVAL) or does not fit (ENOMEM) stops the walk and is named in `bad_wr`, as
/// IBTA's Post Receive requires (the ones before it stay posted).
///
/// # Safety
/// `wr` is a valid WR chain whose SGE arrays hold `num_sge` entries; `bad_wr` is writable.
pub(crate) unsafe fn queue_recv_chain(
    wr: *const b::ib_recv_wr,
    bad_wr: *mut *const b::ib_recv_wr,
    max_sge: u32,
    q: &mut RecvFifo,
) -> c_int {
    let mut cur = wr;
    while !cur.is_null() {
        // SAFETY: per this function's contract.
        let w = unsafe { &*cur };
        // SAFETY: as above.
        let err = match unsafe { kernel_recv(w, max_sge) } {
            Some(wqe) if q.push(Some(wqe)).is_ok() => 0,
            Some(_) => ENOMEM.to_errno(),
            None => EINVAL.to_errno(),
        };
        if err != 0 {
            // SAFETY: per this function's contract.
            unsafe { bad_wr.write(cur) };
            return err;
        }
        cur = w.next;
    }
    0
}

/// Validates a kernel consumer's receive WR into a receive WQE.
///
/// # Safety
/// `w.sg_list` holds `w.num_sge` entries.
unsafe fn kernel_recv(w: &b::ib_recv_wr, max_sge: u32) -> Option<RecvWqe> {
    // SAFETY: per this function's contract.
    let (sges, length) = unsafe { kernel_sges(w.sg_list, w.num_sge, max_sge) }.ok()?;
    // SAFETY: a plain integer whichever union member was written.
    let wr_id = unsafe { w.__bindgen_anon_1.wr_id };
    Some(RecvWqe {
        wr_id,
        sges,
        length,
    })
}

/// Decodes and validates one kernel send WR (the `ib_send_wr` inside an `ib_ud_wr`,
/// `ib_rdma_wr`, `ib_atomic_wr` or `ib_reg_wr`, by opcode) with the checks a ring slot gets
/// (`SendWqe::build`); a datagram WR's AH must be on the QP's PD. Inline data is copied
/// now, as the caller may reuse its buffer once post_send returns.
///
/// # Safety
/// `wr` points to a live WR of the type its opcode implies, whose `sg_list` holds
/// `num_sge` entries.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
unsafe fn kernel_send(
    wr: *const b::ib_send_wr,
    shape: &QpShape,
    pd: PdId,
    out: &mut KernelSend,
) -> Option<()> {
    // SAFETY: per this function's contract.
    let w = unsafe { &*wr };
    let qp_type = shape.qp_type;
    let opcode = SendOpcode::from_kernel(w.opcode)?;
    // SAFETY: plain integers whichever union member was written.
    let (wr_id, imm, inv) = unsafe {
        (
            w.__bindgen_anon_1.wr_id,
            w.ex.imm_data.to_ne_bytes(),
            w.ex.invalidate_rkey,
        )
    };
    let rdma = || {
        // SAFETY: RDMA opcodes come in an `ib_rdma_wr`, which begins with its `ib_send_wr`.
        let r = unsafe { &*wr.cast::<b::ib_rdma_wr>() };
        Remote {
            addr: r.remote_addr,
            rkey: r.rkey,
        }
    };
    // SAFETY: atomic opcodes come in an `ib_atomic_wr`.
    let atomic = || unsafe { &*wr.cast::<b::ib_atomic_wr>() };
    let op = match opcode {
        SendOpcode::Send => SendOp::Send,
        SendOpcode::SendWithImm => SendOp::SendWithImm { imm },
        SendOpcode::SendWithInv => SendOp::SendWithInv {
            invalidate_rkey: inv,
        },
        SendOpcode::RdmaWrite => SendOp::RdmaWrite { remote: rdma() },
        SendOpcode::RdmaWriteWithImm => SendOp::RdmaWriteWithImm {
            remote: rdma(),
            imm,
        },
        SendOpcode::RdmaRead => SendOp::RdmaRead { remote: rdma() },
        SendOpcode::AtomicCmpAndSwp => {
            let a = atomic();
            SendOp::AtomicCmpAndSwp {
                remote: Remote {
                    addr: a.remote_addr,
                    rkey: a.rkey,
                },
                compare: a.compare_add,
                swap: a.swap,
            }
        }
        SendOpcode::AtomicFetchAndAdd => {
            let a = atomic();
            SendOp::AtomicFetchAndAdd {
                remote: Remote {
                    addr: a.remote_addr,
                    rkey: a.rkey,
                },
                add: a.compare_add,
            }
        }
        SendOpcode::LocalInv => SendOp::LocalInv {
            invalidate_rkey: inv,
        },
        SendOpcode::RegMr => {
            // SAFETY: REG_MR comes in an `ib_reg_wr`.
            let r = unsafe { &*wr.cast::<b::ib_reg_wr>() };
            SendOp::RegMr {
                key: r.key,
                access: u32::try_from(r.access).ok()?,
            }
        }
        // Not offered to kernel consumers (rdma_rxe has no kernel users of them).
        SendOpcode::BindMw | SendOpcode::Flush | SendOpcode::AtomicWrite => return None,
    };
    let (ud, av) = if qp_type.is_datagram() {
        // SAFETY: datagram QPs take `ib_ud_wr`s.
        let u = unsafe { &*wr.cast::<b::ib_ud_wr>() };
        // SAFETY: the AH of a posted WR is live while the WR is.
        let av = unsafe { ah::kernel_av(u.ah, pd) }?;
        let dest = UdDest {
            remote_qpn: u.remote_qpn,
            remote_qkey: u.remote_qkey,
            pkey_index: u.pkey_index,
            ah_num: 0,
            av: None,
        };
        (Some(dest), Some(av))
    } else {
        (None, None)
    };
    let limits = SendLimits {
        max_sge: shape.sq.max_sge,
        max_inline: shape.sq.max_inline,
    };
    let flags = SendFlags::from_bits_truncate(w.send_flags as u32);
    // Inline: the SGEs name kernel memory to copy now; their total is the inline length.
    let (inline_list, dma_length) = if flags.inline() {
        // SAFETY: per this function's contract.
        let (list, total) =
            unsafe { kernel_sges(w.sg_list, w.num_sge, crate::uabi::limits::RXE_MAX_SGE) }.ok()?;
        (Some(list), total)
    } else {
        (None, 0)
    };
    let inline = |len: u32, d: &mut InlineData| {
        let len = usize::try_from(len).map_err(|_| WqeError::InlineTooLong)?;
        let buf = d.fill(len).ok_or(WqeError::InlineTooLong)?;
        let mut at = 0usize;
        for s in inline_list.as_ref().map_or(&[][..], |l| l.as_slice()) {
            let n = usize::try_from(s.length).map_err(|_| WqeError::InlineTooLong)?;
            let dst = at
                .checked_add(n)
                .and_then(|end| buf.get_mut(at..end))
                .ok_or(WqeError::InlineTooLong)?;
            // SAFETY: `dst` is writable for `n` bytes; the helper refuses addresses outside
            // the direct map.
            if unsafe { b::rxe_sr_glue_kva_copy(s.addr, dst.as_mut_ptr().cast(), n, false) } != 0 {
                return Err(WqeError::SgeAddressOverflow);
            }
            at += n;
        }
        if at != len {
            return Err(WqeError::InlineTooLong);
        }
        Ok(())
    };
    // SAFETY: per this function's contract.
    let sges =
        |l: &mut SgeList| unsafe { kernel_sges_into(w.sg_list, w.num_sge, limits.max_sge, l) };
    let fields = WrFields {
        wr_id,
        opcode,
        flags,
        op,
        ud,
        dma_length,
    };
    SendWqe::build_into(fields, qp_type, limits, inline, sges, &mut out.wqe).ok()?;
    out.av = av;
    Some(())
}

/// `ib_device_ops.post_recv`: a kernel consumer's receive WRs, validated into the QP's
/// kernel receive queue (user QPs post through their ring). May run in atomic context.
///
/// # Safety
/// Called by the core with a live QP of ours, a valid WR chain and a writable `bad_wr`.
pub(crate) unsafe extern "C" fn post_recv(
    ibqp: *mut b::ib_qp,
    wr: *const b::ib_recv_wr,
    bad_wr: *mut *const b::ib_recv_wr,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(st) = (unsafe { state(ibqp) }) else {
        return EINVAL.to_errno();
    };
    let (err, flush) = {
        let mut kq = st.kq.lock();
        match kq.as_mut() {
            // As rdma_rxe: receives may be posted from Init on.
            Some(k) if k.state != QpState::Reset => (
                // SAFETY: per this function's contract.
                unsafe { queue_recv_chain(wr, bad_wr, st.shape.rq.max_sge, &mut k.rq) },
                k.state == QpState::Err,
            ),
            _ => {
                // SAFETY: per this function's contract.
                unsafe { bad_wr.write(wr) };
                (EINVAL.to_errno(), false)
            }
        }
    };
    if flush {
        // In Error, receives complete as flushed: the work item does it.
        if let Some(t) = st.timer.as_ref() {
            t.kick();
        }
    }
    err
}

/// A kernel datagram QP's work item: sends what waits in its kernel send queue, completing
/// each request (signalled ones on success, every one on error); a request that fails moves
/// the QP to the Error state. In Error, the queues are flushed.
///
/// # Safety
/// `ctx` describes a live kernel QP.
unsafe fn run_kernel_sends(ctx: &QpCtx<'_>) {
    let st = ctx.st;
    let mut g = st.inner.lock();
    if g.attrs.state == QpState::Err {
        // SAFETY: per this function's contract.
        unsafe { flush_kernel(st, ctx.qpn, ctx.cqs) };
        return;
    }
    let sig_all = st.shape.sq_sig_type == SigType::AllWr;
    let mtu = 128u32.checked_shl(ctx.dev.active_mtu()).unwrap_or(256);
    let mut budget = UD_BUDGET;
    let _ = ctx.with_netdev(|nd| loop {
        if g.attrs.state != QpState::Rts {
            break;
        }
        if budget == 0 {
            // The rest in the next run of the work, after others had their turn.
            if let Some(t) = st.timer.as_ref() {
                t.kick();
            }
            break;
        }
        budget -= 1;
        let next = st.kq.lock().as_mut().and_then(|k| k.sq.pop().flatten());
        let Some(ks) = next else {
            break;
        };
        let res = match ks.av.as_ref() {
            Some(av) => ud::send_one(ctx.dev, ctx.pd, ctx.qpn, &mut g.attrs, &ks.wqe, av, mtu, nd),
            None => Err(WcStatus::LocQpOpErr),
        };
        let status = res.err().unwrap_or(WcStatus::Success);
        let failed = status != WcStatus::Success;
        if sig_all || ks.wqe.flags.signaled() || failed {
            // SAFETY: per this function's contract. A full CQ has raised its error event.
            let _ = unsafe {
                ctx.cqs
                    .send(&Completion::for_send_wqe(&ks.wqe, ctx.qpn, status))
            };
        }
        if failed {
            // SAFETY: per this function's contract.
            unsafe { enter_error(&mut g, st, ctx.qpn, ctx.cqs) };
            break;
        }
    });
}

/// Datagram work requests sent per call at most (post_send, or one run of the QP's work).
const UD_BUDGET: u32 = 64;

/// Sends the queued UD work requests of a user QP's ring ([`UD_BUDGET`] per call; the QP's
/// work sends the rest), completing each (signalled ones
/// on success, every one on error). A request that fails moves the QP to the Error state,
/// which flushes both rings.
///
/// # Safety
/// `g` is the lock of the live QP `ctx`.
unsafe fn run_ud_requester(g: &mut QpInner, ctx: &QpCtx<'_>, nd: &NetDev<'_>) -> c_int {
    let (shape, dev, qpn, cqs) = (&ctx.st.shape, ctx.dev, ctx.qpn, ctx.cqs);
    let QpInner {
        sq,
        rq,
        sq_q,
        rq_q,
        attrs,
        ..
    } = g;
    match attrs.state {
        QpState::Rts => {}
        // As rdma_rxe: in Error the posted requests complete as flushed.
        QpState::Err => {
            // SAFETY: per this function's contract.
            unsafe {
                flush(sq.as_ref(), sq_q, layout::SEND_WQE_WR_ID_OFF, qpn, |c| {
                    cqs.send(c)
                })
            };
            return 0;
        }
        // As rdma_rxe: posting to a QP that cannot send yet is refused.
        _ => return EINVAL.to_errno(),
    }
    let Some(ring) = sq.as_ref() else {
        return EINVAL.to_errno();
    };
    let shared = ring.queue();
    if sq_q.observe_producer(shared.load_producer()).is_err() {
        return EINVAL.to_errno();
    }
    let limits = SendLimits {
        max_sge: shape.sq.max_sge,
        max_inline: shape.sq.max_inline,
    };
    let sig_all = shape.sq_sig_type == SigType::AllWr;
    // enum ib_mtu: 1 = 256 .. 5 = 4096 bytes.
    let mtu = 128u32.checked_shl(dev.active_mtu()).unwrap_or(256);
    let mut budget = UD_BUDGET;
    // One WQE, parsed in place for each slot (a WQE by value per call costs stack).
    let mut wqe = SendWqe::EMPTY;
    while let Some(slot) = sq_q.head() {
        if budget == 0 {
            // The rest from the QP's work, after others had their turn: one doorbell on a
            // ring of up to 2^20 requests must not hold the CPU and the QP lock meanwhile.
            if let Some(t) = ctx.st.timer.as_ref() {
                t.kick();
            }
            break;
        }
        budget -= 1;
        let mut bytes = [0u8; MAX_SEND_WQE_BYTES];
        shared.read_slot(slot, &mut bytes);
        let (c, failed) = match SendWqe::parse_into(&bytes, QpType::Ud, limits, &mut wqe) {
            Ok(()) => {
                // The rxe provider passes an AH number; providers from before AH numbers
                // embed the AV instead (ah_num 0), checked against the GID table.
                let av = wqe.ud.and_then(|u| match u.av {
                    Some(e) if u.ah_num == 0 => ah::embedded(dev, &e),
                    _ => ah::lookup(dev, ctx.pd, u.ah_num),
                });
                let res = match av {
                    Some(av) => ud::send_one(dev, ctx.pd, qpn, attrs, &wqe, &av, mtu, nd),
                    None => Err(WcStatus::LocQpOpErr),
                };
                let status = res.err().unwrap_or(WcStatus::Success);
                let signaled = sig_all || wqe.flags.contains(SendFlags::SIGNALED);
                let failed = !matches!(status, WcStatus::Success);
                (
                    (signaled || failed).then(|| Completion::for_send_wqe(&wqe, qpn, status)),
                    failed,
                )
            }
            Err(e) => {
                let wr_id = bytes
                    .get(..8)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u64::from_le_bytes);
                (Some(Completion::zeroed(wr_id, qpn, e.wc_status())), true)
            }
        };
        // Consumed whatever happens next: the packet may be on the wire already, and a CQ
        // that cannot take the completion has raised its error event.
        if let Some(cons) = sq_q.advance_consumer() {
            shared.publish_consumer(cons);
        }
        if let Some(c) = c {
            // SAFETY: per this function's contract.
            if unsafe { cqs.send(&c) }.is_err() {
                break;
            }
        }
        if failed {
            attrs.state = QpState::Err;
            // SAFETY: per this function's contract.
            unsafe {
                flush(sq.as_ref(), sq_q, layout::SEND_WQE_WR_ID_OFF, qpn, |c| {
                    cqs.send(c)
                });
                flush(rq.as_ref(), rq_q, layout::RECV_WQE_WR_ID_OFF, qpn, |c| {
                    cqs.recv(c, false)
                });
            }
            break;
        }
    }
    0
}

/// A counted reference on a QP, taken by the receive path under the QP table's lock.
struct QpRef {
    ibqp: *mut b::ib_qp,
    st: *const QpObject,
}

impl QpRef {
    /// The QP with number `qpn`, if it exists and is complete.
    fn get(dev: &RxeSrDev, qpn: u32) -> Option<QpRef> {
        dev.qps()
            .with_entry(qpn, |p| {
                let ibqp = p.cast::<b::ib_qp>();
                // SAFETY: published entries are complete QPs of ours; the table lock keeps
                // destroy_qp from erasing it (and then waiting for us) until we counted.
                let st = unsafe { (*ibqp.cast::<RxeSrQp>()).state };
                // SAFETY: as above: non-null and live.
                unsafe { st.as_ref() }.map(|s| {
                    s.users.fetch_add(1, Ordering::AcqRel);
                    QpRef { ibqp, st }
                })
            })
            .flatten()
    }

    fn state(&self) -> &QpObject {
        // SAFETY: destroy_qp frees the state only after our count is dropped.
        unsafe { &*self.st }
    }
}

impl Drop for QpRef {
    fn drop(&mut self) {
        // After this the state may be freed at once: no access follows.
        self.state().users.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Delivers a UD SEND to its QP: the QP must be ready to receive, the Q_Key and P_Key must
/// match, and a receive WQE must be posted (otherwise the message is dropped, as UD allows);
/// the GRH area and the payload are scattered into the WQE's buffers and a completion is
/// posted to the receive CQ. False when dropped.
pub(crate) fn ud_deliver(dev: &RxeSrDev, p: &PacketRepr<'_>, ip_header: &[u8]) -> bool {
    ud_deliver_to(dev, p.bth.dest_qpn, p, ip_header)
}

/// Delivers a UD SEND to the multicast QPN to every QP attached to its group (the
/// packet's destination GID), each taking its own copy. False when no QP took it.
pub(crate) fn ud_deliver_mcast(
    dev: &RxeSrDev,
    p: &PacketRepr<'_>,
    ip_header: &[u8],
    mgid: &[u8; 16],
) -> bool {
    let mut qpns = [0u32; crate::objects::mcast::MAX_MCAST_QP_ATTACH as usize];
    // A snapshot: delivery takes QP locks, which must not nest inside the groups' lock.
    let n = dev.mcast().lock().members(mgid, &mut qpns);
    let mut any = false;
    for &qpn in qpns.iter().take(n) {
        any |= ud_deliver_to(dev, qpn, p, ip_header);
    }
    any
}

/// Delivers a UD SEND to QP `qpn` (see [`ud_deliver`]).
fn ud_deliver_to(dev: &RxeSrDev, qpn: u32, p: &PacketRepr<'_>, ip_header: &[u8]) -> bool {
    let Some(deth) = p.ext.deth else {
        return false;
    };
    let Some(qp) = QpRef::get(dev, qpn) else {
        return false;
    };
    let st = qp.state();
    let datagram = matches!(st.shape.qp_type, QpType::Ud | QpType::Gsi);
    if !datagram || p.bth.pkey & 0x7fff != 0x7fff {
        return false;
    }
    // SAFETY: the QP is live (counted) with its PD and CQs.
    let (pd, qpn, cqs) = unsafe { ((*qp.ibqp).pd, (*qp.ibqp).qp_num, QpCqs::of(qp.ibqp)) };
    let pd = super::pd::id(pd);
    // SAFETY: the counted QP outlives this; dropped after the lock.
    let _events = unsafe { CqEvents::new(cqs) };
    let mut g = st.inner.lock();
    let ready = g.attrs.state == QpState::Rtr || g.attrs.state == QpState::Rts;
    if !ready || deth.qkey != g.attrs.qkey {
        return false;
    }
    // SAFETY: the counted QP keeps its SRQ (if any) alive.
    let srq = unsafe { (*qp.ibqp).srq };
    let QpInner { rq, rq_q, .. } = &mut *g;
    let taken = if !srq.is_null() {
        // SAFETY: as above; an SRQ of ours.
        unsafe { super::srq::state(srq).and_then(|s| s.take()) }
    } else if let Some(k) = st.kq.lock().as_mut() {
        k.pop_recv().map(Ok)
    } else {
        take_from_ring(rq.as_ref(), rq_q, st.shape.rq.max_sge)
    };
    // No receive WQE: UD drops the message.
    let Some(taken) = taken else {
        return false;
    };
    let grh = ud::grh_area(ip_header);
    let total = grh.len() + p.payload.len();
    let c = match taken {
        Err((wr_id, status)) => Completion::zeroed(wr_id, qpn, status),
        Ok(wqe) => {
            let status = match ud::scatter_all(dev, pd, &wqe, &[&grh, p.payload]) {
                Ok(()) => WcStatus::Success,
                Err(s) => s,
            };
            let info = RecvInfo {
                byte_len: u32::try_from(total).unwrap_or(u32::MAX),
                rdma_with_imm: false,
                imm: p.ext.imm_dt.map(|i| i.data.to_be_bytes()),
                invalidated_rkey: None,
                src_qp: Some(deth.src_qpn),
                port_num: 1,
                network: Some(if ip_header.len() == 40 {
                    NetworkType::Ipv6
                } else {
                    NetworkType::Ipv4
                }),
            };
            Completion::recv(wqe.wr_id, qpn, status, info)
        }
    };
    // SAFETY: the counted QP keeps its receive CQ alive. (A full CQ raised its error event.)
    if unsafe { cqs.recv(&c, p.bth.se) }.is_err() {
        return false;
    }
    dev.counters().inc(Counter::RdmaRecvs);
    true
}

/// Takes the next receive WQE from a QP's own receive ring (validated copy); `Err` carries
/// the `wr_id` and status of one that failed validation.
pub(crate) fn take_from_ring(
    ring: Option<&MappedQueue>,
    q: &mut FromClientQueue,
    max_sge: u32,
) -> Option<Result<RecvWqe, (u64, WcStatus)>> {
    let shared = ring?.queue();
    q.observe_producer(shared.load_producer()).ok()?;
    let slot = q.head()?;
    let mut bytes = [0u8; MAX_RECV_WQE_BYTES];
    shared.read_slot(slot, &mut bytes);
    if let Some(cons) = q.advance_consumer() {
        shared.publish_consumer(cons);
    }
    Some(RecvWqe::parse(&bytes, RecvLimits { max_sge }).map_err(|e| {
        let wr_id = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        (wr_id, e.wc_status())
    }))
}

/// The parts of a live QP the connected transport needs besides its lock.
struct QpCtx<'a> {
    ibdev: *mut b::ib_device,
    dev: &'a RxeSrDev,
    pd: PdId,
    qpn: u32,
    cqs: QpCqs,
    srq: *mut b::ib_srq,
    st: &'a QpObject,
}

impl<'a> QpCtx<'a> {
    /// # Safety
    /// `ibqp` is a live QP of ours with state `st`, kept alive for `'a`.
    unsafe fn new(ibqp: *mut b::ib_qp, st: &'a QpObject) -> Self {
        // SAFETY: per this function's contract: the QP's device, PD and CQs are live.
        unsafe {
            QpCtx {
                ibdev: (*ibqp).device,
                dev: RxeSrDev::from_ib((*ibqp).device),
                pd: super::pd::id((*ibqp).pd),
                qpn: (*ibqp).qp_num,
                cqs: QpCqs::of(ibqp),
                srq: (*ibqp).srq,
                st,
            }
        }
    }

    /// Runs `f` with the device's netdev (referenced for the call), if it has one.
    fn with_netdev<R>(&self, f: impl FnOnce(&NetDev<'_>) -> R) -> Option<R> {
        // SAFETY: our device; the reference is dropped below.
        let ndev = unsafe { b::ib_device_get_netdev(self.ibdev, 1) };
        // SAFETY: null or referenced.
        let nd = unsafe { NetDev::from_raw(ndev) }?;
        let r = f(&nd);
        // SAFETY: drops the reference ib_device_get_netdev took.
        unsafe { b::rxe_sr_glue_dev_put(ndev) };
        Some(r)
    }
}

/// What to run on a connected QP once its environment is built.
enum Step<'p> {
    /// The doorbell: fetch new send WQEs and send.
    Doorbell,
    /// A packet from the peer.
    Packet(&'p PacketRepr<'p>),
    /// The timer fired.
    Timer,
    /// The next batch of READ responses.
    Pump,
}

/// Drives a connected QP's transport one step under its lock, then fetches and sends what
/// the step made room for, re-arms the timer, and moves the QP to Error if it failed.
///
/// # Safety
/// `ctx` describes a live QP whose lock `g` is.
unsafe fn drive(ctx: &QpCtx<'_>, g: &mut QpInner, nd: &NetDev<'_>, step: Step<'_>) {
    let shape = &ctx.st.shape;
    let QpInner {
        attrs,
        sq,
        rq,
        sq_q,
        rq_q,
        rc,
    } = g;
    let Some(conn) = rc.as_mut() else {
        return;
    };
    let RcConn {
        cfg,
        av,
        sport,
        resp,
        req,
    } = conn;
    // SAFETY: per this function's contract the CQs are live.
    let mut env = unsafe {
        KEnv::new(
            ctx.dev,
            nd,
            ctx.pd,
            ctx.qpn,
            attrs.qp_access_flags.bits(),
            av,
            *sport,
            (sq.as_ref(), sq_q),
            (rq.as_ref(), rq_q, shape.rq.max_sge),
            ctx.srq,
            ctx.cqs,
            &ctx.st.kq,
        )
    };
    let rts = attrs.state == QpState::Rts;
    let before = (req.as_ref().map(|r| r.counters), resp.counters);
    let mut outcome = match step {
        Step::Packet(p) if is_request(p) => resp.on_request(&mut env, cfg, p),
        Step::Packet(p) => match req.as_mut() {
            Some(r) if rts => r.on_response(&mut env, cfg, p),
            _ => Outcome::Ok,
        },
        Step::Timer => match req.as_mut() {
            Some(r) if rts => r.on_timer(&mut env, cfg),
            _ => Outcome::Ok,
        },
        Step::Pump => resp.pump(&mut env, cfg, READ_BUDGET),
        Step::Doorbell => Outcome::Ok,
    };
    if let (Outcome::Ok, Some(r), true) = (outcome, req.as_mut(), rts) {
        let limits = SendLimits {
            max_sge: shape.sq.max_sge,
            max_inline: shape.sq.max_inline,
        };
        outcome = if env.sq.is_some() {
            fetch(r, &mut env, cfg, limits)
        } else {
            fetch_kernel(r, &mut env, cfg, &ctx.st.kq)
        };
        if outcome == Outcome::Ok {
            outcome = r.run(&mut env, cfg);
        }
    }
    count(
        ctx.dev,
        before,
        (req.as_ref().map(|r| r.counters), resp.counters),
    );
    if let (Some(r), Some(t)) = (req.as_ref(), ctx.st.timer.as_ref()) {
        if let Some(d) = r.deadline() {
            t.arm(d);
        }
    }
    if resp.read_pending() && outcome == Outcome::Ok {
        // The QP's work sends the rest.
        if let Some(t) = ctx.st.timer.as_ref() {
            t.kick();
        }
    }
    drop(env);
    if outcome == Outcome::Error {
        if let Some(f) = resp.fatal.take() {
            pr_warn!(
                "qp {:#x}: refused request psn {:#x} opcode {:#x} ({} B, {} in progress{}): nak {}, status {:?}; qp to error\n",
                ctx.qpn,
                f.psn.get(),
                f.opcode,
                f.payload_len,
                f.in_progress.describe(),
                if f.out_of_sequence { ", opcode out of sequence" } else { "" },
                f.nak,
                f.status,
            );
        }
        // SAFETY: per this function's contract.
        unsafe { enter_error(g, ctx.st, ctx.qpn, ctx.cqs) };
    }
}

/// Adds what one step of the transport counted to the device's counters.
fn count(
    dev: &RxeSrDev,
    (req0, resp0): (Option<ReqCounters>, RespCounters),
    (req1, resp1): (Option<ReqCounters>, RespCounters),
) {
    let c = dev.counters();
    let delta = |counter, old: u64, new: u64| c.add(counter, new.saturating_sub(old));
    delta(Counter::OutOfSeqRequest, resp0.seq_err, resp1.seq_err);
    delta(
        Counter::DuplicateRequest,
        resp0.duplicates,
        resp1.duplicates,
    );
    delta(
        Counter::SendRnrErr,
        resp0.rnr_naks_sent,
        resp1.rnr_naks_sent,
    );
    delta(
        Counter::DupRdAtomicDropped,
        resp0.dup_unmatched,
        resp1.dup_unmatched,
    );
    if let (Some(a), Some(b)) = (req0, req1) {
        delta(Counter::RcvdRnrErr, a.rnr_naks, b.rnr_naks);
        delta(Counter::RcvdSeqErr, a.seq_naks, b.seq_naks);
        delta(Counter::CompleterRetryErr, a.retries, b.retries);
        delta(
            Counter::RetryExceededErr,
            a.retry_exceeded,
            b.retry_exceeded,
        );
        delta(
            Counter::RetryRnrExceededErr,
            a.rnr_retry_exceeded,
            b.rnr_retry_exceeded,
        );
    }
}

/// True for request packets (to the responder), false for responses (to the completer).
fn is_request(p: &PacketRepr<'_>) -> bool {
    !matches!(
        p.bth.opcode.info().map(|i| i.kind),
        Some(OpKind::Acknowledge | OpKind::AtomicAcknowledge | OpKind::RdmaReadResponse)
    )
}

/// Copies new send WQEs from the ring into the requester, each validated. A WQE that fails
/// validation completes in error once everything before it has retired (then the QP
/// enters the Error state).
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
fn fetch(
    req: &mut Requester<KVVec<SqEntry>>,
    env: &mut KEnv<'_>,
    cfg: &RcConfig,
    limits: SendLimits,
) -> Outcome {
    let Some(ring) = env.sq else {
        return Outcome::Ok;
    };
    let shared = ring.queue();
    if env.sq_q.observe_producer(shared.load_producer()).is_err() {
        // A producer index user space mangled: what was validly queued still runs.
        return Outcome::Ok;
    }
    let qp_type = if cfg.service == Service::Rc {
        QpType::Rc
    } else {
        QpType::Uc
    };
    while req.room() > 0 {
        let Some(slot) = env.sq_q.nth(req.len() as u32) else {
            break;
        };
        let mut bytes = [0u8; MAX_SEND_WQE_BYTES];
        shared.read_slot(slot, &mut bytes);
        let wr_id = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        let Some(wqe) = req.vacant() else {
            break;
        };
        // Parsed straight into the requester's slot: no WQE copy on this stack.
        let status = match SendWqe::parse_into(&bytes, qp_type, limits, wqe) {
            Ok(()) => {
                let op = wqe.op;
                match req.post_vacant(cfg) {
                    Ok(()) => {
                        count_send(env, &op);
                        continue;
                    }
                    Err(PostError::Full) => break,
                    Err(PostError::Unsupported(s)) => s,
                }
            }
            Err(e) => e.wc_status(),
        };
        if !req.is_empty() {
            // Wait for the requests before it to retire.
            break;
        }
        use crate::proto::rc::RcEnv as _;
        env.retire_send(Some(&Completion::zeroed(wr_id, cfg.qpn, status)));
        return Outcome::Error;
    }
    Outcome::Ok
}

/// Counts a request the requester took, if it is a SEND (`rdma_sends`).
fn count_send(env: &KEnv<'_>, op: &SendOp) {
    if matches!(
        op,
        SendOp::Send | SendOp::SendWithImm { .. } | SendOp::SendWithInv { .. }
    ) {
        env.dev.counters().inc(Counter::RdmaSends);
    }
}

/// Moves a kernel QP's posted send WRs (validated at post time) into the requester while
/// it has room.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
fn fetch_kernel(
    req: &mut Requester<KVVec<SqEntry>>,
    env: &mut KEnv<'_>,
    cfg: &RcConfig,
    kq: &KernelQueueLock,
) -> Outcome {
    while req.room() > 0 {
        let Some(ks) = kq.lock().as_mut().and_then(|k| k.sq.peek().flatten()) else {
            break;
        };
        let status = match req.post(ks.wqe, cfg) {
            Ok(()) => {
                if let Some(k) = kq.lock().as_mut() {
                    k.sq.pop();
                }
                count_send(env, &ks.wqe.op);
                continue;
            }
            Err(PostError::Full) => break,
            Err(PostError::Unsupported(s)) => s,
        };
        if !req.is_empty() {
            // Wait for the requests before it to retire.
            break;
        }
        if let Some(k) = kq.lock().as_mut() {
            k.sq.pop();
        }
        use crate::proto::rc::RcEnv as _;
        env.retire_send(Some(&Completion::zeroed(ks.wqe.wr_id, cfg.qpn, status)));
        return Outcome::Error;
    }
    Outcome::Ok
}

/// `post_send` on an RC or UC QP: the doorbell.
///
/// # Safety
/// `ibqp` is a live QP of ours with state `st`.
unsafe fn post_send_connected(ibqp: *mut b::ib_qp, st: &QpObject) -> c_int {
    // SAFETY: per this function's contract.
    let ctx = unsafe { QpCtx::new(ibqp, st) };
    // SAFETY: the QP outlives the call; dropped after the lock.
    let _events = unsafe { CqEvents::new(ctx.cqs) };
    let mut g = st.inner.lock();
    match g.attrs.state {
        QpState::Rts => {}
        QpState::Err => {
            let QpInner { sq, sq_q, .. } = &mut *g;
            // SAFETY: the QP's CQs outlive it.
            unsafe {
                flush(
                    sq.as_ref(),
                    sq_q,
                    layout::SEND_WQE_WR_ID_OFF,
                    ctx.qpn,
                    |c| ctx.cqs.send(c),
                )
            };
            return 0;
        }
        _ => return EINVAL.to_errno(),
    }
    // SAFETY: `g` is the QP's lock.
    match ctx.with_netdev(|nd| unsafe { drive(&ctx, &mut g, nd, Step::Doorbell) }) {
        Some(()) => 0,
        None => EINVAL.to_errno(),
    }
}

/// What became of an RC or UC packet.
pub(crate) enum Delivery {
    /// The QP took it.
    Done,
    /// Dropped (counted by the caller).
    Dropped,
    /// A request for a QP still sending READ responses: hand the packet to
    /// [`Later::hold`], which queues it for the QP's work.
    Later(Later),
}

/// A QP that holds back its requests while its READ responses go out.
pub(crate) struct Later(QpRef);

impl Later {
    /// Queues the packet on the QP (its work runs it once the responses are out). False
    /// when the queue is full: the packet is dropped, and the requester's retry resends it.
    pub(crate) fn hold(self, skb: SkBuff) -> bool {
        let st = self.0.state();
        let Some(held) = st.held.as_ref() else {
            return false;
        };
        let ok = held.push(skb).is_ok();
        if let Some(t) = st.timer.as_ref() {
            t.kick();
        }
        ok
    }
}

/// True for QP states whose responder takes requests.
fn receiving(state: QpState) -> bool {
    matches!(state, QpState::Rtr | QpState::Rts)
}

/// Delivers an RC or UC packet to its QP: requests to the responder (in RTR and RTS),
/// responses to the completer (in RTS). The packet must come from the QP's peer and be
/// addressed to the QP's own GID (rdma_rxe's check_addr): QPNs are easy to guess, IP
/// addresses on the path are not forged as easily.
pub(crate) fn connected_deliver(
    dev: &RxeSrDev,
    d: &RoceDatagram<'_>,
    p: &PacketRepr<'_>,
) -> Delivery {
    let Some(qp) = QpRef::get(dev, p.bth.dest_qpn) else {
        return Delivery::Dropped;
    };
    let st = qp.state();
    let want = match trc::service(st.shape.qp_type) {
        Some(Service::Rc) => crate::proto::wire::Transport::Rc,
        Some(Service::Uc) => crate::proto::wire::Transport::Uc,
        None => return Delivery::Dropped,
    };
    if p.bth.opcode.transport() != want || p.bth.pkey & 0x7fff != 0x7fff {
        return Delivery::Dropped;
    }
    // SAFETY: the QP is counted live, with its device, PD and CQs.
    let ctx = unsafe { QpCtx::new(qp.ibqp, st) };
    // SAFETY: the QP is counted (here or by the Later returned) until after this is dropped,
    // after the lock.
    let _events = unsafe { CqEvents::new(ctx.cqs) };
    let mut g = st.inner.lock();
    let Some(conn) = g.rc.as_ref().filter(|_| receiving(g.attrs.state)) else {
        return Delivery::Dropped;
    };
    if conn.av.dgid != d.src_gid() || conn.av.sgid != d.dest_gid() {
        dev.counters().inc(Counter::RcvdAddrMismatch);
        return Delivery::Dropped;
    }
    let busy = conn.resp.read_pending() || st.held.as_ref().is_some_and(|h| h.len() > 0);
    if busy && is_request(p) {
        drop(g);
        return Delivery::Later(Later(qp));
    }
    // SAFETY: `g` is the QP's lock.
    match ctx.with_netdev(|nd| unsafe { drive(&ctx, &mut g, nd, Step::Packet(p)) }) {
        Some(()) => Delivery::Done,
        None => Delivery::Dropped,
    }
}

/// Requests held back at most per run of the QP's work (then it queues itself again).
const HELD_PER_RUN: u32 = 16;

/// The responder's part of an RC QP's work: the next batches of READ responses, then, once
/// they are out, the requests held back meanwhile, in order.
///
/// # Safety
/// `ctx` describes a live RC QP; called from its work (process context, no lock held).
unsafe fn serve_held(ctx: &QpCtx<'_>) {
    let st = ctx.st;
    let Some(held) = st.held.as_ref() else {
        return;
    };
    for _ in 0..HELD_PER_RUN {
        let mut g = st.inner.lock();
        let pending = match g.rc.as_ref() {
            Some(c) if receiving(g.attrs.state) => c.resp.read_pending(),
            _ => {
                held.purge();
                return;
            }
        };
        if pending {
            // SAFETY: `g` is the QP's lock.
            let _ = ctx.with_netdev(|nd| unsafe { drive(ctx, &mut g, nd, Step::Pump) });
            continue;
        }
        drop(g);
        let Some(mut skb) = held.pop() else {
            return;
        };
        let Some((_, p)) = skb.ip_bytes().and_then(crate::transport::rx::parse) else {
            ctx.dev.counters().inc(Counter::RcvdDropped);
            continue;
        };
        let mut g = st.inner.lock();
        if g.rc.is_none() || !receiving(g.attrs.state) {
            continue;
        }
        // SAFETY: `g` is the QP's lock.
        let _ = ctx.with_netdev(|nd| unsafe { drive(ctx, &mut g, nd, Step::Packet(&p)) });
    }
    // More to do: the work runs again after others had their turn.
    if let Some(t) = st.timer.as_ref() {
        t.kick();
    }
}

/// The QP timer's work ([`QpTimer`]'s handler): runs the transport's timer step.
///
/// # Safety
/// `owner` is the `ib_qp` the timer was created for; destroy_qp drops the timer (waiting
/// for this work) before the QP goes away.
unsafe extern "C" fn qp_timer(owner: *mut c_void) {
    let ibqp = owner.cast::<b::ib_qp>();
    // SAFETY: per this function's contract.
    let Some(st) = (unsafe { state(ibqp) }) else {
        return;
    };
    // SAFETY: as above.
    let ctx = unsafe { QpCtx::new(ibqp, st) };
    // SAFETY: the QP outlives its work; dropped last, with no lock held.
    let _events = unsafe { CqEvents::new(ctx.cqs) };
    if trc::service(st.shape.qp_type).is_none() {
        if st.kq.lock().is_some() {
            // A kernel datagram QP: its send work.
            // SAFETY: as above.
            unsafe { run_kernel_sends(&ctx) };
        } else {
            // A user datagram QP: the rest of its send ring.
            let _ = ctx.with_netdev(|nd| {
                let mut g = st.inner.lock();
                // SAFETY: as above: the QP's CQs outlive it.
                unsafe { run_ud_requester(&mut g, &ctx, nd) }
            });
        }
        return;
    }
    let mut g = st.inner.lock();
    if g.attrs.state == QpState::Err {
        // A kernel consumer posted to a QP in Error: its requests complete as flushed.
        // SAFETY: as above.
        unsafe { flush_kernel(st, ctx.qpn, ctx.cqs) };
        return;
    }
    if g.attrs.state == QpState::Rts {
        // SAFETY: `g` is the QP's lock.
        let _ = ctx.with_netdev(|nd| unsafe { drive(&ctx, &mut g, nd, Step::Timer) });
    }
    drop(g);
    // SAFETY: as above: our work, no lock held.
    unsafe { serve_held(&ctx) };
}
