// SPDX-License-Identifier: GPL-2.0
//! Taking one request packet (IBTA 9.7.5.2; rdma_rxe's check_psn, check_op_seq and
//! execute): RC checks its PSN against ePSN (ahead: NAK "PSN sequence error" once per gap;
//! behind: a duplicate), UC resynchronises after a gap; the opcode must continue the
//! message in progress or start one; the request is then executed and answered (ACK when
//! asked, RNR NAK, or a fatal NAK that moves the QP to the Error state).

use core::ops::DerefMut;

use super::Cur;
use super::Exec;
use super::FatalNote;
use super::InProgress;
use super::RdRes;
use super::Responder;
use super::{RecvSlot, RespSr};
use crate::proto::psn::Psn;
use crate::proto::rc::{nak, Fatal, RcConfig, RcEnv, RcEvent, Service};
use crate::proto::wire::ext_headers::Aeth;
use crate::proto::wire::opcode::{OpInfo, OpKind, Position};
use crate::proto::wire::PacketRepr;
use crate::proto::words::WindowWords;
use crate::uabi::cqe::{Completion, RecvInfo, WcStatus};

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// A request packet for this QP: the READ stream in progress may hold it back; an
    /// SR-format request takes its own path; a standard one goes through rdma_rxe's
    /// stages: check_psn, check_op_seq and check_op_valid, execute, acknowledge.
    pub fn on_request(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
    ) -> Result<(), Fatal> {
        let Some(info) = p.bth.opcode.info() else {
            return Ok(());
        };
        if !self.check_read_stream(env, p, cfg.pmtu) {
            return Ok(());
        }
        let rc = cfg.service == Service::Rc;
        self.set_answer(p);
        if p.is_sr() {
            if !rc {
                self.count(env, RcEvent::SrUnsupported);
                return Ok(());
            }
            return self.on_sr_request(env, cfg, p, info);
        }
        let in_sequence = if rc {
            self.check_psn(env, cfg, p, info.kind)
        } else {
            self.check_psn_uc(env, p.bth.psn, info.position)
        };
        if !in_sequence {
            return Ok(());
        }
        let chk = Checked {
            rc,
            out_of_sequence: !self.check_op_seq(info),
            in_progress: self.in_progress(),
        };
        let res = if chk.out_of_sequence || !check_op_valid(info.kind, rc) {
            Exec::invalid_request()
        } else {
            self.execute(env, cfg, p, info)
        };
        self.acknowledge(env, cfg, p, info.kind, res, chk)
    }

    /// Whether a request may be taken while READ responses are still to go out: an SR
    /// READ repair goes ahead of them (the READ in progress is set aside) unless every
    /// response it asks for is still to be sent; any other request is dropped, counted.
    fn check_read_stream(&mut self, env: &mut dyn RcEnv, p: &PacketRepr<'_>, pmtu: u32) -> bool {
        if self.repair_goes_ahead(p) {
            if self.repair_redundant(p, pmtu) {
                // Every response it asks for is still to go out of a READ in progress:
                // serving it too would send them twice.
                self.count(env, RcEvent::Duplicate);
                self.count(env, RcEvent::RepairRedundant);
                return false;
            }
            // A new READ's responses wait for this one's (its stream is set aside, and taken
            // up again when the replay is out).
            if self.paused.is_none() {
                self.paused = self.stream.take();
            }
        }
        // Otherwise responses keep PSN order: the caller holds requests back while READ
        // responses are still to go out; one it did not hold is dropped (the requester
        // resends it), as sending the rest of a READ here could take millions of packets.
        if self.stream.is_some() {
            self.count(env, RcEvent::BusyDropped);
            return false;
        }
        true
    }

    /// rdma_rxe's check_psn (RC): true for the packet at ePSN. One after it is out of
    /// sequence (NAK "PSN sequence error", once per gap), one before it a duplicate,
    /// answered here; once the SR format is in use, a standard packet at or past ePSN is
    /// stale.
    fn check_psn(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        kind: OpKind,
    ) -> bool {
        let psn = p.bth.psn;
        if self.sr_active() && !psn.before(self.epsn) {
            // A standard packet of the phase before the SR format: stale.
            if let Some(sr) = self.sr_mut() {
                sr.count(env, RcEvent::StaleStandard);
            }
            return false;
        }
        let d = psn.diff(self.epsn);
        if d > 0 {
            self.count(env, RcEvent::OutOfSequence);
            if !self.nak_sent {
                self.nak_sent = true;
                self.send_ack(env, cfg, self.epsn, Aeth::nak(nak::PSN_SEQ_ERR, self.msn));
            }
            return false;
        }
        if d < 0 {
            self.count(env, RcEvent::Duplicate);
            self.duplicate(env, cfg, p, kind);
            return false;
        }
        self.nak_sent = false;
        true
    }

    /// check_psn for UC: after a gap the message in progress is lost and packets are
    /// dropped until the next message starts; true for a packet to go on with.
    fn check_psn_uc(&mut self, env: &mut dyn RcEnv, psn: Psn, pos: Position) -> bool {
        if psn != self.epsn {
            // UC: a gap. Whatever message was in progress is lost.
            self.count(env, RcEvent::UcDropped);
            self.abandon_uc();
            self.epsn = psn;
        }
        if self.uc_dropping {
            if !pos.starts_message() {
                self.epsn = psn.next();
                return false;
            }
            self.uc_dropping = false;
        }
        true
    }

    /// rdma_rxe's check_op_seq: the opcode must continue the message in progress (a
    /// MIDDLE or LAST packet of its kind) or, between messages, start one.
    fn check_op_seq(&self, info: OpInfo) -> bool {
        let continues = matches!(info.position, Position::Middle | Position::Last);
        match (&self.cur, continues) {
            (Some(Cur::Send { .. }), true) => info.kind == OpKind::Send,
            (Some(Cur::Write(_)), true) => info.kind == OpKind::RdmaWrite,
            (None, false) => true,
            _ => false,
        }
    }

    /// The kind of message in progress, for the note of a request refused.
    fn in_progress(&self) -> InProgress {
        match self.cur {
            None => InProgress::None,
            Some(Cur::Send { .. }) => InProgress::Send,
            Some(Cur::Write(_)) => InProgress::Write,
        }
    }

    /// rdma_rxe's execute: runs a request found in sequence and valid for the QP; each
    /// opcode's own step checks its resources, length and R_Key.
    fn execute(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        info: OpInfo,
    ) -> Exec {
        let psn = p.bth.psn;
        match info.kind {
            OpKind::Send => self.exec_send(env, cfg, p, info.position),
            OpKind::RdmaWrite => self.exec_write(env, cfg, p, info.position),
            OpKind::RdmaReadRequest => self.exec_read(env, cfg, p, psn),
            OpKind::CompareSwap | OpKind::FetchAdd => self.exec_atomic(env, cfg, p, psn, info.kind),
            OpKind::AtomicWrite => self.exec_atomic_write(env, p),
            OpKind::Flush => self.exec_flush(env, p),
            _ => Exec::invalid_request(),
        }
    }

    /// rdma_rxe's acknowledge: answers what executing the request gave. Done: ePSN (and,
    /// but for a READ, `ack_psn`) moves past it, with an ACK when asked; no receive WQE:
    /// an RNR NAK (UC drops the message); fatal: [`Self::fatal_nak`].
    fn acknowledge(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        kind: OpKind,
        res: Exec,
        chk: Checked,
    ) -> Result<(), Fatal> {
        let psn = p.bth.psn;
        match res {
            Exec::Done(n) | Exec::Answered(n) => {
                self.epsn = psn.add(n);
                if kind != OpKind::RdmaReadRequest {
                    self.ack_psn = self.epsn;
                }
                if chk.rc && matches!(res, Exec::Done(_)) && p.bth.ack_req {
                    self.send_ack(env, cfg, psn, Aeth::ack(self.msn));
                }
                Ok(())
            }
            Exec::Rnr => {
                if chk.rc {
                    self.count(env, RcEvent::RnrNakSent);
                    self.send_ack(env, cfg, psn, Aeth::rnr_nak(cfg.min_rnr_timer, self.msn));
                } else {
                    self.drop_uc_message(env, psn);
                }
                Ok(())
            }
            Exec::Failed => Err(Fatal),
            Exec::Fatal(code, status) => self.fatal_nak(env, cfg, p, (code, status), chk),
        }
    }

    /// A fatal error on the request at ePSN: the receive WQE in progress completes with
    /// `status`; RC notes the request, NAKs it with `code` and moves the QP to the Error
    /// state (IBTA's class B/C errors); UC, with no one to tell, drops the message.
    fn fatal_nak(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        (code, status): (u8, WcStatus),
        chk: Checked,
    ) -> Result<(), Fatal> {
        let psn = p.bth.psn;
        if let Some(Cur::Send { wqe, .. }) = self.cur.take() {
            env.complete_recv(
                &Completion::recv(wqe.wr_id, cfg.qpn, status, RecvInfo::default()),
                false,
            );
        }
        if !chk.rc {
            // UC has no one to tell: drop the message.
            self.drop_uc_message(env, psn);
            return Ok(());
        }
        self.fatal = Some(FatalNote {
            psn,
            opcode: p.bth.opcode.0,
            payload_len: p.payload.len() as u32,
            nak: code,
            status,
            in_progress: chk.in_progress,
            out_of_sequence: chk.out_of_sequence,
        });
        self.count(env, RcEvent::ErrNakSent);
        self.send_ack(env, cfg, psn, Aeth::nak(code, self.msn));
        Err(Fatal)
    }

    /// UC: the message in progress is dropped at `psn` (UC sends no NAK); the next one
    /// starts at a FIRST or ONLY packet.
    fn drop_uc_message(&mut self, env: &mut dyn RcEnv, psn: Psn) {
        self.count(env, RcEvent::UcDropped);
        self.abandon_uc();
        self.epsn = psn.next();
    }

    /// UC: the message in progress breaks off; its receive WQE is kept for the next
    /// message, and packets are dropped until one starts.
    fn abandon_uc(&mut self) {
        if let Some(Cur::Send { wqe, .. }) = self.cur.take() {
            self.spare = Some(wqe);
        }
        self.cur = None;
        self.uc_dropping = true;
    }
}

/// What the checks before execute found, for the answer: the service, and for the note of
/// a request refused, the message in progress and whether the opcode broke its sequence.
#[derive(Clone, Copy)]
struct Checked {
    rc: bool,
    out_of_sequence: bool,
    in_progress: InProgress,
}

/// rdma_rxe's check_op_valid: UC takes only SEND and RDMA WRITE; RC also takes RDMA READ,
/// the atomics, ATOMIC WRITE and FLUSH.
fn check_op_valid(kind: OpKind, rc: bool) -> bool {
    match kind {
        OpKind::Send | OpKind::RdmaWrite => true,
        OpKind::RdmaReadRequest
        | OpKind::CompareSwap
        | OpKind::FetchAdd
        | OpKind::AtomicWrite
        | OpKind::Flush => rc,
        _ => false,
    }
}
