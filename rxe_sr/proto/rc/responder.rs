// SPDX-License-Identifier: GPL-2.0
//! The responder of a connected QP (IBTA 9.7.4.2, 9.7.5.2; rdma_rxe's rxe_resp.c).
//!
//! Every request packet is checked against ePSN first:
//! - PSN == ePSN: the opcode must continue the message in progress (or start one); the
//!   packet is executed and ePSN advances. A SEND that finds no receive WQE gets an RNR
//!   NAK (ePSN stays, the requester retries later); a bad R_Key or range gets NAK
//!   "remote access error", a malformed request NAK "invalid request", and the QP enters
//!   the Error state, as IBTA's class B/C errors require.
//! - PSN after ePSN (RC): a packet was lost; drop it and send one NAK "PSN sequence error"
//!   per gap (rdma_rxe's `sent_psn_nak`).
//! - PSN before ePSN (RC): a duplicate. Each SEND and WRITE packet is re-acknowledged,
//!   with the PSN of the last packet an ACK could cover (`ack_psn`), never a READ
//!   response's PSN: a plain ACK at or past a READ's PSNs would tell the requester that the
//!   READ is done, or that its responses were lost (rdma_rxe's `resp.ack_psn`); an RDMA
//!   READ is executed again from the PSN it names (the requester resumes reads that way);
//!   an atomic is answered from the saved result, never executed twice.
//!
//! UC: no ACKs or NAKs; a gap drops the rest of the message in progress, and the next
//! message starts at the first FIRST/ONLY packet seen.
//!
//! ACKs are sent when a packet asks for one (AckReq), carrying the PSN and the MSN (the
//! count of messages completed, 24 bits).

use core::ops::DerefMut;

use super::{
    nak, AtomicOp, Outcome, PayloadSrc, RcConfig, RcEnv, RemoteErr, RemoteOp, Service, TxError,
};
use crate::proto::psn::{Psn, PSN_SPACE};
use crate::proto::wire::ext_headers::{Aeth, AtomicAckEth};
use crate::proto::wire::opcode::{OpKind, Position};
use crate::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr};
use crate::uabi::cqe::{Completion, RecvInfo, WcStatus};
use crate::uabi::recv_wqe::RecvWqe;

/// READ and atomic resources kept at most (the device's `max_qp_rd_atom`: the largest
/// `max_dest_rd_atomic` a QP may have).
pub const MAX_RD_RES: usize = 128;

/// READ response packets sent per call at most (a new READ's first batch, each
/// [`Responder::pump`]).
pub const READ_BUDGET: u32 = 64;

/// The longest message (the device's `max_msg_sz`).
pub const MAX_MSG_SZ: u32 = 1 << 31;

/// A READ or atomic the responder executed: what a duplicate of it may ask again. The
/// caller provides the storage for them (`max_dest_rd_atomic` entries at most are used;
/// [`MAX_RD_RES`] covers any QP), as the requester's slots: the core allocates nothing.
#[derive(Clone, Copy, Debug)]
pub enum RdRes {
    /// An RDMA READ: its PSN range and the memory its RETH named.
    Read {
        /// PSN of its first response.
        first: Psn,
        /// PSNs it uses.
        npsn: u32,
        /// Its R_Key.
        rkey: u32,
        /// Its first address.
        va: u64,
        /// Its length.
        len: u32,
    },
    /// A CMP_SWAP or FETCH_ADD, with the original value it returned.
    Atomic {
        /// Its PSN.
        psn: Psn,
        /// The value it returned.
        orig: u64,
    },
}

/// READ responses still to send (a new READ's or a replayed one's).
#[derive(Clone, Copy, Debug)]
struct ReadStream {
    /// PSN of the stream's first response.
    psn: Psn,
    rkey: u32,
    va: u64,
    len: u32,
    /// Responses in all, and sent so far.
    n: u32,
    sent: u32,
    /// A duplicate's replay: a failure stops it quietly (the first run answered already).
    replay: bool,
}

/// The message being received. (Held by value in the QP: no allocation in the core.)
#[derive(Clone, Copy, Debug)]
#[allow(clippy::large_enum_variant)]
enum Cur {
    /// A multi-packet SEND into `wqe`, `offset` bytes placed.
    Send { wqe: RecvWqe, offset: u32 },
    /// A multi-packet RDMA WRITE: the next packet goes to `va`; `resid` bytes remain.
    Write {
        rkey: u32,
        va: u64,
        resid: u32,
        total: u32,
    },
}

/// Counters the transport exports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RespCounters {
    /// Out-of-sequence request packets (`rcvd_seq_err`).
    pub seq_err: u64,
    /// Duplicate request packets (`duplicate_request`).
    pub duplicates: u64,
    /// RNR NAKs sent (`send_rnr_nak`).
    pub rnr_naks_sent: u64,
    /// Error NAKs sent.
    pub err_naks_sent: u64,
    /// UC packets dropped for a gap.
    pub uc_dropped: u64,
    /// Duplicate READ or atomic requests that matched no saved resource: dropped.
    pub dup_unmatched: u64,
}

/// What made the responder move its QP to the Error state: the request it refused, for
/// the kernel log (rdma_rxe prints the like with rxe_dbg_qp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FatalNote {
    /// The refused request's PSN (ePSN: it was in sequence).
    pub psn: Psn,
    /// Its BTH opcode.
    pub opcode: u8,
    /// Its payload length.
    pub payload_len: u32,
    /// The NAK syndrome's code sent back (`nak::*`).
    pub nak: u8,
    /// The completion status of the receive WQE in progress, if there was one.
    pub status: WcStatus,
    /// The message in progress when it arrived.
    pub in_progress: InProgress,
    /// True when the opcode did not continue (or start) a message as the one in progress
    /// required; false when executing it failed.
    pub out_of_sequence: bool,
}

/// The kind of message a responder was in the middle of receiving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InProgress {
    /// Between messages.
    None,
    /// A multi-packet SEND.
    Send,
    /// A multi-packet RDMA WRITE.
    Write,
}

impl InProgress {
    /// For the kernel log.
    pub const fn describe(self) -> &'static str {
        match self {
            InProgress::None => "no message",
            InProgress::Send => "a SEND",
            InProgress::Write => "an RDMA WRITE",
        }
    }
}

/// The responder of one connected QP, keeping its READ/atomic resources in `R`.
pub struct Responder<R: DerefMut<Target = [Option<RdRes>]>> {
    epsn: Psn,
    /// The PSN after the last SEND, WRITE or atomic packet executed: a duplicate SEND or
    /// WRITE is acknowledged at `ack_psn - 1`. READs move ePSN but not this.
    ack_psn: Psn,
    msn: u32,
    nak_sent: bool,
    cur: Option<Cur>,
    /// A receive WQE taken but not used (a UC message that broke off): used first.
    spare: Option<RecvWqe>,
    /// UC: dropping packets until the next message starts.
    uc_dropping: bool,
    /// READ and atomic resources, a ring of `max_dest_rd_atomic` entries (at most its
    /// length).
    res: R,
    res_next: usize,
    /// READ responses still to send.
    stream: Option<ReadStream>,
    /// Statistics.
    pub counters: RespCounters,
    /// Set when a request moved the QP to Error; the driver logs and clears it.
    pub fatal: Option<FatalNote>,
}

/// Result of executing one in-sequence packet.
enum Exec {
    /// Done: advance ePSN by this many PSNs; acknowledge if asked.
    Done(u32),
    /// Done, and the answer (READ responses, atomic ACK) was already sent.
    Answered(u32),
    /// No receive WQE: RNR NAK.
    Rnr,
    /// Fatal: NAK with this code; complete the receive WQE in progress with the status.
    Fatal(u8, WcStatus),
    /// Fatal, already answered and noted (a READ whose first responses failed).
    Failed,
}

impl<R: DerefMut<Target = [Option<RdRes>]>> Responder<R> {
    /// A responder expecting `rq_psn` first, keeping its READ/atomic resources in `res`
    /// (cleared here; [`MAX_RD_RES`] entries cover any `max_dest_rd_atomic`).
    pub fn new(rq_psn: Psn, mut res: R) -> Self {
        res.fill(None);
        Responder {
            epsn: rq_psn,
            ack_psn: rq_psn,
            msn: 0,
            nak_sent: false,
            cur: None,
            spare: None,
            uc_dropping: false,
            res,
            res_next: 0,
            stream: None,
            counters: RespCounters {
                seq_err: 0,
                duplicates: 0,
                rnr_naks_sent: 0,
                err_naks_sent: 0,
                uc_dropped: 0,
                dup_unmatched: 0,
            },
            fatal: None,
        }
    }

    /// ePSN (`ibv_query_qp`'s rq_psn).
    pub const fn epsn(&self) -> Psn {
        self.epsn
    }

    /// True while READ responses remain to be sent: the caller runs [`Responder::pump`]
    /// and holds back the QP's further requests until it is false.
    pub const fn read_pending(&self) -> bool {
        self.stream.is_some()
    }

    /// Gives up the receive WQEs this responder holds (a message in progress, a spare) for
    /// the flush when the QP enters the Error state, oldest first: `flushed` gets each one's
    /// `wr_id`. READ responses not yet sent are forgotten too.
    pub fn drop_held(&mut self, mut flushed: impl FnMut(u64)) {
        self.stream = None;
        if let Some(Cur::Send { wqe, .. }) = self.cur.take() {
            flushed(wqe.wr_id);
        }
        if let Some(w) = self.spare.take() {
            flushed(w.wr_id);
        }
    }

    /// Sends a header-only response (ACK, NAK, atomic ACK) for `psn`. A lost one is
    /// recovered by the requester's retry.
    fn send_response(
        &self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        opcode: Opcode,
        psn: Psn,
        ext: ExtHeaders,
    ) {
        let hdr = PacketRepr {
            bth: BthRepr {
                opcode,
                dest_qpn: cfg.dest_qpn,
                psn,
                ..Default::default()
            },
            ext,
            payload: &[],
        };
        let _ = env.transmit(&hdr, PayloadSrc::None, 0);
    }

    fn send_ack(&self, env: &mut dyn RcEnv, cfg: &RcConfig, psn: Psn, aeth: Aeth) {
        let ext = ExtHeaders {
            aeth: Some(aeth),
            ..Default::default()
        };
        self.send_response(env, cfg, Opcode::RC_ACKNOWLEDGE, psn, ext);
    }

    fn take_recv(&mut self, env: &mut dyn RcEnv) -> Option<Result<RecvWqe, (u64, WcStatus)>> {
        match self.spare.take() {
            Some(w) => Some(Ok(w)),
            None => env.take_recv(),
        }
    }

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
        // Responses keep PSN order: a stream in progress goes out before anything else.
        while self.stream.is_some() {
            if self.pump(env, cfg, u32::MAX) == Outcome::Error {
                return Outcome::Error;
            }
        }
        let psn = p.bth.psn;
        let rc = cfg.service == Service::Rc;
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
            Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr)
        } else {
            match info.kind {
                OpKind::Send => self.exec_send(env, cfg, p, info.position),
                OpKind::RdmaWrite => self.exec_write(env, cfg, p, info.position),
                OpKind::RdmaReadRequest if rc => self.exec_read(env, cfg, p, psn),
                OpKind::CompareSwap | OpKind::FetchAdd if rc => {
                    self.exec_atomic(env, cfg, p, psn, info.kind)
                }
                OpKind::AtomicWrite if rc => self.exec_atomic_write(env, p),
                _ => Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr),
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

    fn bump_msn(&mut self) {
        self.msn = (self.msn + 1) & 0x00ff_ffff;
    }

    fn exec_send(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        pos: Position,
    ) -> Exec {
        let plen = p.payload.len() as u32;
        // Every packet but the last carries exactly one PMTU.
        if !pos.ends_message() && plen != cfg.pmtu || plen > cfg.pmtu {
            return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
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
                    return Exec::Fatal(nak::REMOTE_OP, WcStatus::RemOpErr);
                }
            },
        };
        if u64::from(offset) + u64::from(plen) > u64::from(wqe.length) {
            env.complete_recv(
                &Completion::recv(wqe.wr_id, cfg.qpn, WcStatus::LocLenErr, RecvInfo::default()),
                false,
            );
            return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::LocLenErr);
        }
        if plen > 0 {
            if let Err(s) = env.scatter(&wqe.sges, offset, p.payload) {
                env.complete_recv(
                    &Completion::recv(wqe.wr_id, cfg.qpn, s, RecvInfo::default()),
                    false,
                );
                return Exec::Fatal(nak::REMOTE_OP, s);
            }
        }
        let offset = offset + plen;
        if !pos.ends_message() {
            self.cur = Some(Cur::Send { wqe, offset });
            return Exec::Done(1);
        }
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
                return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
            }
            invalidated = Some(ieth.rkey);
        }
        let info = RecvInfo {
            byte_len: offset,
            rdma_with_imm: false,
            imm: p.ext.imm_dt.map(|i| i.data.to_be_bytes()),
            invalidated_rkey: invalidated,
            src_qp: None,
            port_num: cfg.port,
            network: None,
        };
        self.bump_msn();
        env.complete_recv(
            &Completion::recv(wqe.wr_id, cfg.qpn, WcStatus::Success, info),
            p.bth.se,
        );
        Exec::Done(1)
    }

    fn exec_write(
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
                    return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
                };
                if reth.dma_len > 0 {
                    match env.remote_check(RemoteOp::Write, reth.rkey, reth.va, reth.dma_len) {
                        Ok(()) => {}
                        Err(RemoteErr::Access) => {
                            return Exec::Fatal(nak::REMOTE_ACCESS, WcStatus::RemAccessErr)
                        }
                        Err(RemoteErr::Invalid) => {
                            return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr)
                        }
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
            return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
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
                    return Exec::Fatal(nak::REMOTE_OP, WcStatus::RemOpErr);
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
                return match e {
                    RemoteErr::Access => Exec::Fatal(nak::REMOTE_ACCESS, WcStatus::RemAccessErr),
                    RemoteErr::Invalid => Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr),
                };
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
            let info = RecvInfo {
                byte_len: total,
                rdma_with_imm: true,
                imm: imm.map(|i| i.data.to_be_bytes()),
                invalidated_rkey: None,
                src_qp: None,
                port_num: cfg.port,
                network: None,
            };
            env.complete_recv(
                &Completion::recv(w.wr_id, cfg.qpn, WcStatus::Success, info),
                p.bth.se,
            );
        }
        Exec::Done(1)
    }

    /// Sends up to `budget` more READ responses of the stream in progress. A new READ whose
    /// memory can no longer be read is refused (NAK "remote access error", the QP enters
    /// the Error state); a replay that fails just stops.
    pub fn pump(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, budget: u32) -> Outcome {
        let Some(mut s) = self.stream else {
            return Outcome::Ok;
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
                    ..Default::default()
                },
                ext: ExtHeaders {
                    aeth: aeth.then_some(Aeth::ack(self.msn)),
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
                Ok(()) | Err(TxError::Dropped) => {}
                Err(TxError::Local(_)) => {
                    self.stream = None;
                    if s.replay {
                        return Outcome::Ok;
                    }
                    return self.refuse(
                        env,
                        cfg,
                        s.psn,
                        Opcode::RC_RDMA_READ_REQUEST.0,
                        nak::REMOTE_ACCESS,
                        WcStatus::RemAccessErr,
                    );
                }
            }
            s.sent += 1;
            left -= 1;
        }
        self.stream = (s.sent < s.n).then_some(s);
        Outcome::Ok
    }

    /// Refuses a READ found bad while its responses were being sent: NAK, QP to Error.
    fn refuse(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        psn: Psn,
        opcode: u8,
        code: u8,
        status: WcStatus,
    ) -> Outcome {
        self.fatal = Some(FatalNote {
            psn,
            opcode,
            payload_len: 0,
            nak: code,
            status,
            in_progress: InProgress::None,
            out_of_sequence: false,
        });
        self.counters.err_naks_sent += 1;
        self.send_ack(env, cfg, psn, Aeth::nak(code, self.msn));
        Outcome::Error
    }

    /// Saves a READ or atomic resource, over the oldest when `max_dest_rd_atomic` are kept.
    fn save_res(&mut self, cfg: &RcConfig, r: RdRes) {
        let ring = (cfg.max_dest_rd_atomic as usize).clamp(1, self.res.len().max(1));
        let at = self.res_next % ring;
        if let Some(slot) = self.res.get_mut(at) {
            *slot = Some(r);
        }
        self.res_next = (at + 1) % ring;
    }

    fn exec_read(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Exec {
        let Some(reth) = p.ext.reth else {
            return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
        };
        let n = super::packets(reth.dma_len, cfg.pmtu);
        // No responder resources, longer than max_msg_sz, or so many PSNs that ePSN would
        // pass half the PSN space: IBTA's invalid request.
        if cfg.max_dest_rd_atomic == 0 || reth.dma_len > MAX_MSG_SZ || n >= PSN_SPACE / 2 {
            return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
        }
        if reth.dma_len > 0 {
            match env.remote_check(RemoteOp::Read, reth.rkey, reth.va, reth.dma_len) {
                Ok(()) => {}
                Err(RemoteErr::Access) => {
                    return Exec::Fatal(nak::REMOTE_ACCESS, WcStatus::RemAccessErr)
                }
                Err(RemoteErr::Invalid) => {
                    return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr)
                }
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
        });
        // The stream holds the request's PSNs from now on: a failure in this first batch is
        // reported by pump itself.
        self.epsn = psn.add(n);
        match self.pump(env, cfg, READ_BUDGET) {
            Outcome::Ok => Exec::Answered(n),
            Outcome::Error => Exec::Failed,
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
        let n = super::packets(reth.dma_len, cfg.pmtu);
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
        });
        let _ = self.pump(env, cfg, READ_BUDGET);
        true
    }

    /// IBTA 1.5 ATOMIC WRITE: 8 bytes at an 8-byte aligned address, needing remote write.
    fn exec_atomic_write(&mut self, env: &mut dyn RcEnv, p: &PacketRepr<'_>) -> Exec {
        let Some(reth) = p.ext.reth else {
            return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
        };
        if reth.va % 8 != 0 || p.payload.len() != 8 {
            return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
        }
        let res = env
            .remote_check(RemoteOp::Write, reth.rkey, reth.va, 8)
            .and_then(|()| env.remote_write(reth.rkey, reth.va, p.payload));
        match res {
            Ok(()) => {
                self.bump_msn();
                Exec::Done(1)
            }
            Err(RemoteErr::Access) => Exec::Fatal(nak::REMOTE_ACCESS, WcStatus::RemAccessErr),
            Err(RemoteErr::Invalid) => Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr),
        }
    }

    fn send_atomic_ack(&self, env: &mut dyn RcEnv, cfg: &RcConfig, psn: Psn, orig: u64) {
        let ext = ExtHeaders {
            aeth: Some(Aeth::ack(self.msn)),
            atomic_ack_eth: Some(AtomicAckEth {
                orig_rem_data: orig,
            }),
            ..Default::default()
        };
        self.send_response(env, cfg, Opcode::RC_ATOMIC_ACKNOWLEDGE, psn, ext);
    }

    fn exec_atomic(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
        kind: OpKind,
    ) -> Exec {
        let Some(a) = p.ext.atomic_eth else {
            return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
        };
        if a.va % 8 != 0 || cfg.max_dest_rd_atomic == 0 {
            return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
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
            return match e {
                RemoteErr::Access => Exec::Fatal(nak::REMOTE_ACCESS, WcStatus::RemAccessErr),
                RemoteErr::Invalid => Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr),
            };
        }
        let orig = match env.remote_atomic(a.rkey, a.va, op) {
            Ok(v) => v,
            Err(RemoteErr::Access) => {
                return Exec::Fatal(nak::REMOTE_ACCESS, WcStatus::RemAccessErr)
            }
            Err(RemoteErr::Invalid) => {
                return Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr)
            }
        };
        self.save_res(cfg, RdRes::Atomic { psn, orig });
        self.bump_msn();
        self.send_atomic_ack(env, cfg, psn, orig);
        Exec::Answered(1)
    }

    /// A request before ePSN: answer without executing it again (READs are served again
    /// from a saved resource, atomics answered from one).
    fn duplicate(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, p: &PacketRepr<'_>, kind: OpKind) {
        let psn = p.bth.psn;
        match kind {
            OpKind::RdmaReadRequest => {
                if !self.replay_read(env, cfg, p, psn) {
                    self.counters.dup_unmatched += 1;
                }
            }
            OpKind::CompareSwap | OpKind::FetchAdd => {
                let saved = self.res.iter().flatten().find_map(|r| match *r {
                    RdRes::Atomic { psn: s, orig } if s == psn => Some(orig),
                    _ => None,
                });
                match saved {
                    Some(orig) => self.send_atomic_ack(env, cfg, psn, orig),
                    None => self.counters.dup_unmatched += 1,
                }
            }
            // Every duplicate SEND or WRITE packet is re-acknowledged, as rdma_rxe's responder
            // does: a requester resending from the middle of a long message learns at once
            // how far the first copy got. (Answering only the packets that ask for an ACK
            // left rdma_rxe's requester waiting for another timeout after each spurious one:
            // 19 s instead of 12 s per rc_verify run against it on the KASAN kernel.)
            _ => self.send_ack(env, cfg, self.ack_psn.sub(1), Aeth::ack(self.msn)),
        }
    }
}
