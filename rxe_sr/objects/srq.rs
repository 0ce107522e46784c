// SPDX-License-Identifier: GPL-2.0
//! Shared receive queues' state, and taking a receive WQE from one.
//!
//! A user SRQ is a ring shared with the process, as a QP's receive queue is (the rxe
//! provider posts receives by writing slots and moving the producer index; there is no
//! system call). QPs created on the SRQ take their receive WQEs from it, under its lock
//! (lock order: QP, then SRQ). A kernel consumer's SRQ (nvmet-rdma's, for one) has no ring:
//! its receives wait in a FIFO. The lock disables interrupts, since kernel consumers post
//! from any context.

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::pin_init;
use kernel::prelude::*;

use crate::kx::ib_srq::Srq;
use crate::kx::rxe::mmap_queue::MappedQueue;
use crate::kx::spinlock::{new_irq_spinlock, IrqSpinLock};
use crate::objects::device::RxeSr;
use crate::objects::recv_queue::{take_from_ring, RecvFifo};
use crate::uabi::cqe::WcStatus;
use crate::uabi::queue::FromClientQueue;
use crate::uabi::recv_wqe::RecvWqe;

/// An rxe_sr shared receive queue.
pub(crate) type RoceSrq = Srq<RxeSr>;

/// What the lock guards: the ring and the kernel's view of its indices (user SRQs), or the
/// posted receives (kernel SRQs).
pub(crate) struct SrqInner {
    /// A user SRQ's ring (`None` for a kernel SRQ, and while a resize or the destroy takes
    /// it out).
    pub(crate) ring: Option<MappedQueue>,
    pub(crate) q: FromClientQueue,
    /// A kernel SRQ's posted receives.
    pub(crate) kernel: Option<RecvFifo>,
    /// IB_SRQ_LIMIT: when armed (non-zero) and fewer WQEs remain, the SRQ_LIMIT_REACHED
    /// event fires once and the limit disarms (IBTA 10.2.9.1).
    pub(crate) limit: u32,
    /// Depth (changes with a resize).
    pub(crate) max_wr: u32,
    /// Receive WQEs a QP took ahead and gave back unused (it failed or went): taken again
    /// before the ring's or the FIFO's, oldest first; at most [`RETURNED_MAX`].
    pub(crate) returned: RecvFifo,
}

/// Receive WQEs given back that an SRQ keeps at once; a QP that finds no room flushes the
/// WQE to its CQ instead (as for a QP on its own receive queue).
pub(crate) const RETURNED_MAX: u32 = 64;

/// The driver's data in each SRQ.
#[pin_data]
pub(crate) struct SrqState {
    #[pin]
    pub(crate) inner: IrqSpinLock<SrqInner>,
    /// SGEs per receive WQE.
    pub(crate) max_sge: u32,
    /// IB_EVENT_SRQ_LIMIT_REACHED is due: the receive path takes WQEs with a QP's lock held,
    /// so the event is raised later, by [`run_due`] (from the QP's `CqEvents`), without it.
    limit_due: AtomicBool,
}

impl SrqState {
    /// An SRQ with `inner` behind its lock.
    pub(crate) fn new(inner: SrqInner, max_sge: u32) -> impl PinInit<Self> {
        pin_init!(SrqState {
            inner <- new_irq_spinlock!(inner, "rxe_sr_srq"),
            max_sge,
            limit_due: AtomicBool::new(false),
        })
    }

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
                returned,
                ..
            } = &mut *g;
            let (taken, left) = if let Some(w) = returned.pop().flatten() {
                (Ok(w), 0)
            } else {
                match kernel {
                    // At most the depth, a u32.
                    Some(k) => (k.pop().flatten().map(Ok)?, k.len() as u32),
                    None => (take_from_ring(ring.as_ref(), q, self.max_sge)?, q.count()),
                }
            };
            // At most RETURNED_MAX.
            let left = left.saturating_add(returned.len() as u32);
            let fire = *limit != 0 && left < *limit;
            if fire {
                *limit = 0;
            }
            (taken, fire)
        };
        if fire {
            // Raised by run_due once the QP's lock is released: the consumer's handler may
            // post again, or modify the QP.
            self.limit_due.store(true, Ordering::Release);
        }
        Some(taken)
    }

    /// Takes back receive WQE `wqe`, which a QP took ahead and holds no data of yet (the
    /// QP failed or goes); false when there is no room for it (it is then flushed).
    pub(crate) fn give_back(&self, wqe: &RecvWqe) -> bool {
        self.inner.lock().returned.push(Some(*wqe)).is_ok()
    }
}

/// Raises the SRQ limit event if [`SrqState::take`] found it due. Called with no lock of
/// the driver's held.
pub(crate) fn run_due(srq: &RoceSrq) {
    if srq.limit_due.swap(false, Ordering::AcqRel) {
        srq.limit_event();
    }
}
