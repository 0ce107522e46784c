// SPDX-License-Identifier: GPL-2.0
//! Completion queues: sizing, create and destroy, arming, resizing, and a kernel
//! consumer's polling (the CQ's state and posting are `objects::cq`).
//!
//! A user CQ is a ring shared with user space (uabi::queue); user space reads the slot size
//! from the queue header.

use kernel::prelude::*;

use crate::kx::ib_cq::CqDriver;
use crate::kx::ib_cq::{self, CqInitAttr, CqNotify, NetworkHdr, Wc, WcArray};
use crate::kx::ib_device::Device;
use crate::kx::ib_udata::UData;
use crate::kx::rxe::mmap_queue::{cache_line_size, MappedQueue, SharedQueue};
use crate::objects::cq::{kernel_cq, CqRing, CqState, RoceCq};
use crate::objects::device::RoceDevice;
use crate::objects::device::RxeSr;
use crate::objects::live;
use crate::uabi::cqe::{Completion, WcEx};
use crate::uabi::queue::{self, QueueGeometry, Ring, ToClientQueue};
use crate::uabi::send_wqe::NetworkType;
use crate::uabi::{layout, limits, resp};

/// Largest CQ depth: 2^20 - 1. rdma_rxe's 2^15 - 1 is too few for one CQ shared by many
/// QPs: perftest's `-q 1000` asks for 128 x 1000 entries with its default TX depth. A user
/// ring that deep takes 128 MiB (128-byte slots, the depth rounded up to a power of two),
/// charged to the creator's memory cgroup like every ring.
pub(crate) const MAX_CQE: i32 = (1 << 20) - 1;

/// Completions copied per IRQ-off stretch when a user CQ is resized (16 KiB of entries).
const RESIZE_CHUNK: u32 = 256;

/// Checks a requested depth against the device's limit and sizes the ring as rdma_rxe does
/// (the depth plus the slot kept empty, rounded up to a power of two; the usable depth is
/// `num_elem`).
pub(crate) fn geometry(cqe: u32, cache_line_size: u32) -> Result<QueueGeometry> {
    match i32::try_from(cqe) {
        Ok(n) if n > 0 && n <= MAX_CQE => {}
        _ => return Err(EINVAL),
    }
    queue::cq_geometry(cqe, cache_line_size).ok_or(EINVAL)
}

/// `create_cq`: counted against `max_cq` (ENOMEM past it); a kernel consumer's CQ keeps
/// its completions in a FIFO, a user CQ gets a ring mapped into the process.
pub(crate) fn create(
    dev: &RoceDevice,
    attr: &CqInitAttr,
    udata: Option<UData<'_>>,
) -> Result<(impl PinInit<CqState>, u32)> {
    if !limits::take(&dev.used.cqs, dev.used.max.cq) {
        return Err(ENOMEM);
    }
    let ring = (|| {
        if attr.flags != 0 {
            return Err(crate::kx::error::eopnotsupp());
        }
        let geo = geometry(attr.cqe, cache_line_size())?;
        let ring = match udata {
            // A kernel consumer's CQ (ib_alloc_cq and friends).
            None => CqRing::Kernel(kernel_cq(geo.num_elem)?),
            Some(u) => CqRing::User {
                queue: Some(user_ring(u, geo.ring)?),
                q: ToClientQueue::new(geo.ring),
            },
        };
        Ok((ring, geo.num_elem))
    })();
    match ring {
        Ok((ring, depth)) => {
            live::LIVE.cqs.inc();
            Ok((CqState::new(ring), depth))
        }
        Err(e) => {
            limits::give_back(&dev.used.cqs);
            Err(e)
        }
    }
}

/// A new CQ ring shared with user space, registered for mmap and described to it in
/// `struct rxe_create_cq_resp` (create and resize answer alike).
fn user_ring(mut udata: UData<'_>, ring: Ring) -> Result<MappedQueue> {
    let queue = SharedQueue::new(ring)?;
    let size = u32::try_from(queue.len()).map_err(|_| EINVAL)?;
    let (mapped, offset) = MappedQueue::map(&mut udata, queue)?;
    let mut out = [0u8; layout::CREATE_CQ_RESP_SIZE];
    resp::emit_create_cq_resp(resp::MmInfo { offset, size }, &mut out).ok_or(EINVAL)?;
    udata.respond(&out)?;
    Ok(mapped)
}

/// `destroy_cq`: a user ring's mmap entry is unregistered (outside the lock; user space
/// unmaps its pages).
pub(crate) fn destroy(dev: &RoceDevice, cq: &CqState) {
    let queue = match &mut *cq.ring.lock() {
        CqRing::User { queue, .. } => queue.take(),
        CqRing::Kernel(_) => None,
    };
    drop(queue);
    limits::give_back(&dev.used.cqs);
    live::LIVE.cqs.dec();
}

/// `req_notify_cq`: arms the completion event; with IB_CQ_REPORT_MISSED_EVENTS, true if
/// completions are already waiting.
pub(crate) fn req_notify(cq: &RoceCq, notify: CqNotify) -> bool {
    let waiting = cq.arm(notify.arm);
    notify.report_missed && waiting > 0
}

/// `resize_cq`: moves the CQ to a new ring of the new depth, carrying the completions not
/// yet polled over in order; user space (the rxe provider, holding its CQ lock) unmaps the
/// old ring and maps the new one from the returned offset. A depth below the number of
/// pending completions is refused, as rdma_rxe refuses it.
pub(crate) fn resize(cq: &RoceCq, cqe: u32, udata: Option<UData<'_>>) -> Result<u32> {
    let geo = geometry(cqe, cache_line_size())?;
    let Some(udata) = udata else {
        return resize_kernel(cq, geo.num_elem);
    };
    // Everything that may sleep happens before the lock: allocating and registering the new
    // ring, and telling user space where it is (user space ignores the answer if we fail;
    // on any error below, dropping `mapped` unregisters the new ring and the CQ keeps the
    // old one).
    let mapped = user_ring(udata, geo.ring)?;
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
        let mut ring = cq.ring.lock();
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
        if cqe < pending {
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
        crate::kx::sched::cond_resched();
    };
    // The old ring's entry goes outside the lock; user space unmaps its pages.
    drop(old);
    Ok(geo.num_elem)
}

/// Resizes a kernel CQ to `depth`, keeping its completions in order; refused below the
/// number waiting.
fn resize_kernel(cq: &RoceCq, depth: u32) -> Result<u32> {
    let mut fresh = kernel_cq(depth)?;
    {
        let mut ring = cq.ring.lock();
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
    Ok(depth)
}

/// `poll_cq`: a kernel consumer takes completions, oldest first. (User CQs are polled in
/// user space; the core never calls this for them, and it finds nothing.)
pub(crate) fn poll(cq: &RoceCq, out: &mut WcArray<'_>) {
    let mut ring = cq.ring.lock();
    let CqRing::Kernel(f) = &mut *ring else {
        return;
    };
    while !out.is_full() {
        let Some(k) = f.pop() else {
            break;
        };
        out.push(&kernel_wc(&k.c), k.qp);
    }
}

/// A completion as a kernel consumer reads it (the status, opcode and flag values of
/// `struct ib_wc` are the uverbs ABI's).
fn kernel_wc(c: &Completion) -> Wc {
    Wc {
        wr_id: c.wr_id,
        status: c.status.to_uapi(),
        opcode: c.opcode.to_uapi(),
        vendor_err: c.vendor_err,
        byte_len: c.byte_len,
        ex: match c.ex {
            WcEx::None => ib_cq::WcEx::None,
            WcEx::Imm(bytes) => ib_cq::WcEx::Imm(bytes),
            WcEx::InvalidateRkey(rkey) => ib_cq::WcEx::InvalidateRkey(rkey),
        },
        src_qp: c.src_qp,
        wc_flags: c.wc_flags.0,
        pkey_index: c.pkey_index,
        slid: c.slid,
        sl: c.sl,
        dlid_path_bits: c.dlid_path_bits,
        port_num: c.port_num,
        network: c.network.map(|n| match n {
            NetworkType::Ipv4 => NetworkHdr::Ipv4,
            NetworkType::Ipv6 => NetworkHdr::Ipv6,
        }),
    }
}

impl CqDriver for RxeSr {
    type Cq = CqState;

    fn create_cq(
        dev: &Device<Self>,
        attr: &CqInitAttr,
        udata: Option<UData<'_>>,
    ) -> Result<(impl PinInit<CqState>, u32)> {
        crate::verbs::cq::create(dev, attr, udata)
    }

    fn destroy_cq(dev: &Device<Self>, cq: &CqState) {
        crate::verbs::cq::destroy(dev, cq);
    }

    fn req_notify_cq(cq: &RoceCq, notify: CqNotify) -> bool {
        crate::verbs::cq::req_notify(cq, notify)
    }

    fn resize_cq(cq: &RoceCq, cqe: u32, udata: Option<UData<'_>>) -> Result<u32> {
        crate::verbs::cq::resize(cq, cqe, udata)
    }

    fn poll_cq(cq: &RoceCq, out: &mut WcArray<'_>) {
        crate::verbs::cq::poll(cq, out);
    }
}
