// SPDX-License-Identifier: GPL-2.0
//! Memory regions: which access rights rxe_sr grants; registering, mapping and
//! deregistering MRs (their keys are made in `objects::mr`).

use core::sync::atomic::Ordering;
use kernel::alloc::flags::GFP_KERNEL;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::kx::error;
use crate::kx::ib_device::Device;
use crate::kx::ib_mr::MrDriver;
use crate::kx::ib_mr::{Advice, AdviseSge, KernelPages, KernelVa, MrRereg, SgMapping, UserMrReq};
use crate::kx::ib_pd::PdId;
use crate::kx::ib_umem::UserPages;
use crate::kx::ib_umem_odp::OdpPages;
use crate::kx::ib_verbs::AccessFlags;
use crate::objects::device::RxeSr;
use crate::objects::device::{RoceDevice, RoceMr};
use crate::objects::live;
use crate::objects::mr::{self, check_access, MrMemory, MrState};
use crate::objects::mr_access;
use crate::uabi::limits;

/// Most pages a fast-registration MR maps (the device's `max_fast_reg_page_list_len`).
pub(crate) const MAX_FAST_REG_PAGES: u32 = 512;

/// `reg_user_mr`: pins the caller's memory, or registers it for on-demand paging
/// (`IB_ACCESS_ON_DEMAND`); the MR gets its key when published.
pub(crate) fn reg_user(
    dev: &RoceDevice,
    pd: PdId,
    req: &UserMrReq,
) -> Result<impl PinInit<MrState, Error>> {
    let access = check_access(req.access)?;
    if req.length == 0 {
        return Err(EINVAL);
    }
    let start = usize::try_from(req.start).map_err(|_| EINVAL)?;
    let len = usize::try_from(req.length).map_err(|_| EINVAL)?;
    let memory = user_memory(dev, start, len, access)?;
    Ok(MrState::new(pd, memory, access, req.iova, req.length))
}

/// A user MR's memory over `len` bytes at `start` with rights `access`: pinned, or for
/// on-demand paging. Implicit on-demand paging (the whole address space: start 0, length
/// `u64::MAX`) is not offered (the device does not report `IB_ODP_SUPPORT_IMPLICIT`).
fn user_memory(dev: &RoceDevice, start: usize, len: usize, access: u32) -> Result<MrMemory> {
    if access & AccessFlags::ON_DEMAND.bits() == 0 {
        return Ok(MrMemory::User(UserPages::pin(dev, start, len, access)?));
    }
    if start == 0 && len == usize::MAX {
        return Err(error::eopnotsupp());
    }
    let pages = OdpPages::register(dev, start, len, access)?;
    Ok(MrMemory::Odp(Arc::new(pages, GFP_KERNEL)?))
}

/// Lets memory an MR no longer reaches go (outside the MR's lock): an on-demand paging
/// range is retired first, which waits for a copy in flight through it.
fn release(memory: MrMemory) {
    if let MrMemory::Odp(p) = &memory {
        p.retire();
    }
    drop(memory);
}

/// `rereg_user_mr`, in place: the MR keeps its keys (as rdma_rxe's) and gets a new PD, new
/// rights and/or new memory, as `flags` says. New memory is pinned before anything
/// changes, so an error leaves the MR as it was; so are the MR's own pages again when new
/// rights let it be written and they were pinned read-only (writes must reach the
/// process's pages, not a copy-on-write copy). The change is made under the MR's lock: a
/// copy in flight finishes on the old state, the next one sees the new. Refused (EBUSY)
/// while memory windows are bound to it, as deregistration is; EINVAL for an empty range.
pub(crate) fn rereg_user(
    dev: &RoceDevice,
    mr: &RoceMr,
    flags: MrRereg,
    pd: PdId,
    req: &UserMrReq,
) -> Result {
    if mr.bound_mws.load(Ordering::Acquire) != 0 {
        return Err(EBUSY);
    }
    let (cur_access, cur_range, cur_writable) = {
        let g = mr.inner.lock();
        match &g.memory {
            MrMemory::User(pages) => (g.access, pages.range(), pages.writable()),
            MrMemory::Odp(pages) => (g.access, pages.range(), pages.writable()),
            // uverbs reregisters user MRs only.
            _ => return Err(EINVAL),
        }
    };
    let access = if flags.access() {
        check_access(req.access)?
    } else {
        cur_access
    };
    let range = if flags.translation() {
        if req.length == 0 {
            return Err(EINVAL);
        }
        let start = usize::try_from(req.start).map_err(|_| EINVAL)?;
        let len = usize::try_from(req.length).map_err(|_| EINVAL)?;
        Some((start, len))
    } else if (access & WRITABLE != 0 && !cur_writable)
        || (access ^ cur_access) & AccessFlags::ON_DEMAND.bits() != 0
    {
        // Write rights on memory mapped read-only, or a change to or from on-demand
        // paging: the same range, made again.
        Some(cur_range)
    } else {
        None
    };
    let memory = match range {
        Some((start, len)) => Some(user_memory(dev, start, len, access)?),
        None => None,
    };
    let old = {
        let mut g = mr.inner.lock();
        if flags.pd() {
            g.pd = pd;
        }
        g.access = access;
        if flags.translation() {
            g.iova = req.iova;
            g.length = req.length;
        }
        memory.map(|m| core::mem::replace(&mut g.memory, m))
    };
    // The old memory goes outside the lock.
    if let Some(old) = old {
        release(old);
    }
    Ok(())
}

/// Rights that need the pages pinned for writing (the core's `ib_access_writable`).
const WRITABLE: u32 = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_ATOMIC)
    .union(AccessFlags::MW_BIND)
    .bits();

/// `get_dma_mr`: the MR behind a kernel PD's `local_dma_lkey`, covering kernel memory.
/// Local access only: remote access to all of kernel memory (`IB_PD_UNSAFE_GLOBAL_RKEY`)
/// is not offered.
pub(crate) fn get_dma(
    pd: PdId,
    access: i32,
    mem: KernelVa,
) -> Result<impl PinInit<MrState, Error>> {
    let access = match AccessFlags::from_raw(access) {
        Some(a) if a.within(AccessFlags::LOCAL_WRITE) => a.bits(),
        _ => return Err(error::eopnotsupp()),
    };
    // The whole address space: checked page by page at copy time.
    Ok(MrState::new(pd, MrMemory::Dma(mem), access, 0, u64::MAX))
}

/// `alloc_mr`: a fast-registration MR for up to `max_num_sg` blocks; not usable until a
/// REG_MR work request registers it.
pub(crate) fn alloc_fast(pd: PdId, max_num_sg: u32) -> Result<impl PinInit<MrState, Error>> {
    if max_num_sg == 0 || max_num_sg > MAX_FAST_REG_PAGES {
        return Err(EINVAL);
    }
    let pages = KernelPages::new(max_num_sg)?;
    Ok(MrState::new(pd, MrMemory::Fast(pages), 0, 0, 0))
}

/// Gives a new MR its key (a free index in the MR table, a fresh variant) and publishes it
/// in the device's table.
pub(crate) fn publish(dev: &RoceDevice, mr: &Arc<RoceMr>) -> Result {
    let index = dev
        .mrs()
        .reserve(mr::MIN_MR_INDEX, mr::MIN_MR_INDEX + (dev.used.max.mr - 1))
        .map_err(crate::verbs::full_is_enomem)?;
    let key = mr::key(index, dev.next_key_variant());
    let (iova, length) = {
        let mut g = mr.inner.lock();
        g.key = key;
        (g.iova, g.length)
    };
    mr.set_keys(key, iova, length);
    if let Err(e) = dev.mrs().publish(index, mr.clone()) {
        drop(dev.mrs().erase(index));
        return Err(e);
    }
    live::LIVE.mrs.inc();
    Ok(())
}

/// `map_mr_sg`: maps a kernel ULP's scatterlist into a fast-registration MR, under the MR's
/// lock (as the data path reads the blocks: a ULP that maps an MR still in use gets its new
/// blocks, never a torn list). EINVAL for a page size the device's `page_size_cap` does not
/// offer (not a power of two, or below 4 KiB).
pub(crate) fn map_sg(mr: &RoceMr, sg: SgMapping<'_>) -> Result<(c_int, u64, u64)> {
    if !limits::page_size_supported(u64::from(sg.page_size())) {
        return Err(EINVAL);
    }
    let mut g = mr.inner.lock();
    let MrMemory::Fast(pages) = &mut g.memory else {
        return Err(EINVAL);
    };
    Ok(sg.map_into(pages))
}

/// `dereg_mr`: refused (EBUSY) while memory windows are bound to the MR. Otherwise the MR
/// leaves the table, and its memory is retired under its lock (and an on-demand paging
/// range under its umem's mutex), so no copy is in flight once this returns and none
/// starts after; pinned pages are released here.
pub(crate) fn dereg(dev: &RoceDevice, mr: &RoceMr) -> Result {
    if mr.bound_mws.load(Ordering::Acquire) != 0 {
        // Windows still bound to it: the application must invalidate or free them first.
        return Err(EBUSY);
    }
    let key = mr.key();
    drop(dev.mrs().erase(key >> 8));
    let memory = {
        let mut g = mr.inner.lock();
        g.valid = false;
        core::mem::replace(&mut g.memory, MrMemory::Gone)
    };
    release(memory);
    live::LIVE.mrs.dec();
    Ok(())
}

/// `advise_mr`: each SGE must name, by L_Key, a range of a valid on-demand paging MR of
/// `pd` (EINVAL otherwise). Its pages are faulted in for reading (`Prefetch`) or for
/// writing (`PrefetchWrite`: EPERM when the MR's rights do not let it be written), or
/// mapped only where the process has them (`PrefetchNoFault`). Done before returning.
/// Zero-length SGEs are skipped.
pub(crate) fn advise(
    dev: &RoceDevice,
    pd: PdId,
    advice: Advice,
    sges: impl Iterator<Item = AdviseSge>,
) -> Result {
    for sge in sges {
        if sge.length == 0 {
            continue;
        }
        if mr::is_mw_key(sge.lkey) {
            return Err(EINVAL);
        }
        let found = mr_access::lookup(dev, sge.lkey >> 8).ok_or(EINVAL)?;
        let (pages, off) = {
            let g = found.inner.lock();
            let MrMemory::Odp(pages) = &g.memory else {
                return Err(EINVAL);
            };
            let off = g
                .offset_of(pd, sge.lkey, sge.addr, u64::from(sge.length))
                .ok_or(EINVAL)?;
            if advice == Advice::PrefetchWrite && !pages.writable() {
                return Err(EPERM);
            }
            (pages.clone(), off as u64)
        };
        pages.prefetch(
            off,
            u64::from(sge.length),
            advice == Advice::PrefetchWrite,
            advice != Advice::PrefetchNoFault,
        )?;
    }
    Ok(())
}

impl MrDriver for RxeSr {
    type Mr = MrState;

    fn reg_user_mr(
        dev: &Device<Self>,
        pd: PdId,
        req: &UserMrReq,
    ) -> Result<impl PinInit<MrState, Error>> {
        crate::verbs::mr::reg_user(dev, pd, req)
    }

    fn get_dma_mr(
        _dev: &Device<Self>,
        pd: PdId,
        access: i32,
        mem: KernelVa,
    ) -> Result<impl PinInit<MrState, Error>> {
        crate::verbs::mr::get_dma(pd, access, mem)
    }

    fn alloc_mr(
        _dev: &Device<Self>,
        pd: PdId,
        max_num_sg: u32,
    ) -> Result<impl PinInit<MrState, Error>> {
        crate::verbs::mr::alloc_fast(pd, max_num_sg)
    }

    fn publish_mr(dev: &Device<Self>, mr: &Arc<RoceMr>) -> Result {
        crate::verbs::mr::publish(dev, mr)
    }

    fn map_mr_sg(mr: &RoceMr, sg: SgMapping<'_>) -> Result<(c_int, u64, u64)> {
        crate::verbs::mr::map_sg(mr, sg)
    }

    fn rereg_user_mr(
        dev: &Device<Self>,
        mr: &RoceMr,
        flags: MrRereg,
        pd: PdId,
        req: &UserMrReq,
    ) -> Result {
        crate::verbs::mr::rereg_user(dev, mr, flags, pd, req)
    }

    fn dereg_mr(dev: &Device<Self>, mr: &RoceMr) -> Result {
        crate::verbs::mr::dereg(dev, mr)
    }

    fn advise_mr(
        dev: &Device<Self>,
        pd: PdId,
        advice: Advice,
        _flush: bool,
        sges: impl Iterator<Item = AdviseSge>,
    ) -> Result {
        // Done before returning, with or without FLUSH: the asynchronous form is best
        // effort, and doing it at once is within what it promises.
        crate::verbs::mr::advise(dev, pd, advice, sges)
    }
}
