// SPDX-License-Identifier: GPL-2.0
//! The send queue of the requester: the fixed ring of [`SqEntry`]s (copies of the posted
//! WQEs), each owning the PSN range assigned when it is posted; posting, the ring
//! indexing, and the flush when the QP enters the Error state.

use core::ops::DerefMut;

use super::ReqSr;
use super::Requester;
use crate::proto::psn::Psn;
use crate::proto::rc::{packets, RcConfig, Service};
use crate::proto::words::WindowWords;
use crate::uabi::cqe::{Completion, WcStatus};
use crate::uabi::send_wqe::{SendOp, SendWqe};

/// One posted work request and its transport state.
#[derive(Clone, Copy, Debug)]
pub struct SqEntry {
    /// The validated copy of the WQE.
    pub wqe: SendWqe,
    /// PSN of its first packet (or first READ response).
    pub first_psn: Psn,
    /// PSNs it uses.
    pub npsn: u32,
    /// MSN-ETH's MSN in the SR format: for a SEND or RDMA WRITE with immediate, its number
    /// among the QP's messages that consume a receive WQE; for an RDMA READ, its number
    /// among the QP's READs (24 bits).
    pub(super) msn: u32,
    /// RDMA READ: response bytes placed so far.
    pub(super) done_bytes: u32,
    /// RDMA READ / atomic: the last response arrived.
    pub(super) complete: bool,
}

impl SqEntry {
    /// An unposted slot (storage filler).
    pub const fn empty(wqe: SendWqe) -> SqEntry {
        SqEntry {
            wqe,
            first_psn: Psn::new(0),
            npsn: 0,
            msn: 0,
            done_bytes: 0,
            complete: false,
        }
    }

    pub(super) fn is_rd_atomic(&self) -> bool {
        matches!(
            self.wqe.op,
            SendOp::RdmaRead { .. }
                | SendOp::AtomicCmpAndSwp { .. }
                | SendOp::AtomicFetchAndAdd { .. }
        )
    }

    /// A SEND or an RDMA WRITE with immediate: it consumes one of the peer's receive WQEs
    /// (and carries a receive MSN in the SR format).
    pub(super) fn consumes_recv(&self) -> bool {
        matches!(
            self.wqe.op,
            SendOp::Send
                | SendOp::SendWithImm { .. }
                | SendOp::SendWithInv { .. }
                | SendOp::RdmaWriteWithImm { .. }
        )
    }

    pub(super) fn end_psn(&self) -> Psn {
        self.first_psn.add(self.npsn)
    }

    /// Contains `psn`.
    pub(super) fn covers(&self, psn: Psn) -> bool {
        !psn.before(self.first_psn) && psn.before(self.end_psn())
    }
}

/// MSN-ETH's MSN field is 24 bits.
const U24: u32 = 0x00ff_ffff;

/// Why a post was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PostError {
    /// Every slot holds an unretired request.
    Full,
    /// The operation is not one this transport carries; complete it with this status.
    Unsupported(WcStatus),
}

impl<S: DerefMut<Target = [SqEntry]>, B: WindowWords, E: DerefMut<Target = ReqSr<B>>>
    Requester<S, E>
{
    /// Unretired entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is outstanding.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Free slots.
    pub fn room(&self) -> usize {
        self.slots.len().saturating_sub(self.len)
    }

    /// The PSN the next posted request gets (`ibv_query_qp`'s sq_psn).
    pub fn sq_psn(&self) -> Psn {
        self.psn_tail
    }

    pub(super) fn idx(&self, i: usize) -> usize {
        let cap = self.slots.len().max(1);
        (self.head + i) % cap
    }

    pub(super) fn entry(&self, i: usize) -> Option<&SqEntry> {
        if i >= self.len {
            return None;
        }
        self.slots.get(self.idx(i))
    }

    pub(super) fn entry_mut(&mut self, i: usize) -> Option<&mut SqEntry> {
        if i >= self.len {
            return None;
        }
        let k = self.idx(i);
        self.slots.get_mut(k)
    }

    /// Queues a validated work request. Its PSNs are assigned now.
    pub fn post(&mut self, wqe: SendWqe, cfg: &RcConfig) -> Result<(), PostError> {
        *self.vacant().ok_or(PostError::Full)? = wqe;
        self.post_vacant(cfg)
    }

    /// The slot the next post fills, to build a WQE in place (see
    /// [`Requester::post_vacant`]); `None` when the requester is full.
    pub fn vacant(&mut self) -> Option<&mut SendWqe> {
        if self.len >= self.slots.len() {
            return None;
        }
        let k = self.idx(self.len);
        self.slots.get_mut(k).map(|e| &mut e.wqe)
    }

    /// [`Requester::post`] of the WQE written into [`Requester::vacant`].
    pub fn post_vacant(&mut self, cfg: &RcConfig) -> Result<(), PostError> {
        if self.len >= self.slots.len() {
            return Err(PostError::Full);
        }
        let k = self.idx(self.len);
        let slot = self.slots.get_mut(k).ok_or(PostError::Full)?;
        let wqe = &slot.wqe;
        let rc = cfg.service == Service::Rc;
        let npsn = match wqe.op {
            SendOp::Send
            | SendOp::SendWithImm { .. }
            | SendOp::RdmaWrite { .. }
            | SendOp::RdmaWriteWithImm { .. } => packets(wqe.length, self.pmtu.get()),
            SendOp::SendWithInv { .. } if rc => packets(wqe.length, self.pmtu.get()),
            SendOp::RdmaRead { .. } if rc => packets(wqe.length, self.pmtu.get()),
            SendOp::AtomicCmpAndSwp { .. } | SendOp::AtomicFetchAndAdd { .. } if rc => {
                if wqe.length < 8 {
                    return Err(PostError::Unsupported(WcStatus::LocLenErr));
                }
                1
            }
            SendOp::AtomicWrite { .. } | SendOp::Flush { .. } if rc => 1,
            // Local operations: no packet; they run when the send cursor reaches them.
            SendOp::BindMw(_) => 0,
            SendOp::LocalInv { .. } | SendOp::RegMr { .. } if rc => 0,
            _ => return Err(PostError::Unsupported(WcStatus::LocQpOpErr)),
        };
        let msn = match wqe.op {
            SendOp::Send
            | SendOp::SendWithImm { .. }
            | SendOp::SendWithInv { .. }
            | SendOp::RdmaWriteWithImm { .. } => {
                let m = self.recv_msn;
                self.recv_msn = (m + 1) & U24;
                m
            }
            SendOp::RdmaRead { .. } => {
                let m = self.read_msn;
                self.read_msn = (m + 1) & U24;
                m
            }
            _ => 0,
        };
        let first_psn = self.psn_tail;
        slot.first_psn = first_psn;
        slot.npsn = npsn;
        slot.msn = msn;
        slot.done_bytes = 0;
        slot.complete = false;
        self.len += 1;
        self.psn_tail = first_psn.add(npsn);
        Ok(())
    }

    /// Completes every entry, oldest first, with IB_WC_WR_FLUSH_ERR (the QP entered the
    /// Error state, IBTA 10.3.1): `retire` retires each from its queue and posts its
    /// completion. Nothing is left.
    pub fn flush(&mut self, cfg: &RcConfig, mut retire: impl FnMut(&Completion)) {
        // (By reference: an entry is large, and kernel stacks are small.)
        while let Some(c) = self
            .entry(0)
            .map(|e| Completion::for_send_wqe(&e.wqe, cfg.qpn, WcStatus::WrFlushErr))
        {
            retire(&c);
            let cap = self.slots.len().max(1);
            self.head = (self.head + 1) % cap;
            self.len -= 1;
        }
        self.clear();
    }

    /// Drops every entry without completing it.
    fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
        self.next = 0;
        self.next_pkt = 0;
        self.rto_deadline = None;
        self.rnr_deadline = None;
        self.rd_atomic_out = 0;
    }
}
