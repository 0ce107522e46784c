// SPDX-License-Identifier: GPL-2.0
//! The responder's header-only responses (IBTA 9.7.5.2; rdma_rxe's send_ack and
//! send_atomic_ack): ACK, NAK and RNR NAK (an AETH with the MSN), and the atomic ACK with
//! the original value; each in the format of the request it answers (the capability echo
//! in BTH Resv7, or the SR format with an SR-ACK-ETH of kind ACK, which advertises the
//! responder's SR window).

use core::ops::DerefMut;

use super::RdRes;
use super::Responder;
use super::{RecvSlot, RespSr};
use crate::proto::psn::Psn;
use crate::proto::rc::{PayloadSrc, RcConfig, RcEnv, SR_DEFAULT_WINDOW_LOG2};
use crate::proto::wire::caps::CapAnswer;
use crate::proto::wire::ext_headers::{Aeth, AtomicAckEth};
use crate::proto::wire::sr_ext::{SrAckEth, SrAckKind, BTH_TVER_SR};
use crate::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr};
use crate::proto::words::WindowWords;

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// Sends a header-only response (ACK, NAK, atomic ACK) for `psn`. A lost one is
    /// recovered by the requester's retry.
    fn send_response(
        &self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        opcode: Opcode,
        psn: Psn,
        ext: ExtHeaders,
        marks: CapAnswer,
    ) {
        let hdr = PacketRepr {
            bth: BthRepr {
                opcode,
                dest_qpn: cfg.dest_qpn,
                psn,
                tver: marks.tver,
                resv7: marks.resv7,
                ..Default::default()
            },
            ext,
            payload: &[],
        };
        let _ = env.transmit(&hdr, PayloadSrc::None, 0);
    }

    pub(super) fn send_ack(&self, env: &mut dyn RcEnv, cfg: &RcConfig, psn: Psn, aeth: Aeth) {
        let sr = (self.answer.tver == BTH_TVER_SR).then_some(SrAckEth {
            kind: SrAckKind::Ack,
            lost_cnt: 0,
            lost_cnt_overflow: false,
            sack_high: psn,
            trigger_psn: psn,
            window_log2: self
                .sr
                .as_deref()
                .map_or(SR_DEFAULT_WINDOW_LOG2, |s| s.window_log2),
        });
        let ext = ExtHeaders {
            aeth: Some(aeth),
            sr_ack_eth: sr,
            ..Default::default()
        };
        self.send_response(env, cfg, Opcode::RC_ACKNOWLEDGE, psn, ext, self.answer);
    }

    /// The atomic ACK of `psn` with the original value `orig`, marked `marks` (the
    /// answer's, or coded on a first execution).
    pub(super) fn send_atomic_ack(
        &self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        (psn, orig): (Psn, u64),
        marks: CapAnswer,
    ) {
        let ext = ExtHeaders {
            aeth: Some(Aeth::ack(self.msn)),
            atomic_ack_eth: Some(AtomicAckEth {
                orig_rem_data: orig,
            }),
            ..Default::default()
        };
        self.send_response(env, cfg, Opcode::RC_ATOMIC_ACKNOWLEDGE, psn, ext, marks);
    }
}
