// SPDX-License-Identifier: GPL-2.0
//! Protection domains (include/rdma/ib_verbs.h, `struct ib_pd`). The core allocates a PD
//! and counts its users; a soft-RoCE driver keeps no state for it. What the driver needs is
//! a PD's identity, to check that an MR, MW or AH and the QP using it belong to the same
//! PD: [`PdId`]. The PD and user-context verbs reach the driver through `Driver`
//! (`ib_device.rs`).

use crate::kx::bindings;

/// A PD's identity: compared, never dereferenced.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct PdId(usize);

impl PdId {
    /// The identity of the PD `pd` points to (distinct live PDs have distinct addresses;
    /// the pointer is compared, never followed).
    pub(crate) fn from_raw(pd: *const bindings::ib_pd) -> Self {
        PdId(pd as usize)
    }

    /// As the pure memory-window rules (`proto::rc::mw`) take it.
    pub(crate) fn get(self) -> usize {
        self.0
    }
}
