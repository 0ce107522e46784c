// SPDX-License-Identifier: GPL-2.0
//! Protection domains: rxe_sr keeps no state of its own for a PD (the core allocates it and
//! counts its users); what the driver needs is a PD's identity, to check that an MR, MW or
//! AH and the QP using it belong to the same PD.

/// A PD's identity: compared, never dereferenced.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct PdId(usize);

impl PdId {
    /// The PD whose core object is at `addr` (distinct live PDs have distinct addresses).
    pub(crate) fn from_addr(addr: usize) -> Self {
        PdId(addr)
    }

    /// As the pure memory-window rules (`proto::rc::mw`) take it.
    pub(crate) fn get(self) -> usize {
        self.0
    }
}
