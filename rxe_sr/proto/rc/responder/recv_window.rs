// SPDX-License-Identifier: GPL-2.0
//! The SR responder's window of receive WQEs: SEND packets (and the last packet of an
//! RDMA WRITE with immediate) name their message by MSN-ETH, so receive WQEs are taken
//! from the RQ or SRQ ahead, in order, into slot `msn % RECV_WINDOW`; the messages complete
//! in MSN order as RCV-NXT passes their last packet (receive completion, immediate data,
//! invalidation). A standard SEND in progress at the switch to the SR format moves into
//! the window. When the QP fails or goes, a WQE holding part of its message is flushed;
//! one holding none goes back to a shared receive queue.

use core::ops::DerefMut;

use super::Cur;
use super::RdRes;
use super::RespSr;
use super::Responder;
use crate::proto::psn::Psn;
use crate::proto::rc::{nak, Fatal, RcConfig, RcEnv, RcEvent};
use crate::proto::wire::{Opcode, PacketRepr};
use crate::proto::words::WindowWords;
use crate::uabi::cqe::{Completion, RecvInfo, WcStatus};
use crate::uabi::recv_wqe::RecvWqe;

/// Receive WQEs the SR responder takes ahead of the message being completed, at most; the
/// requester sends no message that consumes one further ahead (its `recv_window_open`).
/// 64 lets 4 KiB SENDs at a 1 KiB path MTU fill 256 of the 512 unacknowledged PSNs the SR
/// format allows (16 held lossless SENDs well below go-back-N's goodput);
/// each slot holds a copy of a WQE (568 bytes), so an SR QP's window takes about 36 KiB.
pub const RECV_WINDOW: usize = 64;

/// Receive WQEs the SR responder of a QP on a shared receive queue holds at most: the one
/// of the message it completes next, as rdma_rxe holds the one of the message in
/// progress. Taking more ahead would keep them from the SRQ's other QPs (and flush them to
/// this QP's CQ should it fail, where a kernel ULP does not post them again); a SEND of a
/// later message that arrives before its turn is dropped and sent again.
pub const SRQ_RECV_WINDOW: usize = 1;

/// A receive WQE taken ahead for an SR message, and what completing it needs.
#[derive(Clone, Copy, Debug)]
pub struct RecvSlot {
    pub(super) wqe: RecvWqe,
    /// Its MSN (the slot is `msn % window length`).
    pub(super) msn: u32,
    /// The message's last packet was placed.
    pub(super) last: Option<LastPacket>,
    /// A byte of the message was placed in the WQE's buffers, or its last packet came:
    /// the WQE is in use (flushed on Error, not given back to a shared receive queue).
    pub(super) used: bool,
}

/// The last packet of an SR message: where the message ends and how it completes.
#[derive(Clone, Copy, Debug)]
pub(super) struct LastPacket {
    pub(super) psn: Psn,
    pub(super) byte_len: u32,
    pub(super) imm: Option<u32>,
    pub(super) invalidate: Option<u32>,
    pub(super) solicited: bool,
    pub(super) write_with_imm: bool,
}

/// `a - b` of two 24-bit MSNs, as a signed distance.
pub(super) fn msn_diff(a: u32, b: u32) -> i32 {
    (((a.wrapping_sub(b)) << 8) as i32) >> 8
}

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// Window slots in use: slot `msn % window_len` holds message `msn`.
    pub(super) fn window_len(&self) -> usize {
        self.window.len().min(RECV_WINDOW)
    }

    /// Gives up the receive WQEs taken ahead (the QP enters the Error state, or goes):
    /// one holding none of its message goes to `give_back`, and to `flushed` if that
    /// refuses it; one in use goes to `flushed`.
    pub(super) fn drop_window(
        &mut self,
        flushed: &mut dyn FnMut(u64),
        give_back: &mut dyn FnMut(&RecvWqe) -> bool,
    ) {
        let n = self.window_len();
        let Some(sr) = self.sr.as_deref_mut() else {
            return;
        };
        let mut m = self.recv_msn;
        while msn_diff(sr.fetched, m) > 0 {
            if let Some(slot) = self.window.get_mut(m as usize % n.max(1)) {
                if let Some(s) = slot.take() {
                    if s.used || !give_back(&s.wqe) {
                        flushed(s.wqe.wr_id);
                    }
                }
            }
            m = (m + 1) & 0x00ff_ffff;
        }
        sr.fetched = self.recv_msn;
    }

    /// The standard phase's SEND in progress (its WQE taken) moves into the window; a
    /// WRITE in progress needs nothing (every SR WRITE packet names its bytes).
    pub(super) fn adopt_in_progress(&mut self) {
        if let Some(Cur::Send { wqe, .. }) = self.cur.take() {
            let m = self.recv_msn;
            let n = self.window_len().max(1);
            if let (Some(slot), Some(sr)) =
                (self.window.get_mut(m as usize % n), self.sr.as_deref_mut())
            {
                *slot = Some(RecvSlot {
                    wqe,
                    msn: m,
                    last: None,
                    used: true,
                });
                sr.fetched = (m + 1) & 0x00ff_ffff;
            }
        }
        self.cur = None;
    }

    /// The window slot of message `msn`, taking receive WQEs ahead up to it. `Ok(None)`:
    /// the packet is not recorded (no WQE: an RNR NAK at RCV-NXT, nothing past it; or past
    /// the window); `Err`: the QP failed.
    pub(super) fn slot_for(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        msn: u32,
    ) -> Result<Option<usize>, Fatal> {
        let n = self.window_len();
        if !self.check_window(env, msn, n) {
            return Ok(None);
        }
        loop {
            let Some(m) = self.sr.as_deref().map(|s| s.fetched) else {
                return Ok(None);
            };
            if msn_diff(m, msn) > 0 {
                break;
            }
            let w = match self.take_recv(env) {
                None if p.bth.psn != self.epsn => {
                    self.note_early_rnr(env, cfg, p.bth.psn);
                    return Ok(None);
                }
                None => {
                    self.send_rnr_nak(env, cfg);
                    return Ok(None);
                }
                Some(Ok(w)) => w,
                Some(Err(bad)) => return Err(self.fail_fetch(env, cfg, p, m, bad)),
            };
            if let Some(slot) = self.window.get_mut(m as usize % n) {
                *slot = Some(RecvSlot {
                    wqe: w,
                    msn: m,
                    last: None,
                    used: false,
                });
            }
            if let Some(sr) = self.sr.as_deref_mut() {
                sr.fetched = (m + 1) & 0x00ff_ffff;
            }
        }
        Ok(Some(msn as usize % n))
    }

    /// Whether message `msn` has a place in the window of `n` slots: not completed already
    /// (that is malformed, refused) and less than `n` messages past the one completed next
    /// (the window is full).
    fn check_window(&mut self, env: &mut dyn RcEnv, msn: u32, n: usize) -> bool {
        let ahead = msn_diff(msn, self.recv_msn);
        let Some(sr) = self.sr.as_deref_mut() else {
            return false;
        };
        if ahead < 0 || n == 0 {
            // A message already completed, yet at or past RCV-NXT: malformed.
            sr.count(env, RcEvent::SrRefused);
            return false;
        }
        if ahead.unsigned_abs() as usize >= n {
            sr.count(env, RcEvent::WindowFull);
            return false;
        }
        true
    }

    /// A SEND past RCV-NXT (at `psn`) found no receive WQE and is dropped unrecorded: the
    /// RNR NAK owed when RCV-NXT reaches the earliest such PSN is remembered (`rnr_at`,
    /// `rnr_last`), and [`Self::note_past_rcv_nxt`] sees whether one goes now.
    fn note_early_rnr(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, psn: Psn) {
        if let Some(sr) = self.sr.as_deref_mut() {
            sr.count(env, RcEvent::EarlyRnr);
            match sr.rnr_last {
                Some(l) if !psn.after(l) => {}
                _ => sr.rnr_last = Some(psn),
            }
            let first = match sr.rnr_at {
                Some(at) => psn.before(at),
                None => true,
            };
            if first {
                sr.rnr_at = Some(psn);
                sr.rnr_quiet = false;
            }
        }
        self.note_past_rcv_nxt(env, cfg, psn);
    }

    /// The RQ's own WQE, fetched for message `m`, is bad (`wr_id`, `status`): the QP fails
    /// now, the WQE completing in the RQ's order, and the NAK "remote operational error"
    /// goes at RCV-NXT.
    fn fail_fetch(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        m: u32,
        (wr_id, status): (u64, WcStatus),
    ) -> Fatal {
        self.fail_recv_in_order(env, cfg, m, wr_id, status);
        let (epsn, op) = (self.epsn, p.bth.opcode.0);
        self.refuse(env, cfg, epsn, op, nak::REMOTE_OP, WcStatus::RemOpErr)
    }

    /// Receive WQE `wr_id`, message `msn`'s, failed with `status` (the QP goes to the
    /// Error state): receive completions keep the RQ's order, so the window's messages
    /// before it, not complete yet, are flushed first and then it completes with `status`.
    /// Those after it are flushed with the rest of the RQ ([`Self::drop_window`]). `msn`'s
    /// own slot, if it has one, must be emptied by the caller.
    pub(super) fn fail_recv_in_order(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        msn: u32,
        wr_id: u64,
        status: WcStatus,
    ) {
        let n = self.window_len().max(1);
        let mut m = self.recv_msn;
        while msn_diff(msn, m) > 0 {
            if let Some(slot) = self.window.get_mut(m as usize % n) {
                if slot.as_ref().is_some_and(|s| s.msn == m) {
                    if let Some(s) = slot.take() {
                        let c = Completion::recv(
                            s.wqe.wr_id,
                            cfg.qpn,
                            WcStatus::WrFlushErr,
                            RecvInfo::default(),
                        );
                        env.complete_recv(&c, false);
                    }
                }
            }
            m = (m + 1) & 0x00ff_ffff;
        }
        env.complete_recv(
            &Completion::recv(wr_id, cfg.qpn, status, RecvInfo::default()),
            false,
        );
    }

    pub(super) fn set_last(&mut self, slot: usize, last: LastPacket) {
        if let Some(Some(s)) = self.window.get_mut(slot) {
            s.last = Some(last);
            s.used = true;
        }
    }

    /// Bytes of the message in window slot `slot` were placed in its WQE's buffers.
    pub(super) fn mark_used(&mut self, slot: usize) {
        if let Some(Some(s)) = self.window.get_mut(slot) {
            s.used = true;
        }
    }

    /// Completes, in order, the messages whose last packet lies before RCV-NXT.
    pub(super) fn complete_ready(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
    ) -> Result<(), Fatal> {
        let n = self.window_len().max(1);
        loop {
            let m = self.recv_msn;
            let Some(slot) = self.window.get_mut(m as usize % n) else {
                return Ok(());
            };
            let Some(s) = slot else {
                return Ok(());
            };
            let Some(last) = s.last else {
                return Ok(());
            };
            if s.msn != m || !last.psn.before(self.epsn) {
                return Ok(());
            }
            let wr_id = s.wqe.wr_id;
            *slot = None;
            let mut invalidated = None;
            if let Some(rkey) = last.invalidate {
                if env.invalidate(rkey).is_err() {
                    env.complete_recv(
                        &Completion::recv(
                            wr_id,
                            cfg.qpn,
                            WcStatus::RemInvReqErr,
                            RecvInfo::default(),
                        ),
                        false,
                    );
                    self.bump_recv_msn();
                    return Err(self.refuse(
                        env,
                        cfg,
                        last.psn,
                        Opcode::RC_SEND_LAST_WITH_INVALIDATE.0,
                        nak::INVALID_REQUEST,
                        WcStatus::RemInvReqErr,
                    ));
                }
                invalidated = Some(rkey);
            }
            let info = RecvInfo::connected(
                last.byte_len,
                last.write_with_imm,
                last.imm,
                invalidated,
                cfg.port,
            );
            self.bump_msn();
            self.bump_recv_msn();
            env.complete_recv(
                &Completion::recv(wr_id, cfg.qpn, WcStatus::Success, info),
                last.solicited,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::msn_diff;

    #[test]
    fn msn_distance_wraps_at_24_bits() {
        assert_eq!(msn_diff(0, 0x00ff_ffff), 1);
        assert_eq!(msn_diff(0x00ff_ffff, 0), -1);
        assert_eq!(msn_diff(5, 3), 2);
    }
}
