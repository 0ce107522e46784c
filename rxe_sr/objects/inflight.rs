// SPDX-License-Identifier: GPL-2.0
//! A device's in-flight budget in the kernel (the accounting is
//! `proto::rc::dev_inflight`'s): the PSNs in flight across the device's RC requesters, the
//! QPs waiting for room (a FIFO behind a spinlock), and each QP's part of it.
//!
//! A requester refused room stops sending and its QP is queued once. Whoever gives room
//! back (a QP's step settling what was acknowledged, or a QP leaving RTS) wakes the oldest
//! waiters the room lets start, through their work items; a woken QP that still finds no
//! room queues again. Nothing waits unwoken: a QP queues itself inside its own step, and
//! every step ends with a settle that wakes waiters if there is room by then.
//!
//! Lock order: a QP's lock, then the waiters' spinlock; QPs are looked up and kicked with
//! the spinlock released. The device (`objects::device`), which holds the QP table, gives
//! room back and wakes its waiters' QPs.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::sync::SpinLock;

use crate::proto::rc::dev_inflight::{wake_for_room, Inflight, Waiter};
use crate::uabi::queue::Fifo;

/// Largest `dev_inflight_psns`.
pub(crate) const MAX_BUDGET: u32 = 1 << 22;

/// QPs that can wait for room at once; one more finding the queue full is admitted
/// instead (never left waiting with nobody to wake it).
const MAX_WAITERS: usize = 16384;

/// Waiters woken per call at most (their QPs are kicked from a stack array, outside the
/// spinlock); the rest wait for the next settle.
const WAKE_BATCH: usize = 32;

/// A device's in-flight budget and the QPs waiting for room.
#[pin_data]
pub(crate) struct DeviceInflight {
    /// The PSNs in flight, and the budget.
    pub(crate) budget: Inflight,
    /// QPs refused room, oldest first.
    #[pin]
    waiters: SpinLock<Fifo<Waiter, KVVec<Waiter>>>,
    /// How many wait (read without the lock, to skip it when none do).
    waiting: AtomicU32,
}

/// A QP's part of its device's budget, outside the QP's lock (the waker reads it).
pub(crate) struct QpInflight {
    /// The QP is in the waiters' queue.
    queued: AtomicBool,
    /// The room promised to it when it was woken, until its next step.
    promised: AtomicU32,
}

impl QpInflight {
    pub(crate) const fn new() -> Self {
        QpInflight {
            queued: AtomicBool::new(false),
            promised: AtomicU32::new(0),
        }
    }

    /// Woken from the waiters' queue with `psns` PSNs of room promised to it: it may be
    /// queued again. (The waker then kicks the QP.)
    pub(crate) fn woken(&self, psns: u32) {
        self.promised.fetch_add(psns, Ordering::AcqRel);
        self.queued.store(false, Ordering::Release);
    }
}

/// The waiters' queue of a device with budget `budget` (checked at load).
pub(crate) fn waiter_slots(budget: u32) -> Result<KVVec<Waiter>> {
    let n = if budget == 0 { 1 } else { MAX_WAITERS };
    Ok(KVVec::from_elem(Waiter::default(), n, GFP_KERNEL)?)
}

impl DeviceInflight {
    /// A device's budget of `budget` PSNs (0: no bound), its waiters' queue in `slots`.
    pub(crate) fn new(budget: u32, slots: KVVec<Waiter>) -> impl PinInit<Self> {
        pin_init!(DeviceInflight {
            budget: Inflight::new(budget),
            waiters <- new_spinlock!(Fifo::new(slots), "rxe_sr_inflight_waiters"),
            waiting: AtomicU32::new(0),
        })
    }

    /// QPs waiting for room now.
    pub(crate) fn waiters(&self) -> u32 {
        u32::try_from(self.waiters.lock().len()).unwrap_or(u32::MAX)
    }

    /// Admits a message of `psns` PSNs from QP `qpn`, or queues the QP (once) to be woken
    /// when there is room and returns false. With the queue full it admits the message.
    pub(crate) fn admit_or_wait(&self, qp: &QpInflight, qpn: u32, psns: u32) -> bool {
        if self.budget.admit(psns) {
            return true;
        }
        if qp.queued.swap(true, Ordering::AcqRel) {
            return false;
        }
        if self.waiters.lock().push(Waiter { qpn, psns }).is_ok() {
            self.waiting.fetch_add(1, Ordering::AcqRel);
            return false;
        }
        qp.queued.store(false, Ordering::Release);
        self.budget.add(psns);
        true
    }

    /// A QP's step ended: it held `held` PSNs before (as last settled), was admitted
    /// `taken` since, and holds `now` (0 out of RTS). The room promised to the QP when it
    /// was woken ends. (What it gave back is room: the caller wakes waiters for it.)
    pub(crate) fn settle(&self, qp: &QpInflight, held: &mut u32, taken: u32, now: u32) {
        self.budget.settle(held, taken, now);
        self.budget.woken_ran(qp.promised.swap(0, Ordering::AcqRel));
    }

    /// A QP's transport is reset, failed or destroyed holding `held` PSNs: they go back.
    /// (The caller wakes waiters for them.)
    pub(crate) fn give_back(&self, held: &mut u32) {
        self.budget.settle(held, 0, 0);
    }

    /// A QP is destroyed: the room promised to it, if it was woken and never ran, ends.
    /// (The caller wakes waiters for it.)
    pub(crate) fn forget(&self, qp: &QpInflight) {
        self.budget.woken_ran(qp.promised.swap(0, Ordering::AcqRel));
    }

    /// Wakes the oldest waiters the room lets start ([`wake_for_room`]), up to
    /// [`WAKE_BATCH`] at a time: `kick` wakes a waiter's QP (see [`QpInflight::woken`]),
    /// with the spinlock released, and is false when the QP is gone (its room goes back).
    pub(crate) fn wake(&self, mut kick: impl FnMut(Waiter) -> bool) {
        if self.waiting.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut batch = [Waiter::default(); WAKE_BATCH];
        let mut n = 0;
        {
            let mut q = self.waiters.lock();
            wake_for_room(&self.budget, &mut q, WAKE_BATCH, |w| {
                if let Some(slot) = batch.get_mut(n) {
                    *slot = w;
                    n += 1;
                }
            });
        }
        self.waiting.fetch_sub(n as u32, Ordering::AcqRel);
        for w in batch.get(..n).unwrap_or(&[]) {
            if !kick(*w) {
                self.budget.woken_ran(w.psns);
            }
        }
    }
}
