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
use crate::proto::rc::{nak, Outcome, RcConfig, RcEnv, Service};
use crate::proto::wire::ext_headers::Aeth;
use crate::proto::wire::opcode::{OpKind, Position};
use crate::proto::wire::PacketRepr;
use crate::uabi::cqe::{Completion, RecvInfo};

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        E: DerefMut<Target = RespSr>,
    > Responder<R, W, E>
{
    /// A request packet for this QP.
    pub fn on_request(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
    ) -> Outcome {
        let Some(info) = p.bth.opcode.info() else {
            return Outcome::Ok;
        };
        if self.repair_goes_ahead(p) {
            if self.repair_redundant(p, cfg.pmtu) {
                // Every response it asks for is still to go out of a READ in progress:
                // serving it too would send them twice.
                self.counters.duplicates += 1;
                self.counters.repairs_redundant += 1;
                return Outcome::Ok;
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
            self.counters.busy_dropped += 1;
            return Outcome::Ok;
        }
        let psn = p.bth.psn;
        let rc = cfg.service == Service::Rc;
        self.set_answer(p);
        if p.is_sr() {
            if !rc {
                self.counters.sr_refused += 1;
                return Outcome::Ok;
            }
            return self.on_sr_request(env, cfg, p, info);
        }
        if rc && self.sr_active() && !psn.before(self.epsn) {
            // A standard packet of the phase before the SR format: stale.
            if let Some(sr) = self.sr_mut() {
                sr.counters.stale_standard += 1;
            }
            return Outcome::Ok;
        }
        if rc {
            let d = psn.diff(self.epsn);
            if d > 0 {
                self.counters.seq_err += 1;
                if !self.nak_sent {
                    self.nak_sent = true;
                    self.send_ack(env, cfg, self.epsn, Aeth::nak(nak::PSN_SEQ_ERR, self.msn));
                }
                return Outcome::Ok;
            }
            if d < 0 {
                self.counters.duplicates += 1;
                self.duplicate(env, cfg, p, info.kind);
                return Outcome::Ok;
            }
            self.nak_sent = false;
        } else {
            if psn != self.epsn {
                // UC: a gap. Whatever message was in progress is lost.
                self.counters.uc_dropped += 1;
                self.abandon_uc();
                self.epsn = psn;
            }
            if self.uc_dropping {
                if !info.position.starts_message() {
                    self.epsn = psn.next();
                    return Outcome::Ok;
                }
                self.uc_dropping = false;
            }
        }
        // The opcode must continue the message in progress, or start one.
        let continues = matches!(info.position, Position::Middle | Position::Last);
        let seq_ok = match (&self.cur, continues) {
            (Some(Cur::Send { .. }), true) => info.kind == OpKind::Send,
            (Some(Cur::Write { .. }), true) => info.kind == OpKind::RdmaWrite,
            (None, false) => true,
            _ => false,
        };
        let in_progress = match self.cur {
            None => InProgress::None,
            Some(Cur::Send { .. }) => InProgress::Send,
            Some(Cur::Write { .. }) => InProgress::Write,
        };
        let res = if !seq_ok {
            Exec::invalid_request()
        } else {
            match info.kind {
                OpKind::Send => self.exec_send(env, cfg, p, info.position),
                OpKind::RdmaWrite => self.exec_write(env, cfg, p, info.position),
                OpKind::RdmaReadRequest if rc => self.exec_read(env, cfg, p, psn),
                OpKind::CompareSwap | OpKind::FetchAdd if rc => {
                    self.exec_atomic(env, cfg, p, psn, info.kind)
                }
                OpKind::AtomicWrite if rc => self.exec_atomic_write(env, p),
                OpKind::Flush if rc => self.exec_flush(env, p),
                _ => Exec::invalid_request(),
            }
        };
        match res {
            Exec::Done(n) | Exec::Answered(n) => {
                self.epsn = psn.add(n);
                if info.kind != OpKind::RdmaReadRequest {
                    self.ack_psn = self.epsn;
                }
                if rc && matches!(res, Exec::Done(_)) && p.bth.ack_req {
                    self.send_ack(env, cfg, psn, Aeth::ack(self.msn));
                }
                Outcome::Ok
            }
            Exec::Rnr => {
                if rc {
                    self.counters.rnr_naks_sent += 1;
                    self.send_ack(env, cfg, psn, Aeth::rnr_nak(cfg.min_rnr_timer, self.msn));
                } else {
                    self.counters.uc_dropped += 1;
                    self.abandon_uc();
                    self.epsn = psn.next();
                }
                Outcome::Ok
            }
            Exec::Failed => Outcome::Error,
            Exec::Fatal(code, status) => {
                if let Some(Cur::Send { wqe, .. }) = self.cur.take() {
                    env.complete_recv(
                        &Completion::recv(wqe.wr_id, cfg.qpn, status, RecvInfo::default()),
                        false,
                    );
                }
                if rc {
                    self.fatal = Some(FatalNote {
                        psn,
                        opcode: p.bth.opcode.0,
                        payload_len: p.payload.len() as u32,
                        nak: code,
                        status,
                        in_progress,
                        out_of_sequence: !seq_ok,
                    });
                    self.counters.err_naks_sent += 1;
                    self.send_ack(env, cfg, psn, Aeth::nak(code, self.msn));
                    Outcome::Error
                } else {
                    // UC has no one to tell: drop the message.
                    self.counters.uc_dropped += 1;
                    self.abandon_uc();
                    self.epsn = psn.next();
                    Outcome::Ok
                }
            }
        }
    }

    fn abandon_uc(&mut self) {
        if let Some(Cur::Send { wqe, .. }) = self.cur.take() {
            self.spare = Some(wqe);
        }
        self.cur = None;
        self.uc_dropping = true;
    }
}
