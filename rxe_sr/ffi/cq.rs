// SPDX-License-Identifier: GPL-2.0
//! Completion queues: the C-ABI entry points and the CQ object.
//!
//! A user CQ is a ring shared with the process (`struct ib_uverbs_wc` slots). A kernel
//! consumer's CQ (no udata: ib_mad, ib_cm, ULPs) keeps its completions in a FIFO until the
//! consumer polls them as `struct ib_wc` through `poll_cq`.
//!
//! Locking: completions are produced in process context (the transport runs in work
//! items), but kernel consumers poll and re-arm from any context, softirq included, so the
//! lock disables interrupts.

use core::mem::size_of;
use core::pin::Pin;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::{flags::GFP_KERNEL, KBox, KVVec};
use kernel::ffi::c_int;
use kernel::pin_init;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::mmap_queue::{MappedQueue, SharedQueue};
use crate::kx::spinlock::{new_irq_spinlock, IrqSpinLock};
use crate::objects::live;
use crate::uabi::cqe::{emit_uverbs_wc, Completion, WcEx, WcFlags, WcStatus};
use crate::uabi::queue::{Fifo, ToClientQueue};
use crate::uabi::send_wqe::NetworkType;
use crate::uabi::{layout, resp};
use crate::verbs;

/// The CPU's cache line size, which pads queue slots as rdma_rxe pads them.
fn cache_line_size() -> u32 {
    // SAFETY: reads a boot-time constant.
    unsafe { bindings::rxe_sr_glue_cache_line_size() }
}

/// A completion waiting in a kernel CQ, with the QP it names (`ib_wc.qp`).
#[derive(Clone, Copy)]
struct KernelWc {
    c: Completion,
    qp: *mut bindings::ib_qp,
}

// SAFETY: `qp` is only handed back to the CQ's consumer, never dereferenced here.
unsafe impl Send for KernelWc {}

const NO_WC: KernelWc = KernelWc {
    c: Completion::zeroed(0, 0, WcStatus::Success),
    qp: core::ptr::null_mut(),
};

/// A kernel CQ's completions, oldest first.
type KernelCq = Fifo<KernelWc, KVVec<KernelWc>>;

/// Where a CQ's completions wait.
enum CqRing {
    /// A user CQ: the ring shared with the process and the kernel's view of its indices
    /// (the kernel produces; user space consumes).
    User {
        queue: Option<MappedQueue>,
        q: ToClientQueue,
    },
    /// A kernel consumer's CQ.
    Kernel(KernelCq),
}

fn kernel_cq(depth: u32) -> Result<KernelCq> {
    let n = usize::try_from(depth).map_err(|_| EINVAL)?;
    Ok(Fifo::new(KVVec::from_elem(NO_WC, n, GFP_KERNEL)?))
}

/// Per-CQ state, allocated at create and freed at destroy.
#[pin_data]
struct CqState {
    #[pin]
    ring: IrqSpinLock<CqRing>,
    /// `IB_CQ_SOLICITED` / `IB_CQ_NEXT_COMP` armed by req_notify_cq.
    notify: AtomicU32,
    /// Consumer callbacks due ([`DUE_COMP`], [`DUE_ERR`]): a posting path holds its QP's
    /// lock, so the callbacks run later, from [`CqEvents`], once the lock is released (a
    /// consumer's handler may call back into the QP).
    due: AtomicU32,
}

/// The completion handler is due.
const DUE_COMP: u32 = 1;
/// IB_EVENT_CQ_ERR is due (a completion did not fit).
const DUE_ERR: u32 = 2;

/// The CQ object: `ibcq` first (the core allocates `size_of::<RxeSrCq>()` zeroed bytes).
#[repr(C)]
pub(crate) struct RxeSrCq {
    ibcq: bindings::ib_cq,
    state: *mut CqState,
}

/// Size the core allocates per CQ.
pub(crate) const SIZE: usize = size_of::<RxeSrCq>();

impl RxeSrCq {
    /// # Safety
    /// `ibcq` is a live CQ of ours whose create succeeded.
    unsafe fn state<'a>(ibcq: *mut bindings::ib_cq) -> Option<&'a CqState> {
        // SAFETY: `ibcq` is the first field of a RxeSrCq; `state` is null or points to the
        // CqState create_cq leaked, freed only by destroy_cq.
        unsafe { (*ibcq.cast::<RxeSrCq>()).state.as_ref() }
    }
}

/// `ib_device_ops.create_cq`.
///
/// # Safety
/// Called by the core with a zeroed CQ object of our size and valid attributes.
pub(crate) unsafe extern "C" fn create_cq(
    ibcq: *mut bindings::ib_cq,
    attr: *const bindings::ib_cq_init_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    // SAFETY: the CQ's device is one of ours.
    let dev = unsafe { crate::objects::device::RoceDevice::from_ib((*ibcq).device) };
    if !crate::uabi::limits::take(&dev.cqs_used, crate::verbs::device::MAX_CQ) {
        return ENOMEM.to_errno();
    }
    // SAFETY: per this function's contract.
    match unsafe { create_cq_inner(ibcq, &*attr, attrs) } {
        Ok(()) => 0,
        Err(e) => {
            crate::uabi::limits::give_back(&dev.cqs_used);
            e.to_errno()
        }
    }
}

/// # Safety
/// As [`create_cq`].
unsafe fn create_cq_inner(
    ibcq: *mut bindings::ib_cq,
    attr: &bindings::ib_cq_init_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> Result {
    if attr.flags != 0 {
        return Err(crate::kx::error::eopnotsupp());
    }
    // SAFETY: null or a live bundle.
    let udata = unsafe { bindings::rxe_sr_glue_attrs_udata(attrs) };
    // SAFETY: as above.
    let uctx = unsafe { bindings::rxe_sr_glue_attrs_ucontext(attrs) };
    let depth = u32::try_from(attr.cqe).map_err(|_| EINVAL)?;
    let geo = verbs::cq::geometry(depth, cache_line_size())?;
    let ring = if udata.is_null() {
        // A kernel consumer's CQ (ib_alloc_cq and friends).
        CqRing::Kernel(kernel_cq(geo.num_elem)?)
    } else {
        // SAFETY: per this function's contract.
        let mapped = unsafe { user_ring(udata, uctx, geo.ring)? };
        CqRing::User {
            queue: Some(mapped),
            q: ToClientQueue::new(geo.ring),
        }
    };
    let state = KBox::pin_init(
        pin_init!(CqState {
            ring <- new_irq_spinlock!(ring, "rxe_sr_cq"),
            notify: AtomicU32::new(0),
            due: AtomicU32::new(0),
        }),
        GFP_KERNEL,
    );
    let state = match state {
        Ok(s) => s,
        Err(e) => return Err(e),
    };
    // SAFETY: the CqState is never moved out of its box; destroy_cq rebuilds the Pin<KBox>.
    let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(state) });
    // SAFETY: `ibcq` is our zeroed CQ object.
    unsafe {
        (*ibcq.cast::<RxeSrCq>()).state = raw;
        (*ibcq).cqe = i32::try_from(geo.num_elem).unwrap_or(verbs::cq::MAX_CQE);
    }
    live::LIVE.cqs.inc();
    Ok(())
}

/// A new CQ ring shared with user space, registered for mmap and described to it in
/// `struct rxe_create_cq_resp` (create and resize answer alike).
///
/// # Safety
/// `udata` and `uctx` are null or the live udata and ucontext of a uverbs call.
unsafe fn user_ring(
    udata: *mut bindings::ib_udata,
    uctx: *mut bindings::ib_ucontext,
    ring: crate::uabi::queue::Ring,
) -> Result<MappedQueue> {
    if uctx.is_null() {
        return Err(EINVAL);
    }
    let queue = SharedQueue::new(ring)?;
    let size = u32::try_from(queue.len()).map_err(|_| EINVAL)?;
    // SAFETY: `uctx` is the caller's live ucontext.
    let (mapped, offset) = unsafe { MappedQueue::insert(uctx, queue)? };
    let mut resp = [0u8; layout::CREATE_CQ_RESP_SIZE];
    resp::emit_create_cq_resp(resp::MmInfo { offset, size }, &mut resp).ok_or(EINVAL)?;
    let (src, len) = (resp.as_ptr().cast(), resp.len());
    // SAFETY: `udata` is live; the helper checks outlen and copies to user space.
    let ret = unsafe { bindings::rxe_sr_glue_copy_to_udata(udata, src, len) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    Ok(mapped)
}

/// `ib_device_ops.destroy_cq`.
///
/// # Safety
/// Called by the core once, after a successful create, with no users left.
pub(crate) unsafe extern "C" fn destroy_cq(
    ibcq: *mut bindings::ib_cq,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: our CQ object.
    let cq = unsafe { &mut *ibcq.cast::<RxeSrCq>() };
    if cq.state.is_null() {
        return 0;
    }
    // SAFETY: `state` came from KBox::into_raw in create; nothing else uses it any more.
    let state = unsafe { KBox::from_raw(cq.state) };
    cq.state = core::ptr::null_mut();
    // Unregisters a user ring's mmap entry (outside the lock).
    let queue = match &mut *state.ring.lock() {
        CqRing::User { queue, .. } => queue.take(),
        CqRing::Kernel(_) => None,
    };
    drop(queue);
    drop(state);
    // SAFETY: the CQ's device is one of ours.
    let dev = unsafe { crate::objects::device::RoceDevice::from_ib((*ibcq).device) };
    crate::uabi::limits::give_back(&dev.cqs_used);
    live::LIVE.cqs.dec();
    0
}

/// `ib_device_ops.req_notify_cq`: arms the completion event; with
/// IB_CQ_REPORT_MISSED_EVENTS, returns 1 if completions are already waiting.
///
/// # Safety
/// Called by the core with a live CQ of ours.
pub(crate) unsafe extern "C" fn req_notify_cq(
    ibcq: *mut bindings::ib_cq,
    flags: bindings::ib_cq_notify_flags,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(state) = (unsafe { RxeSrCq::state(ibcq) }) else {
        return EINVAL.to_errno();
    };
    let mut ring = state.ring.lock();
    state.notify.fetch_or(
        flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK,
        Ordering::Relaxed,
    );
    let waiting = match &mut *ring {
        // A consumer index user space mangled counts as "nothing waiting".
        CqRing::User { queue: Some(m), q } => {
            q.observe_consumer(m.queue().load_consumer()).unwrap_or(0)
        }
        CqRing::User { queue: None, .. } => 0,
        CqRing::Kernel(f) => f.len() as u32,
    };
    if flags & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0 && waiting > 0 {
        1
    } else {
        0
    }
}

/// `ib_device_ops.resize_cq`: moves the CQ to a new ring of the new depth, carrying the
/// completions not yet polled over in order; user space (the rxe provider, holding its CQ
/// lock) unmaps the old ring and maps the new one from the returned offset. A depth below the
/// number of pending completions is refused, as rdma_rxe refuses it.
///
/// # Safety
/// Called by uverbs with a live user CQ of ours.
pub(crate) unsafe extern "C" fn resize_cq(
    ibcq: *mut bindings::ib_cq,
    cqe: c_int,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract.
    match unsafe { resize_cq_inner(ibcq, cqe, udata) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
/// As [`resize_cq`].
unsafe fn resize_cq_inner(
    ibcq: *mut bindings::ib_cq,
    cqe: c_int,
    udata: *mut bindings::ib_udata,
) -> Result {
    // SAFETY: per this function's contract.
    let state = unsafe { RxeSrCq::state(ibcq) }.ok_or(EINVAL)?;
    let depth = u32::try_from(cqe).map_err(|_| EINVAL)?;
    let geo = verbs::cq::geometry(depth, cache_line_size())?;
    if udata.is_null() {
        // SAFETY: per this function's contract.
        return unsafe { resize_kernel_cq(ibcq, state, geo.num_elem) };
    }
    // Everything that may sleep happens before the lock: allocating and registering the new
    // ring, and telling user space where it is (user space ignores the answer if we fail;
    // on any error below, dropping `mapped` unregisters the new ring and the CQ keeps the
    // old one).
    // SAFETY: the live udata of this call.
    let uctx = unsafe { bindings::rxe_sr_glue_udata_ucontext(udata) };
    // SAFETY: the live udata of this call and its ucontext.
    let mapped = unsafe { user_ring(udata, uctx, geo.ring)? };
    let new = mapped.queue();
    let mut nq = ToClientQueue::new(geo.ring);
    // The unconsumed entries move in chunks of RESIZE_CHUNK, the lock (which keeps
    // interrupts off) dropped between chunks, so that a large CQ is not copied in one
    // IRQ-off stretch. Meanwhile completions may still be added to the old ring (they are
    // copied in a later chunk); the consumer must not move (rdma-core's provider holds the
    // CQ's lock across resize and poll): if it does, the copies may be stale and the
    // resize is refused with EBUSY, the CQ unchanged.
    let mut copied = 0u32;
    let mut start = None;
    let old = loop {
        let mut ring = state.ring.lock();
        let CqRing::User { queue, q } = &mut *ring else {
            return Err(EINVAL);
        };
        let cur = queue.as_ref().ok_or(EINVAL)?.queue();
        let pending = q
            .observe_consumer(cur.load_consumer())
            .map_err(|_| EINVAL)?;
        let first = q.consumer_index();
        if *start.get_or_insert(first) != first {
            return Err(EBUSY);
        }
        if depth < pending {
            return Err(EINVAL);
        }
        let last = pending - copied <= RESIZE_CHUNK;
        let upto = if last { pending } else { copied + RESIZE_CHUNK };
        let mut slot = [0u8; layout::UVERBS_WC_SIZE];
        for n in copied..upto {
            let src = first.wrapping_add(n) & q.ring().index_mask();
            cur.read_slot(src, &mut slot);
            if let Some(tail) = nq.tail() {
                new.write_slot(tail, &slot);
            }
            nq.advance_producer();
        }
        copied = upto;
        if last {
            new.publish_producer(nq.producer_index());
            *q = nq;
            break queue.replace(mapped);
        }
        drop(ring);
        // SAFETY: process context (the resize verb), no lock held.
        unsafe { bindings::rxe_sr_glue_cond_resched() };
    };
    // The old ring's entry goes outside the lock; user space unmaps its pages.
    drop(old);
    // SAFETY: `ibcq` is live.
    unsafe { (*ibcq).cqe = i32::try_from(geo.num_elem).unwrap_or(verbs::cq::MAX_CQE) };
    Ok(())
}

/// Completions copied per IRQ-off stretch when a user CQ is resized (16 KiB of entries).
const RESIZE_CHUNK: u32 = 256;

/// A QP's send and receive CQs, and the QP their completions name (`ib_wc.qp` for kernel
/// CQs).
#[derive(Clone, Copy)]
pub(crate) struct QpCqs {
    qp: *mut bindings::ib_qp,
    send: *mut bindings::ib_cq,
    recv: *mut bindings::ib_cq,
}

impl QpCqs {
    /// # Safety
    /// `ibqp` is a live QP of ours.
    pub(crate) unsafe fn of(ibqp: *mut bindings::ib_qp) -> QpCqs {
        // SAFETY: per this function's contract; the core set the CQs at create.
        unsafe {
            QpCqs {
                qp: ibqp,
                send: (*ibqp).send_cq,
                recv: (*ibqp).recv_cq,
            }
        }
    }

    /// Posts a send-queue completion.
    ///
    /// # Safety
    /// The QP is still live (so are its CQs, which it holds).
    pub(crate) unsafe fn send(&self, c: &Completion) -> Result {
        // SAFETY: per this function's contract.
        unsafe { post(self.send, self.qp, c, false) }
    }

    /// Posts a receive-queue completion (`solicited`: the message asked for an event).
    ///
    /// # Safety
    /// As [`QpCqs::send`].
    pub(crate) unsafe fn recv(&self, c: &Completion, solicited: bool) -> Result {
        // SAFETY: per this function's contract.
        unsafe { post(self.recv, self.qp, c, solicited) }
    }
}

/// Resizes a kernel CQ to `depth`, keeping its completions in order; refused below the
/// number waiting.
///
/// # Safety
/// `ibcq` is a live CQ of ours with state `state`.
unsafe fn resize_kernel_cq(ibcq: *mut bindings::ib_cq, state: &CqState, depth: u32) -> Result {
    let mut fresh = kernel_cq(depth)?;
    {
        let mut ring = state.ring.lock();
        let CqRing::Kernel(f) = &mut *ring else {
            return Err(EINVAL);
        };
        if f.len() > fresh.capacity() {
            return Err(EINVAL);
        }
        f.drain_into(&mut fresh);
        core::mem::swap(f, &mut fresh);
    }
    // The old FIFO is freed here, outside the lock.
    drop(fresh);
    // SAFETY: `ibcq` is live.
    unsafe { (*ibcq).cqe = i32::try_from(depth).unwrap_or(verbs::cq::MAX_CQE) };
    Ok(())
}

/// Posts a completion to a CQ of ours and raises the completion event if it is armed for it.
/// A full CQ (or one whose consumer index user space corrupted) refuses the completion and
/// raises IB_EVENT_CQ_ERR, as rdma_rxe does.
///
/// # Safety
/// `ibcq` is a live CQ of ours (a QP's send or receive CQ, kept alive by the QP `ibqp`).
unsafe fn post(
    ibcq: *mut bindings::ib_cq,
    ibqp: *mut bindings::ib_qp,
    c: &Completion,
    solicited: bool,
) -> Result {
    // SAFETY: per this function's contract.
    let state = unsafe { RxeSrCq::state(ibcq) }.ok_or(EINVAL)?;
    let mut wc = [0u8; layout::UVERBS_WC_SIZE];
    emit_uverbs_wc(c, &mut wc).map_err(|_| EINVAL)?;
    let posted = {
        let mut ring = state.ring.lock();
        match &mut *ring {
            CqRing::User { queue, q } => match queue.as_ref().map(|m| m.queue()) {
                Some(sq) if q.observe_consumer(sq.load_consumer()).is_ok() && !q.is_full() => {
                    if let Some(tail) = q.tail() {
                        sq.write_slot(tail, &wc);
                    }
                    if let Some(p) = q.advance_producer() {
                        sq.publish_producer(p);
                    }
                    true
                }
                _ => false,
            },
            CqRing::Kernel(f) => f.push(KernelWc { c: *c, qp: ibqp }).is_ok(),
        }
    };
    if !posted {
        // The consumer's event handler runs from CqEvents.
        state.due.fetch_or(DUE_ERR, Ordering::AcqRel);
        return Err(EBUSY);
    }
    let armed = state.notify.load(Ordering::Relaxed);
    let fire = armed & bindings::ib_cq_notify_flags_IB_CQ_NEXT_COMP != 0
        || (solicited && armed & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED != 0);
    if fire && state.notify.swap(0, Ordering::Relaxed) != 0 {
        // The comp_handler runs from CqEvents (uverbs queues the event).
        state.due.fetch_or(DUE_COMP, Ordering::AcqRel);
    }
    Ok(())
}

/// Runs the consumer callbacks due on `ibcq`.
///
/// # Safety
/// `ibcq` is a live CQ of ours; no lock of ours is held.
unsafe fn run_due(ibcq: *mut bindings::ib_cq) {
    // SAFETY: per this function's contract.
    let Some(state) = (unsafe { RxeSrCq::state(ibcq) }) else {
        return;
    };
    let due = state.due.swap(0, Ordering::AcqRel);
    if due & DUE_ERR != 0 {
        // SAFETY: `ibcq` is live; the helper calls the consumer's event handler.
        unsafe { bindings::rxe_sr_glue_cq_event(ibcq, bindings::ib_event_type_IB_EVENT_CQ_ERR) };
    }
    if due & DUE_COMP != 0 {
        // SAFETY: `ibcq` is live; the helper calls its comp_handler.
        unsafe { bindings::rxe_sr_glue_cq_comp(ibcq) };
    }
}

/// Runs, when dropped, the consumer callbacks (completion handler, CQ error event) that
/// completions posted meanwhile made due on a QP's CQs. Each path that posts completions
/// while holding the QP's lock creates one before taking the lock, so it is dropped after
/// the lock is released: a handler may then call back into the QP (a ULP that modifies the
/// QP from its completion handler), as rdma_rxe allows.
pub(crate) struct CqEvents(QpCqs);

impl CqEvents {
    /// # Safety
    /// The QP of `cqs` stays live until this value is dropped, and it is dropped with no
    /// lock of ours held.
    pub(crate) unsafe fn new(cqs: QpCqs) -> CqEvents {
        CqEvents(cqs)
    }
}

impl Drop for CqEvents {
    fn drop(&mut self) {
        let QpCqs { qp, send, recv } = self.0;
        // SAFETY: per `new`'s contract the QP, and so its CQs and SRQ, are live, and no lock
        // is held.
        unsafe {
            let srq = (*qp).srq;
            if !srq.is_null() {
                super::srq::run_due(srq);
            }
            run_due(send);
            if recv != send {
                run_due(recv);
            }
        }
    }
}

/// `ib_device_ops.poll_cq`: a kernel consumer takes up to `num` completions, oldest first,
/// as `struct ib_wc`. (User CQs are polled in user space; the core never calls this for
/// them, and it finds nothing.)
///
/// # Safety
/// Called by the core with a live CQ of ours and room for `num` entries at `wc`.
pub(crate) unsafe extern "C" fn poll_cq(
    ibcq: *mut bindings::ib_cq,
    num: c_int,
    wc: *mut bindings::ib_wc,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(state) = (unsafe { RxeSrCq::state(ibcq) }) else {
        return EINVAL.to_errno();
    };
    let want = usize::try_from(num).unwrap_or(0);
    let mut ring = state.ring.lock();
    let CqRing::Kernel(f) = &mut *ring else {
        return 0;
    };
    let mut n = 0;
    while n < want {
        let Some(k) = f.pop() else {
            break;
        };
        // SAFETY: the caller gave room for `num` entries; `n < num`.
        unsafe { wc.add(n).write(ib_wc(&k)) };
        n += 1;
    }
    // At most `num`, an int.
    n as c_int
}

/// A kernel completion as `struct ib_wc` (the same status, opcode and flag values as the
/// uverbs ABI's).
fn ib_wc(k: &KernelWc) -> bindings::ib_wc {
    let c = &k.c;
    let mut w = bindings::ib_wc {
        status: c.status.to_uapi(),
        opcode: c.opcode.to_uapi(),
        vendor_err: c.vendor_err,
        byte_len: c.byte_len,
        qp: k.qp,
        src_qp: c.src_qp,
        slid: u32::from(c.slid),
        pkey_index: c.pkey_index,
        sl: c.sl,
        dlid_path_bits: c.dlid_path_bits,
        port_num: u32::from(c.port_num),
        ..Default::default()
    };
    // The union's first member: consumers with an `ib_cqe` get their pointer back.
    w.__bindgen_anon_1.wr_id = c.wr_id;
    match c.ex {
        // `imm_data` is `__be32`: the wire bytes as they are.
        WcEx::Imm(bytes) => w.ex.imm_data = u32::from_ne_bytes(bytes),
        WcEx::InvalidateRkey(rkey) => w.ex.invalidate_rkey = rkey,
        WcEx::None => {}
    }
    let mut flags = c.wc_flags.0;
    if let Some(net) = c.network {
        flags |= WcFlags::WITH_NETWORK_HDR_TYPE;
        w.network_hdr_type = match net {
            NetworkType::Ipv4 => bindings::rdma_network_type_RDMA_NETWORK_IPV4,
            NetworkType::Ipv6 => bindings::rdma_network_type_RDMA_NETWORK_IPV6,
        } as u8;
    }
    w.wc_flags = flags as c_int;
    w
}
