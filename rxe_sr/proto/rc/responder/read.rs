// SPDX-License-Identifier: GPL-2.0
//! Executing RDMA READ (IBTA 9.7.4.2; rdma_rxe's read_reply): the request is checked and
//! saved as a resource, and its READ responses go out as a stream, [`READ_BUDGET`] packets
//! at a time ([`Responder::pump`]); memory that can no longer be read refuses the READ.

use core::ops::DerefMut;

use super::Exec;
use super::FatalNote;
use super::InProgress;
use super::RdRes;
use super::Responder;
use super::MAX_MSG_SZ;
use super::READ_BUDGET;
use super::{RecvSlot, RespSr};
use crate::proto::psn::{Psn, PSN_SPACE};
use crate::proto::rc::{
    nak, packets, Fatal, PayloadSrc, RcConfig, RcEnv, RcEvent, RemoteOp, TxError,
};
use crate::proto::wire::caps::CapAnswer;
use crate::proto::wire::ext_headers::Aeth;
use crate::proto::wire::sr_ext::{MsnEth, BTH_TVER_SR};
use crate::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr};
use crate::proto::words::WindowWords;
use crate::uabi::cqe::WcStatus;

/// READ responses still to send (a new READ's or a replayed one's).
#[derive(Clone, Copy, Debug)]
pub(super) struct ReadStream {
    /// PSN of the stream's first response.
    pub(super) psn: Psn,
    pub(super) rkey: u32,
    pub(super) va: u64,
    pub(super) len: u32,
    /// Responses in all, and sent so far.
    pub(super) n: u32,
    pub(super) sent: u32,
    /// A duplicate's replay: a failure stops it quietly (the first run answered already).
    pub(super) replay: bool,
    /// BTH TVer and Resv7 of the responses (the format of the request).
    pub(super) marks: CapAnswer,
    /// SR format: the request's MSN-ETH, echoed in every response with its offset.
    pub(super) msn_eth: Option<MsnEth>,
}

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    pub(super) fn exec_read(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Exec {
        let Some(reth) = p.ext.reth else {
            return Exec::invalid_request();
        };
        let n = packets(reth.dma_len, cfg.pmtu);
        // No responder resources, longer than max_msg_sz, or so many PSNs that ePSN would
        // pass half the PSN space: IBTA's invalid request.
        if cfg.max_dest_rd_atomic == 0 || reth.dma_len > MAX_MSG_SZ || n >= PSN_SPACE / 2 {
            return Exec::invalid_request();
        }
        if reth.dma_len > 0 {
            if let Err(e) = env.remote_check(RemoteOp::Read, reth.rkey, reth.va, reth.dma_len) {
                return Exec::remote_refused(e);
            }
        }
        self.bump_msn();
        self.save_res(
            cfg,
            RdRes::Read {
                first: psn,
                npsn: n,
                rkey: reth.rkey,
                va: reth.va,
                len: reth.dma_len,
            },
        );
        self.stream = Some(ReadStream {
            psn,
            rkey: reth.rkey,
            va: reth.va,
            len: reth.dma_len,
            n,
            sent: 0,
            replay: false,
            marks: self.first_answer(p),
            msn_eth: p.ext.msn_eth.filter(|_| self.answer.tver == BTH_TVER_SR),
        });
        // The stream holds the request's PSNs from now on: a failure in this first batch is
        // reported by pump itself.
        self.epsn = psn.add(n);
        match self.pump(env, cfg, READ_BUDGET) {
            Ok(()) => Exec::Answered(n),
            Err(Fatal) => Exec::Failed,
        }
    }

    /// Sends up to `budget` more READ responses of the stream in progress. A new READ whose
    /// memory can no longer be read is refused (NAK "remote access error", the QP enters
    /// the Error state); a replay that fails just stops.
    pub fn pump(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, budget: u32) -> Result<(), Fatal> {
        let Some(mut s) = self.stream else {
            return Ok(());
        };
        let pmtu = cfg.pmtu.max(1);
        let mut left = budget;
        while s.sent < s.n && left > 0 {
            let k = s.sent;
            let off = k.saturating_mul(pmtu);
            let plen = s.len.saturating_sub(off).min(pmtu);
            let (opcode, aeth) = match (k == 0, k + 1 == s.n) {
                (true, true) => (Opcode::RC_RDMA_READ_RESPONSE_ONLY, true),
                (true, false) => (Opcode::RC_RDMA_READ_RESPONSE_FIRST, true),
                (false, false) => (Opcode::RC_RDMA_READ_RESPONSE_MIDDLE, false),
                (false, true) => (Opcode::RC_RDMA_READ_RESPONSE_LAST, true),
            };
            let hdr = PacketRepr {
                bth: BthRepr {
                    opcode,
                    pad_cnt: BthRepr::pad_for(plen as usize),
                    dest_qpn: cfg.dest_qpn,
                    psn: s.psn.add(k),
                    tver: s.marks.tver,
                    resv7: s.marks.resv7,
                    ..Default::default()
                },
                ext: ExtHeaders {
                    aeth: aeth.then_some(Aeth::ack(self.msn)),
                    msn_eth: s.msn_eth.map(|m| MsnEth {
                        msn: m.msn,
                        offset: m.offset.wrapping_add(k) & 0x00ff_ffff,
                    }),
                    ..Default::default()
                },
                payload: &[],
            };
            let src = if plen == 0 {
                PayloadSrc::None
            } else {
                PayloadSrc::Remote {
                    rkey: s.rkey,
                    va: s.va.wrapping_add(u64::from(off)),
                }
            };
            match env.transmit(&hdr, src, plen) {
                // A lost response is recovered by the requester's retry.
                Ok(()) | Err(TxError::Dropped | TxError::Busy) => {}
                Err(TxError::Local(_)) => {
                    self.stream = None;
                    if s.replay {
                        self.stream = self.paused.take();
                        return Ok(());
                    }
                    return Err(self.refuse(
                        env,
                        cfg,
                        s.psn,
                        Opcode::RC_RDMA_READ_REQUEST.0,
                        nak::REMOTE_ACCESS,
                        WcStatus::RemAccessErr,
                    ));
                }
            }
            s.sent += 1;
            left -= 1;
        }
        // A replay's end takes up the new READ set aside for it, if any.
        self.stream = if s.sent < s.n {
            Some(s)
        } else {
            self.paused.take()
        };
        Ok(())
    }

    /// Refuses a request that failed after its checks (a READ found bad while its
    /// responses were being sent, an SR message that cannot complete): notes it, sends the
    /// NAK, and moves the QP to Error (the [`Fatal`] returned).
    pub(super) fn refuse(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        psn: Psn,
        opcode: u8,
        code: u8,
        status: WcStatus,
    ) -> Fatal {
        self.fatal = Some(FatalNote {
            psn,
            opcode,
            payload_len: 0,
            nak: code,
            status,
            in_progress: InProgress::None,
            out_of_sequence: false,
        });
        self.count(env, RcEvent::ErrNakSent);
        self.send_ack(env, cfg, psn, Aeth::nak(code, self.msn));
        Fatal
    }
}
