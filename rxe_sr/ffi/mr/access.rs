// SPDX-License-Identifier: GPL-2.0
//! MR access from the transport: resolving a key (an MR's, or a memory window's) on a PD
//! for a range and a right (IBTA 10.6.3), and the copies in and out of the MR's pages.

use super::*;

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
}

impl Access {
    pub(super) fn flag(self) -> u32 {
        match self {
            Access::LocalRead => 0,
            Access::LocalWrite => bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE,
            Access::RemoteRead(_) => bindings::ib_access_flags_IB_ACCESS_REMOTE_READ,
            Access::RemoteWrite(_) => bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
            Access::RemoteAtomic(_) => bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC,
        }
    }

    pub(super) fn qpn(self) -> Option<u32> {
        match self {
            Access::RemoteRead(q) | Access::RemoteWrite(q) | Access::RemoteAtomic(q) => Some(q),
            Access::LocalRead | Access::LocalWrite => None,
        }
    }
}

/// The region key and the rights to check on it for an access through `key`: a memory
/// window's R_Key leads, for a remote access the window allows, to the region it is bound
/// to, whose own rights were checked at bind time (IBTA 10.6.7.2).
pub(super) fn resolve(
    dev: &RoceDevice,
    pd: PdId,
    key: u32,
    va: u64,
    len: u64,
    access: Access,
) -> Option<(u32, Access)> {
    if !verbs::mr::is_mw_key(key) {
        return Some((key, access));
    }
    let lkey = crate::ffi::mw::reach(dev, key, pd, access.qpn()?, access.flag(), va, len)?;
    Some((lkey, Access::LocalRead))
}

/// Runs `f(mr, byte offset)` on the MR named by `key` when it is live, carries exactly
/// this key (L_Key and R_Key are the same), belongs to `pd`, grants `access` and covers
/// `[va, va + len)`; the MR table's lock is held across `f`, so the MR cannot be
/// deregistered meanwhile (and atomics are serialised). `None` when any check fails.
pub(super) fn with_mr<R>(
    dev: &RoceDevice,
    pd: PdId,
    key: u32,
    va: u64,
    len: u64,
    access: Access,
    f: impl FnOnce(*const RxeSrMr, usize) -> Option<R>,
) -> Option<R> {
    let (key, access) = resolve(dev, pd, key, va, len, access)?;
    dev.mrs()
        .with_entry(key >> 8, |p| {
            let mr = p.cast::<RxeSrMr>();
            // SAFETY: entries of the MR table are live RxeSrMr objects; the table lock keeps
            // this one from being deregistered (and freed) while we read it.
            let (mr_key, mr_pd, iova, mr_len, granted, valid) = unsafe { checked_fields(mr) };
            if !valid
                || mr_key != key
                || PdId::of(mr_pd) != pd
                || granted & access.flag() != access.flag()
            {
                return None;
            }
            let end = va.checked_add(len)?;
            if va < iova || end > iova.saturating_add(mr_len) {
                return None;
            }
            f(mr, usize::try_from(va - iova).ok()?)
        })
        .flatten()
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
    with_mr(dev, pd, key, va, dst.len() as u64, access, |mr, off| {
        // SAFETY: live under the table lock; `dst` is writable for its length.
        unsafe { mr_copy(mr, off, dst.as_mut_ptr().cast(), dst.len(), false) }.then_some(())
    })
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
    with_mr(dev, pd, key, va, src.len() as u64, access, |mr, off| {
        // SAFETY: live under the table lock; the helper only reads `src`.
        unsafe { mr_copy(mr, off, src.as_ptr().cast_mut().cast(), src.len(), true) }.then_some(())
    })
    .is_some()
}

/// A send's gather step: a failure is a local protection error (IBTA 10.6.3).
pub(crate) fn gather(
    dev: &RoceDevice,
    pd: PdId,
    lkey: u32,
    addr: u64,
    dst: &mut [u8],
) -> core::result::Result<(), WcStatus> {
    if read(dev, pd, lkey, addr, dst, Access::LocalRead) {
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
) -> core::result::Result<(), WcStatus> {
    if write(dev, pd, lkey, addr, src, Access::LocalWrite) {
        Ok(())
    } else {
        Err(WcStatus::LocProtErr)
    }
}

/// A memory window moved from region `was` to region `now` (L_Keys; None: unbound):
/// keeps each region's count of bound windows. Takes the MR table's lock: never call it
/// with the MW table's held (both are xarray locks of one lock class).
pub(crate) fn note_binding(dev: &RoceDevice, was: Option<u32>, now: Option<u32>) {
    if was == now {
        return;
    }
    let adjust = |lkey: u32, up: bool| {
        let _ = dev.mrs().with_entry(lkey >> 8, |p| {
            // SAFETY: entries of the MR table are live RxeSrMr objects (held by the lock).
            // (By index alone: a region's key may change while bound, by REG_MR.)
            let m = unsafe { &*p.cast::<RxeSrMr>() };
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
pub(crate) fn view(dev: &RoceDevice, pd: PdId, lkey: u32) -> Option<crate::proto::rc::mw::MrView> {
    if verbs::mr::is_mw_key(lkey) {
        return None;
    }
    dev.mrs()
        .with_entry(lkey >> 8, |p| {
            let mr = p.cast::<RxeSrMr>();
            // SAFETY: entries of the MR table are live RxeSrMr objects (table lock held).
            let (key, mr_pd, iova, length, access, valid) = unsafe { checked_fields(mr) };
            (valid && key == lkey && PdId::of(mr_pd) == pd).then_some(
                crate::proto::rc::mw::MrView {
                    lkey,
                    pd: pd.get(),
                    iova,
                    length,
                    access,
                },
            )
        })
        .flatten()
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
    with_mr(dev, pd, rkey, va, u64::from(len), access, |_, _| Some(())).is_some()
}

/// An atomic on the 8 bytes at `va` (host byte order, as rdma_rxe): `op(original)` gives the
/// value to store. Returns the original value. Atomics on all MRs of the device are
/// serialised by the MR table's lock.
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
        va,
        8,
        Access::RemoteAtomic(qpn),
        |mr, off| {
            let mut cell = [0u8; 8];
            // SAFETY: live under the table lock; `cell` is 8 writable bytes.
            if !unsafe { mr_copy(mr, off, cell.as_mut_ptr().cast(), 8, false) } {
                return None;
            }
            let orig = u64::from_ne_bytes(cell);
            let mut new = op(orig).to_ne_bytes();
            // SAFETY: as above.
            unsafe { mr_copy(mr, off, new.as_mut_ptr().cast(), 8, true) }.then_some(orig)
        },
    )
}
