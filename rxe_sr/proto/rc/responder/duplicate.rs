// SPDX-License-Identifier: GPL-2.0
//! Duplicate requests, before ePSN (IBTA 9.7.5.2.2; rdma_rxe's duplicate_request): a
//! duplicate SEND or WRITE is re-acknowledged, a duplicate RDMA READ served again from its
//! saved resource, a duplicate atomic answered with its saved result; none is executed
//! twice.

use core::ops::DerefMut;

use super::read::ReadStream;
use super::RdRes;
use super::Responder;
use super::READ_BUDGET;
use super::{RecvSlot, RespSr};
use crate::proto::psn::Psn;
use crate::proto::rc::{packets, RcConfig, RcEnv, RcEvent, RemoteOp};
use crate::proto::wire::ext_headers::Aeth;
use crate::proto::wire::opcode::OpKind;
use crate::proto::wire::PacketRepr;
use crate::proto::words::WindowWords;

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// A request before ePSN: answer without executing it again (READs are served again
    /// from a saved resource, atomics answered from one).
    pub(super) fn duplicate(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        kind: OpKind,
    ) {
        let psn = p.bth.psn;
        match kind {
            OpKind::RdmaReadRequest => {
                if !self.replay_read(env, cfg, p, psn) {
                    self.count(env, RcEvent::DupUnmatched);
                    // Nothing to serve: a READ set aside for it goes on.
                    if self.stream.is_none() {
                        self.stream = self.paused.take();
                    }
                }
            }
            OpKind::CompareSwap | OpKind::FetchAdd => {
                let saved = self.res.iter().flatten().find_map(|r| match *r {
                    RdRes::Atomic { psn: s, orig } if s == psn => Some(orig),
                    _ => None,
                });
                match saved {
                    Some(orig) => self.send_atomic_ack(env, cfg, (psn, orig), self.answer),
                    None => self.count(env, RcEvent::DupUnmatched),
                }
            }
            // Every duplicate SEND or WRITE packet is re-acknowledged, as rdma_rxe's responder
            // does: a requester resending from the middle of a long message learns at once
            // how far the first copy got. (Answering only the packets that ask for an ACK
            // left rdma_rxe's requester waiting for another timeout after each spurious one.)
            _ => self.send_ack(env, cfg, self.ack_psn.sub(1), Aeth::ack(self.msn)),
        }
    }

    /// A duplicate READ request: served again if it asks for a saved READ's memory (the same
    /// R_Key, a sub-range) at PSNs inside that READ's range; false when it matched none.
    fn replay_read(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> bool {
        let Some(reth) = p.ext.reth else {
            return false;
        };
        let found = self.res.iter().flatten().find_map(|r| match *r {
            RdRes::Read {
                first,
                npsn,
                rkey,
                va,
                len,
            } if !psn.before(first) && psn.before(first.add(npsn)) => {
                Some((first, npsn, rkey, va, len))
            }
            _ => None,
        });
        let Some((first, npsn, rkey, va, len)) = found else {
            return false;
        };
        let n = packets(reth.dma_len, cfg.pmtu);
        let end = u64::from(reth.dma_len).checked_add(reth.va);
        let inside = reth.rkey == rkey
            && reth.va >= va
            && end.is_some_and(|e| e <= va.saturating_add(u64::from(len)))
            && psn
                .distance_from(first)
                .checked_add(n)
                .is_some_and(|k| k <= npsn);
        if !inside {
            return false;
        }
        if reth.dma_len > 0
            && env
                .remote_check(RemoteOp::Read, reth.rkey, reth.va, reth.dma_len)
                .is_err()
        {
            // The memory went away since (deregistered, invalidated): nothing to resend.
            return false;
        }
        self.stream = Some(ReadStream {
            psn,
            rkey,
            va: reth.va,
            len: reth.dma_len,
            n,
            sent: 0,
            replay: true,
            marks: self.answer,
            msn_eth: p
                .ext
                .msn_eth
                .filter(|_| self.answer.tver == crate::proto::wire::sr_ext::BTH_TVER_SR),
        });
        let _ = self.pump(env, cfg, READ_BUDGET);
        true
    }
}
