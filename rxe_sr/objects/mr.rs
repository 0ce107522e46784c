// SPDX-License-Identifier: GPL-2.0
//! Memory regions' state: the keys' format, the rights a registration may grant, the memory
//! an MR covers and the copies in and out of it, and what an access needs of an MR (IBTA
//! 10.6.3). Access through a key on the device's tables is `objects::mr_access`.
//!
//! A user MR covers pinned user pages, or, registered for on-demand paging, a range of
//! the process whose pages are faulted in by the access that needs them; a DMA MR (every
//! kernel PD gets one, whose key is the PD's `local_dma_lkey`) covers kernel memory by
//! kernel virtual address; a
//! fast-registration MR (kernel ULPs) covers the blocks `map_mr_sg` gave it, under the key
//! a REG_MR chose, until LOCAL_INV or SEND with invalidate. A key is `index << 8 |
//! variant`: the index names the MR in the device's table (`verbs::mr`).

use core::sync::atomic::AtomicU32;
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::sync::{Arc, SpinLock};

use crate::kx::error;
use crate::kx::ib_mr::{KernelPages, KernelVa};
use crate::kx::ib_pd::PdId;
use crate::kx::ib_umem::UserPages;
use crate::kx::ib_umem_odp::{OdpMapped, OdpPages};
use crate::kx::ib_verbs::AccessFlags;
use crate::kx::skbuff::PayloadSink;

// Keys. A key is `index << 8 | variant`: the index names the MR in the device's table (what
// the responder looks up for an incoming R_Key, the requester for an L_Key), the low byte
// changes each time an index is reused, so a stale key from a freed MR does not match its
// successor (IBTA 10.6.3.1's "key" portion).

/// Largest MR index (rdma_rxe's: half of the 2^20 object space); the device reports
/// `max_mr` from the same figure.
pub(crate) const MAX_MR_INDEX: u32 = (1 << 19) - 1;
/// Smallest MR index (0 is never a valid key's index).
pub(crate) const MIN_MR_INDEX: u32 = 1;
/// Memory windows take the indices above the MRs' (as rdma_rxe), so a key's index tells
/// which table names it.
pub(crate) const MIN_MW_INDEX: u32 = MAX_MR_INDEX + 1;
/// Largest MW index.
pub(crate) const MAX_MW_INDEX: u32 = (1 << 20) - 1;

/// True when `key` names a memory window.
pub(crate) fn is_mw_key(key: u32) -> bool {
    key >> 8 >= MIN_MW_INDEX
}

/// The key of the MR at `index` with key variant `variant`.
pub(crate) fn key(index: u32, variant: u8) -> u32 {
    (index << 8) | u32::from(variant)
}

/// Access flags rxe_sr implements for user MRs. The optional range (relaxed ordering and
/// other hints) is accepted and ignored, as the uverbs ABI allows, and so is the hint that
/// the memory is on huge pages (pinned and copied page by page like any other). On-demand
/// paging is offered when the kernel has it (the core refuses it otherwise, from the
/// device's capabilities). FLUSH to global visibility may name the memory; FLUSH to
/// persistence may not (rxe_sr has no persistent memory to offer).
const SUPPORTED: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::FLUSH_GLOBAL)
    .union(AccessFlags::ON_DEMAND)
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC)
    .union(AccessFlags::MW_BIND)
    .union(AccessFlags::HUGETLB)
    .union(AccessFlags::OPTIONAL);

/// Checks the access flags of a registration; zero-based MRs and persistence flushes are
/// not offered, and say so with EOPNOTSUPP.
pub(crate) fn check_access(access: i32) -> Result<u32> {
    let access = AccessFlags::from_raw(access).ok_or(EINVAL)?;
    if !access.within(SUPPORTED) {
        return Err(error::eopnotsupp());
    }
    Ok(access.bits())
}

/// The memory an MR covers.
pub(crate) enum MrMemory {
    /// User memory, pinned.
    User(UserPages),
    /// User memory registered for on-demand paging (shared with the copies in flight).
    Odp(Arc<OdpPages>),
    /// A kernel PD's DMA MR: its addresses are kernel virtual addresses (its iova is 0).
    Dma(KernelVa),
    /// Fast registration: the blocks map_mr_sg mapped.
    Fast(KernelPages),
    /// Deregistered: nothing is reachable any more.
    Gone,
}

/// What the data path checks and uses, changed under the MR's lock.
pub(crate) struct MrInner {
    /// Its PD (the core sets the `ib_mr`'s only after we return; `ibv_rereg_mr` may change
    /// it).
    pub(crate) pd: PdId,
    /// The key in force (L_Key = R_Key); 0 until published.
    pub(crate) key: u32,
    /// First address and length of the registered range.
    pub(crate) iova: u64,
    pub(crate) length: u64,
    /// `IB_ACCESS_*` granted.
    pub(crate) access: u32,
    /// False for a fast-registration MR outside REG_MR .. invalidation, and once
    /// deregistered.
    pub(crate) valid: bool,
    /// Fast registration: the block size REG_MR registered.
    pub(crate) page_size: u64,
    pub(crate) memory: MrMemory,
}

/// The driver's data in each MR.
#[pin_data]
pub(crate) struct MrState {
    #[pin]
    pub(crate) inner: SpinLock<MrInner>,
    /// Memory windows bound to it: deregistration is refused while any is (as rdma_rxe's
    /// `num_mw`).
    pub(crate) bound_mws: AtomicU32,
}

impl MrState {
    /// An MR of `pd` over `memory` with rights `access` and range `[iova, iova + length)`,
    /// not yet published (no key). A fast-registration MR is not valid until a REG_MR.
    pub(crate) fn new(
        pd: PdId,
        memory: MrMemory,
        access: u32,
        iova: u64,
        length: u64,
    ) -> impl PinInit<Self, Error> {
        let valid = !matches!(memory, MrMemory::Fast(_));
        try_pin_init!(MrState {
            inner <- new_spinlock!(
                MrInner {
                    pd,
                    key: 0,
                    iova,
                    length,
                    access,
                    valid,
                    page_size: 0,
                    memory,
                },
                "rxe_sr_mr"
            ),
            bound_mws: AtomicU32::new(0),
        }? Error)
    }

    /// The key in force (0 before publication).
    pub(crate) fn key(&self) -> u32 {
        self.inner.lock().key
    }
}

impl MrInner {
    /// Copies `dst.len()` bytes at byte `off` of the registered range into `dst` (memory
    /// that stays put: an on-demand paging MR is copied through [`OdpMapped`]).
    fn read(&self, off: usize, dst: &mut [u8]) -> bool {
        match &self.memory {
            MrMemory::User(p) => p.read(off, dst),
            // `off` is the kernel virtual address (the iova is 0).
            MrMemory::Dma(k) => k.read(off as u64, dst),
            MrMemory::Fast(p) => p.read(self.page_size, self.iova, off, dst),
            MrMemory::Odp(_) | MrMemory::Gone => false,
        }
    }

    /// As [`Self::read`], `n` bytes appended to a datagram's payload.
    fn read_into(&self, off: usize, n: usize, dst: &mut PayloadSink<'_>) -> bool {
        match &self.memory {
            MrMemory::User(p) => p.read_into(off, n, dst),
            MrMemory::Dma(k) => k.read_into(off as u64, n, dst),
            MrMemory::Fast(p) => p.read_into(self.page_size, self.iova, off, n, dst),
            MrMemory::Odp(_) | MrMemory::Gone => false,
        }
    }

    fn write(&self, off: usize, src: &[u8]) -> bool {
        match &self.memory {
            MrMemory::User(p) => p.write(off, src),
            MrMemory::Dma(k) => k.write(off as u64, src),
            MrMemory::Fast(p) => p.write(self.page_size, self.iova, off, src),
            MrMemory::Odp(_) | MrMemory::Gone => false,
        }
    }

    /// The byte offset of `va` when the MR is valid, carries exactly `key` (L_Key and R_Key
    /// are the same), belongs to `pd` and covers `[va, va + len)`.
    pub(crate) fn offset_of(&self, pd: PdId, key: u32, va: u64, len: u64) -> Option<usize> {
        let end = va.checked_add(len)?;
        if self.pd != pd || !self.valid || self.key != key {
            return None;
        }
        if va < self.iova || end > self.iova.saturating_add(self.length) {
            return None;
        }
        usize::try_from(va - self.iova).ok()
    }
}

/// The memory one access reaches, for as long as it runs.
pub(crate) enum Reach<'a> {
    /// Memory that stays put (pinned, kernel): used under the MR's lock.
    Fixed(&'a MrInner),
    /// An on-demand paging MR's pages for this access, mapped.
    Paged(&'a OdpMapped<'a>),
    /// Nothing: an access of zero bytes, or a check that copies nothing, on an on-demand
    /// paging MR (no page is faulted in for it).
    Empty,
}

impl Reach<'_> {
    /// Copies `dst.len()` bytes at byte `off` into `dst`.
    pub(crate) fn read(&self, off: usize, dst: &mut [u8]) -> bool {
        match self {
            Reach::Fixed(m) => m.read(off, dst),
            Reach::Paged(p) => p.read(off as u64, dst),
            Reach::Empty => dst.is_empty(),
        }
    }

    /// As [`Self::read`], `n` bytes appended to a datagram's payload.
    pub(crate) fn read_into(&self, off: usize, n: usize, dst: &mut PayloadSink<'_>) -> bool {
        match self {
            Reach::Fixed(m) => m.read_into(off, n, dst),
            Reach::Paged(p) => p.read_into(off as u64, n, dst),
            Reach::Empty => n == 0,
        }
    }

    /// Copies `src` to byte `off`.
    pub(crate) fn write(&self, off: usize, src: &[u8]) -> bool {
        match self {
            Reach::Fixed(m) => m.write(off, src),
            Reach::Paged(p) => p.write(off as u64, src),
            Reach::Empty => src.is_empty(),
        }
    }
}

/// What an access needs from an MR (IBTA 10.6.3): a local read needs only the key, PD and
/// range; the others also need the right granted at registration. Remote accesses name
/// the QP they arrived on: an R_Key may name a memory window, and a type 2 window answers
/// only its own QP.
#[derive(Clone, Copy)]
pub(crate) enum Access {
    /// A send's gather (L_Key).
    LocalRead,
    /// A receive's scatter or a READ response's placement (L_Key, local write).
    LocalWrite,
    /// An incoming RDMA READ (R_Key) on QP `.0`.
    RemoteRead(u32),
    /// An incoming RDMA WRITE or ATOMIC WRITE (R_Key) on QP `.0`.
    RemoteWrite(u32),
    /// An incoming atomic (R_Key) on QP `.0`.
    RemoteAtomic(u32),
    /// An incoming FLUSH (R_Key) on QP `qpn`, needing `rights` (IB_ACCESS_FLUSH_GLOBAL,
    /// IB_ACCESS_FLUSH_PERSISTENT or both).
    RemoteFlush {
        /// The QP it arrived on.
        qpn: u32,
        /// The rights it needs.
        rights: u32,
    },
}

impl Access {
    /// The right it needs.
    pub(crate) fn flag(self) -> u32 {
        match self {
            Access::LocalRead => 0,
            Access::LocalWrite => AccessFlags::LOCAL_WRITE.bits(),
            Access::RemoteRead(_) => AccessFlags::REMOTE_READ.bits(),
            Access::RemoteWrite(_) => AccessFlags::REMOTE_WRITE.bits(),
            Access::RemoteAtomic(_) => AccessFlags::REMOTE_ATOMIC.bits(),
            Access::RemoteFlush { rights, .. } => rights,
        }
    }

    /// The QP a remote access arrived on (`None` for a local one).
    pub(crate) fn qpn(self) -> Option<u32> {
        match self {
            Access::RemoteRead(q) | Access::RemoteWrite(q) | Access::RemoteAtomic(q) => Some(q),
            Access::RemoteFlush { qpn, .. } => Some(qpn),
            Access::LocalRead | Access::LocalWrite => None,
        }
    }
}
