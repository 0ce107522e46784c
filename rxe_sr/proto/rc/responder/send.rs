// SPDX-License-Identifier: GPL-2.0
//! Executing SEND (IBTA 9.7.4.2; rdma_rxe's send_data_in): each packet is scattered into
//! the receive WQE taken for the message (none: RNR NAK); the last one completes it, with
//! the immediate data or the invalidated R_Key of SEND with invalidate.

use core::ops::DerefMut;

use super::Cur;
use super::Exec;
use super::RdRes;
use super::Responder;
use super::{RecvSlot, RespSr};
use crate::proto::rc::{nak, RcConfig, RcEnv};
use crate::proto::wire::opcode::Position;
use crate::proto::wire::PacketRepr;
use crate::proto::words::WindowWords;
use crate::uabi::cqe::{Completion, RecvInfo, WcStatus};
use crate::uabi::recv_wqe::RecvWqe;

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// One SEND packet at ePSN: its length checked, the receive WQE of the message taken
    /// on its first packet (none: RNR), the payload scattered into it and, on the last
    /// packet, the message completed.
    pub(super) fn exec_send(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        pos: Position,
    ) -> Exec {
        let plen = p.payload.len() as u32;
        // Every packet but the last carries exactly one PMTU.
        if !pos.ends_message() && plen != cfg.pmtu || plen > cfg.pmtu {
            return Exec::invalid_request();
        }
        let (wqe, offset) = match self.cur.take() {
            Some(Cur::Send { wqe, offset }) => (wqe, offset),
            _ => match self.take_recv(env) {
                None => return Exec::Rnr,
                Some(Ok(w)) => (w, 0),
                Some(Err((wr_id, status))) => {
                    env.complete_recv(
                        &Completion::recv(wr_id, cfg.qpn, status, RecvInfo::default()),
                        false,
                    );
                    return Exec::remote_op_error();
                }
            },
        };
        if let Err(e) = send_data_in(env, cfg, p, &wqe, offset) {
            return e;
        }
        let offset = offset + plen;
        if !pos.ends_message() {
            self.cur = Some(Cur::Send { wqe, offset });
            return Exec::Done(1);
        }
        self.complete_send(env, cfg, p, &wqe, offset)
    }

    /// The last packet of a SEND was placed: SEND with invalidate invalidates its R_Key
    /// (failing: "invalid request"), and the receive WQE completes with the message's
    /// `byte_len` bytes and its immediate data.
    fn complete_send(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        wqe: &RecvWqe,
        byte_len: u32,
    ) -> Exec {
        let mut invalidated = None;
        if let Some(ieth) = p.ext.ieth {
            if env.invalidate(ieth.rkey).is_err() {
                env.complete_recv(
                    &Completion::recv(
                        wqe.wr_id,
                        cfg.qpn,
                        WcStatus::RemInvReqErr,
                        RecvInfo::default(),
                    ),
                    false,
                );
                return Exec::invalid_request();
            }
            invalidated = Some(ieth.rkey);
        }
        let imm = p.ext.imm_dt.map(|i| i.data);
        let info = RecvInfo::connected(byte_len, false, imm, invalidated, cfg.port);
        self.bump_msn();
        self.bump_recv_msn();
        env.complete_recv(
            &Completion::recv(wqe.wr_id, cfg.qpn, WcStatus::Success, info),
            p.bth.se,
        );
        Exec::Done(1)
    }
}

/// rdma_rxe's send_data_in: the packet's payload is scattered into `wqe` at `offset`. Past
/// the WQE's length the WQE completes with a local length error; a scatter that fails
/// completes it with the scatter's status ("remote operational error").
fn send_data_in(
    env: &mut dyn RcEnv,
    cfg: &RcConfig,
    p: &PacketRepr<'_>,
    wqe: &RecvWqe,
    offset: u32,
) -> Result<(), Exec> {
    let plen = p.payload.len() as u32;
    if u64::from(offset) + u64::from(plen) > u64::from(wqe.length) {
        env.complete_recv(
            &Completion::recv(wqe.wr_id, cfg.qpn, WcStatus::LocLenErr, RecvInfo::default()),
            false,
        );
        return Err(Exec::Fatal(nak::INVALID_REQUEST, WcStatus::LocLenErr));
    }
    if plen > 0 {
        if let Err(s) = env.scatter(&wqe.sges, offset, p.payload) {
            env.complete_recv(
                &Completion::recv(wqe.wr_id, cfg.qpn, s, RecvInfo::default()),
                false,
            );
            return Err(Exec::Fatal(nak::REMOTE_OP, s));
        }
    }
    Ok(())
}
