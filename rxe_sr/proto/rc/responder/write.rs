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
use crate::uabi::cqe::{Completion, RecvInfo, WcStatus};

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        E: DerefMut<Target = RespSr>,
    > Responder<R, W, E>
{
    pub(super) fn exec_write(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        pos: Position,
    ) -> Exec {
        let plen = p.payload.len() as u32;
        let (rkey, va, resid, total) = match self.cur.take() {
            Some(Cur::Write {
                rkey,
                va,
                resid,
                total,
            }) => (rkey, va, resid, total),
            _ => {
                let Some(reth) = p.ext.reth else {
                    return Exec::invalid_request();
                };
                if reth.dma_len > 0 {
                    if let Err(e) =
                        env.remote_check(RemoteOp::Write, reth.rkey, reth.va, reth.dma_len)
                    {
                        return Exec::remote_refused(e);
                    }
                }
                (reth.rkey, reth.va, reth.dma_len, reth.dma_len)
            }
        };
        let len_ok = if pos.ends_message() {
            plen == resid
        } else {
            plen == cfg.pmtu && plen < resid
        };
        if !len_ok || plen > cfg.pmtu {
            return Exec::invalid_request();
        }
        // WRITE with immediate consumes a receive WQE: check for one before placing data.
        let imm = p.ext.imm_dt.filter(|_| pos.ends_message());
        let wqe = if imm.is_some() {
            match self.take_recv(env) {
                None => {
                    // Keep the state so the retried last packet finds it.
                    self.cur = (!pos.starts_message()).then_some(Cur::Write {
                        rkey,
                        va,
                        resid,
                        total,
                    });
                    return Exec::Rnr;
                }
                Some(Ok(w)) => Some(w),
                Some(Err((wr_id, status))) => {
                    env.complete_recv(
                        &Completion::recv(wr_id, cfg.qpn, status, RecvInfo::default()),
                        false,
                    );
                    return Exec::remote_op_error();
                }
            }
        } else {
            None
        };
        if plen > 0 {
            if let Err(e) = env.remote_write(rkey, va, p.payload) {
                if let Some(w) = wqe {
                    self.spare = Some(w);
                }
                return Exec::remote_refused(e);
            }
        }
        if !pos.ends_message() {
            self.cur = Some(Cur::Write {
                rkey,
                va: va.wrapping_add(u64::from(plen)),
                resid: resid - plen,
                total,
            });
            return Exec::Done(1);
        }
        self.bump_msn();
        if let Some(w) = wqe {
            self.bump_recv_msn();
            let info = RecvInfo::connected(total, true, imm.map(|i| i.data), None, cfg.port);
            env.complete_recv(
                &Completion::recv(w.wr_id, cfg.qpn, WcStatus::Success, info),
                p.bth.se,
            );
        }
        Exec::Done(1)
    }
}
