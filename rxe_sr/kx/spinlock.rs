// SPDX-License-Identifier: GPL-2.0
//! A spinlock that disables local interrupts while held (include/linux/spinlock.h,
//! `spin_lock_irqsave`), as a
//! `kernel::sync::Lock` backend: 6.12's kernel crate has none.
//!
//! Kernel verbs consumers call post_send, post_recv, poll_cq and req_notify_cq from any
//! context (ib_mad posts under its own spinlock with interrupts off; a consumer polling from
//! softirq may interrupt our work item), so the CQ and the kernel work queues are guarded by
//! this lock rather than a plain spinlock.

use kernel::ffi::{c_char, c_ulong};

use crate::kx::bindings;

/// The `spin_lock_irqsave` backend; the guard keeps the saved interrupt flags.
pub(crate) struct IrqSpinLockBackend;

/// A spinlock taken with interrupts disabled.
pub(crate) type IrqSpinLock<T> = kernel::sync::lock::Lock<T, IrqSpinLockBackend>;

/// An [`IrqSpinLock`] initialiser with a lock class of its own (as `new_spinlock!`).
macro_rules! new_irq_spinlock {
    ($inner:expr, $name:literal) => {
        $crate::kx::spinlock::IrqSpinLock::new(
            $inner,
            kernel::c_str!($name),
            kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_irq_spinlock;

// SAFETY: `spinlock_t` gives mutual exclusion; the guard state carries the flags
// `spin_lock_irqsave` saved, and `unlock` restores them, in the same context.
unsafe impl kernel::sync::lock::Backend for IrqSpinLockBackend {
    type State = kernel::bindings::spinlock_t;
    type GuardState = c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: the caller gives a writable lock and a name and key valid forever.
        unsafe { kernel::bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: an initialised lock (the caller's contract); the kernel crate's and our
        // bindgen's `spinlock_t` are the same C type.
        unsafe { bindings::rxe_sr_glue_spin_lock_irqsave(ptr.cast()) }
    }

    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: the caller holds the lock, taken by `lock`, which returned `flags`.
        unsafe { bindings::rxe_sr_glue_spin_unlock_irqrestore(ptr.cast(), *flags) }
    }
}
