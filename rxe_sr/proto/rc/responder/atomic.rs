// SPDX-License-Identifier: GPL-2.0
//! Executing the atomics (IBTA 9.7.4.2; rdma_rxe's atomic_reply and atomic_write_reply):
//! CMP_SWAP and FETCH_ADD on 8 aligned bytes, their original value saved as a resource and
//! returned in an atomic ACK; and IBTA 1.5's ATOMIC WRITE.

use core::ops::DerefMut;

use super::Exec;
use super::RdRes;
use super::Responder;
use super::{RecvSlot, RespSr};
use crate::proto::psn::Psn;
use crate::proto::rc::{AtomicOp, RcConfig, RcEnv, RemoteOp};
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
    /// IBTA 1.5 ATOMIC WRITE: 8 bytes at an 8-byte aligned address, needing remote write.
    pub(super) fn exec_atomic_write(&mut self, env: &mut dyn RcEnv, p: &PacketRepr<'_>) -> Exec {
        let Some(reth) = p.ext.reth else {
            return Exec::invalid_request();
        };
        if reth.va % 8 != 0 || p.payload.len() != 8 {
            return Exec::invalid_request();
        }
        let res = env
            .remote_check(RemoteOp::Write, reth.rkey, reth.va, 8)
            .and_then(|()| env.remote_write(reth.rkey, reth.va, p.payload));
        match res {
            Ok(()) => {
                self.bump_msn();
                Exec::Done(1)
            }
            Err(e) => Exec::remote_refused(e),
        }
    }

    pub(super) fn exec_atomic(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
        kind: OpKind,
    ) -> Exec {
        let Some(a) = p.ext.atomic_eth else {
            return Exec::invalid_request();
        };
        if a.va % 8 != 0 || cfg.max_dest_rd_atomic == 0 {
            return Exec::invalid_request();
        }
        let op = if kind == OpKind::CompareSwap {
            AtomicOp::CmpSwap {
                compare: a.compare,
                swap: a.swap_add,
            }
        } else {
            AtomicOp::FetchAdd { add: a.swap_add }
        };
        if let Err(e) = env.remote_check(RemoteOp::Atomic, a.rkey, a.va, 8) {
            return Exec::remote_refused(e);
        }
        let orig = match env.remote_atomic(a.rkey, a.va, op) {
            Ok(v) => v,
            Err(e) => return Exec::remote_refused(e),
        };
        self.save_res(cfg, RdRes::Atomic { psn, orig });
        self.bump_msn();
        let marks = self.first_answer(p);
        self.send_atomic_ack(env, cfg, (psn, orig), marks);
        Exec::Answered(1)
    }
}
