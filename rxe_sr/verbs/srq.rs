// SPDX-License-Identifier: GPL-2.0
//! Shared receive queues: create and destroy, modify (resize, limit), query, and a kernel
//! consumer's posting (the SRQ's state and taking WQEs are `objects::srq`). Resizing moves
//! the posted WQEs to a new ring, which the provider maps in place of the old one (as for
//! CQs).

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;

use crate::kx::ib_device::Device;
use crate::kx::ib_srq::SrqDriver;
use crate::kx::ib_srq::{SrqAttr, SrqAttrMask};
use crate::kx::ib_udata::UData;
use crate::kx::ib_wr::RecvWrList;
use crate::kx::rxe::mmap_queue::{cache_line_size, MappedQueue, SharedQueue};
use crate::objects::device::RoceDevice;
use crate::objects::device::RxeSr;
use crate::objects::live;
use crate::objects::recv_queue::recv_fifo;
use crate::objects::srq::{RoceSrq, SrqInner, SrqState, RETURNED_MAX};
use crate::uabi::limits::{self, MAX_RECV_WQE_BYTES, RXE_MAX_SRQ_SGE};
use crate::uabi::queue::{self, FromClientQueue, RqGeometry};
use crate::uabi::{layout, resp};
use crate::verbs::kernel_wr;

/// Largest SRQ depth (the device's `max_srq_wr`).
pub(crate) const MAX_SRQ_WR: u32 = 1 << 20;

/// WQEs copied between two chances for other tasks to run, when a ring is resized.
const RESIZE_CHUNK: u32 = 256;

/// Numbers handed out as `srq_num` (reported to user space; XRC would route by it).
static NEXT_SRQ_NUM: AtomicU32 = AtomicU32::new(1);

/// The ring geometry for `max_wr` WQEs of `max_sge` SGEs, both within the device's limits.
fn geometry(max_wr: u32, max_sge: u32) -> Result<RqGeometry> {
    if max_wr == 0 || max_wr > MAX_SRQ_WR || max_sge > RXE_MAX_SRQ_SGE {
        return Err(EINVAL);
    }
    queue::srq_geometry(max_wr, max_sge, cache_line_size()).ok_or(EINVAL)
}

/// `create_srq`: counted against `max_srq` (ENOMEM past it); a kernel consumer's SRQ keeps
/// its receives in a FIFO, a user SRQ gets a ring mapped into the process.
pub(crate) fn create(
    dev: &RoceDevice,
    attr: &SrqAttr,
    udata: Option<UData<'_>>,
) -> Result<(impl PinInit<SrqState>, SrqAttr)> {
    if !limits::take(&dev.used.srqs, dev.used.max.srq) {
        return Err(ENOMEM);
    }
    let made = (|| {
        let geo = geometry(attr.max_wr, attr.max_sge)?;
        if attr.srq_limit > geo.max_wr {
            return Err(EINVAL);
        }
        let (ring, kernel) = match udata {
            None => (None, Some(recv_fifo(geo.max_wr)?)),
            Some(u) => (Some(user_ring(u, &geo)?), None),
        };
        let inner = SrqInner {
            ring,
            q: FromClientQueue::new(geo.queue.ring),
            kernel,
            limit: attr.srq_limit,
            max_wr: geo.max_wr,
            returned: recv_fifo(RETURNED_MAX)?,
        };
        let got = SrqAttr {
            max_wr: geo.max_wr,
            max_sge: geo.max_sge,
            srq_limit: attr.srq_limit,
        };
        Ok((SrqState::new(inner, geo.max_sge), got))
    })();
    match made {
        Ok(made) => {
            live::LIVE.srqs.inc();
            Ok(made)
        }
        Err(e) => {
            limits::give_back(&dev.used.srqs);
            Err(e)
        }
    }
}

/// A user SRQ's ring, registered for mmap and described to user space in `struct
/// rxe_create_srq_resp`.
fn user_ring(mut udata: UData<'_>, geo: &RqGeometry) -> Result<MappedQueue> {
    let shared = SharedQueue::new(geo.queue.ring)?;
    let size = u32::try_from(shared.len()).map_err(|_| EINVAL)?;
    let (ring, offset) = MappedQueue::map(&mut udata, shared)?;
    let srq_num = NEXT_SRQ_NUM.fetch_add(1, Ordering::Relaxed) & 0x00ff_ffff;
    let mut out = [0u8; layout::CREATE_SRQ_RESP_SIZE];
    resp::emit_create_srq_resp(resp::MmInfo { offset, size }, srq_num, &mut out).ok_or(EINVAL)?;
    udata.respond(&out)?;
    Ok(ring)
}

/// `destroy_srq`: a user ring's mmap entry is unregistered (outside the lock).
pub(crate) fn destroy(dev: &RoceDevice, srq: &SrqState) {
    let ring = srq.inner.lock().ring.take();
    drop(ring);
    limits::give_back(&dev.used.srqs);
    live::LIVE.srqs.dec();
}

/// `modify_srq`: IB_SRQ_MAX_WR resizes (see [`resize`]), IB_SRQ_LIMIT arms the limit event
/// (checked against the new depth when both are given).
pub(crate) fn modify(
    srq: &RoceSrq,
    attr: &SrqAttr,
    mask: SrqAttrMask,
    udata: Option<UData<'_>>,
) -> Result {
    if mask.limit {
        let depth = if mask.max_wr {
            attr.max_wr
        } else {
            srq.inner.lock().max_wr
        };
        if attr.srq_limit > depth {
            return Err(EINVAL);
        }
    }
    if mask.max_wr {
        match udata {
            Some(u) => resize(srq, attr.max_wr, u)?,
            None => resize_kernel(srq, attr.max_wr)?,
        }
    }
    if mask.limit {
        srq.inner.lock().limit = attr.srq_limit;
    }
    Ok(())
}

/// Moves a user SRQ to a new ring of depth `max_wr`, carrying the posted WQEs over in
/// order. The new ring's `struct mminfo` goes to the user address in `struct
/// rxe_modify_srq_cmd`; the provider, holding its SRQ lock, then maps it in place of the
/// old one. A depth below the number of posted WQEs is refused, as rdma_rxe refuses it.
fn resize(srq: &RoceSrq, max_wr: u32, mut udata: UData<'_>) -> Result {
    let mut cmd = [0u8; layout::MODIFY_SRQ_CMD_SIZE];
    udata.read(&mut cmd)?;
    let mi_addr = resp::parse_modify_srq_cmd(&cmd).ok_or(EINVAL)?;
    let geo = geometry(max_wr, srq.max_sge)?;
    // Everything that may sleep or fault happens before the lock. On any error below,
    // dropping `mapped` unregisters the new ring.
    let fresh = SharedQueue::new(geo.queue.ring)?;
    let size = u32::try_from(fresh.len()).map_err(|_| EINVAL)?;
    let (mapped, offset) = MappedQueue::map(&mut udata, fresh)?;
    let mut mi = [0u8; layout::MMINFO_SIZE];
    resp::emit_mminfo(resp::MmInfo { offset, size }, &mut mi).ok_or(EINVAL)?;
    udata.write_user(mi_addr, &mi)?;
    // The old ring leaves the SRQ under the lock (with interrupts off), and its entries are
    // copied with the lock released: a ring may hold hundreds of MiB. Meanwhile the SRQ
    // looks empty to the receive path: a SEND arriving now gets an RNR NAK and is retried
    // (UD drops it), as with any empty SRQ. The stock provider holds its producer lock
    // across the call, so nothing is posted to the old ring meanwhile.
    let (old, q_old) = {
        let mut g = srq.inner.lock();
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
        if n % RESIZE_CHUNK == RESIZE_CHUNK - 1 {
            crate::kx::sched::cond_resched();
        }
    }
    new.publish_producer(pending);
    let fresh_q = FromClientQueue::with_indices(geo.queue.ring, 0, pending);
    let old = {
        let mut g = srq.inner.lock();
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
fn resize_kernel(srq: &RoceSrq, max_wr: u32) -> Result {
    if max_wr == 0 || max_wr > MAX_SRQ_WR {
        return Err(EINVAL);
    }
    let mut fresh = recv_fifo(max_wr)?;
    {
        let mut g = srq.inner.lock();
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

/// `query_srq`.
pub(crate) fn query(srq: &RoceSrq) -> SrqAttr {
    let g = srq.inner.lock();
    SrqAttr {
        max_wr: g.max_wr,
        max_sge: srq.max_sge,
        srq_limit: g.limit,
    }
}

/// `post_srq_recv`: a kernel consumer's receive WRs, validated into the SRQ (user SRQs
/// post through their ring). May run in atomic context.
pub(crate) fn post_recv(srq: &RoceSrq, wrs: RecvWrList<'_>) -> Result {
    let mut g = srq.inner.lock();
    match g.kernel.as_mut() {
        Some(k) => wrs.post_each(|wr_id, sges| {
            let wqe = kernel_wr::recv_wqe(wr_id, sges, srq.max_sge)?;
            k.push(Some(wqe)).map_err(|_| ENOMEM)
        }),
        None => Err(wrs.refuse(EINVAL)),
    }
}

impl SrqDriver for RxeSr {
    type Srq = SrqState;

    fn create_srq(
        dev: &Device<Self>,
        attr: &SrqAttr,
        udata: Option<UData<'_>>,
    ) -> Result<(impl PinInit<SrqState>, SrqAttr)> {
        crate::verbs::srq::create(dev, attr, udata)
    }

    fn destroy_srq(dev: &Device<Self>, srq: &SrqState) {
        crate::verbs::srq::destroy(dev, srq);
    }

    fn modify_srq(
        srq: &RoceSrq,
        attr: &SrqAttr,
        mask: SrqAttrMask,
        udata: Option<UData<'_>>,
    ) -> Result {
        crate::verbs::srq::modify(srq, attr, mask, udata)
    }

    fn query_srq(srq: &RoceSrq) -> SrqAttr {
        crate::verbs::srq::query(srq)
    }

    fn post_srq_recv(srq: &RoceSrq, wrs: RecvWrList<'_>) -> Result {
        crate::verbs::srq::post_recv(srq, wrs)
    }
}
