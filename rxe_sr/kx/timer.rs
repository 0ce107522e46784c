// SPDX-License-Identifier: GPL-2.0
//! A QP's timer (include/linux/timer.h and workqueue.h, through kx/c/work.c's
//! `struct rxe_sr_qp_timer`): a kernel timer that, when it fires, queues a work item calling
//! the owner's handler in process context. The transport arms it for its earliest deadline
//! (retransmission timeout, RNR delay); a kernel consumer's post_send kicks the work at once.

use kernel::ffi::c_void;
use kernel::prelude::*;
use kernel::time::Ktime;

use crate::kx::bindings;

/// The current time in microseconds (monotonic), the transport's clock.
pub(crate) fn now_us() -> u64 {
    // ktime_get() is monotonic and never negative.
    Ktime::ktime_get().to_ns().unsigned_abs() / 1000
}

/// What the timer's work calls, in process context, with the owner given to [`QpTimer::new`].
pub(crate) type TimerFn = unsafe extern "C" fn(owner: *mut c_void);

/// An owned QP timer; dropping it stops the timer for good and waits for its work.
///
/// # Invariants
/// The pointer is the live glue object `rxe_sr_glue_qp_timer_new` returned, freed only by
/// `drop`.
pub(crate) struct QpTimer(*mut bindings::rxe_sr_qp_timer);

// SAFETY: the glue object may be armed and freed from any process context.
unsafe impl Send for QpTimer {}
// SAFETY: arming (`mod_timer`) is safe concurrently from several contexts.
unsafe impl Sync for QpTimer {}

impl QpTimer {
    /// A timer whose work calls `handler(owner)`.
    ///
    /// # Safety
    /// `owner` must stay valid until the timer is dropped, and `handler` must be sound to
    /// call with it from process context at any time until then.
    pub(crate) unsafe fn new(handler: TimerFn, owner: *mut c_void) -> Result<QpTimer> {
        // SAFETY: allocates and initialises the glue object; the caller vouches for the
        // handler and its owner.
        let t = unsafe { bindings::rxe_sr_glue_qp_timer_new(Some(handler), owner) };
        if t.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: a live glue object, ours from here.
        Ok(QpTimer(t))
    }

    /// Arms (or re-arms) the timer for `deadline_us` ([`now_us`] time).
    pub(crate) fn arm(&self, deadline_us: u64) {
        // SAFETY: the object is live until drop.
        unsafe { bindings::rxe_sr_glue_qp_timer_arm(self.0, deadline_us) }
    }
}

impl QpTimer {
    /// Stops the timer for good and waits for its work (which may be running): afterwards
    /// neither runs again, and arming or kicking does nothing. Process context.
    pub(crate) fn shutdown(&self) {
        // SAFETY: the object is live until drop; shutting down twice is harmless.
        unsafe { bindings::rxe_sr_glue_qp_timer_shutdown(self.0) }
    }

    /// Queues the work now, without waiting for the timer (callable in atomic context).
    pub(crate) fn kick(&self) {
        // SAFETY: the object is live until drop.
        unsafe { bindings::rxe_sr_glue_qp_timer_kick(self.0) }
    }
}

impl Drop for QpTimer {
    fn drop(&mut self) {
        // SAFETY: ours, freed once; waits for a running work item.
        unsafe { bindings::rxe_sr_glue_qp_timer_free(self.0) }
    }
}
