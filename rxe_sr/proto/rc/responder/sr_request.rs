// SPDX-License-Identifier: GPL-2.0
//! One SR-format request (BTH TVer = 1) at the responder: SEND and RDMA WRITE packets
//! placed wherever they fall from RCV-NXT on, READ, atomics, ATOMIC WRITE and FLUSH run
//! only at RCV-NXT and once, and the refusals, which change nothing past RCV-NXT (a NAK
//! acknowledges every PSN before its own).

use core::ops::DerefMut;

use super::recv_window::{LastPacket, RecvSlot};
use super::selective::in_sr_window;
use super::Exec;
use super::RdRes;
use super::RespSr;
use super::Responder;
use crate::proto::psn::Psn;
use crate::proto::rc::{nak, Fatal, RcConfig, RcEnv, RcEvent, RemoteErr, RemoteOp};
use crate::proto::recovery::RespEvent;
use crate::proto::wire::opcode::{OpInfo, OpKind};
use crate::proto::wire::PacketRepr;
use crate::proto::words::WindowWords;
use crate::uabi::cqe::WcStatus;

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// An SR-format request (BTH TVer = 1).
    pub(super) fn on_sr_request(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        info: OpInfo,
    ) -> Result<(), Fatal> {
        let epsn = self.epsn;
        let recv_msn = self.recv_msn;
        let Some(sr) = self.sr.as_deref_mut() else {
            // No SR scheme here: the peer cannot have been told otherwise.
            self.count(env, RcEvent::SrUnsupported);
            return Ok(());
        };
        let psn = p.bth.psn;
        let in_window = in_sr_window(psn, epsn, sr.window());
        if !in_window && !psn.before(epsn) {
            // Past the SR window: no requester has it outstanding.
            sr.count(env, RcEvent::OutOfWindow);
            return Ok(());
        }
        if !sr.active {
            // (Its first SR packet may be a duplicate: a resend from UNACK whose ACK was lost.)
            if !sr.offered {
                // The SR format is adopted only from the peer that was echoed our offer.
                sr.count(env, RcEvent::SrRefused);
                return Ok(());
            }
            sr.engine.start_responder(epsn);
            sr.fetched = recv_msn;
            sr.active = true;
            self.adopt_in_progress();
        }
        let ordered = matches!(
            info.kind,
            OpKind::RdmaReadRequest
                | OpKind::CompareSwap
                | OpKind::FetchAdd
                | OpKind::AtomicWrite
                | OpKind::Flush
        );
        if psn.before(self.epsn) && ordered {
            self.count(env, RcEvent::Duplicate);
            self.duplicate(env, cfg, p, info.kind);
            return Ok(());
        }
        if psn.before(self.epsn) {
            // Duplicates of SENDs and WRITEs: the engine acknowledges them.
            self.count(env, RcEvent::Duplicate);
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
    ) -> Result<(), Fatal> {
        let plen = p.payload.len() as u32;
        let ends = info.position.ends_message();
        let Some(m) = p.ext.msn_eth else {
            return self.refuse_sr(env);
        };
        if plen > cfg.pmtu || (!ends && plen != cfg.pmtu) {
            return self.sr_fatal(env, cfg, p, nak::INVALID_REQUEST, WcStatus::RemInvReqErr);
        }
        let off = u64::from(m.offset) * u64::from(cfg.pmtu);
        let Some(slot) = self.slot_for(env, cfg, p, m.msn)? else {
            return Ok(());
        };
        let Some(wqe) = self
            .window
            .get(slot)
            .and_then(|s| s.as_ref())
            .map(|s| s.wqe)
        else {
            return Ok(());
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
            self.mark_used(slot);
            if let Err(s) = env.scatter(&wqe.sges, off as u32, p.payload) {
                return self.sr_fail_send(env, cfg, p, (m.msn, slot), nak::REMOTE_OP, s);
            }
        }
        let psn = p.bth.psn;
        let fate = self.feed_data(env, cfg, p);
        if fate.deliver {
            self.note_placed(env, psn);
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
    ) -> Result<(), Fatal> {
        let plen = p.payload.len() as u32;
        let ends = info.position.ends_message();
        let Some(reth) = p.ext.reth else {
            return self.refuse_sr(env);
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
            (Some(_), Some(m)) if ends => match self.slot_for(env, cfg, p, m.msn)? {
                Some(i) => Some(i),
                None => return Ok(()),
            },
            (Some(_), None) => return self.refuse_sr(env),
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
            self.note_placed(env, psn);
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
    ) -> Result<(), Fatal> {
        let psn = p.bth.psn;
        if psn != self.epsn {
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.count(env, RcEvent::OrderedEarly);
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
            return Ok(());
        }
        if let Some((first, n)) = self.ordered_run.filter(|&(f, n)| psn.distance_from(f) < n) {
            // Run already, and RCV-NXT not moved past it yet: answered as a duplicate, and
            // offered to the engine again (its first offer may have been dropped).
            self.count(env, RcEvent::Duplicate);
            self.duplicate(env, cfg, p, info.kind);
            return self.feed_ordered(env, cfg, first, n, Some(first.add(n)));
        }
        let res = match info.kind {
            OpKind::RdmaReadRequest => self.exec_read(env, cfg, p, psn),
            OpKind::CompareSwap | OpKind::FetchAdd => self.exec_atomic(env, cfg, p, psn, info.kind),
            OpKind::Flush => self.exec_flush(env, p),
            _ => self.exec_atomic_write(env, p),
        };
        let n = match res {
            Exec::Done(n) | Exec::Answered(n) => n,
            Exec::Failed => return Err(Fatal),
            Exec::Fatal(code, status) => return self.sr_fatal(env, cfg, p, code, status),
            Exec::Rnr => return Ok(()),
        };
        // Every PSN the request took is received (a READ's responses use them). The READ's
        // responses (or the atomic ACK) answer it: the plain ACK each of its PSNs would
        // get is not sent (a 4-packet READ drew three), only an ATOMIC WRITE or a FLUSH
        // asking for one is acknowledged at its end.
        let answered_end = match res {
            Exec::Done(_) if p.bth.ack_req => None,
            _ => Some(psn.add(n)),
        };
        self.ordered_run = Some((psn, n));
        self.feed_ordered(env, cfg, psn, n, answered_end)
    }

    fn note_placed(&mut self, env: &mut dyn RcEnv, psn: Psn) {
        if psn != self.epsn {
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.count(env, RcEvent::OooPlaced);
            }
        }
    }

    fn refuse_sr(&mut self, env: &mut dyn RcEnv) -> Result<(), Fatal> {
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.count(env, RcEvent::SrRefused);
        }
        Ok(())
    }

    /// A SEND packet of message `msn` (window slot `slot`) failed its receive WQE: at
    /// RCV-NXT the WQE completes with `status`, in the RQ's order, and the request is
    /// refused with `code`; past RCV-NXT the packet is dropped ([`Self::sr_fatal`]).
    fn sr_fail_send(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        (msn, slot): (u32, usize),
        code: u8,
        status: WcStatus,
    ) -> Result<(), Fatal> {
        if p.bth.psn != self.epsn {
            return self.sr_fatal(env, cfg, p, code, status);
        }
        if let Some(s) = self.window.get_mut(slot).and_then(Option::take) {
            self.fail_recv_in_order(env, cfg, msn, s.wqe.wr_id, status);
        }
        self.sr_fatal(env, cfg, p, code, status)
    }

    /// A fatal error on an SR request. At RCV-NXT: NAK, note, the QP to Error. Past it the
    /// packet is dropped and counted, changing nothing: a NAK is an acknowledgment of every
    /// PSN before its own, and those are not all received; the requester resends the
    /// packet, and it is refused once RCV-NXT reaches it.
    pub(super) fn sr_fatal(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        code: u8,
        status: WcStatus,
    ) -> Result<(), Fatal> {
        if p.bth.psn != self.epsn {
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.count(env, RcEvent::EarlyRefused);
            }
            return Ok(());
        }
        Err(self.refuse(env, cfg, p.bth.psn, p.bth.opcode.0, code, status))
    }
}
