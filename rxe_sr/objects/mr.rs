// SPDX-License-Identifier: GPL-2.0
//! Memory regions' state, and access to them from the transport: resolving a key (an
//! MR's, or a memory window's) on a PD for a range and a right (IBTA 10.6.3), the copies in
//! and out of the MR's memory, atomics, and the REG_MR and LOCAL_INV work requests of
//! fast-registration MRs.
//!
//! A user MR covers pinned user pages, or, registered for on-demand paging, a range of
//! the process whose pages are faulted in by the access that needs them; a DMA MR (every
//! kernel PD gets one, whose key is the PD's `local_dma_lkey`) covers kernel memory by
//! kernel virtual address; a
//! fast-registration MR (kernel ULPs) covers the blocks `map_mr_sg` gave it, under the key
//! a REG_MR chose, until LOCAL_INV or SEND with invalidate. A key is `index << 8 |
//! variant`: the index names the MR in the device's table (`verbs::mr`).
//!
//! Locking: an MR found by key is used under its own lock (so deregistration, which takes
//! the lock to retire the memory, waits for a copy in flight and no copy starts after it).
//! An on-demand paging MR is checked under that lock but copied without it (a page fault
//! sleeps): under its umem's mutex, which deregistration takes to retire it. Atomics on
//! the device are serialised by its atomic lock (taken after an MR's).

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::sync::{Arc, SpinLock};

use crate::kx::error;
use crate::kx::ib_mr::{KernelPages, KernelVa, Mr};
use crate::kx::ib_pd::PdId;
use crate::kx::ib_umem::UserPages;
use crate::kx::ib_umem_odp::{OdpMapped, OdpPages};
use crate::kx::ib_verbs::AccessFlags;
use crate::kx::skbuff::PayloadSink;
use crate::objects::device::{DeviceState, RoceDevice};
use crate::objects::mw;
use crate::proto::rc::mw::MrView;
use crate::uabi::cqe::WcStatus;
use crate::uabi::limits;

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

/// An rxe_sr memory region.
pub(crate) type RoceMr = Mr<DeviceState>;

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
enum Reach<'a> {
    /// Memory that stays put (pinned, kernel): used under the MR's lock.
    Fixed(&'a MrInner),
    /// An on-demand paging MR's pages for this access, mapped.
    Paged(&'a OdpMapped<'a>),
    /// Nothing: an access of zero bytes, or a check that copies nothing, on an on-demand
    /// paging MR (no page is faulted in for it).
    Empty,
}

impl Reach<'_> {
    fn read(&self, off: usize, dst: &mut [u8]) -> bool {
        match self {
            Reach::Fixed(m) => m.read(off, dst),
            Reach::Paged(p) => p.read(off as u64, dst),
            Reach::Empty => dst.is_empty(),
        }
    }

    fn read_into(&self, off: usize, n: usize, dst: &mut PayloadSink<'_>) -> bool {
        match self {
            Reach::Fixed(m) => m.read_into(off, n, dst),
            Reach::Paged(p) => p.read_into(off as u64, n, dst),
            Reach::Empty => n == 0,
        }
    }

    fn write(&self, off: usize, src: &[u8]) -> bool {
        match self {
            Reach::Fixed(m) => m.write(off, src),
            Reach::Paged(p) => p.write(off as u64, src),
            Reach::Empty => src.is_empty(),
        }
    }
}

/// What an access does with the memory: an on-demand paging MR maps its pages for it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Touch {
    /// Only checks the key and range.
    Check,
    /// Reads the bytes.
    Read,
    /// Writes them (an atomic reads and writes).
    Write,
}

/// The MR at table index `index`, if any (a reference: it stays allocated while used).
pub(crate) fn lookup(dev: &RoceDevice, index: u32) -> Option<Arc<RoceMr>> {
    dev.mrs().with(index, |m| Arc::from(m))
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

    fn qpn(self) -> Option<u32> {
        match self {
            Access::RemoteRead(q) | Access::RemoteWrite(q) | Access::RemoteAtomic(q) => Some(q),
            Access::RemoteFlush { qpn, .. } => Some(qpn),
            Access::LocalRead | Access::LocalWrite => None,
        }
    }
}

/// The region key and the rights to check on it for an access through `key`: a memory
/// window's R_Key leads, for a remote access the window allows, to the region it is bound
/// to, whose own rights were checked at bind time (IBTA 10.6.7.2).
fn resolve(
    dev: &RoceDevice,
    pd: PdId,
    key: u32,
    va: u64,
    len: u64,
    access: Access,
) -> Option<(u32, Access)> {
    if !is_mw_key(key) {
        return Some((key, access));
    }
    let lkey = mw::reach(dev, key, pd, access.qpn()?, access.flag(), va, len)?;
    Some((lkey, Access::LocalRead))
}

/// Runs `f(memory, byte offset)` on the MR named by `key` once the access is checked.
///
/// The MR must be valid, carry exactly this key (L_Key and R_Key are the same), belong to `pd`,
/// grant `access` and cover `[va, va + len)`. The MR cannot be deregistered while `f` runs: its
/// lock is held across `f`, or, for an on-demand paging MR, its umem's mutex with the pages of the
/// range mapped as `touch` needs (which may sleep: faults are taken here). `None` when any check
/// fails or a page cannot be had.
fn with_mr<R>(
    dev: &RoceDevice,
    pd: PdId,
    key: u32,
    (va, len): (u64, u64),
    access: Access,
    touch: Touch,
    f: impl FnOnce(Reach<'_>, usize) -> Option<R>,
) -> Option<R> {
    let (key, access) = resolve(dev, pd, key, va, len, access)?;
    let mr = lookup(dev, key >> 8)?;
    let g = mr.inner.lock();
    if g.access & access.flag() != access.flag() {
        return None;
    }
    let off = g.offset_of(pd, key, va, len)?;
    let odp = match &g.memory {
        MrMemory::Odp(p) => p.clone(),
        _ => return f(Reach::Fixed(&g), off),
    };
    drop(g);
    if len == 0 || touch == Touch::Check {
        return f(Reach::Empty, off);
    }
    let mapped = odp.map(off as u64, len, touch == Touch::Write).ok()?;
    f(Reach::Paged(&mapped), off)
}

/// Copies `dst.len()` bytes at `va` of the MR named by `key` into `dst`. False when the
/// checks of [`with_mr`] fail.
pub(crate) fn read(
    dev: &RoceDevice,
    pd: PdId,
    key: u32,
    va: u64,
    dst: &mut [u8],
    access: Access,
) -> bool {
    with_mr(
        dev,
        pd,
        key,
        (va, dst.len() as u64),
        access,
        Touch::Read,
        |m, off| m.read(off, dst).then_some(()),
    )
    .is_some()
}

/// As [`read`], the `n` bytes appended to a datagram's payload (written straight into the
/// skb being built).
pub(crate) fn read_into(
    dev: &RoceDevice,
    pd: PdId,
    key: u32,
    va: u64,
    n: usize,
    dst: &mut PayloadSink<'_>,
    access: Access,
) -> bool {
    with_mr(
        dev,
        pd,
        key,
        (va, n as u64),
        access,
        Touch::Read,
        |m, off| m.read_into(off, n, dst).then_some(()),
    )
    .is_some()
}

/// Copies `src` to `va` of the MR named by `key`. False when the checks of [`with_mr`] fail.
pub(crate) fn write(
    dev: &RoceDevice,
    pd: PdId,
    key: u32,
    va: u64,
    src: &[u8],
    access: Access,
) -> bool {
    with_mr(
        dev,
        pd,
        key,
        (va, src.len() as u64),
        access,
        Touch::Write,
        |m, off| m.write(off, src).then_some(()),
    )
    .is_some()
}

/// A send's gather step: a failure is a local protection error (IBTA 10.6.3).
pub(crate) fn gather(
    dev: &RoceDevice,
    pd: PdId,
    lkey: u32,
    addr: u64,
    dst: &mut [u8],
) -> Result<(), WcStatus> {
    if read(dev, pd, lkey, addr, dst, Access::LocalRead) {
        Ok(())
    } else {
        Err(WcStatus::LocProtErr)
    }
}

/// As [`gather`], the `n` bytes appended to a datagram's payload.
pub(crate) fn gather_into(
    dev: &RoceDevice,
    pd: PdId,
    lkey: u32,
    addr: u64,
    n: usize,
    dst: &mut PayloadSink<'_>,
) -> Result<(), WcStatus> {
    if read_into(dev, pd, lkey, addr, n, dst, Access::LocalRead) {
        Ok(())
    } else {
        Err(WcStatus::LocProtErr)
    }
}

/// A receive's scatter step (local write needed): a failure is a local protection error.
pub(crate) fn scatter(
    dev: &RoceDevice,
    pd: PdId,
    lkey: u32,
    addr: u64,
    src: &[u8],
) -> Result<(), WcStatus> {
    if write(dev, pd, lkey, addr, src, Access::LocalWrite) {
        Ok(())
    } else {
        Err(WcStatus::LocProtErr)
    }
}

/// Checks that a remote request may access `[va, va + len)` through `rkey`.
pub(crate) fn remote_check(
    dev: &RoceDevice,
    pd: PdId,
    rkey: u32,
    va: u64,
    len: u32,
    access: Access,
) -> bool {
    with_mr(
        dev,
        pd,
        rkey,
        (va, u64::from(len)),
        access,
        Touch::Check,
        |_, _| Some(()),
    )
    .is_some()
}

/// Checks that a FLUSH arriving on QP `qpn` may name the memory of `rkey`: the region is
/// valid, carries this key, belongs to `pd`, grants `rights` and covers `range` when there
/// is one (a FLUSH of the whole region names none). A memory window's R_Key cannot name a
/// region for a FLUSH: a window grants no FLUSH right.
pub(crate) fn remote_flush_check(
    dev: &RoceDevice,
    pd: PdId,
    rkey: u32,
    range: Option<(u64, u64)>,
    qpn: u32,
    rights: u32,
) -> bool {
    let access = Access::RemoteFlush { qpn, rights };
    if let Some(range) = range {
        return with_mr(dev, pd, rkey, range, access, Touch::Check, |_, _| Some(())).is_some();
    }
    if is_mw_key(rkey) {
        return false;
    }
    let Some(mr) = lookup(dev, rkey >> 8) else {
        return false;
    };
    let g = mr.inner.lock();
    g.access & rights == rights && g.offset_of(pd, rkey, g.iova, 0).is_some()
}

/// An atomic on the 8 bytes at `va` (host byte order, as rdma_rxe): `op(original)` gives the
/// value to store. Returns the original value. Atomics on the device are serialised by its
/// atomic lock (two MRs may cover the same memory), taken once the MR's memory is reached
/// (an on-demand paging MR's page faulted in).
pub(crate) fn remote_atomic(
    dev: &RoceDevice,
    pd: PdId,
    qpn: u32,
    rkey: u32,
    va: u64,
    op: impl FnOnce(u64) -> u64,
) -> Option<u64> {
    with_mr(
        dev,
        pd,
        rkey,
        (va, 8),
        Access::RemoteAtomic(qpn),
        Touch::Write,
        |m, off| {
            let _serial = dev.atomic_lock().lock();
            let mut cell = [0u8; 8];
            if !m.read(off, &mut cell) {
                return None;
            }
            let orig = u64::from_ne_bytes(cell);
            m.write(off, &op(orig).to_ne_bytes()).then_some(orig)
        },
    )
}

/// A memory window moved from region `was` to region `now` (L_Keys; None: unbound):
/// keeps each region's count of bound windows. Takes the MR table's lock: never call it
/// with the MW table's held (both are xarray locks of one lock class).
pub(crate) fn note_binding(dev: &RoceDevice, was: Option<u32>, now: Option<u32>) {
    if was == now {
        return;
    }
    // By index alone: a region's key may change while bound, by REG_MR.
    let adjust = |lkey: u32, up: bool| {
        let _ = dev.mrs().with(lkey >> 8, |m| {
            if up {
                m.bound_mws.fetch_add(1, Ordering::AcqRel);
            } else {
                let _ = m
                    .bound_mws
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
            }
        });
    };
    if let Some(k) = was {
        adjust(k, false);
    }
    if let Some(k) = now {
        adjust(k, true);
    }
}

/// The bind-time view of the MR with L_Key `lkey` on `pd` (a BIND_MW names it).
pub(crate) fn view(dev: &RoceDevice, pd: PdId, lkey: u32) -> Option<MrView> {
    if is_mw_key(lkey) {
        return None;
    }
    let mr = lookup(dev, lkey >> 8)?;
    let g = mr.inner.lock();
    (g.valid && g.key == lkey && g.pd == pd).then_some(MrView {
        lkey,
        pd: pd.get(),
        iova: g.iova,
        length: g.length,
        access: g.access,
    })
}

/// A REG_MR work request through a QP of `pd`: the fast-registration MR named by `key`'s
/// index takes `key`, `access` and the range the ULP's last `ib_map_mr_sg` left in its
/// `ib_mr`, and becomes valid. (`access` was checked by the caller.) A page size outside
/// the device's `page_size_cap` is refused: the core stores it in the `ib_mr` before
/// `map_mr_sg` refuses it.
pub(crate) fn fast_reg(dev: &RoceDevice, pd: PdId, key: u32, access: u32) -> Result<(), WcStatus> {
    if is_mw_key(key) {
        return Err(WcStatus::LocQpOpErr);
    }
    let mr = lookup(dev, key >> 8).ok_or(WcStatus::LocQpOpErr)?;
    let (ps, iova, length) = mr.core_mapping();
    let ps = u64::from(ps);
    let mut g = mr.inner.lock();
    let MrMemory::Fast(pages) = &g.memory else {
        return Err(WcStatus::LocQpOpErr);
    };
    if g.pd != pd || g.valid || !limits::page_size_supported(ps) {
        return Err(WcStatus::LocQpOpErr);
    }
    let room = (pages.len() as u64)
        .saturating_mul(ps)
        .saturating_sub(iova % ps);
    if length > room {
        return Err(WcStatus::LocQpOpErr);
    }
    g.key = key;
    g.access = access;
    g.iova = iova;
    g.length = length;
    g.page_size = ps;
    g.valid = true;
    Ok(())
}

/// LOCAL_INV or SEND with invalidate of MR key `key` through a QP of `pd`: only a valid
/// fast-registration MR can be invalidated (as rdma_rxe).
pub(crate) fn invalidate(dev: &RoceDevice, pd: PdId, key: u32) -> bool {
    let Some(mr) = lookup(dev, key >> 8) else {
        return false;
    };
    let mut g = mr.inner.lock();
    let ok = matches!(g.memory, MrMemory::Fast(_)) && g.valid && g.key == key && g.pd == pd;
    if ok {
        g.valid = false;
    }
    ok
}
