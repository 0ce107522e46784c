// SPDX-License-Identifier: GPL-2.0
//! Shared receive queues: the C-ABI entry points and the SRQ object. A user SRQ is a ring
//! shared with the process, as a QP's receive queue is (the rxe provider posts receives by
//! writing slots and moving the producer index; there is no system call). QPs created on
//! the SRQ take their receive WQEs from it, under its lock (lock order: QP, then SRQ).
//! Resizing moves the posted WQEs to a new ring, which the provider maps in place of the
//! old one (as for CQs). A kernel consumer's SRQ (nvmet-rdma's, for one) has no ring: its
//! post_srq_recv validates the WRs into a FIFO. The lock disables interrupts, since kernel
//! consumers post from any context.

use core::mem::size_of;
use core::pin::Pin;
use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::KVVec;
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::ffi::c_int;
use kernel::pin_init;
use kernel::prelude::*;

use crate::kx::spinlock::{new_irq_spinlock, IrqSpinLock};
use crate::uabi::queue::Fifo;

use crate::kx::bindings;
use crate::kx::mmap_queue::{MappedQueue, SharedQueue};
use crate::objects::live;
use crate::uabi::cqe::WcStatus;
use crate::uabi::limits::MAX_RECV_WQE_BYTES;
use crate::uabi::limits::RXE_MAX_SRQ_SGE;
use crate::uabi::queue::{self, FromClientQueue};
use crate::uabi::recv_wqe::RecvWqe;
use crate::uabi::{layout, resp};

/// Largest SRQ depth (the device's `max_srq_wr`).
const MAX_SRQ_WR: u32 = 1 << 20;

/// What the lock guards: the ring and the kernel's view of its indices (user SRQs), or
/// the posted receives (kernel SRQs).
struct SrqInner {
    ring: Option<MappedQueue>,
    q: FromClientQueue,
    kernel: Option<KernelSrq>,
    /// IB_SRQ_LIMIT: when armed (non-zero) and fewer WQEs remain, the SRQ_LIMIT_REACHED
    /// event fires once and the limit disarms (IBTA 10.2.9.1).
    limit: u32,
    /// Depth (changes with a resize).
    max_wr: u32,
}

/// A kernel SRQ's posted receives, oldest first.
type KernelSrq = super::qp::RecvFifo;

fn kernel_srq(depth: u32) -> Result<KernelSrq> {
    Ok(Fifo::new(KVVec::from_elem(
        None,
        usize::try_from(depth).map_err(|_| EINVAL)?,
        GFP_KERNEL,
    )?))
}

/// Per-SRQ state.
#[pin_data]
pub(crate) struct SrqState {
    #[pin]
    inner: IrqSpinLock<SrqInner>,
    max_sge: u32,
    /// IB_EVENT_SRQ_LIMIT_REACHED is due: the receive path takes WQEs with a QP's lock held,
    /// so the event is raised later, by [`run_due`] (from the QP's `CqEvents`), without it.
    limit_due: core::sync::atomic::AtomicBool,
}

/// The SRQ object: `ibsrq` first (the core allocates `size_of::<RxeSrSrq>()` zeroed bytes).
#[repr(C)]
pub(crate) struct RxeSrSrq {
    ibsrq: bindings::ib_srq,
    state: *mut SrqState,
}

/// Size the core allocates per SRQ.
pub(crate) const SIZE: usize = size_of::<RxeSrSrq>();

/// Numbers handed out as `srq_num` (reported to user space; XRC would route by it).
static NEXT_SRQ_NUM: AtomicU32 = AtomicU32::new(1);

/// The state of a live SRQ of ours.
///
/// # Safety
/// `ibsrq` is a live SRQ of ours whose create succeeded (or a null state).
pub(crate) unsafe fn state<'a>(ibsrq: *mut bindings::ib_srq) -> Option<&'a SrqState> {
    // SAFETY: `ibsrq` is the first field of a RxeSrSrq; `state` is null or the leaked box.
    unsafe { (*ibsrq.cast::<RxeSrSrq>()).state.as_ref() }
}

impl SrqState {
    /// Takes the next receive WQE (validated copy), if any; `Err((wr_id, status))` for one
    /// that failed validation. When the armed limit is crossed, SRQ_LIMIT_REACHED becomes
    /// due ([`run_due`] raises it).
    pub(crate) fn take(&self) -> Option<Result<RecvWqe, (u64, WcStatus)>> {
        let (taken, fire) = {
            let mut g = self.inner.lock();
            let SrqInner {
                ring,
                q,
                limit,
                kernel,
                ..
            } = &mut *g;
            let (taken, left) = match kernel {
                Some(k) => (k.pop().flatten().map(Ok)?, k.len() as u32),
                None => (
                    super::qp::take_from_ring(ring.as_ref(), q, self.max_sge)?,
                    q.count(),
                ),
            };
            let fire = *limit != 0 && left < *limit;
            if fire {
                *limit = 0;
            }
            (taken, fire)
        };
        if fire {
            // Raised by run_due once the QP's lock is released: the consumer's handler may
            // post again, or modify the QP.
            self.limit_due
                .store(true, core::sync::atomic::Ordering::Release);
        }
        Some(taken)
    }
}

/// Raises the SRQ limit event if [`SrqState::take`] found it due.
///
/// # Safety
/// `ibsrq` is a live SRQ of ours; no lock of ours is held.
pub(crate) unsafe fn run_due(ibsrq: *mut bindings::ib_srq) {
    // SAFETY: per this function's contract.
    let Some(st) = (unsafe { state(ibsrq) }) else {
        return;
    };
    if st
        .limit_due
        .swap(false, core::sync::atomic::Ordering::AcqRel)
    {
        // SAFETY: per this function's contract.
        unsafe {
            bindings::rxe_sr_glue_srq_event(
                ibsrq,
                bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
            )
        };
    }
}

/// `ib_device_ops.create_srq`.
///
/// # Safety
/// Called by the core with a zeroed SRQ object of our size, valid init attributes and the
/// caller's udata (null for kernel consumers).
pub(crate) unsafe extern "C" fn create_srq(
    ibsrq: *mut bindings::ib_srq,
    init: *mut bindings::ib_srq_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: the SRQ's device is one of ours.
    let dev = unsafe { crate::objects::device::RoceDevice::from_ib((*ibsrq).device) };
    if !crate::uabi::limits::take(&dev.srqs_used, crate::verbs::device::MAX_SRQ) {
        return ENOMEM.to_errno();
    }
    // SAFETY: per this function's contract.
    match unsafe { create_inner(ibsrq, &mut *init, udata) } {
        Ok(()) => 0,
        Err(e) => {
            crate::uabi::limits::give_back(&dev.srqs_used);
            e.to_errno()
        }
    }
}

/// # Safety
/// As [`create_srq`].
unsafe fn create_inner(
    ibsrq: *mut bindings::ib_srq,
    init: &mut bindings::ib_srq_init_attr,
    udata: *mut bindings::ib_udata,
) -> Result {
    if init.srq_type != bindings::ib_srq_type_IB_SRQT_BASIC {
        return Err(crate::kx::error::eopnotsupp());
    }
    let a = &mut init.attr;
    if a.max_wr == 0 || a.max_wr > MAX_SRQ_WR || a.max_sge > RXE_MAX_SRQ_SGE {
        return Err(EINVAL);
    }
    // SAFETY: reads a boot-time constant.
    let geo = queue::srq_geometry(a.max_wr, a.max_sge, unsafe {
        bindings::rxe_sr_glue_cache_line_size()
    })
    .ok_or(EINVAL)?;
    if a.srq_limit > geo.max_wr {
        return Err(EINVAL);
    }
    let limit = a.srq_limit;
    let (ring, kernel) = if udata.is_null() {
        (None, Some(kernel_srq(geo.max_wr)?))
    } else {
        // SAFETY: per this function's contract.
        (Some(unsafe { user_ring(udata, &geo)? }), None)
    };
    let st = KBox::pin_init(
        pin_init!(SrqState {
            inner <- new_irq_spinlock!(
                SrqInner {
                    ring,
                    q: FromClientQueue::new(geo.queue.ring),
                    kernel,
                    limit,
                    max_wr: geo.max_wr,
                },
                "rxe_sr_srq"
            ),
            max_sge: geo.max_sge,
            limit_due: core::sync::atomic::AtomicBool::new(false),
        }),
        GFP_KERNEL,
    )?;
    // SAFETY: the state never moves out of its box; destroy_srq rebuilds the box.
    let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(st) });
    // SAFETY: our zeroed SRQ object, not yet visible to anyone else.
    unsafe { (*ibsrq.cast::<RxeSrSrq>()).state = raw };
    a.max_wr = geo.max_wr;
    a.max_sge = geo.max_sge;
    live::LIVE.srqs.inc();
    Ok(())
}

/// A user SRQ's ring, registered for mmap and described to user space in `struct
/// rxe_create_srq_resp`.
///
/// # Safety
/// `udata` is the live udata of a uverbs create_srq call.
unsafe fn user_ring(
    udata: *mut bindings::ib_udata,
    geo: &queue::RqGeometry,
) -> Result<MappedQueue> {
    // SAFETY: a live udata of a uverbs call carries its ucontext.
    let uctx = unsafe { bindings::rxe_sr_glue_udata_ucontext(udata) };
    if uctx.is_null() {
        return Err(EINVAL);
    }
    let shared = SharedQueue::new(geo.queue.ring)?;
    // SAFETY: `uctx` is the caller's live ucontext; dropping the handle unregisters it.
    let (ring, off) = unsafe { MappedQueue::insert(uctx, shared)? };
    let size = u32::try_from(ring.queue().len()).map_err(|_| EINVAL)?;
    let srq_num = NEXT_SRQ_NUM.fetch_add(1, Ordering::Relaxed) & 0x00ff_ffff;
    let mut out = [0u8; layout::CREATE_SRQ_RESP_SIZE];
    resp::emit_create_srq_resp(resp::MmInfo { offset: off, size }, srq_num, &mut out)
        .ok_or(EINVAL)?;
    // SAFETY: `udata` is live; the helper checks outlen and copies to user space.
    let ret = unsafe { bindings::rxe_sr_glue_copy_to_udata(udata, out.as_ptr().cast(), out.len()) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    Ok(ring)
}

/// `ib_device_ops.destroy_srq`.
///
/// # Safety
/// Called by the core once per created SRQ, when no QP uses it any more.
pub(crate) unsafe extern "C" fn destroy_srq(
    ibsrq: *mut bindings::ib_srq,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: our SRQ object.
    let srq = unsafe { &mut *ibsrq.cast::<RxeSrSrq>() };
    if srq.state.is_null() {
        return 0;
    }
    // SAFETY: `state` came from KBox::into_raw; no QP uses the SRQ any more.
    let st = unsafe { KBox::from_raw(srq.state) };
    srq.state = ptr::null_mut();
    let ring = st.inner.lock().ring.take();
    drop(ring);
    drop(st);
    // SAFETY: the SRQ's device is one of ours.
    let dev = unsafe { crate::objects::device::RoceDevice::from_ib((*ibsrq).device) };
    crate::uabi::limits::give_back(&dev.srqs_used);
    live::LIVE.srqs.dec();
    0
}

/// `ib_device_ops.modify_srq`: IB_SRQ_MAX_WR resizes (see [`resize`]), IB_SRQ_LIMIT arms
/// the limit event (checked against the new depth when both are given).
///
/// # Safety
/// Called by the core with a live SRQ of ours, a valid attribute block and the caller's
/// udata.
pub(crate) unsafe extern "C" fn modify_srq(
    ibsrq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
    mask: bindings::ib_srq_attr_mask,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract.
    let (Some(st), Some(a)) = (unsafe { state(ibsrq) }, unsafe { attr.as_ref() }) else {
        return EINVAL.to_errno();
    };
    if mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0 {
        let depth = if mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0 {
            a.max_wr
        } else {
            st.inner.lock().max_wr
        };
        if a.srq_limit > depth {
            return EINVAL.to_errno();
        }
    }
    if mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0 {
        // SAFETY: per this function's contract.
        if let Err(e) = unsafe { resize(st, a.max_wr, udata) } {
            return e.to_errno();
        }
    }
    if mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0 {
        st.inner.lock().limit = a.srq_limit;
    }
    0
}

/// Moves the SRQ to a new ring of depth `max_wr`, carrying the posted WQEs over in order.
/// The new ring's `struct mminfo` goes to the user address in `struct rxe_modify_srq_cmd`;
/// the provider, holding its SRQ lock, then maps it in place of the old one. A depth below
/// the number of posted WQEs is refused, as rdma_rxe refuses it.
///
/// # Safety
/// `udata` is null or the live udata of a uverbs modify_srq call.
unsafe fn resize(st: &SrqState, max_wr: u32, udata: *mut bindings::ib_udata) -> Result {
    if udata.is_null() {
        return resize_kernel(st, max_wr);
    }
    let mut cmd = [0u8; layout::MODIFY_SRQ_CMD_SIZE];
    // SAFETY: per this function's contract; the helper checks the length.
    kernel::error::to_result(unsafe {
        bindings::rxe_sr_glue_copy_from_udata(udata, cmd.as_mut_ptr().cast(), cmd.len())
    })?;
    let mi_addr = resp::parse_modify_srq_cmd(&cmd).ok_or(EINVAL)?;
    if max_wr == 0 || max_wr > MAX_SRQ_WR {
        return Err(EINVAL);
    }
    // SAFETY: reads a boot-time constant.
    let geo = queue::srq_geometry(max_wr, st.max_sge, unsafe {
        bindings::rxe_sr_glue_cache_line_size()
    })
    .ok_or(EINVAL)?;
    // SAFETY: a live udata of a uverbs call carries its ucontext.
    let uctx = unsafe { bindings::rxe_sr_glue_udata_ucontext(udata) };
    if uctx.is_null() {
        return Err(EINVAL);
    }
    // Everything that may sleep or fault happens before the lock.
    let fresh = SharedQueue::new(geo.queue.ring)?;
    let size = u32::try_from(fresh.len()).map_err(|_| EINVAL)?;
    // SAFETY: `uctx` is live. On any error below, dropping `mapped` unregisters the ring.
    let (mapped, offset) = unsafe { MappedQueue::insert(uctx, fresh)? };
    let mut mi = [0u8; layout::MMINFO_SIZE];
    resp::emit_mminfo(resp::MmInfo { offset, size }, &mut mi).ok_or(EINVAL)?;
    // SAFETY: copies to the calling process's memory; the helper faults safely.
    kernel::error::to_result(unsafe {
        bindings::rxe_sr_glue_copy_to_user(mi_addr, mi.as_ptr().cast(), mi.len())
    })?;
    // The old ring leaves the SRQ under the lock (with interrupts off), and its entries are
    // copied with the lock released: a ring may hold hundreds of MiB. Meanwhile the SRQ
    // looks empty to the receive path: a SEND arriving now gets an RNR NAK and is retried
    // (UD drops it), as with any empty SRQ. The stock provider holds its producer lock
    // across the call, so nothing is posted to the old ring meanwhile.
    let (old, q_old) = {
        let mut g = st.inner.lock();
        let SrqInner { ring, q, .. } = &mut *g;
        let cur = ring.as_ref().ok_or(EINVAL)?.queue();
        q.observe_producer(cur.load_producer())
            .map_err(|_| EINVAL)?;
        if q.count() > geo.max_wr {
            return Err(EINVAL);
        }
        (ring.take().ok_or(EINVAL)?, *q)
    };
    let pending = q_old.count();
    let (cur, new) = (old.queue(), mapped.queue());
    let mut slot = [0u8; MAX_RECV_WQE_BYTES];
    for n in 0..pending {
        if let Some(src) = q_old.nth(n) {
            let len = cur.read_slot(src, &mut slot);
            new.write_slot(n, slot.get(..len).unwrap_or(&[]));
        }
        if n % 256 == 255 {
            // SAFETY: process context (a verbs call), no lock held.
            unsafe { bindings::rxe_sr_glue_cond_resched() };
        }
    }
    new.publish_producer(pending);
    let fresh_q = FromClientQueue::with_indices(geo.queue.ring, 0, pending);
    let old = {
        let mut g = st.inner.lock();
        let SrqInner {
            ring,
            q,
            max_wr: depth,
            ..
        } = &mut *g;
        match fresh_q {
            Some(nq) => {
                *q = nq;
                *depth = geo.max_wr;
                *ring = Some(mapped);
                old
            }
            None => {
                // Cannot happen (pending <= max_wr < the new ring's size); keep the old ring.
                *ring = Some(old);
                return Err(EINVAL);
            }
        }
    };
    // The old ring's entry goes outside the lock; user space unmaps its pages.
    drop(old);
    Ok(())
}

/// Resizes a kernel SRQ, keeping its posted receives in order; refused below their number.
fn resize_kernel(st: &SrqState, max_wr: u32) -> Result {
    if max_wr == 0 || max_wr > MAX_SRQ_WR {
        return Err(EINVAL);
    }
    let mut fresh = kernel_srq(max_wr)?;
    {
        let mut g = st.inner.lock();
        let SrqInner {
            kernel,
            max_wr: depth,
            ..
        } = &mut *g;
        let k = kernel.as_mut().ok_or(EINVAL)?;
        if k.len() > fresh.capacity() {
            return Err(EINVAL);
        }
        k.drain_into(&mut fresh);
        core::mem::swap(k, &mut fresh);
        *depth = max_wr;
    }
    // The old FIFO is freed outside the lock.
    drop(fresh);
    Ok(())
}

/// `ib_device_ops.post_srq_recv`: a kernel consumer's receive WRs, validated into the SRQ
/// (user SRQs post through their ring). May run in atomic context. The first WR that cannot
/// be queued is returned in `bad_wr`.
///
/// # Safety
/// Called by the core with a live SRQ of ours, a valid WR chain and a writable `bad_wr`.
pub(crate) unsafe extern "C" fn post_srq_recv(
    ibsrq: *mut bindings::ib_srq,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(st) = (unsafe { state(ibsrq) }) else {
        return EINVAL.to_errno();
    };
    let mut g = st.inner.lock();
    match g.kernel.as_mut() {
        // SAFETY: per this function's contract.
        Some(k) => unsafe { super::qp::queue_recv_chain(wr, bad_wr, st.max_sge, k) },
        None => {
            // SAFETY: per this function's contract.
            unsafe { bad_wr.write(wr) };
            EINVAL.to_errno()
        }
    }
}

/// `ib_device_ops.query_srq`.
///
/// # Safety
/// Called by the core with a live SRQ of ours and a writable attribute block.
pub(crate) unsafe extern "C" fn query_srq(
    ibsrq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(st) = (unsafe { state(ibsrq) }) else {
        return EINVAL.to_errno();
    };
    let (limit, max_wr) = {
        let g = st.inner.lock();
        (g.limit, g.max_wr)
    };
    // SAFETY: writable per this function's contract.
    unsafe {
        attr.write(bindings::ib_srq_attr {
            max_wr,
            max_sge: st.max_sge,
            srq_limit: limit,
        })
    };
    0
}
