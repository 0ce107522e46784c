// SPDX-License-Identifier: GPL-2.0
//! Executing RDMA WRITE (IBTA 9.7.4.2; rdma_rxe's write_data_in): the first packet's RETH
//! is checked against the memory it names, each packet is placed in turn, and RDMA WRITE
//! with immediate consumes a receive WQE on its last packet.

use core::ops::DerefMut;

use super::Cur;
use super::Exec;
use super::RdRes;
use super::Responder;
use super::{RecvSlot, RespSr};
use crate::proto::rc::{RcConfig, RcEnv, RemoteOp};
use crate::proto::wire::opcode::Position;
use crate::proto::wire::PacketRepr;
use crate::proto::words::WindowWords;
use crate::uabi::cqe::{Completion, RecvInfo, WcStatus};
use crate::uabi::recv_wqe::RecvWqe;

/// A multi-packet RDMA WRITE in progress: the next packet goes to `va`; `resid` of its
/// `total` bytes remain.
#[derive(Clone, Copy, Debug)]
pub(super) struct WriteCur {
    rkey: u32,
    va: u64,
    resid: u32,
    total: u32,
}

impl WriteCur {
    /// The message after a packet of `plen` bytes was placed.
    fn advance(self, plen: u32) -> Self {
        WriteCur {
            va: self.va.wrapping_add(u64::from(plen)),
            resid: self.resid - plen,
            ..self
        }
    }
}

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// One RDMA WRITE packet at ePSN: the message's target (checked on its first packet),
    /// the packet's length, the receive WQE a WRITE with immediate consumes, then the data
    /// placed and, on the last packet, the message completed.
    pub(super) fn exec_write(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        pos: Position,
    ) -> Exec {
        let plen = p.payload.len() as u32;
        let w = match self.cur.take() {
            Some(Cur::Write(w)) => w,
            _ => match check_rkey(env, p) {
                Ok(w) => w,
                Err(e) => return e,
            },
        };
        if !check_length(plen, pos, w.resid, cfg.pmtu) {
            return Exec::invalid_request();
        }
        // WRITE with immediate consumes a receive WQE: check for one before placing data.
        let wqe = if p.ext.imm_dt.is_some() && pos.ends_message() {
            match self.take_imm_wqe(env, cfg, pos, w) {
                Ok(wqe) => Some(wqe),
                Err(e) => return e,
            }
        } else {
            None
        };
        if plen > 0 {
            if let Err(e) = env.remote_write(w.rkey, w.va, p.payload) {
                if let Some(wqe) = wqe {
                    self.spare = Some(wqe);
                }
                return Exec::remote_refused(e);
            }
        }
        if !pos.ends_message() {
            self.cur = Some(Cur::Write(w.advance(plen)));
            return Exec::Done(1);
        }
        self.complete_write(env, cfg, p, w.total, wqe);
        Exec::Done(1)
    }

    /// The receive WQE the last packet of an RDMA WRITE with immediate consumes. None yet:
    /// RNR, the message kept for the retried packet; a bad one completes in error and the
    /// request fails ("remote operational error").
    fn take_imm_wqe(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        pos: Position,
        w: WriteCur,
    ) -> Result<RecvWqe, Exec> {
        match self.take_recv(env) {
            None => {
                // Keep the state so the retried last packet finds it.
                self.cur = (!pos.starts_message()).then_some(Cur::Write(w));
                Err(Exec::Rnr)
            }
            Some(Ok(wqe)) => Ok(wqe),
            Some(Err((wr_id, status))) => {
                env.complete_recv(
                    &Completion::recv(wr_id, cfg.qpn, status, RecvInfo::default()),
                    false,
                );
                Err(Exec::remote_op_error())
            }
        }
    }

    /// The last packet of an RDMA WRITE was placed: the message counts in the MSN, and a
    /// WRITE with immediate completes its receive WQE (`total` bytes, the immediate data).
    fn complete_write(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        total: u32,
        wqe: Option<RecvWqe>,
    ) {
        self.bump_msn();
        if let Some(w) = wqe {
            self.bump_recv_msn();
            let imm = p.ext.imm_dt.map(|i| i.data);
            let info = RecvInfo::connected(total, true, imm, None, cfg.port);
            env.complete_recv(
                &Completion::recv(w.wr_id, cfg.qpn, WcStatus::Success, info),
                p.bth.se,
            );
        }
    }
}

/// rdma_rxe's check_rkey, on a WRITE's first packet: its RETH must name memory the QP may
/// write (a zero-length WRITE names none); gives the message's target.
fn check_rkey(env: &mut dyn RcEnv, p: &PacketRepr<'_>) -> Result<WriteCur, Exec> {
    let Some(reth) = p.ext.reth else {
        return Err(Exec::invalid_request());
    };
    if reth.dma_len > 0 {
        if let Err(e) = env.remote_check(RemoteOp::Write, reth.rkey, reth.va, reth.dma_len) {
            return Err(Exec::remote_refused(e));
        }
    }
    Ok(WriteCur {
        rkey: reth.rkey,
        va: reth.va,
        resid: reth.dma_len,
        total: reth.dma_len,
    })
}

/// rdma_rxe's check_length: every packet but the last carries exactly one PMTU and leaves
/// bytes for the last; the last carries exactly the `resid` bytes left.
fn check_length(plen: u32, pos: Position, resid: u32, pmtu: u32) -> bool {
    let len_ok = if pos.ends_message() {
        plen == resid
    } else {
        plen == pmtu && plen < resid
    };
    len_ok && plen <= pmtu
}
