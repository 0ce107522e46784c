// SPDX-License-Identifier: GPL-2.0
//! An index table over the kernel's xarray (include/linux/xarray.h; 6.12's Rust crate has
//! none): allocates small integer indices for objects (MR and MW keys, QPNs, AH numbers)
//! and looks them up under the table's lock. [`IndexTable`] holds raw entries (objects
//! still owned elsewhere); [`XArray`] owns its entries.

use core::marker::PhantomData;
use core::sync::atomic::AtomicU32;
use kernel::error::to_result;
use kernel::ffi::c_void;
use kernel::prelude::*;
use kernel::types::{ForeignOwnable, Opaque};

use crate::kx::bindings;

/// An allocating xarray (indices from 1), pinned where it was initialised; its nodes are
/// freed on drop (by then its owner has erased every entry).
///
/// # Invariants
/// `xa` is an initialised xarray (`XA_FLAGS_ALLOC1`) for the table's whole life.
#[pin_data(PinnedDrop)]
pub(crate) struct IndexTable {
    #[pin]
    xa: Opaque<bindings::xarray>,
    /// Where cyclic allocation continues (updated by the xarray under its lock).
    next: AtomicU32,
}

impl IndexTable {
    /// An empty table, initialised in place.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(IndexTable {
            // INVARIANT: initialised here, before any use.
            // SAFETY: initialises the xarray in its final, pinned place.
            xa <- Opaque::ffi_init(|xa| unsafe { bindings::rxe_sr_glue_xa_init_alloc1(xa) }),
            next: AtomicU32::new(0),
        })
    }

    /// Stores `entry` at a free index in `min..=max` (cyclically, so indices are not
    /// reused at once) and returns the index.
    pub(crate) fn alloc(&self, entry: *mut c_void, min: u32, max: u32) -> Result<u32> {
        let mut id = 0u32;
        // SAFETY: the table was initialised (type invariant of a registered device); the
        // xarray serialises writers with its own lock.
        to_result(unsafe {
            bindings::rxe_sr_glue_xa_alloc_cyclic(
                self.xa.get(),
                &mut id,
                entry,
                min,
                max,
                self.next.as_ptr(),
            )
        })?;
        Ok(id)
    }

    /// Reserves a free index in `min..=max` (cyclically) with no entry yet: lookups see
    /// nothing there until [`IndexTable::publish`], so an object is never found half-built.
    pub(crate) fn reserve(&self, min: u32, max: u32) -> Result<u32> {
        self.alloc(core::ptr::null_mut(), min, max)
    }

    /// Stores `entry` at a reserved `index`, making it visible to lookups.
    pub(crate) fn publish(&self, index: u32, entry: *mut c_void) -> Result {
        let index = usize::try_from(index).map_err(|_| EINVAL)?;
        // SAFETY: as in `alloc`; the index is ours (reserved), so nothing is replaced.
        to_result(unsafe { bindings::rxe_sr_glue_xa_store(self.xa.get(), index, entry) })
    }

    /// Runs `f` on the entry at `index` (if any) with the table locked, so the entry cannot
    /// be erased, and hence freed by its destroy verb, until `f` returns. `f` must not
    /// sleep (the lock is a spinlock).
    pub(crate) fn with_entry<R>(&self, index: u32, f: impl FnOnce(*mut c_void) -> R) -> Option<R> {
        let index = usize::try_from(index).ok()?;
        // SAFETY: the table was initialised; lock and unlock pair up below.
        unsafe { bindings::rxe_sr_glue_xa_lock(self.xa.get()) };
        // SAFETY: a lookup in an initialised table.
        let p = unsafe { bindings::xa_load(self.xa.get(), index) };
        let r = if p.is_null() { None } else { Some(f(p)) };
        // SAFETY: locked above.
        unsafe { bindings::rxe_sr_glue_xa_unlock(self.xa.get()) };
        r
    }

    /// Removes the entry at `index`; returns what was stored there (null if nothing).
    pub(crate) fn erase(&self, index: u32) -> *mut c_void {
        // SAFETY: as in `alloc`.
        unsafe { bindings::xa_erase(self.xa.get(), usize::try_from(index).unwrap_or(usize::MAX)) }
    }
}

// SAFETY: the xarray serialises writers with its own lock, and lookups take it too
// (`with_entry`); the entries are opaque pointers whose owners synchronise their use.
unsafe impl Send for IndexTable {}
// SAFETY: as above.
unsafe impl Sync for IndexTable {}

#[pinned_drop]
impl PinnedDrop for IndexTable {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: initialised (type invariant) and no longer used; frees only the xarray's
        // own nodes (the entries belong to the owner, which erased them).
        unsafe { bindings::xa_destroy(self.xa.get()) };
    }
}

/// An index table whose entries are owned values (`KBox<U>` or `Arc<U>`): stored as their
/// foreign pointer, taken back when erased, and dropped with the table when still there.
///
/// Lookups run under the table's lock ([`XArray::with`]), so an entry cannot be erased and
/// dropped while a lookup borrows it; an `Arc` entry can be cloned out under it.
#[pin_data(PinnedDrop)]
pub(crate) struct XArray<T: ForeignOwnable> {
    #[pin]
    table: IndexTable,
    _owns: PhantomData<T>,
}

impl<T: ForeignOwnable> XArray<T> {
    /// An empty table, initialised in place.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(XArray {
            table <- IndexTable::new(),
            _owns: PhantomData,
        })
    }

    /// Reserves a free index in `min..=max` (cyclically) with no entry yet: lookups see
    /// nothing there until [`XArray::publish`] (or [`XArray::erase`] gives it back).
    pub(crate) fn reserve(&self, min: u32, max: u32) -> Result<u32> {
        self.table.reserve(min, max)
    }

    /// Stores `value` at a reserved `index`, making it visible to lookups. On failure the
    /// value is dropped and the index stays reserved.
    pub(crate) fn publish(&self, index: u32, value: T) -> Result {
        let p = value.into_foreign();
        self.table.publish(index, p.cast_mut()).inspect_err(|_| {
            // SAFETY: `p` came from `into_foreign` just above and was not stored.
            drop(unsafe { T::from_foreign(p) });
        })
    }

    /// Runs `f` on the entry at `index` (if any) under the table's lock: the entry is not
    /// erased until `f` returns. `f` must not sleep (the lock is a spinlock).
    pub(crate) fn with<R>(&self, index: u32, f: impl FnOnce(T::Borrowed<'_>) -> R) -> Option<R> {
        self.table.with_entry(index, |p| {
            // SAFETY: every non-null entry was stored by `publish` from `into_foreign`, and
            // the lock held around this closure keeps `erase` (which takes it back) out.
            f(unsafe { T::borrow(p) })
        })
    }

    /// Removes the entry (or the reservation) at `index`; returns the entry, if there was
    /// one.
    pub(crate) fn erase(&self, index: u32) -> Option<T> {
        let p = self.table.erase(index);
        // SAFETY: null, or an entry stored by `publish` that the erase just took out of the
        // table: no lookup borrows it any more (they run under the lock `erase` took).
        unsafe { T::try_from_foreign(p) }
    }
}

#[pinned_drop]
impl<T: ForeignOwnable> PinnedDrop for XArray<T> {
    fn drop(self: Pin<&mut Self>) {
        let mut index = 0usize;
        loop {
            // SAFETY: the table is initialised; `index` is where the search starts and is
            // set to the index found.
            let p = unsafe { bindings::rxe_sr_glue_xa_first(self.table.xa.get(), &mut index) };
            if p.is_null() {
                break;
            }
            // Erasing takes the entry out; dropping it gives the value back.
            drop(self.erase(u32::try_from(index).unwrap_or(u32::MAX)));
            if u32::try_from(index).is_err() {
                break;
            }
        }
        // The IndexTable's own drop frees the xarray's nodes.
    }
}

// SAFETY: the entries are owned `T`s, moved between threads only as the table is: sending
// or sharing the table sends or shares them (hence the bounds).
unsafe impl<T: ForeignOwnable + Send> Send for XArray<T> {}
// SAFETY: lookups hand out `T::Borrowed` to any thread holding `&XArray`, so `T` must be
// shareable as well as sendable (erase moves it to the erasing thread).
unsafe impl<T: ForeignOwnable + Send + Sync> Sync for XArray<T> {}
