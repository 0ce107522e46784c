// SPDX-License-Identifier: GPL-2.0
//! Completion queues' state, and posting a completion to one.
//!
//! A user CQ is a ring shared with the process (`struct ib_uverbs_wc` slots). A kernel
//! consumer's CQ (no udata: ib_mad, ib_cm, ULPs) keeps its completions in a FIFO until the
//! consumer polls them as `struct ib_wc` through `poll_cq`.
//!
//! Locking: completions are produced in process context (the transport runs in work
//! items), but kernel consumers poll and re-arm from any context, softirq included, so the
//! lock disables interrupts. The consumer's callbacks run later, without the lock and
//! without the posting QP's lock ([`run_due`]).

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::pin_init;
use kernel::prelude::*;

use crate::kx::ib_cq::{Cq, CqArm, WcQp};
use crate::kx::rxe::mmap_queue::MappedQueue;
use crate::kx::spinlock::{new_irq_spinlock, IrqSpinLock};
use crate::objects::device::RxeSr;
use crate::uabi::cqe::{emit_uverbs_wc, Completion, WcStatus};
use crate::uabi::layout;
use crate::uabi::queue::{Fifo, ToClientQueue};

/// An rxe_sr completion queue.
pub(crate) type RoceCq = Cq<RxeSr>;

/// A completion waiting in a kernel CQ, with the QP it names (`ib_wc.qp`).
#[derive(Clone, Copy)]
pub(crate) struct KernelWc {
    pub(crate) c: Completion,
    pub(crate) qp: WcQp,
}

const NO_WC: KernelWc = KernelWc {
    c: Completion::zeroed(0, 0, WcStatus::Success),
    qp: WcQp::NONE,
};

/// A kernel CQ's completions, oldest first.
pub(crate) type KernelCq = Fifo<KernelWc, KVVec<KernelWc>>;

/// An empty kernel CQ of `depth` entries.
pub(crate) fn kernel_cq(depth: u32) -> Result<KernelCq> {
    let n = usize::try_from(depth).map_err(|_| EINVAL)?;
    Ok(Fifo::new(KVVec::from_elem(NO_WC, n, GFP_KERNEL)?))
}

/// Where a CQ's completions wait.
pub(crate) enum CqRing {
    /// A user CQ: the ring shared with the process and the kernel's view of its indices
    /// (the kernel produces; user space consumes). `queue` is `None` only while a failed
    /// resize or the destroy takes it out.
    User {
        queue: Option<MappedQueue>,
        q: ToClientQueue,
    },
    /// A kernel consumer's CQ.
    Kernel(KernelCq),
}

/// `notify`: armed for the next solicited completion.
const ARM_SOLICITED: u32 = 1;
/// `notify`: armed for the next completion.
const ARM_NEXT_COMP: u32 = 2;

/// The completion handler is due.
const DUE_COMP: u32 = 1;
/// IB_EVENT_CQ_ERR is due (a completion did not fit).
const DUE_ERR: u32 = 2;

/// The driver's data in each CQ.
#[pin_data]
pub(crate) struct CqState {
    /// The completions.
    #[pin]
    pub(crate) ring: IrqSpinLock<CqRing>,
    /// What req_notify_cq armed ([`ARM_SOLICITED`], [`ARM_NEXT_COMP`]).
    notify: AtomicU32,
    /// Consumer callbacks due ([`DUE_COMP`], [`DUE_ERR`]): a posting path holds its QP's
    /// lock, so the callbacks run later, from [`run_due`], once the lock is released (a
    /// consumer's handler may call back into the QP).
    due: AtomicU32,
}

impl CqState {
    /// A CQ whose completions wait in `ring`.
    pub(crate) fn new(ring: CqRing) -> impl PinInit<Self> {
        pin_init!(CqState {
            ring <- new_irq_spinlock!(ring, "rxe_sr_cq"),
            notify: AtomicU32::new(0),
            due: AtomicU32::new(0),
        })
    }

    /// Arms the completion event; returns how many completions are already waiting.
    pub(crate) fn arm(&self, arm: Option<CqArm>) -> u32 {
        let mut ring = self.ring.lock();
        let bits = match arm {
            Some(CqArm::Solicited) => ARM_SOLICITED,
            Some(CqArm::NextComp) => ARM_NEXT_COMP,
            None => 0,
        };
        self.notify.fetch_or(bits, Ordering::Relaxed);
        match &mut *ring {
            // A consumer index user space mangled counts as "nothing waiting".
            CqRing::User { queue: Some(m), q } => {
                q.observe_consumer(m.queue().load_consumer()).unwrap_or(0)
            }
            CqRing::User { queue: None, .. } => 0,
            // At most the CQ's depth, a u32.
            CqRing::Kernel(f) => f.len() as u32,
        }
    }

    /// Posts a completion of QP `qp` and makes the completion event due if it is armed for
    /// it (`solicited`: the message asked for an event). A full CQ (or one whose consumer
    /// index user space corrupted) refuses the completion (EBUSY) and makes
    /// IB_EVENT_CQ_ERR due, as rdma_rxe does. The events run from [`run_due`].
    pub(crate) fn post(&self, c: &Completion, qp: WcQp, solicited: bool) -> Result {
        let mut wc = [0u8; layout::UVERBS_WC_SIZE];
        emit_uverbs_wc(c, &mut wc).map_err(|_| EINVAL)?;
        let posted = {
            let mut ring = self.ring.lock();
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
                CqRing::Kernel(f) => f.push(KernelWc { c: *c, qp }).is_ok(),
            }
        };
        if !posted {
            self.due.fetch_or(DUE_ERR, Ordering::AcqRel);
            return Err(EBUSY);
        }
        let armed = self.notify.load(Ordering::Relaxed);
        let fire = armed & ARM_NEXT_COMP != 0 || (solicited && armed & ARM_SOLICITED != 0);
        if fire && self.notify.swap(0, Ordering::Relaxed) != 0 {
            self.due.fetch_or(DUE_COMP, Ordering::AcqRel);
        }
        Ok(())
    }
}

/// Runs the consumer callbacks due on `cq` (completion handler, CQ error event). Called
/// with no lock of the driver's held.
pub(crate) fn run_due(cq: &RoceCq) {
    let due = cq.due.swap(0, Ordering::AcqRel);
    if due & DUE_ERR != 0 {
        cq.error_event();
    }
    if due & DUE_COMP != 0 {
        cq.comp_handler();
    }
}
