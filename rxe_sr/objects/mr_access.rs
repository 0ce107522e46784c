// SPDX-License-Identifier: GPL-2.0
//! Access to memory through keys, from the transport: resolving a key (an MR's, or a
//! memory window's) on a PD for a range and a right (IBTA 10.6.3) in the device's tables,
//! the copies in and out of the MR's memory, atomics, the bind-time view of an MR, and the
//! REG_MR and LOCAL_INV work requests of fast-registration MRs. The MRs' state is
//! `objects::mr`, the windows' `objects::mw`.
//!
//! Locking: an MR found by key is used under its own lock (so deregistration, which takes
//! the lock to retire the memory, waits for a copy in flight and no copy starts after it).
//! An on-demand paging MR is checked under that lock but copied without it (a page fault
//! sleeps): under its umem's mutex, which deregistration takes to retire it. Atomics on
//! the device are serialised by its atomic lock (taken after an MR's).

use kernel::prelude::*;
use kernel::sync::Arc;

use crate::kx::ib_pd::PdId;
use crate::kx::skbuff::PayloadSink;
use crate::objects::device::{RoceDevice, RoceMr};
use crate::objects::mr::{is_mw_key, Access, MrMemory, Reach};
use crate::objects::mw;
use crate::proto::rc::mw::MrView;
use crate::uabi::cqe::WcStatus;
use crate::uabi::limits;

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
    let lkey = mw::reach(dev.mws(), key, pd, access.qpn()?, access.flag(), va, len)?;
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
