// SPDX-License-Identifier: GPL-2.0
//! Memory regions: which access rights rxe_sr grants, and how keys are made.
//!
//! A key is `index << 8 | variant`: the index names the MR in the device's table (what the
//! responder looks up for an incoming R_Key, the requester for an L_Key), the low byte
//! changes each time an index is reused, so a stale key from a freed MR does not match its
//! successor (IBTA 10.6.3.1's "key" portion).

use kernel::prelude::*;

use crate::kx::error;
use crate::kx::ib_verbs::AccessFlags;

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

/// Most pages a fast-registration MR maps (the device's `max_fast_reg_page_list_len`).
pub(crate) const MAX_FAST_REG_PAGES: u32 = 512;

/// Access flags rxe_sr implements for user MRs. The optional range (relaxed ordering and
/// other hints) is accepted and ignored, as the uverbs ABI allows.
const SUPPORTED: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC)
    .union(AccessFlags::MW_BIND)
    .union(AccessFlags::OPTIONAL);

/// Checks the access flags of a registration; on-demand paging, zero-based and persistence
/// flushes are not offered (yet), and say so with EOPNOTSUPP.
pub(crate) fn check_access(access: i32) -> Result<u32> {
    let access = AccessFlags::from_raw(access).ok_or(EINVAL)?;
    if !access.within(SUPPORTED) {
        return Err(error::eopnotsupp());
    }
    Ok(access.bits())
}

/// The key of the MR at `index` with key variant `variant`.
pub(crate) fn key(index: u32, variant: u8) -> u32 {
    (index << 8) | u32::from(variant)
}
