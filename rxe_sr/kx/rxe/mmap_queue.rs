// SPDX-License-Identifier: GPL-2.0
//! Queues shared with user space (include/uapi/rdma/rdma_user_rxe.h's
//! `struct rxe_queue_buf`, mapped through include/rdma/ib_verbs.h's `rdma_user_mmap_entry`): a vmalloc_user'd
//! buffer, a header (log2_elem_size, index_mask, producer and consumer indices on their own
//! cache lines) and 2^n slots, mapped into the process by `mmap` on the uverbs fd.
//!
//! Ownership: a user-visible queue lives in a [`QueueMmapEntry`], registered with the RDMA
//! core's mmap table and reference-counted there. Destroying the verbs object removes the
//! entry; the buffer is freed in `mmap_free`, once no `mmap` call can still be using it.
//! Pages already mapped stay valid for the process until it unmaps them (the page
//! references vm_insert_page took).

use core::mem::size_of;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::error::to_result;
use kernel::ffi::c_int;
use kernel::page::PAGE_SHIFT;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::ib_udata::UData;
use crate::uabi::{layout, queue::Ring};

/// The CPU's cache line size, which pads queue slots as rdma_rxe pads them: x86's
/// `cache_line_size()` (asm/processor.h), the boot CPU's `x86_cache_alignment`.
pub(crate) fn cache_line_size() -> u32 {
    // SAFETY: `boot_cpu_data` is exported and its cache alignment is set while the kernel
    // boots, before any module loads; a plain read of an `int`, as the C macro's.
    let bytes = unsafe { (*core::ptr::addr_of!(bindings::boot_cpu_data)).x86_cache_alignment };
    // The C conversion of the macro's `int` to the `u32` rdma_rxe uses.
    bytes as u32
}

/// A zeroed, vmalloc_user'd queue buffer with its header filled in. Freed on drop.
pub(crate) struct SharedQueue {
    buf: NonNull<u8>,
    ring: Ring,
}

// SAFETY: the buffer is plain memory owned by this value; concurrent access to the indices
// is through atomics, and callers serialise slot writes (the CQ lock).
unsafe impl Send for SharedQueue {}
// SAFETY: as above; `&self` methods only read the header or use atomics.
unsafe impl Sync for SharedQueue {}

impl SharedQueue {
    /// Allocates the buffer for `ring` and writes its header.
    pub(crate) fn new(ring: Ring) -> Result<Self> {
        let len = usize::try_from(ring.buf_size()).map_err(|_| EINVAL)?;
        // SAFETY: plain allocation; zeroed and suitable for remap_vmalloc_range.
        let raw = unsafe { bindings::rxe_sr_glue_vmalloc_user(len) }.cast::<u8>();
        let buf = NonNull::new(raw).ok_or(ENOMEM)?;
        let q = SharedQueue { buf, ring };
        q.index(layout::QUEUE_LOG2_ELEM_SIZE_OFF)
            .store(ring.log2_elem_size(), Ordering::Relaxed);
        q.index(layout::QUEUE_INDEX_MASK_OFF)
            .store(ring.index_mask(), Ordering::Relaxed);
        Ok(q)
    }

    /// The u32 at byte `off` of the header (one of the `layout::QUEUE_*_OFF` fields).
    fn index(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off + size_of::<u32>() <= layout::QUEUE_DATA_OFF);
        // SAFETY: `off` is one of the header's u32 fields, inside the buffer and 4-aligned
        // (vmalloc memory is page-aligned); the buffer lives as long as `self`.
        unsafe { &*self.buf.as_ptr().add(off).cast::<AtomicU32>() }
    }

    /// The whole buffer's length, as mapped.
    pub(crate) fn len(&self) -> usize {
        // `new` checked that the size fits a usize.
        self.ring.buf_size() as usize
    }

    /// The shared producer index as stored (acquire: slots written before it are visible).
    /// For a queue user space produces, it is untrusted: check it with `uabi::queue`.
    pub(crate) fn load_producer(&self) -> u32 {
        self.index(layout::QUEUE_PRODUCER_INDEX_OFF)
            .load(Ordering::Acquire)
    }

    /// The shared consumer index as stored (acquire); untrusted where user space consumes.
    pub(crate) fn load_consumer(&self) -> u32 {
        self.index(layout::QUEUE_CONSUMER_INDEX_OFF)
            .load(Ordering::Acquire)
    }

    /// Publishes the producer index (release: the slots written before it become visible).
    pub(crate) fn publish_producer(&self, v: u32) {
        self.index(layout::QUEUE_PRODUCER_INDEX_OFF)
            .store(v, Ordering::Release);
    }

    /// Publishes the consumer index (release: the slots read before it may be reused).
    pub(crate) fn publish_consumer(&self, v: u32) {
        self.index(layout::QUEUE_CONSUMER_INDEX_OFF)
            .store(v, Ordering::Release);
    }

    /// Copies the start of slot `index` into `out` (as much as both hold). Returns the bytes
    /// copied; 0 for an index outside the ring. User space may be writing the slot at the
    /// same time: callers parse the copy, never the slot.
    pub(crate) fn read_slot(&self, index: u32, out: &mut [u8]) -> usize {
        let Some(range) = self.ring.slot_range(index) else {
            return 0;
        };
        let n = out.len().min(range.len());
        // SAFETY: `slot_range` is inside the buffer (uabi's checked math), `out` a distinct buffer
        // of `n` bytes; C's memcpy, as user space may store meanwhile (a racy copy Rust can't do).
        unsafe {
            bindings::rxe_sr_glue_copy_shared(
                out.as_mut_ptr().cast(),
                self.buf.as_ptr().add(range.start).cast(),
                n,
            )
        };
        n
    }

    /// Copies `bytes` (at most a slot) into slot `index`; nothing for an index outside.
    pub(crate) fn write_slot(&self, index: u32, bytes: &[u8]) {
        let Some(range) = self.ring.slot_range(index) else {
            return;
        };
        let n = bytes.len().min(range.len());
        // SAFETY: as in `read_slot` (a C copy: user space may touch the slot meanwhile; a sane
        // consumer reads it only after the producer index, published after this copy).
        unsafe {
            bindings::rxe_sr_glue_copy_shared(
                self.buf.as_ptr().add(range.start).cast(),
                bytes.as_ptr().cast(),
                n,
            )
        };
    }
}

impl Drop for SharedQueue {
    fn drop(&mut self) {
        // SAFETY: allocated by vmalloc_user in `new`, freed once.
        unsafe { bindings::vfree(self.buf.as_ptr().cast()) };
    }
}

/// A shared queue registered in a ucontext's mmap table. `rdma` comes first: the core hands
/// back `&rdma` to `mmap` and `mmap_free`.
#[repr(C)]
pub(crate) struct QueueMmapEntry {
    rdma: bindings::rdma_user_mmap_entry,
    queue: SharedQueue,
}

/// A handle on a registered [`QueueMmapEntry`], held by the verbs object that owns the
/// queue. Dropping it unregisters the entry.
pub(crate) struct MappedQueue {
    entry: NonNull<QueueMmapEntry>,
}

// SAFETY: the entry is kept alive by the core's reference until the handle drops; the queue
// inside is `Sync`.
unsafe impl Send for MappedQueue {}
// SAFETY: as above.
unsafe impl Sync for MappedQueue {}

impl MappedQueue {
    /// Registers `queue` in `uctx`'s mmap table; returns the handle and the mmap offset user
    /// space passes to `mmap()`.
    ///
    /// # Safety
    /// `uctx` is a live ucontext of one of our devices.
    unsafe fn insert(uctx: *mut bindings::ib_ucontext, queue: SharedQueue) -> Result<(Self, u64)> {
        let len = queue.len();
        let boxed = KBox::new(
            QueueMmapEntry {
                rdma: Default::default(),
                queue,
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(boxed);
        // SAFETY: `raw` is a valid entry; on success the core owns a reference and calls
        // `mmap_free` when the last one goes; on failure it is still ours.
        let ret = unsafe { bindings::rdma_user_mmap_entry_insert(uctx, &mut (*raw).rdma, len) };
        if let Err(e) = to_result(ret) {
            // SAFETY: not registered: reclaim the box (dropping frees the buffer).
            drop(unsafe { KBox::from_raw(raw) });
            return Err(e);
        }
        // SAFETY: registered, alive until the handle drops; the core set its page offset
        // (rdma_user_mmap_get_offset's computation).
        let offset = (unsafe { (*raw).rdma.start_pgoff } as u64) << PAGE_SHIFT;
        // SAFETY: `raw` came from KBox::into_raw, so it is non-null.
        let entry = unsafe { NonNull::new_unchecked(raw) };
        Ok((MappedQueue { entry }, offset))
    }

    /// Registers `queue` in the user context of the call `udata` serves, for `mmap`;
    /// returns the handle (its drop unregisters the queue) and the offset user space passes
    /// to `mmap()`. EINVAL when the call has no user context.
    pub(crate) fn map(udata: &mut UData<'_>, queue: SharedQueue) -> Result<(Self, u64)> {
        let uctx = udata.ucontext().ok_or(EINVAL)?;
        // SAFETY: the context of a live uverbs call on one of our devices outlives the call.
        unsafe { Self::insert(uctx.as_ptr(), queue) }
    }

    /// The queue.
    pub(crate) fn queue(&self) -> &SharedQueue {
        // SAFETY: the core keeps the entry alive until our `drop` removes it.
        unsafe { &self.entry.as_ref().queue }
    }
}

impl Drop for MappedQueue {
    /// Unregisters the entry: no new mmap can find it; the core frees it (and the buffer)
    /// when its last reference goes.
    fn drop(&mut self) {
        // SAFETY: registered in `insert`, removed once: this handle is the only one.
        unsafe { bindings::rdma_user_mmap_entry_remove(&mut (*self.entry.as_ptr()).rdma) };
    }
}

/// `ib_device_ops.mmap`: maps a queue into the calling process.
///
/// # Safety
/// Called by uverbs with a live ucontext of ours and the vma being set up.
pub(crate) unsafe extern "C" fn mmap(
    uctx: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    // SAFETY: per this function's contract; returns a referenced entry or null.
    let rdma = unsafe { bindings::rdma_user_mmap_entry_get(uctx, vma) };
    if rdma.is_null() {
        return EINVAL.to_errno();
    }
    let entry = rdma.cast::<QueueMmapEntry>();
    // SAFETY: every entry inserted is a QueueMmapEntry (rdma first), kept alive with its buffer
    // by the reference taken above; remap_vmalloc_range checks the vma fits the allocation.
    let ret = unsafe { bindings::remap_vmalloc_range(vma, (*entry).queue.buf.as_ptr().cast(), 0) };
    // SAFETY: drops the reference taken above.
    unsafe { bindings::rdma_user_mmap_entry_put(rdma) };
    ret
}

/// `ib_device_ops.mmap_free`: the last reference on an entry went.
///
/// # Safety
/// Called by the core once per inserted entry.
pub(crate) unsafe extern "C" fn mmap_free(rdma: *mut bindings::rdma_user_mmap_entry) {
    // SAFETY: the entry was a KBox<QueueMmapEntry> turned into a raw pointer in `insert`.
    drop(unsafe { KBox::from_raw(rdma.cast::<QueueMmapEntry>()) });
}
