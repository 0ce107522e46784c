// SPDX-License-Identifier: GPL-2.0
//! Completion queues: the C-ABI entry points and the CQ object.
//!
//! Locking rule for the data path: CQEs are produced from process context only (the
//! transport runs in work items), so the ring's lock is a plain spinlock.

use core::mem::size_of;
use core::pin::Pin;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::sync::SpinLock;
use kernel::{new_spinlock, pin_init};

use super::bindings as b;
use super::queue::{MappedQueue, SharedQueue};
use crate::uabi::cqe::{emit_uverbs_wc, Completion};
use crate::uabi::queue::ToClientQueue;
use crate::uabi::{layout, resp};
use crate::verbs::{cq as vcq, objects};

/// The CPU's cache line size, which pads queue slots as rdma_rxe pads them.
fn cache_line_size() -> u32 {
    // SAFETY: reads a boot-time constant.
    unsafe { b::rxe_sr_glue_cache_line_size() }
}

/// The ring and what guards it.
struct CqRing {
    queue: Option<MappedQueue>,
    /// The kernel's view of the indices (it produces; user space consumes).
    q: ToClientQueue,
}

/// Per-CQ state, allocated at create and freed at destroy.
#[pin_data]
struct CqState {
    #[pin]
    ring: SpinLock<CqRing>,
    /// `IB_CQ_SOLICITED` / `IB_CQ_NEXT_COMP` armed by req_notify_cq.
    notify: AtomicU32,
}

/// The CQ object: `ibcq` first (the core allocates `size_of::<RxeSrCq>()` zeroed bytes).
#[repr(C)]
pub(crate) struct RxeSrCq {
    ibcq: b::ib_cq,
    state: *mut CqState,
}

/// Size the core allocates per CQ.
pub(crate) const SIZE: usize = size_of::<RxeSrCq>();

impl RxeSrCq {
    /// # Safety
    /// `ibcq` is a live CQ of ours whose create succeeded.
    unsafe fn state<'a>(ibcq: *mut b::ib_cq) -> Option<&'a CqState> {
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
    ibcq: *mut b::ib_cq,
    attr: *const b::ib_cq_init_attr,
    attrs: *mut b::uverbs_attr_bundle,
) -> c_int {
    // SAFETY: per this function's contract.
    match unsafe { create_cq_inner(ibcq, &*attr, attrs) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
/// As [`create_cq`].
unsafe fn create_cq_inner(ibcq: *mut b::ib_cq, attr: &b::ib_cq_init_attr, attrs: *mut b::uverbs_attr_bundle) -> Result {
    if attr.flags != 0 {
        return Err(super::errno::eopnotsupp());
    }
    // SAFETY: null or a live bundle.
    let udata = unsafe { b::rxe_sr_glue_attrs_udata(attrs) };
    // SAFETY: as above.
    let uctx = unsafe { b::rxe_sr_glue_attrs_ucontext(attrs) };
    if udata.is_null() || uctx.is_null() {
        // Kernel consumers' CQs arrive with the kernel data path.
        return Err(super::errno::eopnotsupp());
    }
    let geo = vcq::geometry(attr.cqe, cache_line_size())?;
    let queue = SharedQueue::new(geo.ring)?;
    let size = u32::try_from(queue.len()).map_err(|_| EINVAL)?;
    // SAFETY: `uctx` is the caller's live ucontext.
    let (mapped, offset) = unsafe { MappedQueue::insert(uctx, queue)? };
    let mut resp = [0u8; layout::CREATE_CQ_RESP_SIZE];
    if resp::emit_create_cq_resp(resp::MmInfo { offset, size }, &mut resp).is_none() {
        return Err(EINVAL);
    }
    // SAFETY: `udata` is live; the helper checks outlen and copies to user space.
    let ret = unsafe { b::rxe_sr_glue_copy_to_udata(udata, resp.as_ptr().cast(), resp.len()) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    let state = KBox::pin_init(
        pin_init!(CqState {
            ring <- new_spinlock!(CqRing { queue: Some(mapped), q: ToClientQueue::new(geo.ring) }, "rxe_sr_cq"),
            notify: AtomicU32::new(0),
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
        (*ibcq).cqe = i32::try_from(geo.num_elem).unwrap_or(vcq::MAX_CQE);
    }
    objects::LIVE.cqs.inc();
    Ok(())
}

/// `ib_device_ops.destroy_cq`.
///
/// # Safety
/// Called by the core once, after a successful create, with no users left.
pub(crate) unsafe extern "C" fn destroy_cq(ibcq: *mut b::ib_cq, _udata: *mut b::ib_udata) -> c_int {
    // SAFETY: our CQ object.
    let cq = unsafe { &mut *ibcq.cast::<RxeSrCq>() };
    if cq.state.is_null() {
        return 0;
    }
    // SAFETY: `state` came from KBox::into_raw in create; nothing else uses it any more.
    let state = unsafe { KBox::from_raw(cq.state) };
    cq.state = core::ptr::null_mut();
    // Unregisters the ring's mmap entry (outside the lock).
    let queue = state.ring.lock().queue.take();
    drop(queue);
    drop(state);
    objects::LIVE.cqs.dec();
    0
}

/// `ib_device_ops.req_notify_cq`: arms the completion event; with
/// IB_CQ_REPORT_MISSED_EVENTS, returns 1 if completions are already waiting.
///
/// # Safety
/// Called by the core with a live CQ of ours.
pub(crate) unsafe extern "C" fn req_notify_cq(ibcq: *mut b::ib_cq, flags: b::ib_cq_notify_flags) -> c_int {
    // SAFETY: per this function's contract.
    let Some(state) = (unsafe { RxeSrCq::state(ibcq) }) else {
        return EINVAL.to_errno();
    };
    let mut ring = state.ring.lock();
    state
        .notify
        .fetch_or(flags & b::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK, Ordering::Relaxed);
    let consumer = ring.queue.as_ref().map(|m| m.queue().load_consumer());
    // A consumer index user space mangled counts as "nothing waiting".
    let waiting = match consumer {
        Some(c) => ring.q.observe_consumer(c).unwrap_or(0),
        None => 0,
    };
    if flags & b::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0 && waiting > 0 {
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
pub(crate) unsafe extern "C" fn resize_cq(ibcq: *mut b::ib_cq, cqe: c_int, udata: *mut b::ib_udata) -> c_int {
    // SAFETY: per this function's contract.
    match unsafe { resize_cq_inner(ibcq, cqe, udata) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
/// As [`resize_cq`].
unsafe fn resize_cq_inner(ibcq: *mut b::ib_cq, cqe: c_int, udata: *mut b::ib_udata) -> Result {
    // SAFETY: per this function's contract.
    let state = unsafe { RxeSrCq::state(ibcq) }.ok_or(EINVAL)?;
    // SAFETY: null or the live udata of this call.
    let uctx = unsafe { b::rxe_sr_glue_udata_ucontext(udata) };
    if uctx.is_null() {
        return Err(EINVAL);
    }
    let depth = u32::try_from(cqe).map_err(|_| EINVAL)?;
    let geo = vcq::geometry(depth, cache_line_size())?;
    // Everything that may sleep happens before the lock: allocating and registering the new
    // ring, and telling user space where it is (user space ignores the answer if we fail).
    let fresh = SharedQueue::new(geo.ring)?;
    let len = u32::try_from(fresh.len()).map_err(|_| EINVAL)?;
    // SAFETY: `uctx` is the caller's live ucontext. On any error below, `mapped` drops and
    // unregisters the new ring; the CQ keeps the old one.
    let (mapped, offset) = unsafe { MappedQueue::insert(uctx, fresh)? };
    let mut out = [0u8; layout::CREATE_CQ_RESP_SIZE];
    resp::emit_create_cq_resp(resp::MmInfo { offset, size: len }, &mut out).ok_or(EINVAL)?;
    // SAFETY: `udata` is live; the helper checks outlen and copies to user space.
    let ret = unsafe { b::rxe_sr_glue_copy_to_udata(udata, out.as_ptr().cast(), out.len()) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    let old = {
        let mut ring = state.ring.lock();
        let CqRing { queue, q } = &mut *ring;
        let cur = queue.as_ref().ok_or(EINVAL)?.queue();
        let pending = q.observe_consumer(cur.load_consumer()).map_err(|_| EINVAL)?;
        if depth < pending {
            return Err(EINVAL);
        }
        let new = mapped.queue();
        let mut slot = [0u8; layout::UVERBS_WC_SIZE];
        let mut nq = ToClientQueue::new(geo.ring);
        for n in 0..pending {
            let src = q.consumer_index().wrapping_add(n) & q.ring().index_mask();
            cur.read_slot(src, &mut slot);
            if let Some(tail) = nq.tail() {
                new.write_slot(tail, &slot);
            }
            nq.advance_producer();
        }
        new.publish_producer(nq.producer_index());
        *q = nq;
        queue.replace(mapped)
    };
    // The old ring's entry goes outside the lock; user space unmaps its pages.
    drop(old);
    // SAFETY: `ibcq` is live.
    unsafe { (*ibcq).cqe = i32::try_from(geo.num_elem).unwrap_or(vcq::MAX_CQE) };
    Ok(())
}

/// Posts a completion to a CQ of ours and raises the completion event if it is armed for it.
/// A full CQ (or one whose consumer index user space corrupted) refuses the completion and
/// raises IB_EVENT_CQ_ERR, as rdma_rxe does.
///
/// # Safety
/// `ibcq` is a live CQ of ours (a QP's send or receive CQ, kept alive by the QP).
pub(crate) unsafe fn post(ibcq: *mut b::ib_cq, c: &Completion, solicited: bool) -> Result {
    // SAFETY: per this function's contract.
    let state = unsafe { RxeSrCq::state(ibcq) }.ok_or(EINVAL)?;
    let mut wc = [0u8; layout::UVERBS_WC_SIZE];
    emit_uverbs_wc(c, &mut wc).map_err(|_| EINVAL)?;
    let posted = {
        let mut ring = state.ring.lock();
        let CqRing { queue, q } = &mut *ring;
        match queue.as_ref().map(|m| m.queue()) {
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
        }
    };
    if !posted {
        // SAFETY: `ibcq` is live; the helper calls the consumer's event handler.
        unsafe { b::rxe_sr_glue_cq_event(ibcq, b::ib_event_type_IB_EVENT_CQ_ERR) };
        return Err(EBUSY);
    }
    let armed = state.notify.load(Ordering::Relaxed);
    let fire = armed & b::ib_cq_notify_flags_IB_CQ_NEXT_COMP != 0
        || (solicited && armed & b::ib_cq_notify_flags_IB_CQ_SOLICITED != 0);
    if fire && state.notify.swap(0, Ordering::Relaxed) != 0 {
        // SAFETY: `ibcq` is live; the helper calls its comp_handler (uverbs queues the event).
        unsafe { b::rxe_sr_glue_cq_comp(ibcq) };
    }
    Ok(())
}

/// `ib_device_ops.poll_cq`: only kernel consumers poll through the core, and their CQs are
/// not supported yet (create_cq refuses them), so there is never anything to return.
///
/// # Safety
/// Called by the core with a live CQ.
pub(crate) unsafe extern "C" fn poll_cq(_ibcq: *mut b::ib_cq, _num: c_int, _wc: *mut b::ib_wc) -> c_int {
    0
}
