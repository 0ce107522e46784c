// SPDX-License-Identifier: GPL-2.0
//! How far the device's receive work got: datagrams queued for it and datagrams it took,
//! counted. A QP whose retransmission or probe deadline passes while the receive queue
//! still holds datagrams waits until the work has taken those queued by then: one of them
//! may be the acknowledgment the deadline waits for (`proto::rc::timer_hold`).

use core::sync::atomic::{AtomicU64, Ordering};

use crate::proto::rc::timer_hold::RxProgress;

/// The receive queue's two counts.
pub(crate) struct RxMarks {
    queued: AtomicU64,
    taken: AtomicU64,
}

impl RxMarks {
    /// Nothing queued yet.
    pub(crate) const fn new() -> Self {
        RxMarks {
            queued: AtomicU64::new(0),
            taken: AtomicU64::new(0),
        }
    }

    /// A datagram went into the receive queue (softirq, or a loopback transmit).
    pub(crate) fn note_queued(&self) {
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// The receive work took a datagram out of the queue, and is done with it.
    pub(crate) fn note_taken(&self) {
        self.taken.fetch_add(1, Ordering::Release);
    }
}

impl RxProgress for RxMarks {
    /// The count of datagrams queued so far, while some of them wait.
    fn backlog_mark(&self) -> Option<u64> {
        let queued = self.queued.load(Ordering::Relaxed);
        (self.taken.load(Ordering::Acquire) < queued).then_some(queued)
    }

    fn passed(&self, mark: u64) -> bool {
        self.taken.load(Ordering::Acquire) >= mark
    }
}
