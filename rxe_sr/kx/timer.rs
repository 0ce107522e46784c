// SPDX-License-Identifier: GPL-2.0
//! A QP's timer (include/linux/timer.h and workqueue.h, through kx/c/work.c's
//! `struct rxe_sr_qp_timer`, embedded in the QP): a kernel timer that, when it fires, queues
//! a work item calling the owner's handler in process context. The transport arms it for its earliest deadline
//! (retransmission timeout, RNR delay); a kernel consumer's post_send kicks the work at once.

use core::pin::Pin;
use kernel::ffi::c_void;
use kernel::prelude::*;
use kernel::time::Ktime;
use kernel::types::Opaque;

use crate::kx::bindings;

/// The current time in microseconds (monotonic), the transport's clock.
pub(crate) fn now_us() -> u64 {
    // ktime_get() is monotonic and never negative.
    Ktime::ktime_get().to_ns().unsigned_abs() / 1000
}

/// What the timer's work calls, in process context, with the owner given to [`QpTimer::new`].
pub(crate) type TimerFn = unsafe extern "C" fn(owner: *mut c_void);

/// A QP timer, embedded in its QP; dropping it stops the timer for good and waits for its
/// work.
///
/// # Invariants
/// `inner` is initialised by `rxe_sr_glue_qp_timer_init` and pinned (its work item points
/// to it) until `drop` shuts it down.
#[pin_data(PinnedDrop)]
pub(crate) struct QpTimer {
    #[pin]
    inner: Opaque<bindings::rxe_sr_qp_timer>,
}

// SAFETY: the timer may be armed and shut down from any process context.
unsafe impl Send for QpTimer {}
// SAFETY: arming (`mod_timer`) and queueing the work are safe concurrently from several
// contexts.
unsafe impl Sync for QpTimer {}

impl QpTimer {
    /// A timer whose work calls `handler(owner)`.
    ///
    /// # Safety
    /// `owner` must stay valid until the timer is dropped, and `handler` must be sound to
    /// call with it from process context at any time until then.
    pub(crate) unsafe fn new(handler: TimerFn, owner: *mut c_void) -> impl PinInit<Self> {
        // INVARIANT: initialised in place, in pinned memory.
        pin_init!(Self {
            inner <- Opaque::ffi_init(move |slot| {
                // SAFETY: `slot` is pinned memory for the timer; the caller vouches for
                // the handler and its owner.
                unsafe { bindings::rxe_sr_glue_qp_timer_init(slot, Some(handler), owner) }
            }),
        })
    }

    /// Arms (or re-arms) the timer for `deadline_us` ([`now_us`] time).
    pub(crate) fn arm(&self, deadline_us: u64) {
        // SAFETY: initialised until drop (type invariant).
        unsafe { bindings::rxe_sr_glue_qp_timer_arm(self.inner.get(), deadline_us) }
    }

    /// Stops the timer for good and waits for its work (which may be running): afterwards
    /// neither runs again, and arming or kicking does nothing. Process context.
    pub(crate) fn shutdown(&self) {
        // SAFETY: initialised until drop; shutting down twice is harmless.
        unsafe { bindings::rxe_sr_glue_qp_timer_shutdown(self.inner.get()) }
    }

    /// Queues the work now, without waiting for the timer (callable in atomic context).
    pub(crate) fn kick(&self) {
        // SAFETY: initialised until drop (type invariant).
        unsafe { bindings::rxe_sr_glue_qp_timer_kick(self.inner.get()) }
    }
}

#[pinned_drop]
impl PinnedDrop for QpTimer {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: initialised (type invariant); afterwards nothing uses the memory.
        unsafe { bindings::rxe_sr_glue_qp_timer_shutdown(self.inner.get()) }
    }
}
