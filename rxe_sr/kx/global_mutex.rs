// SPDX-License-Identifier: GPL-2.0
//! The module's global mutex (include/linux/mutex.h, through helpers/mutex.c's statically initialised
//! `rxe_sr_global_mutex`), for module-wide state no object owns: 6.12's kernel crate has no
//! `global_lock!`.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

use crate::kx::bindings;

/// A `T` guarded by the module's global mutex.
///
/// Every `GlobalMutex` is guarded by the same kernel mutex: never take one while holding
/// another (that deadlocks, as lockdep would report).
///
/// # Invariants
/// `data` is only reached through a [`GlobalGuard`], which exists only while the global
/// mutex is held by its thread.
pub(crate) struct GlobalMutex<T> {
    data: UnsafeCell<T>,
}

// SAFETY: every access to `data` is serialised by the global mutex (invariant); `T: Send`
// lets whichever thread holds it use the value.
unsafe impl<T: Send> Sync for GlobalMutex<T> {}

impl<T> GlobalMutex<T> {
    /// A value to keep in a `static`.
    pub(crate) const fn new(data: T) -> Self {
        GlobalMutex {
            data: UnsafeCell::new(data),
        }
    }

    /// Takes the global mutex (sleeps: process context only).
    pub(crate) fn lock(&self) -> GlobalGuard<'_, T> {
        // SAFETY: a statically initialised mutex, released by the guard's drop in this
        // thread.
        unsafe { bindings::rxe_sr_glue_global_lock() };
        // INVARIANT: the mutex is held from here until the guard drops.
        GlobalGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }
}

/// The global mutex held, giving access to one [`GlobalMutex`]'s value.
pub(crate) struct GlobalGuard<'a, T> {
    lock: &'a GlobalMutex<T>,
    /// A mutex is released by the thread that took it.
    _not_send: PhantomData<*mut ()>,
}

impl<T> Deref for GlobalGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the mutex is held (the type invariant), so no other reference exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for GlobalGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the mutex is held (the type invariant), so no other reference exists.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for GlobalGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: taken in `lock` by this thread (the guard is not `Send`).
        unsafe { bindings::rxe_sr_glue_global_unlock() };
    }
}
