// SPDX-License-Identifier: GPL-2.0
//! The requester and the completer of a connected QP (IBTA 9.7.4.1, 9.7.5.1;
//! rdma_rxe's rxe_req.c and rxe_comp.c).
//!
//! Posted work requests wait in a fixed ring of [`SqEntry`]s (copies: nothing is read
//! twice from memory user space can write). Each entry owns a PSN range assigned at post
//! time: one PSN per packet of a SEND or RDMA WRITE, one per expected response packet of
//! an RDMA READ, one for an atomic. The requester walks the ring with a send cursor
//! (`next`, `next_pkt`), stopping at the unacknowledged-PSN window, at the RDMA
//! READ/atomic limit, at a fence, or while an RNR NAK's delay runs.
//!
//! The completer takes the responder's packets: an ACK acknowledges every PSN up to its
//! own (but never past an RDMA READ or atomic whose response has not arrived: that means
//! the response was lost, and the request is resent); a READ response is placed in
//! order; an atomic ACK delivers the original value. Entries retire in order, posting a
//! completion when signalled or failed. UNACK, the retransmission timer and go-back-N are
//! the [`Gbn`] engine's; the completer feeds it cumulative acknowledgements and carries
//! out its `GoBack`s by moving the send cursor back, counting retries against
//! `retry_cnt`.

use core::num::NonZeroU32;
use core::ops::DerefMut;

use super::{
    nak, packets, rnr_delay_us, Outcome, PayloadSrc, RcConfig, RcEnv, Service, TxError,
    MAX_PKT_PER_ACK, MAX_UNACKED_PSNS,
};
use crate::proto::psn::Psn;
use crate::proto::recovery::gbn::Gbn;
use crate::proto::recovery::{Action, Feedback, Recovery, ReqEvent, RtoConfig, Timer};
use crate::proto::wire::ext_headers::{AethKind, AtomicEth, Ieth, ImmDt, Reth};
use crate::proto::wire::opcode::OpKind;
use crate::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr};
use crate::uabi::cqe::{Completion, WcStatus};
use crate::uabi::send_wqe::{Payload, SendFlags, SendOp, SendWqe};

/// Most doublings of the retransmission timeout (64 times the configured one).
const MAX_BACKOFF: u32 = 6;

/// One posted work request and its transport state.
#[derive(Clone, Copy, Debug)]
pub struct SqEntry {
    /// The validated copy of the WQE.
    pub wqe: SendWqe,
    /// PSN of its first packet (or first READ response).
    pub first_psn: Psn,
    /// PSNs it uses.
    pub npsn: u32,
    /// RDMA READ: response bytes placed so far.
    done_bytes: u32,
    /// RDMA READ / atomic: the last response arrived.
    complete: bool,
}

impl SqEntry {
    /// An unposted slot (storage filler).
    pub const fn empty(wqe: SendWqe) -> SqEntry {
        SqEntry {
            wqe,
            first_psn: Psn::new(0),
            npsn: 0,
            done_bytes: 0,
            complete: false,
        }
    }

    fn is_rd_atomic(&self) -> bool {
        matches!(
            self.wqe.op,
            SendOp::RdmaRead { .. }
                | SendOp::AtomicCmpAndSwp { .. }
                | SendOp::AtomicFetchAndAdd { .. }
        )
    }

    fn end_psn(&self) -> Psn {
        self.first_psn.add(self.npsn)
    }

    /// Contains `psn`.
    fn covers(&self, psn: Psn) -> bool {
        !psn.before(self.first_psn) && psn.before(self.end_psn())
    }
}

/// Why a post was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PostError {
    /// Every slot holds an unretired request.
    Full,
    /// The operation is not one this transport carries; complete it with this status.
    Unsupported(WcStatus),
}

/// Fixed-capacity queue of up to 8 engine actions.
struct Actions {
    buf: [Option<Action>; 8],
    n: usize,
}

impl Actions {
    const fn new() -> Self {
        Actions {
            buf: [None; 8],
            n: 0,
        }
    }
}

impl crate::proto::recovery::ActionSink for Actions {
    fn push(&mut self, a: Action) {
        if let Some(s) = self.buf.get_mut(self.n) {
            *s = Some(a);
            self.n += 1;
        }
    }
}

/// Counters the transport exports (rdma_rxe's names where they exist).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReqCounters {
    /// Times the requester went back after a timeout or NAK (`completer_retry_err`-like).
    pub retries: u64,
    /// Retransmission timeouts that fired (`rdma_rxe: retry_exceeded_err` counts the end).
    pub timeouts: u64,
    /// RNR NAKs received (`rcvd_rnr_err`).
    pub rnr_naks: u64,
    /// Sequence-error NAKs received (`rcvd_seq_err` on the requester side).
    pub seq_naks: u64,
    /// Packets sent again.
    pub resent_pkts: u64,
    /// Responses dropped as duplicate or unexpected.
    pub dup_responses: u64,
    /// Work requests failed with RETRY_EXC_ERR.
    pub retry_exceeded: u64,
    /// Work requests failed with RNR_RETRY_EXC_ERR.
    pub rnr_retry_exceeded: u64,
}

/// The requester and completer of one connected QP, over a slot ring `S`.
pub struct Requester<S: DerefMut<Target = [SqEntry]>> {
    slots: S,
    head: usize,
    len: usize,
    /// Send cursor: entries `[0, next)` (from head) are sent, `next_pkt` packets of entry
    /// `next` too.
    next: usize,
    next_pkt: u32,
    /// PSN for the next posted entry.
    psn_tail: Psn,
    /// The highest PSN range ever sent ends here (new packets vs resent).
    sent_high: Psn,
    engine: Gbn,
    rto_deadline: Option<u64>,
    rnr_deadline: Option<u64>,
    retries_left: u8,
    rnr_left: u8,
    /// A go-back to this PSN was made and nothing was acknowledged since.
    retry_psn: Option<Psn>,
    rd_atomic_out: u32,
    noack_pkts: u32,
    /// Consecutive timeouts without progress: each doubles the next timeout (at most
    /// 2^MAX_BACKOFF times), so a responder that is only slow (a long receive backlog) is
    /// not buried under go-back-N resends. Progress resets it.
    backoff: u32,
    /// RTT measurement in progress (Karn's rule: a packet sent once, cancelled by any
    /// resend): its PSN and send time.
    rtt_probe: Option<(Psn, u64)>,
    /// Smoothed RTT and its mean deviation (RFC 6298), microseconds; 0 before a sample.
    srtt_us: u64,
    rttvar_us: u64,
    /// Path MTU the PSN ranges are cut at, fixed for the requester's life (a later path
    /// MTU change cannot re-cut queued requests); non-zero, so divisions cannot fault.
    pmtu: NonZeroU32,
    /// Statistics.
    pub counters: ReqCounters,
}

impl<S: DerefMut<Target = [SqEntry]>> Requester<S> {
    /// A requester whose first packet carries `sq_psn`, over `slots` (its capacity).
    pub fn new(slots: S, sq_psn: Psn, cfg: &RcConfig) -> Self {
        let rto = RtoConfig {
            rto_low: cfg.timeout_us,
            rto_high: cfg.timeout_us,
            n_low: 0,
        };
        Requester {
            slots,
            head: 0,
            len: 0,
            next: 0,
            next_pkt: 0,
            psn_tail: sq_psn,
            sent_high: sq_psn,
            engine: Gbn::new(sq_psn, sq_psn, rto),
            rto_deadline: None,
            rnr_deadline: None,
            retries_left: cfg.retry_cnt,
            rnr_left: cfg.rnr_retry,
            retry_psn: None,
            rd_atomic_out: 0,
            noack_pkts: 0,
            backoff: 0,
            rtt_probe: None,
            srtt_us: 0,
            rttvar_us: 0,
            pmtu: NonZeroU32::new(cfg.pmtu).unwrap_or(NonZeroU32::MIN),
            counters: ReqCounters::default(),
        }
    }

    /// Unretired entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is outstanding.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Free slots.
    pub fn room(&self) -> usize {
        self.slots.len().saturating_sub(self.len)
    }

    /// The PSN the next posted request gets (`ibv_query_qp`'s sq_psn).
    pub fn sq_psn(&self) -> Psn {
        self.psn_tail
    }

    /// The earliest pending timer deadline, in microseconds.
    pub fn deadline(&self) -> Option<u64> {
        match (self.rto_deadline, self.rnr_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn idx(&self, i: usize) -> usize {
        let cap = self.slots.len().max(1);
        (self.head + i) % cap
    }

    fn entry(&self, i: usize) -> Option<&SqEntry> {
        if i >= self.len {
            return None;
        }
        self.slots.get(self.idx(i))
    }

    fn entry_mut(&mut self, i: usize) -> Option<&mut SqEntry> {
        if i >= self.len {
            return None;
        }
        let k = self.idx(i);
        self.slots.get_mut(k)
    }

    /// Queues a validated work request. Its PSNs are assigned now.
    pub fn post(&mut self, wqe: SendWqe, cfg: &RcConfig) -> Result<(), PostError> {
        *self.vacant().ok_or(PostError::Full)? = wqe;
        self.post_vacant(cfg)
    }

    /// The slot the next post fills, to build a WQE in place (see
    /// [`Requester::post_vacant`]); `None` when the requester is full.
    pub fn vacant(&mut self) -> Option<&mut SendWqe> {
        if self.len >= self.slots.len() {
            return None;
        }
        let k = self.idx(self.len);
        self.slots.get_mut(k).map(|e| &mut e.wqe)
    }

    /// [`Requester::post`] of the WQE written into [`Requester::vacant`].
    pub fn post_vacant(&mut self, cfg: &RcConfig) -> Result<(), PostError> {
        if self.len >= self.slots.len() {
            return Err(PostError::Full);
        }
        let k = self.idx(self.len);
        let slot = self.slots.get_mut(k).ok_or(PostError::Full)?;
        let wqe = &slot.wqe;
        let rc = cfg.service == Service::Rc;
        let npsn = match wqe.op {
            SendOp::Send
            | SendOp::SendWithImm { .. }
            | SendOp::RdmaWrite { .. }
            | SendOp::RdmaWriteWithImm { .. } => packets(wqe.length, self.pmtu.get()),
            SendOp::SendWithInv { .. } if rc => packets(wqe.length, self.pmtu.get()),
            SendOp::RdmaRead { .. } if rc => packets(wqe.length, self.pmtu.get()),
            SendOp::AtomicCmpAndSwp { .. } | SendOp::AtomicFetchAndAdd { .. } if rc => {
                if wqe.length < 8 {
                    return Err(PostError::Unsupported(WcStatus::LocLenErr));
                }
                1
            }
            SendOp::AtomicWrite { .. } if rc => 1,
            // Local operations: no packet; they run when the send cursor reaches them.
            SendOp::BindMw(_) => 0,
            SendOp::LocalInv { .. } | SendOp::RegMr { .. } if rc => 0,
            _ => return Err(PostError::Unsupported(WcStatus::LocQpOpErr)),
        };
        let first_psn = self.psn_tail;
        slot.first_psn = first_psn;
        slot.npsn = npsn;
        slot.done_bytes = 0;
        slot.complete = false;
        self.len += 1;
        self.psn_tail = first_psn.add(npsn);
        Ok(())
    }

    /// Completes every entry, oldest first, with IB_WC_WR_FLUSH_ERR (the QP entered the
    /// Error state, IBTA 10.3.1): `retire` retires each from its queue and posts its
    /// completion. Nothing is left.
    pub fn flush(&mut self, cfg: &RcConfig, mut retire: impl FnMut(&Completion)) {
        // (By reference: an entry is large, and kernel stacks are small.)
        while let Some(c) = self
            .entry(0)
            .map(|e| Completion::for_send_wqe(&e.wqe, cfg.qpn, WcStatus::WrFlushErr))
        {
            retire(&c);
            let cap = self.slots.len().max(1);
            self.head = (self.head + 1) % cap;
            self.len -= 1;
        }
        self.clear();
    }

    /// Drops every entry without completing it.
    fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
        self.next = 0;
        self.next_pkt = 0;
        self.rto_deadline = None;
        self.rnr_deadline = None;
        self.rd_atomic_out = 0;
    }

    /// Sends what the window, the READ/atomic limit and fences allow.
    pub fn run(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) -> Outcome {
        if self.rnr_deadline.is_some() {
            return Outcome::Ok;
        }
        let rc = cfg.service == Service::Rc;
        while self.next < self.len {
            // The entry is read in place (no per-packet copy of the WQE).
            let k = self.idx(self.next);
            let Some(e) = self.slots.get(k) else {
                break;
            };
            if e.npsn == 0 {
                // A local operation: it runs once (a go-back passes over it again), in
                // order with the requests around it, and completes as the requests before it
                // are acknowledged.
                let (op, done, fence) =
                    (e.wqe.op, e.complete, e.wqe.flags.contains(SendFlags::FENCE));
                if !done {
                    if fence && self.rd_atomic_out > 0 {
                        break;
                    }
                    if let Err(status) = env.local_op(&op) {
                        return self.fail_entry(env, cfg, self.next, status);
                    }
                    if let Some(m) = self.entry_mut(self.next) {
                        m.complete = true;
                    }
                }
                self.next += 1;
                self.next_pkt = 0;
                self.retire(env, cfg);
                continue;
            }
            let (psn, rd_atomic) = (e.first_psn.add(self.next_pkt), e.is_rd_atomic());
            if rc && psn.diff(self.engine.una()) >= MAX_UNACKED_PSNS as i32 {
                break;
            }
            if rd_atomic && self.next_pkt == 0 && self.rd_atomic_out >= cfg.max_rd_atomic.max(1) {
                break;
            }
            if e.wqe.flags.contains(SendFlags::FENCE)
                && self.next_pkt == 0
                && self.rd_atomic_out > 0
            {
                break;
            }
            let sent = Self::send_packet(
                env,
                cfg,
                self.pmtu.get(),
                &mut self.noack_pkts,
                e,
                self.next_pkt,
            );
            let (last, used) = match sent {
                Ok(x) => x,
                Err(status) => return self.fail_entry(env, cfg, self.next, status),
            };
            if rc {
                let now = env.now_us();
                if !psn.before(self.sent_high) {
                    self.sent_high = psn.add(used);
                    if self.rtt_probe.is_none() {
                        self.rtt_probe = Some((psn, now));
                    }
                } else {
                    self.counters.resent_pkts += 1;
                }
                let mut acts = Actions::new();
                self.engine.on_requester(
                    &mut (),
                    ReqEvent::Sent {
                        psn: psn.add(used - 1),
                        now,
                    },
                    &mut acts,
                );
                if self.apply(env, cfg, acts) == Outcome::Error {
                    return Outcome::Error;
                }
            }
            if last {
                if rd_atomic {
                    self.rd_atomic_out += 1;
                }
                self.next += 1;
                self.next_pkt = 0;
                if !rc {
                    // UC completes once the last packet is out.
                    self.retire(env, cfg);
                }
            } else {
                self.next_pkt += used;
            }
        }
        Outcome::Ok
    }

    /// Builds and transmits packet `k` of entry `e`. Returns (the entry is fully sent,
    /// PSNs this packet accounts for).
    fn send_packet(
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        pmtu: u32,
        noack_pkts: &mut u32,
        e: &SqEntry,
        k: u32,
    ) -> Result<(bool, u32), WcStatus> {
        let uc = cfg.service == Service::Uc;
        let psn = e.first_psn.add(k);
        let n = e.npsn;
        let first = k == 0;
        let last = k + 1 >= n;
        let off = k.saturating_mul(pmtu);
        let mut ext = ExtHeaders::default();
        let mut se = false;
        let mut ack_req = last;
        let (opcode, plen, used) = match e.wqe.op {
            SendOp::RdmaRead { remote } => {
                // A (re)sent READ asks for what has not arrived yet: `k` whole packets did.
                ext.reth = Some(Reth {
                    va: remote.addr.wrapping_add(u64::from(off)),
                    rkey: remote.rkey,
                    dma_len: e.wqe.length.saturating_sub(off),
                });
                ack_req = true;
                (Opcode::RC_RDMA_READ_REQUEST, 0, n - k)
            }
            SendOp::AtomicCmpAndSwp {
                remote,
                compare,
                swap,
            } => {
                ext.atomic_eth = Some(AtomicEth {
                    va: remote.addr,
                    rkey: remote.rkey,
                    swap_add: swap,
                    compare,
                });
                ack_req = true;
                (Opcode::RC_COMPARE_SWAP, 0, 1)
            }
            SendOp::AtomicWrite { remote, value } => {
                // IBTA 1.5 ATOMIC WRITE: 8 bytes placed as one unit, acknowledged like a WRITE.
                ext.reth = Some(Reth {
                    va: remote.addr,
                    rkey: remote.rkey,
                    dma_len: 8,
                });
                let hdr = PacketRepr {
                    bth: BthRepr {
                        opcode: Opcode::RC_ATOMIC_WRITE,
                        dest_qpn: cfg.dest_qpn,
                        ack_req: true,
                        psn,
                        ..Default::default()
                    },
                    ext,
                    payload: &[],
                };
                match env.transmit(&hdr, PayloadSrc::Bytes(&value), 8) {
                    Ok(()) | Err(TxError::Dropped) => {}
                    Err(TxError::Local(s)) => return Err(s),
                }
                *noack_pkts = 0;
                return Ok((true, 1));
            }
            SendOp::AtomicFetchAndAdd { remote, add } => {
                ext.atomic_eth = Some(AtomicEth {
                    va: remote.addr,
                    rkey: remote.rkey,
                    swap_add: add,
                    compare: 0,
                });
                ack_req = true;
                (Opcode::RC_FETCH_ADD, 0, 1)
            }
            op => {
                let plen = e.wqe.length.saturating_sub(off).min(pmtu);
                let write = matches!(
                    op,
                    SendOp::RdmaWrite { .. } | SendOp::RdmaWriteWithImm { .. }
                );
                if let SendOp::RdmaWrite { remote } | SendOp::RdmaWriteWithImm { remote, .. } = op {
                    if first {
                        ext.reth = Some(Reth {
                            va: remote.addr,
                            rkey: remote.rkey,
                            dma_len: e.wqe.length,
                        });
                    }
                }
                let imm = match op {
                    SendOp::SendWithImm { imm } | SendOp::RdmaWriteWithImm { imm, .. } if last => {
                        Some(imm)
                    }
                    _ => None,
                };
                if let Some(imm) = imm {
                    ext.imm_dt = Some(ImmDt {
                        data: u32::from_be_bytes(imm),
                    });
                }
                let inv = match op {
                    SendOp::SendWithInv { invalidate_rkey } if last => Some(invalidate_rkey),
                    _ => None,
                };
                if let Some(rkey) = inv {
                    ext.ieth = Some(Ieth { rkey });
                }
                if last && (!write || imm.is_some()) {
                    se = e.wqe.flags.contains(SendFlags::SOLICITED);
                }
                let base = match (write, first, last) {
                    (false, true, true) => 0x04,
                    (false, true, false) => 0x00,
                    (false, false, false) => 0x01,
                    (false, false, true) => 0x02,
                    (true, true, true) => 0x0a,
                    (true, true, false) => 0x06,
                    (true, false, false) => 0x07,
                    (true, false, true) => 0x08,
                };
                // Immediate / invalidate variants of LAST (+1 / 0x16) and ONLY (+1 / 0x17).
                let code = match (imm.is_some(), inv.is_some(), last) {
                    (true, _, true) => base + 1,
                    (_, true, true) if first => 0x17,
                    (_, true, true) => 0x16,
                    _ => base,
                };
                let code = if uc { code | 0x20 } else { code };
                (Opcode(code), plen, 1)
            }
        };
        if !ack_req {
            *noack_pkts += 1;
            if *noack_pkts >= MAX_PKT_PER_ACK {
                ack_req = true;
            }
        }
        if ack_req {
            *noack_pkts = 0;
        }
        let hdr = PacketRepr {
            bth: BthRepr {
                opcode,
                se,
                pad_cnt: BthRepr::pad_for(plen as usize),
                dest_qpn: cfg.dest_qpn,
                ack_req: ack_req && !uc,
                psn,
                ..Default::default()
            },
            ext,
            payload: &[],
        };
        let src = match &e.wqe.payload {
            _ if plen == 0 => PayloadSrc::None,
            Payload::Inline(d) => {
                let s = d.as_slice();
                let a = off as usize;
                let b = a.saturating_add(plen as usize);
                PayloadSrc::Bytes(s.get(a..b).ok_or(WcStatus::LocLenErr)?)
            }
            Payload::Sges(list) => PayloadSrc::Local {
                sges: list,
                offset: off,
            },
            Payload::None => PayloadSrc::None,
        };
        match env.transmit(&hdr, src, plen) {
            Ok(()) | Err(TxError::Dropped) => {}
            Err(TxError::Local(s)) => return Err(s),
        }
        let done = last || matches!(e.wqe.op, SendOp::RdmaRead { .. });
        Ok((done, used))
    }

    /// Carries out the engine's actions.
    fn apply(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, acts: Actions) -> Outcome {
        for a in acts.buf.iter().take(acts.n).flatten() {
            match *a {
                Action::Acked { una } => {
                    self.sample_rtt(env, una);
                    self.backoff = 0;
                    self.retries_left = cfg.retry_cnt;
                    self.rnr_left = cfg.rnr_retry;
                    self.retry_psn = None;
                    self.retire(env, cfg);
                }
                Action::GoBack { from } | Action::Retransmit { first: from, .. }
                    if self.go_back(env, cfg, from) == Outcome::Error =>
                {
                    return Outcome::Error;
                }
                Action::ArmTimer {
                    timer: Timer::Rto,
                    deadline,
                } if cfg.timeout_us != 0 => {
                    let rto = self.rto_us(cfg).saturating_mul(1u64 << self.backoff);
                    self.rto_deadline =
                        Some(deadline.saturating_add(rto.saturating_sub(cfg.timeout_us)));
                }
                Action::DisarmTimer { timer: Timer::Rto } => self.rto_deadline = None,
                _ => {}
            }
        }
        Outcome::Ok
    }

    /// Folds an RTT sample into the estimate when `una` passes the probe.
    fn sample_rtt(&mut self, env: &mut dyn RcEnv, una: Psn) {
        let Some((psn, sent)) = self.rtt_probe else {
            return;
        };
        if !una.after(psn) {
            return;
        }
        self.rtt_probe = None;
        let r = env.now_us().saturating_sub(sent).max(1);
        if self.srtt_us == 0 {
            self.srtt_us = r;
            self.rttvar_us = r / 2;
        } else {
            let dev = self.srtt_us.abs_diff(r);
            self.rttvar_us = (3 * self.rttvar_us + dev) / 4;
            self.srtt_us = (7 * self.srtt_us + r) / 8;
        }
    }

    /// The retransmission timeout: the QP's local ACK timeout, or longer when the measured
    /// round trip (a slow or backlogged responder) needs it. IBTA makes the timeout a
    /// minimum, so waiting longer is allowed; resending into a backlog only deepens it.
    fn rto_us(&self, cfg: &RcConfig) -> u64 {
        cfg.timeout_us
            .max(self.srtt_us.saturating_add(4 * self.rttvar_us))
    }

    /// The current RTT estimate (smoothed, deviation), microseconds.
    pub fn rtt_us(&self) -> (u64, u64) {
        (self.srtt_us, self.rttvar_us)
    }

    /// Resends from `from`, as a retry: counted against `retry_cnt`.
    fn go_back(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, from: Psn) -> Outcome {
        if self.retries_left == 0 {
            self.counters.retry_exceeded += 1;
            return self.fail_entry(env, cfg, 0, WcStatus::RetryExcErr);
        }
        self.retries_left -= 1;
        self.counters.retries += 1;
        self.retry_psn = Some(from);
        self.rtt_probe = None;
        self.rewind(from);
        Outcome::Ok
    }

    /// Moves the send cursor back to `psn`.
    fn rewind(&mut self, psn: Psn) {
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
            self.rd_atomic_out = (0..i)
                .filter_map(|j| self.entry(j))
                .filter(|e| e.is_rd_atomic() && !e.complete)
                .count() as u32;
        }
    }

    /// Completes entry `i` with `status`, the unconfirmed entries before and after it as
    /// flushed, in order; the QP then enters the Error state (which flushes what is still
    /// queued behind the requester).
    fn fail_entry(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        i: usize,
        status: WcStatus,
    ) -> Outcome {
        for _ in 0..i {
            self.pop(env, cfg, WcStatus::WrFlushErr);
        }
        if self.len > 0 {
            self.pop(env, cfg, status);
        }
        self.flush(cfg, |c| env.retire_send(Some(c)));
        Outcome::Error
    }

    /// Retires the head entry with `status`.
    fn pop(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, status: WcStatus) {
        let Some(e) = self.entry(0) else {
            return;
        };
        let was_sent = self.next > 0;
        let signaled = cfg.sig_all || e.wqe.flags.contains(SendFlags::SIGNALED);
        let held_rd_atomic = e.is_rd_atomic() && !e.complete;
        let c = Completion::for_send_wqe(&e.wqe, cfg.qpn, status);
        env.retire_send((signaled || status != WcStatus::Success).then_some(&c));
        let cap = self.slots.len().max(1);
        self.head = (self.head + 1) % cap;
        self.len -= 1;
        self.next = self.next.saturating_sub(1);
        if held_rd_atomic && was_sent {
            self.rd_atomic_out = self.rd_atomic_out.saturating_sub(1);
        }
    }

    /// Retires the finished entries at the head.
    fn retire(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) {
        let una = self.engine.una();
        while let Some(e) = self.entry(0) {
            let done = match cfg.service {
                Service::Uc => self.next > 0,
                Service::Rc => {
                    let acked = !e.end_psn().after(una);
                    acked && (!e.is_rd_atomic() || e.complete) && self.next > 0
                }
            };
            if !done {
                break;
            }
            self.pop(env, cfg, WcStatus::Success);
        }
    }

    /// The first entry that is a READ or atomic still waiting for its response, with its
    /// resume PSN.
    fn first_pending_rd_atomic(&self) -> Option<(usize, Psn)> {
        (0..self.next.min(self.len)).find_map(|i| {
            let e = self.entry(i)?;
            if !e.is_rd_atomic() || e.complete {
                return None;
            }
            let k = e.done_bytes / self.pmtu;
            Some((i, e.first_psn.add(k)))
        })
    }

    /// A cumulative acknowledgement up to (not including) `cum`; returns the PSN the
    /// requester must resend from when `cum` passes a READ or atomic that is still waiting.
    fn ack_to(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, cum: Psn) -> (Outcome, Option<Psn>) {
        let mut eff = cum;
        let mut lost = None;
        if let Some((_, resume)) = self.first_pending_rd_atomic() {
            if cum.after(resume) {
                eff = resume;
                lost = Some(resume);
            }
        }
        if !eff.after(self.engine.una()) {
            return (Outcome::Ok, lost);
        }
        let now = env.now_us();
        let mut acts = Actions::new();
        self.engine.on_requester(
            &mut (),
            ReqEvent::Feedback {
                fb: Feedback::Ack { rcv_nxt: eff },
                now,
            },
            &mut acts,
        );
        (self.apply(env, cfg, acts), lost)
    }

    /// A go-back the completer decided on (lost READ response): once per lost PSN.
    fn retry_from(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig, psn: Psn) -> Outcome {
        if self.retry_psn == Some(psn) {
            return Outcome::Ok;
        }
        let o = self.go_back(env, cfg, psn);
        if o == Outcome::Ok {
            self.restart_rto(env, cfg);
        }
        o
    }

    fn restart_rto(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) {
        if cfg.timeout_us != 0 && !self.is_empty() {
            let rto = self.rto_us(cfg).saturating_mul(1u64 << self.backoff);
            self.rto_deadline = Some(env.now_us().saturating_add(rto));
        }
    }

    /// Index of the entry holding `psn` among the sent ones.
    fn find(&self, psn: Psn) -> Option<usize> {
        (0..self.next.saturating_add(1).min(self.len))
            .find(|&i| self.entry(i).is_some_and(|e| e.covers(psn)))
    }

    /// A response packet (ACK, NAK, READ response, atomic ACK) from the responder.
    pub fn on_response(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
    ) -> Outcome {
        if cfg.service != Service::Rc {
            return Outcome::Ok;
        }
        let psn = p.bth.psn;
        let una = self.engine.una();
        // Only a PSN that was sent and not yet acknowledged means anything.
        if psn.before(una) || !psn.before(self.sent_high) {
            self.counters.dup_responses += 1;
            return Outcome::Ok;
        }
        let Some(info) = p.bth.opcode.info() else {
            return Outcome::Ok;
        };
        let o = match info.kind {
            OpKind::Acknowledge => self.on_aeth(env, cfg, p, psn),
            OpKind::RdmaReadResponse => self.on_read_response(env, cfg, p, psn),
            OpKind::AtomicAcknowledge => self.on_atomic_ack(env, cfg, p, psn),
            _ => {
                self.counters.dup_responses += 1;
                Outcome::Ok
            }
        };
        if o == Outcome::Error {
            return o;
        }
        self.run(env, cfg)
    }

    fn on_aeth(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Outcome {
        let Some(aeth) = p.ext.aeth else {
            return Outcome::Ok;
        };
        match aeth.kind() {
            AethKind::Ack { .. } => {
                let (o, lost) = self.ack_to(env, cfg, psn.next());
                if o == Outcome::Error {
                    return o;
                }
                match lost {
                    Some(from) => self.retry_from(env, cfg, from),
                    None => Outcome::Ok,
                }
            }
            AethKind::RnrNak { timer } => {
                self.counters.rnr_naks += 1;
                if self.ack_to(env, cfg, psn).0 == Outcome::Error {
                    return Outcome::Error;
                }
                let Some(i) = self.find(psn) else {
                    return Outcome::Ok;
                };
                if self.rnr_left == 0 {
                    self.counters.rnr_retry_exceeded += 1;
                    return self.fail_entry(env, cfg, i, WcStatus::RnrRetryExcErr);
                }
                if self.rnr_left != 7 {
                    self.rnr_left -= 1;
                }
                let now = env.now_us();
                let wake = now.saturating_add(rnr_delay_us(timer));
                self.rnr_deadline = Some(wake);
                // The retransmission timer waits for the RNR delay.
                if self.rto_deadline.is_some() {
                    self.rto_deadline = Some(wake.saturating_add(cfg.timeout_us));
                }
                self.rewind(psn);
                Outcome::Ok
            }
            AethKind::Nak { code } if code == nak::PSN_SEQ_ERR => {
                self.counters.seq_naks += 1;
                let (o, lost) = self.ack_to(env, cfg, psn);
                if o == Outcome::Error {
                    return o;
                }
                if let Some(from) = lost {
                    return self.retry_from(env, cfg, from);
                }
                let now = env.now_us();
                let mut acts = Actions::new();
                self.engine.on_requester(
                    &mut (),
                    ReqEvent::Feedback {
                        fb: Feedback::Nak { rcv_nxt: psn },
                        now,
                    },
                    &mut acts,
                );
                self.apply(env, cfg, acts)
            }
            AethKind::Nak { code } => {
                if self.ack_to(env, cfg, psn).0 == Outcome::Error {
                    return Outcome::Error;
                }
                let status = match code {
                    nak::INVALID_REQUEST => WcStatus::RemInvReqErr,
                    nak::REMOTE_ACCESS => WcStatus::RemAccessErr,
                    nak::REMOTE_OP => WcStatus::RemOpErr,
                    nak::INVALID_RD_REQUEST => WcStatus::RemInvRdReqErr,
                    _ => WcStatus::BadRespErr,
                };
                let i = self.find(psn).unwrap_or(0);
                self.fail_entry(env, cfg, i, status)
            }
            AethKind::Reserved => Outcome::Ok,
        }
    }

    fn on_read_response(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Outcome {
        let Some((i, expect)) = self.first_pending_rd_atomic() else {
            self.counters.dup_responses += 1;
            return Outcome::Ok;
        };
        let Some(e) = self.entry(i) else {
            return Outcome::Ok;
        };
        if !matches!(e.wqe.op, SendOp::RdmaRead { .. }) || psn != expect {
            if psn.after(expect) {
                // An earlier response was lost.
                return self.retry_from(env, cfg, expect);
            }
            self.counters.dup_responses += 1;
            return Outcome::Ok;
        }
        let rest = e.wqe.length - e.done_bytes;
        let want = rest.min(self.pmtu.get());
        let plen = p.payload.len() as u32;
        let last = rest == want;
        // A resumed READ's responses start again with FIRST (or ONLY).
        let pos_ok = p.bth.opcode.info().is_some_and(|x| {
            x.position.ends_message() == last && (e.done_bytes > 0 || x.position.starts_message())
        });
        let placed = match &e.wqe.payload {
            _ if plen != want || !pos_ok => Err(WcStatus::BadRespErr),
            Payload::Sges(list) if plen > 0 => env.scatter(list, e.done_bytes, p.payload),
            _ => Ok(()),
        };
        if let Err(s) = placed {
            return self.fail_entry(env, cfg, i, s);
        }
        if let Some(m) = self.entry_mut(i) {
            m.done_bytes += plen;
            if last {
                m.complete = true;
            }
        }
        if last {
            self.rd_atomic_out = self.rd_atomic_out.saturating_sub(1);
        }
        let (o, _) = self.ack_to(env, cfg, psn.next());
        o
    }

    fn on_atomic_ack(
        &mut self,
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        p: &PacketRepr<'_>,
        psn: Psn,
    ) -> Outcome {
        let (Some((i, expect)), Some(ack)) = (self.first_pending_rd_atomic(), p.ext.atomic_ack_eth)
        else {
            self.counters.dup_responses += 1;
            return Outcome::Ok;
        };
        let Some(e) = self.entry(i) else {
            return Outcome::Ok;
        };
        if matches!(e.wqe.op, SendOp::RdmaRead { .. }) || psn != expect {
            if psn.after(expect) {
                return self.retry_from(env, cfg, expect);
            }
            self.counters.dup_responses += 1;
            return Outcome::Ok;
        }
        let placed = match &e.wqe.payload {
            Payload::Sges(list) => env.scatter(list, 0, &ack.orig_rem_data.to_le_bytes()),
            _ => Ok(()),
        };
        if let Err(s) = placed {
            return self.fail_entry(env, cfg, i, s);
        }
        if let Some(m) = self.entry_mut(i) {
            m.complete = true;
        }
        self.rd_atomic_out = self.rd_atomic_out.saturating_sub(1);
        let (o, _) = self.ack_to(env, cfg, psn.next());
        o
    }

    /// A timer deadline passed (the caller's timer fired at or after [`Self::deadline`]).
    pub fn on_timer(&mut self, env: &mut dyn RcEnv, cfg: &RcConfig) -> Outcome {
        let now = env.now_us();
        if self.rnr_deadline.is_some_and(|d| d <= now) {
            self.rnr_deadline = None;
        }
        if self.rto_deadline.is_some_and(|d| d <= now) {
            self.rto_deadline = None;
            if self.rnr_deadline.is_none() {
                self.counters.timeouts += 1;
                self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
                let mut acts = Actions::new();
                self.engine.on_requester(
                    &mut (),
                    ReqEvent::Timer {
                        timer: Timer::Rto,
                        now,
                    },
                    &mut acts,
                );
                if self.apply(env, cfg, acts) == Outcome::Error {
                    return Outcome::Error;
                }
            }
        }
        self.run(env, cfg)
    }
}
