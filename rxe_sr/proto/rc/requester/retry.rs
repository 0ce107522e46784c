// SPDX-License-Identifier: GPL-2.0
//! Retries and timers of the requester: the retransmission timeout (the local ACK timeout,
//! stretched by the measured RTT and doubled per timeout without progress), the RNR NAK
//! delay, and moving the send cursor back, counting retries against `retry_cnt`.

use core::ops::DerefMut;

use super::loss_probe::smooth_rtt;
use super::ReqSr;
use super::Requester;
use super::SqEntry;
use super::{RetryCause, RetryNote};
use crate::proto::psn::Psn;
use crate::proto::rc::{Fatal, RcConfig, RcEnv, RcEvent};
use crate::proto::recovery::{ReqEvent, Timer};
use crate::proto::words::WindowWords;
use crate::uabi::cqe::WcStatus;
use crate::uabi::send_wqe::SendOp;

/// Most doublings of the retransmission timeout (64 times the configured one).
const MAX_BACKOFF: u32 = 6;

impl<S: DerefMut<Target = [SqEntry]>, B: WindowWords, E: DerefMut<Target = ReqSr<B>>>
    Requester<S, E>
{
    /// The earliest pending timer deadline, in microseconds; none with no request held (a
    /// failed requester has flushed them all: a probe left armed would fire for ever).
    pub fn deadline(&self) -> Option<u64> {
        if self.is_empty() {
            return None;
        }
        [
            self.rto_deadline,
            self.rnr_deadline,
            self.busy_deadline,
            self.probe_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Whether the requester will run again without a doorbell: packets it sent await their
    /// acknowledgment, whose arrival runs it (taking in what was posted meanwhile), and a
    /// timer is armed, which runs it should none come.
    pub fn runs_again(&self) -> bool {
        self.una().before(self.sent_high) && self.deadline().is_some()
    }

    /// A timer deadline passed (the caller's timer fired at or after [`Self::deadline`]).
    pub fn on_timer(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) -> Result<(), Fatal> {
        let now = env.now_us();
        if self.rnr_deadline.is_some_and(|d| d <= now) {
            self.rnr_deadline = None;
        }
        if self.busy_deadline.is_some_and(|d| d <= now) {
            self.busy_deadline = None;
        }
        self.on_probe_deadline(env, now);
        if self.rto_deadline.is_some_and(|d| d <= now) {
            self.rto_deadline = None;
            if self.rnr_deadline.is_none() {
                self.count(env, RcEvent::Timeout);
                self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
                self.on_probe_timeout();
                self.on_fec_probe_timeout();
                let acts = self.feed(
                    env,
                    ReqEvent::Timer {
                        timer: Timer::Rto,
                        now,
                    },
                );
                self.apply(env, cfg, acts, Some(RetryCause::Timeout))?;
            }
        }
        self.run(env, cfg)
    }

    /// A lost READ or atomic response the completer found, at `psn`, shown by a response or
    /// acknowledgment of `upto` (every READ and atomic before it ran): once per lost PSN. In
    /// standard RoCEv2 a go-back, spending a retry (as rdma_rxe); in the SR format a
    /// selective resend of the READ responses and atomic ACKs missing in `[psn, upto)`, each
    /// missing run of responses asked for by one READ request, not of the WRITEs and SENDs
    /// between (no retry spent).
    pub(super) fn retry_from(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        psn: Psn,
        upto: Psn,
    ) -> Result<(), Fatal> {
        if self.retry_psn == Some(psn) {
            return Ok(());
        }
        if self.sr_active() {
            self.mark_rd_holes(psn, if upto.after(psn) { upto } else { psn.next() });
            self.retry_psn = Some(psn);
            self.rtt_probe = None;
            self.restart_rto(env, cfg);
            return Ok(());
        }
        self.go_back(env, cfg, psn)?;
        self.restart_rto(env, cfg);
        Ok(())
    }

    fn restart_rto(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) {
        if cfg.timeout_us != 0 && !self.is_empty() {
            let rto = self.backed_off_rto_us(cfg);
            self.rto_deadline = Some(env.now_us().saturating_add(rto));
        }
    }

    /// No retry left for a resend `cause` drew: the head request fails with RETRY_EXC_ERR
    /// (the QP goes to Error), noted in [`Requester::retry_note`].
    pub(super) fn retry_exceeded(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        cause: RetryCause,
    ) -> Fatal {
        self.count(env, RcEvent::RetryExceeded);
        if let Some(e) = self.entry(0) {
            self.retry_note = Some(RetryNote {
                psn: e.first_psn,
                opcode: e.wqe.opcode,
                cause,
                timeouts: self.counters.timeouts,
                seq_naks: self.counters.seq_naks,
                resent_pkts: self.counters.resent_pkts,
                engine: self.sr.as_deref().map_or("standard", ReqSr::describe),
            });
        }
        self.fail_entry(env, cfg, 0, WcStatus::RetryExcErr)
    }

    /// Resends from `from`, as a retry: counted against `retry_cnt`.
    fn go_back(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, from: Psn) -> Result<(), Fatal> {
        if self.retries_left == 0 {
            return Err(self.retry_exceeded(env, cfg, RetryCause::LostResponse));
        }
        self.retries_left -= 1;
        self.count(env, RcEvent::Retry);
        self.retry_psn = Some(from);
        self.rtt_probe = None;
        self.nak_sample = None;
        self.rewind(from);
        Ok(())
    }

    /// Moves the send cursor back to `psn`.
    pub(super) fn rewind(&mut self, psn: Psn) {
        let mut i = 0;
        while let Some(e) = self.entry(i) {
            if i >= self.next || e.covers(psn) {
                break;
            }
            i += 1;
        }
        if i > self.next {
            return;
        }
        let Some(e) = self.entry(i) else {
            return;
        };
        let k = if e.covers(psn) {
            psn.distance_from(e.first_psn)
        } else {
            0
        };
        // A READ resumes after the responses already placed.
        let k = if matches!(e.wqe.op, SendOp::RdmaRead { .. }) {
            k.min(e.done_bytes / self.pmtu)
        } else {
            k
        };
        if i < self.next || (i == self.next && k < self.next_pkt) {
            self.next = i;
            self.next_pkt = k;
            self.noack_pkts = 0;
            self.recount_rd_atomic();
        }
    }

    /// Folds an RTT sample into the estimate when `una` passes the probe; true when it took
    /// one.
    pub(super) fn sample_rtt(&mut self, env: &mut dyn RcEnv, una: Psn) -> bool {
        let Some((psn, sent, una_then)) = self.rtt_probe else {
            return false;
        };
        if !una.after(psn) {
            return false;
        }
        self.rtt_probe = None;
        let r = env.now_us().saturating_sub(sent).max(1);
        self.probe.note_rtt(r);
        self.path.sample(r, (una_then, psn, una), self.budget_held);
        smooth_rtt(&mut self.srtt_us, &mut self.rttvar_us, r);
        true
    }

    /// The PSNs the path holds by the requester's estimate, with headroom (`path.rs`), at
    /// most the window: what the pipe and the device's in-flight budget stretch to (0
    /// before a sample).
    pub fn path_allowance(&self) -> u32 {
        self.path.allowance().min(self.window())
    }

    /// The retransmission timeout: the QP's local ACK timeout, or longer when the measured
    /// round trip (a slow or backlogged responder) needs it. IBTA makes the timeout a
    /// minimum, so waiting longer is allowed; resending into a backlog only deepens it.
    pub(super) fn rto_us(&self, cfg: &RcConfig) -> u64 {
        cfg.timeout_us
            .max(self.srtt_us.saturating_add(4 * self.rttvar_us))
    }

    /// The timer's length: [`Self::rto_us`] doubled per timeout without progress (up to
    /// [`MAX_BACKOFF`] times), but never past the larger of that base and the QP's timeout
    /// doubled [`MAX_BACKOFF`] times. A base that a long measured round trip set (a
    /// backlogged or very slow responder: seconds) is not doubled on top: doubled six
    /// times it would keep a lost packet, or a dead peer, waiting for minutes per retry.
    pub(super) fn backed_off_rto_us(&self, cfg: &RcConfig) -> u64 {
        let base = self.rto_us(cfg);
        let ceiling = base.max(cfg.timeout_us.saturating_mul(1u64 << MAX_BACKOFF));
        base.saturating_mul(1u64 << self.backoff).min(ceiling)
    }

    /// The current RTT estimate (smoothed, deviation), microseconds.
    pub fn rtt_us(&self) -> (u64, u64) {
        (self.srtt_us, self.rttvar_us)
    }
}
