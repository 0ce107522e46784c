// SPDX-License-Identifier: GPL-2.0
//! The responder's READ and atomic resources (IBTA 9.7.4.2's responder resources,
//! `max_dest_rd_atomic` of them; rdma_rxe's `resp_res`): what an executed RDMA READ or
//! atomic leaves for a duplicate of it to ask again.

use core::ops::DerefMut;

use super::Responder;
use super::{RecvSlot, RespSr};
use crate::proto::psn::Psn;
use crate::proto::rc::RcConfig;
use crate::proto::words::WindowWords;

/// A READ or atomic the responder executed: what a duplicate of it may ask again. The
/// caller provides the storage for them (`max_dest_rd_atomic` entries at most are used;
/// [`MAX_RD_RES`](super::MAX_RD_RES) covers any QP), as the requester's slots: the core
/// allocates nothing.
#[derive(Clone, Copy, Debug)]
pub enum RdRes {
    /// An RDMA READ: its PSN range and the memory its RETH named.
    Read {
        /// PSN of its first response.
        first: Psn,
        /// PSNs it uses.
        npsn: u32,
        /// Its R_Key.
        rkey: u32,
        /// Its first address.
        va: u64,
        /// Its length.
        len: u32,
    },
    /// A CMP_SWAP or FETCH_ADD, with the original value it returned.
    Atomic {
        /// Its PSN.
        psn: Psn,
        /// The value it returned.
        orig: u64,
    },
}

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// Saves a READ or atomic resource, over the oldest when `max_dest_rd_atomic` are kept.
    pub(super) fn save_res(&mut self, cfg: &RcConfig, r: RdRes) {
        let ring = (cfg.max_dest_rd_atomic as usize).clamp(1, self.res.len().max(1));
        let at = self.res_next % ring;
        if let Some(slot) = self.res.get_mut(at) {
            *slot = Some(r);
        }
        self.res_next = (at + 1) % ring;
    }

    /// True when `psn` is the PSN of a response of a READ or atomic the responder keeps.
    pub(super) fn owes(&self, psn: Psn) -> bool {
        self.res.iter().flatten().any(|r| match *r {
            RdRes::Read { first, npsn, .. } => psn.distance_from(first) < npsn,
            RdRes::Atomic { psn: at, .. } => at == psn,
        })
    }
}
