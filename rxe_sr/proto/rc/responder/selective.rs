// SPDX-License-Identifier: GPL-2.0
//! The responder in the SR format: out-of-order placement, in-order completion.
//!
//! From the first TVer = 1 request on, the scheme's engine ([`RespSr`]) runs the QP's
//! receive side: it starts at the current ePSN (its RCV-NXT), and every request packet at
//! or after it is offered to the engine, which answers `Deliver` (place it now, wherever
//! it falls) or `Drop`, moves RCV-NXT with `Advance`, and asks for feedback (ACK, SACK,
//! FNACK, hole lists), sent as SR-format ACKNOWLEDGEs at once.
//!
//! - RDMA WRITE: each packet carries the RETH of its own bytes; the R_Key, rights and
//!   bounds are checked for every packet before the engine sees it, so a refused packet is
//!   a NAK and the QP's error, never a hole the engine waits for.
//! - SEND (and RDMA WRITE with immediate, which consumes a receive WQE): the MSN-ETH names
//!   the message among those that consume receive WQEs, and the packet's offset in it.
//!   Receive WQEs are taken from the RQ (or SRQ) ahead, in order, into a window of
//!   [`RECV_WINDOW`] slots: a packet of a message whose WQE cannot be taken yet gets an
//!   RNR NAK (as in IBTA: the requester waits and resends from that PSN), one past the
//!   window is dropped unrecorded (the requester resends it). Bounds are checked against
//!   the WQE before the engine sees the packet.
//! - Messages complete (receive completion, immediate data, invalidation, MSN) only when
//!   RCV-NXT passes their last packet, in order.
//! - RDMA READ and atomics execute only at RCV-NXT, in order and once: one arriving early
//!   is dropped unrecorded (the requester resends it, as it does for any hole), so it sees
//!   every WRITE before it; duplicates are answered as in IBTA (READs replayed, atomics
//!   from their saved result). The responses of a READ are its answer: no ACK follows it.
//! - A standard (TVer = 0) request at or after RCV-NXT once the SR format is in use is a
//!   stale packet of the standard phase: dropped and counted.

use core::ops::DerefMut;

use super::recv_window::{LastPacket, RecvSlot};
use super::sack_coalesce::{SackCoalescer, FLUSH_COPIES};
use super::Exec;
use super::RdRes;
use super::Responder;
use crate::proto::psn::Psn;
use crate::proto::rc::sr::{encode_feedback, SrSetup};
use crate::proto::rc::{nak, Outcome, RcConfig, RcEnv, RemoteErr, RemoteOp};
use crate::proto::recovery::any::{AnyEngine, SharedPools};
use crate::proto::recovery::scheme::Scheme;
use crate::proto::recovery::{Action, ActionSink, Counters, Feedback, Recovery, RespEvent, Timer};
use crate::proto::wire::caps::ResponderCaps;
use crate::proto::wire::opcode::{OpInfo, OpKind};
use crate::proto::wire::sr_ext::BTH_TVER_SR;
use crate::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr};
use crate::uabi::cqe::WcStatus;

/// Selective-retransmission counters of a responder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RespSrCounters {
    /// Request packets placed after a missing one (out of order).
    pub ooo_placed: u64,
    /// SR-format ACKs sent (cumulative; AACKs included).
    pub acks_sent: u64,
    /// Of those, AACKs: RCV-NXT moved past the packet that triggered it (a hole filled).
    pub aacks_sent: u64,
    /// SACKs sent.
    pub sacks_sent: u64,
    /// SACKs held back (FaSR: they only moved sack-high by one; see `sack_coalesce`).
    pub sacks_coalesced: u64,
    /// FNACKs sent.
    pub fnacks_sent: u64,
    /// HOLE acknowledgments sent (one per hole).
    pub holes_sent: u64,
    /// NAKs "PSN sequence error" sent by an engine in go-back-N fallback.
    pub naks_sent: u64,
    /// READs and atomics that arrived before RCV-NXT reached them: dropped unrecorded.
    pub ordered_early: u64,
    /// SEND packets past the receive-WQE window: dropped unrecorded.
    pub window_full: u64,
    /// Standard-format requests at or after RCV-NXT once the SR format is in use: dropped.
    pub stale_standard: u64,
    /// SR-format requests to a responder without SR, or malformed: dropped.
    pub refused: u64,
}

/// A responder's selective-retransmission state (kept apart so the kernel can hold it on
/// the heap).
pub struct RespSr {
    pub(super) caps: ResponderCaps,
    pub(super) engine: AnyEngine,
    /// The SR format is in use (a TVer = 1 request arrived).
    pub(super) active: bool,
    /// The next receive WQE to take ahead: slots hold `[recv_msn, fetched)`.
    pub(super) fetched: u32,
    /// SRNIC's slow-path timer.
    pub(super) deadline: Option<u64>,
    /// FaSR's SACKs that only move sack-high, held back.
    sacks: SackCoalescer,
    /// Statistics.
    pub counters: RespSrCounters,
}

impl RespSr {
    /// The SR state of a responder expecting `rq_psn` first.
    pub fn new(setup: SrSetup, rq_psn: Psn) -> Self {
        RespSr {
            caps: ResponderCaps::new(Some(setup.cap)),
            engine: AnyEngine::new(
                setup.scheme(),
                rq_psn,
                rq_psn,
                setup.rto,
                setup.srnic_delay_us,
            ),
            active: false,
            fetched: 0,
            deadline: None,
            sacks: SackCoalescer::new(matches!(setup.scheme(), Scheme::Fasr)),
            counters: RespSrCounters::default(),
        }
    }

    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    /// True once requests arrive in the SR format.
    pub const fn active(&self) -> bool {
        self.active
    }

    /// The engine's counters.
    pub fn engine_counters(&self) -> &Counters {
        self.engine.counters()
    }

    /// Gives the engine's shared resources back to the device (QP reset, error, destroy).
    pub fn release(&mut self, shared: &mut (dyn SharedPools + 'static)) {
        self.engine.release(shared);
    }
}

/// What the engine decided about one event.
#[derive(Clone, Copy, Debug, Default)]
struct Fate {
    deliver: bool,
    advance: Option<Psn>,
    timer: Option<Option<u64>>,
}

/// Collects the engine's decisions and sends its feedback at once.
struct Sink<'a> {
    env: &'a mut dyn RcEnv,
    cfg: &'a RcConfig,
    msn: u32,
    fate: &'a mut Fate,
    /// A plain ACK of exactly this RCV-NXT is not sent (an in-order packet that asked for
    /// no ACK, or a READ / atomic, whose responses answer it).
    quiet: Option<Psn>,
    /// The RCV-NXT an in-order arrival of the event's packet gives: an ACK past it is an
    /// AACK; none for a timer event (the slow path), whose every ACK is one.
    in_order: Option<Psn>,
    /// The event's packet asked for an acknowledgment (AckReq).
    ack_req: bool,
    sacks: &'a mut SackCoalescer,
    counters: &'a mut RespSrCounters,
}

impl ActionSink for Sink<'_> {
    fn push(&mut self, a: Action) {
        match a {
            Action::Deliver { .. } => self.fate.deliver = true,
            Action::Advance { rcv_nxt } => self.fate.advance = Some(rcv_nxt),
            Action::Send(fb) => self.feedback(&fb),
            Action::ArmTimer {
                timer: Timer::SlowPath,
                deadline,
            } => self.fate.timer = Some(Some(deadline)),
            Action::DisarmTimer {
                timer: Timer::SlowPath,
            } => self.fate.timer = Some(None),
            _ => {}
        }
    }
}

impl Sink<'_> {
    fn feedback(&mut self, fb: &Feedback) {
        let c = &mut *self.counters;
        match *fb {
            Feedback::Ack { rcv_nxt } if Some(rcv_nxt) == self.quiet => return,
            Feedback::Ack { rcv_nxt } => {
                c.acks_sent += 1;
                // This event moved RCV-NXT (not a duplicate's ACK): its packet past those
                // held after it (it filled a hole), or the slow path after a repair.
                let past = match self.in_order {
                    Some(p) => rcv_nxt.after(p),
                    None => true,
                };
                if self.fate.advance.is_some() && past {
                    c.aacks_sent += 1;
                }
            }
            Feedback::Sack { .. } => {
                if let Some(f) = self.sacks.flush(fb) {
                    c.sacks_sent += u64::from(FLUSH_COPIES);
                    for _ in 0..FLUSH_COPIES {
                        self.emit(&f);
                    }
                }
                let c = &mut *self.counters;
                let Some(f) = self.sacks.coalesce(fb, self.ack_req) else {
                    c.sacks_coalesced += 1;
                    return;
                };
                c.sacks_sent += 1;
                self.emit(&f);
                return;
            }
            Feedback::Fnack { .. } => c.fnacks_sent += 1,
            Feedback::Nak { .. } => c.naks_sent += 1,
            Feedback::Holes { holes, .. } => {
                c.holes_sent += holes.iter().filter(|h| h.count > 0).count() as u64
            }
        }
        self.emit(fb);
    }

    /// Sends `fb` as SR-format acknowledgments.
    fn emit(&mut self, fb: &Feedback) {
        let (env, cfg) = (&mut *self.env, self.cfg);
        encode_feedback(fb, self.msn, |a| {
            let hdr = PacketRepr {
                bth: BthRepr {
                    opcode: Opcode::RC_ACKNOWLEDGE,
                    dest_qpn: cfg.dest_qpn,
                    psn: a.psn,
                    tver: BTH_TVER_SR,
                    ..Default::default()
                },
                ext: ExtHeaders {
                    sr_ack_eth: Some(a.sr),
                    aeth: Some(a.aeth),
                    ..Default::default()
                },
                payload: &[],
            };
            // A lost acknowledgment is recovered like any other.
            let _ = env.transmit(&hdr, super::super::PayloadSrc::None, 0);
        });
    }
}

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        E: DerefMut<Target = RespSr>,
    > Responder<R, W, E>
{
    /// Sets the format of the responses to a request with BTH `tver` and `resv7`.
    pub(super) fn set_answer(&mut self, tver: u8, resv7: u8) {
        self.answer = match self.sr.as_deref() {
            Some(sr) => sr.caps.answer(tver, resv7),
            None => crate::proto::wire::caps::CapAnswer { tver: 0, resv7: 0 },
        };
    }

    /// True when the SR format is in use (standard requests ahead of RCV-NXT are stale).
    pub(super) fn sr_active(&self) -> bool {
        self.sr.as_deref().is_some_and(|s| s.active)
    }

    /// The SR state, when the QP's device runs an SR scheme.
    pub fn sr(&self) -> Option<&RespSr> {
        self.sr.as_deref()
    }

    /// The SR state, mutable (to release its shared resources).
    pub fn sr_mut(&mut self) -> Option<&mut RespSr> {
        self.sr.as_deref_mut()
    }

    /// The SRNIC slow path's next deadline, microseconds.
    pub fn deadline(&self) -> Option<u64> {
        self.sr.as_deref().and_then(|s| s.deadline)
    }

    /// A deadline from [`Responder::deadline`] passed: SRNIC's slow path serves what is
    /// due (RCV-NXT moves, hole lists go out).
    pub fn on_timer(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) -> Outcome {
        let now = env.now_us();
        let due = matches!(self.deadline(), Some(d) if d <= now);
        if !due {
            return Outcome::Ok;
        }
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.deadline = None;
        }
        let ev = RespEvent::Timer {
            timer: Timer::SlowPath,
            now,
        };
        let fate = self.feed(env, cfg, ev, None);
        self.settle(env, cfg, fate)
    }

    /// An SR-format request (BTH TVer = 1).
    pub(super) fn on_sr_request(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        info: OpInfo,
    ) -> Outcome {
        let epsn = self.epsn;
        let recv_msn = self.recv_msn;
        let Some(sr) = self.sr.as_deref_mut() else {
            // No SR scheme here: the peer cannot have been told otherwise.
            self.counters.sr_refused += 1;
            return Outcome::Ok;
        };
        if !sr.active {
            sr.engine.start_responder(epsn);
            sr.fetched = recv_msn;
            sr.active = true;
            self.adopt_in_progress();
        }
        let psn = p.bth.psn;
        let ordered = matches!(
            info.kind,
            OpKind::RdmaReadRequest
                | OpKind::CompareSwap
                | OpKind::FetchAdd
                | OpKind::AtomicWrite
                | OpKind::Flush
        );
        if psn.before(self.epsn) && ordered {
            self.counters.duplicates += 1;
            self.duplicate(env, cfg, p, info.kind);
            return Outcome::Ok;
        }
        if psn.before(self.epsn) {
            // Duplicates of SENDs and WRITEs: the engine acknowledges them.
            self.counters.duplicates += 1;
            let now = env.now_us();
            let fate = self.feed(env, cfg, RespEvent::Data { psn, now }, None);
            return self.settle(env, cfg, fate);
        }
        match info.kind {
            OpKind::Send => self.sr_send(env, cfg, p, info),
            OpKind::RdmaWrite => self.sr_write(env, cfg, p, info),
            _ if ordered => self.sr_ordered(env, cfg, p, info),
            _ => self.sr_fatal(env, cfg, p, nak::INVALID_REQUEST, WcStatus::RemInvReqErr),
        }
    }

    fn sr_send(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        info: OpInfo,
    ) -> Outcome {
        let plen = p.payload.len() as u32;
        let ends = info.position.ends_message();
        let Some(m) = p.ext.msn_eth else {
            return self.refuse_sr();
        };
        if plen > cfg.pmtu || (!ends && plen != cfg.pmtu) {
            return self.sr_fatal(env, cfg, p, nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
        }
        let off = u64::from(m.offset) * u64::from(cfg.pmtu);
        let slot = match self.slot_for(env, cfg, p, m.msn) {
            Ok(Some(i)) => i,
            Ok(None) => return Outcome::Ok,
            Err(o) => return o,
        };
        let Some(wqe) = self
            .window
            .get(slot)
            .and_then(|s| s.as_ref())
            .map(|s| s.wqe)
        else {
            return Outcome::Ok;
        };
        if off + u64::from(plen) > u64::from(wqe.length) {
            return self.sr_fail_send(
                env,
                cfg,
                p,
                (m.msn, slot),
                nak::INVALID_REQUEST,
                WcStatus::LocLenErr,
            );
        }
        // Placed before the engine hears of it: the engine acknowledges at once, and an
        // acknowledged packet the scatter then failed was data lost with a success at the
        // requester (a receive WQE whose SGE names no MR: the ACK went out, then the NAK,
        // which the requester took for a stale one; found by verbs_hostile_rings' SRQ
        // round). A duplicate is placed again, the same bytes at the same place of a
        // message not yet complete.
        if plen > 0 {
            if let Err(s) = env.scatter(&wqe.sges, off as u32, p.payload) {
                return self.sr_fail_send(env, cfg, p, (m.msn, slot), nak::REMOTE_OP, s);
            }
        }
        let psn = p.bth.psn;
        let fate = self.feed_data(env, cfg, p);
        if fate.deliver {
            self.note_placed(psn);
            if ends {
                self.set_last(
                    slot,
                    LastPacket {
                        psn,
                        byte_len: (off + u64::from(plen)) as u32,
                        imm: p.ext.imm_dt.map(|i| i.data),
                        invalidate: p.ext.ieth.map(|i| i.rkey),
                        solicited: p.bth.se,
                        write_with_imm: false,
                    },
                );
            }
        }
        self.settle(env, cfg, fate)
    }

    fn sr_write(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        info: OpInfo,
    ) -> Outcome {
        let plen = p.payload.len() as u32;
        let ends = info.position.ends_message();
        let Some(reth) = p.ext.reth else {
            return self.refuse_sr();
        };
        if plen > cfg.pmtu || (!ends && plen != cfg.pmtu) || plen > reth.dma_len {
            return self.sr_fatal(env, cfg, p, nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
        }
        if plen > 0 {
            match env.remote_check(RemoteOp::Write, reth.rkey, reth.va, plen) {
                Ok(()) => {}
                Err(RemoteErr::Access) => {
                    return self.sr_fatal(env, cfg, p, nak::REMOTE_ACCESS, WcStatus::RemAccessErr)
                }
                Err(RemoteErr::Invalid) => {
                    return self.sr_fatal(env, cfg, p, nak::INVALID_REQUEST, WcStatus::RemInvReqErr)
                }
            }
        }
        // The last packet of a WRITE with immediate consumes a receive WQE.
        let imm_slot = match (p.ext.imm_dt, p.ext.msn_eth) {
            (Some(_), Some(m)) if ends => match self.slot_for(env, cfg, p, m.msn) {
                Ok(Some(i)) => Some(i),
                Ok(None) => return Outcome::Ok,
                Err(o) => return o,
            },
            (Some(_), None) => return self.refuse_sr(),
            _ => None,
        };
        // Written before the engine acknowledges it (as a SEND's scatter, above): an MR
        // deregistered since the check must not leave an acknowledged packet unwritten.
        if plen > 0 {
            if let Err(e) = env.remote_write(reth.rkey, reth.va, p.payload) {
                let (code, s) = match e {
                    RemoteErr::Access => (nak::REMOTE_ACCESS, WcStatus::RemAccessErr),
                    RemoteErr::Invalid => (nak::INVALID_REQUEST, WcStatus::RemInvReqErr),
                };
                return self.sr_fatal(env, cfg, p, code, s);
            }
        }
        let psn = p.bth.psn;
        let fate = self.feed_data(env, cfg, p);
        if fate.deliver {
            self.note_placed(psn);
            if let Some(slot) = imm_slot {
                self.set_last(
                    slot,
                    LastPacket {
                        psn,
                        byte_len: reth.dma_len,
                        imm: p.ext.imm_dt.map(|i| i.data),
                        invalidate: None,
                        solicited: p.bth.se,
                        write_with_imm: true,
                    },
                );
            }
        }
        self.settle(env, cfg, fate)
    }

    /// RDMA READ, the atomics, ATOMIC WRITE and FLUSH: only at RCV-NXT.
    fn sr_ordered(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        info: OpInfo,
    ) -> Outcome {
        let psn = p.bth.psn;
        if psn != self.epsn {
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.counters.ordered_early += 1;
            }
            // RCV-NXT is missing and this operation was not run: a NAK sequence error at
            // RCV-NXT (once per RCV-NXT) has the requester resend RCV-NXT and its unanswered
            // READs and atomics at once, instead of at its retransmission timeout (no
            // engine sees an operation dropped early, so nothing else would answer it).
            if self.ordered_nak != Some(self.epsn) {
                self.ordered_nak = Some(self.epsn);
                let aeth = crate::proto::wire::ext_headers::Aeth::nak(nak::PSN_SEQ_ERR, self.msn);
                self.send_ack(env, cfg, self.epsn, aeth);
            }
            return Outcome::Ok;
        }
        let res = match info.kind {
            OpKind::RdmaReadRequest => self.exec_read(env, cfg, p, psn),
            OpKind::CompareSwap | OpKind::FetchAdd => self.exec_atomic(env, cfg, p, psn, info.kind),
            OpKind::Flush => self.exec_flush(env, p),
            _ => self.exec_atomic_write(env, p),
        };
        let n = match res {
            Exec::Done(n) | Exec::Answered(n) => n,
            Exec::Failed => return Outcome::Error,
            Exec::Fatal(code, status) => return self.sr_fatal(env, cfg, p, code, status),
            Exec::Rnr => return Outcome::Ok,
        };
        // Every PSN the request took is received (a READ's responses use them). The READ's
        // responses (or the atomic ACK) answer it: the plain ACK each of its PSNs would
        // get is not sent (a 4-packet READ drew three), only an ATOMIC WRITE or a FLUSH
        // asking for one is acknowledged at its end.
        let answered_end = match res {
            Exec::Done(_) if p.bth.ack_req => None,
            _ => Some(psn.add(n)),
        };
        let mut fate = Fate::default();
        let now = env.now_us();
        for k in 0..n {
            let at = psn.add(k + 1);
            let quiet = if k + 1 < n { Some(at) } else { answered_end };
            let f = self.feed(
                env,
                cfg,
                RespEvent::Data {
                    psn: psn.add(k),
                    now,
                },
                quiet,
            );
            fate.advance = f.advance.or(fate.advance);
            fate.timer = f.timer.or(fate.timer);
        }
        self.settle(env, cfg, fate)
    }

    fn note_placed(&mut self, psn: Psn) {
        if psn != self.epsn {
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.counters.ooo_placed += 1;
            }
        }
    }

    fn refuse_sr(&mut self) -> Outcome {
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.counters.refused += 1;
        }
        Outcome::Ok
    }

    /// Offers a SEND or WRITE packet to the engine.
    fn feed_data(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, p: &PacketRepr<'_>) -> Fate {
        let psn = p.bth.psn;
        let quiet = (!p.bth.ack_req && psn == self.epsn).then_some(psn.next());
        let now = env.now_us();
        self.feed_with(env, cfg, RespEvent::Data { psn, now }, quiet, p.bth.ack_req)
    }

    /// Hands `ev` to the engine; its feedback goes out at once.
    fn feed(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        ev: RespEvent,
        quiet: Option<Psn>,
    ) -> Fate {
        self.feed_with(env, cfg, ev, quiet, true)
    }

    /// Hands `ev` (about a packet that asked for an acknowledgment if `ack_req`) to the
    /// engine; its feedback goes out at once, but for the SACKs held back.
    fn feed_with(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        ev: RespEvent,
        quiet: Option<Psn>,
        ack_req: bool,
    ) -> Fate {
        let mut fate = Fate::default();
        let msn = self.msn;
        let in_order = match ev {
            RespEvent::Data { psn, .. } => Some(psn.next()),
            RespEvent::Timer { .. } => None,
        };
        let Some(RespSr {
            engine,
            counters,
            sacks,
            ..
        }) = self.sr.as_deref_mut()
        else {
            return fate;
        };
        let local = engine.on_responder_local(
            ev,
            &mut Sink {
                env: &mut *env,
                cfg,
                msn,
                fate: &mut fate,
                quiet,
                in_order,
                ack_req,
                sacks: &mut *sacks,
                counters: &mut *counters,
            },
        );
        if !local {
            env.with_shared(&mut |sh, env| {
                engine.on_responder(
                    sh,
                    ev,
                    &mut Sink {
                        env,
                        cfg,
                        msn,
                        fate: &mut fate,
                        quiet,
                        in_order,
                        ack_req,
                        sacks: &mut *sacks,
                        counters: &mut *counters,
                    },
                )
            });
        }
        fate
    }

    /// Carries out what the engine decided beyond placement: RCV-NXT moves (messages
    /// complete in order), SRNIC's slow-path timer.
    fn settle(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, fate: Fate) -> Outcome {
        if let Some(sr) = self.sr.as_deref_mut() {
            match fate.timer {
                Some(Some(d)) => sr.deadline = Some(d),
                Some(None) => sr.deadline = None,
                None => {}
            }
        }
        let Some(rcv_nxt) = fate.advance else {
            return Outcome::Ok;
        };
        if !rcv_nxt.after(self.epsn) {
            return Outcome::Ok;
        }
        self.epsn = rcv_nxt;
        self.ack_psn = rcv_nxt;
        self.complete_ready(env, cfg)
    }

    /// A fatal error on an SR request: NAK, note, the QP to Error.
    /// A SEND packet of message `msn` (window slot `slot`) failed its receive WQE: the WQE
    /// completes with `status`, in the RQ's order, and the request is refused with `code`.
    fn sr_fail_send(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        (msn, slot): (u32, usize),
        code: u8,
        status: WcStatus,
    ) -> Outcome {
        if let Some(s) = self.window.get_mut(slot).and_then(Option::take) {
            self.fail_recv_in_order(env, cfg, msn, s.wqe.wr_id, status);
        }
        self.sr_fatal(env, cfg, p, code, status)
    }

    pub(super) fn sr_fatal(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        code: u8,
        status: WcStatus,
    ) -> Outcome {
        self.refuse(env, cfg, p.bth.psn, p.bth.opcode.0, code, status)
    }
}
