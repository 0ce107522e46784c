// SPDX-License-Identifier: GPL-2.0
//! Memory windows' state. Windows live in the device's MW table; their R_Keys use the index
//! range above the MRs' (`objects::mr::is_mw_key`), so a key names one table or the other.
//! The rules are `proto::rc::mw`; here they are applied under the window's lock, taken with
//! the table's. Binding, invalidation and a window's retirement, which also keep the
//! regions' bound-window counts, are `objects::mw_binding`.

use kernel::alloc::KBox;
use kernel::prelude::*;
use kernel::sync::SpinLock;

use crate::kx::ib_pd::PdId;
use crate::kx::xarray::XArray;
use crate::proto::rc::mw::Window;

/// An entry of the device's MW table: the window, changed under its lock.
pub(crate) type MwTableEntry = Pin<KBox<SpinLock<Window>>>;

/// The driver's data in each MW: its index in the device's MW table.
pub(crate) struct MwSlot {
    pub(crate) index: u32,
}

/// Runs `f` on the window named by `rkey`'s index in the MW table `mws`, under its lock.
pub(crate) fn with_window<R>(
    mws: &XArray<MwTableEntry>,
    rkey: u32,
    f: impl FnOnce(&mut Window) -> R,
) -> Option<R> {
    mws.with(rkey >> 8, |w| f(&mut w.lock()))
}

/// The region (its L_Key) a remote request through QP `qpn` of PD `qp_pd` reaches with
/// window key `rkey` in the MW table `mws`, if the window allows `access` on
/// `[va, va + len)`.
pub(crate) fn reach(
    mws: &XArray<MwTableEntry>,
    rkey: u32,
    qp_pd: PdId,
    qpn: u32,
    access: u32,
    va: u64,
    len: u64,
) -> Option<u32> {
    with_window(mws, rkey, |w| {
        w.reach(rkey, qp_pd.get(), qpn, access, va, len)
    })
    .flatten()
}
