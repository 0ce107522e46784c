// SPDX-License-Identifier: GPL-2.0
//! The requester and the completer of a connected QP (IBTA 9.7.4.1, 9.7.5.1;
//! rdma_rxe's rxe_req.c and rxe_comp.c).
//!
//! Posted work requests wait in a fixed ring of [`SqEntry`]s (copies: nothing is read
//! twice from memory user space can write). Each entry owns a PSN range assigned at post
//! time: one PSN per packet of a SEND or RDMA WRITE, one per expected response packet of
//! an RDMA READ, one for an atomic. The requester walks the ring with a send cursor
//! (`next`, `next_pkt`), stopping at the unacknowledged-PSN window ([`MAX_UNACKED_PSNS`]
//! in the standard format unless `RcConfig::gbn_window` is larger; in the SR format the
//! window the peer advertises in its SR acknowledgments, at most its own SR window),
//! at the RDMA READ/atomic limit, at a fence, or while an RNR NAK's delay runs.
//!
//! The completer takes the responder's packets: an ACK acknowledges every PSN up to its
//! own (but never past an RDMA READ or atomic whose response has not arrived: that means
//! the response was lost, and the request is resent); a READ response is placed in
//! order; an atomic ACK delivers the original value. Entries retire in order, posting a
//! completion when signalled or failed. UNACK, the retransmission timer and go-back-N are
//! the [`Gbn`] engine's; the completer feeds it cumulative acknowledgements and carries
//! out its `GoBack`s by moving the send cursor back, counting retries against
//! `retry_cnt`. On a device running an SR scheme the requester probes its peer and, once
//! it agreed, sends in the SR format and hands its events to that scheme's engine instead
//! ([`ReqSr`]), resending the PSNs it names one by one.
//!
//! - `send_queue`: the ring of [`SqEntry`]s, posting (PSN assignment) and the flush.
//! - `send`: the send cursor: what the window, the READ/atomic limit and fences let out.
//! - `request_packet`: building one request packet (opcode, extension headers, AckReq).
//! - `completer`: ACKs and NAKs, and retiring entries into completions.
//! - `read_response`: RDMA READ responses and atomic ACKs.
//! - `retry`: the retransmission and RNR timers, going back, and the RTT estimate.
//! - `selective`: the capability exchange, the engine's actions, per-PSN resends, retry
//!   counting; `sr_counters`: what it counts.
//! - `loss_probe`: finding a lost resend, a lost last packet or a lost READ repair before
//!   the retransmission timeout (a bound on the measured round trip), spending no retry.
//! - `psn_set`: a bitmap of PSNs over the SR window: those marked for resending, and the
//!   READ response PSNs placed out of order.

mod completer;
mod fec;
mod loss_probe;
mod path;
mod psn_set;
mod read_response;
mod request_packet;
mod retry;
mod selective;
mod send;
mod send_queue;
mod sr_counters;

use core::num::NonZeroU32;
use core::ops::DerefMut;

use crate::proto::psn::Psn;
use crate::proto::rc::{RcConfig, RcEnv, RcEvent, GBN_MAX_UNACKED_PSNS, MAX_UNACKED_PSNS};
use crate::proto::recovery::gbn::Gbn;
use crate::proto::recovery::RtoConfig;
use crate::proto::wire::fec_caps::FecRequesterCaps;
use crate::proto::words::WindowWords;
use crate::uabi::send_wqe::SendOpcode;

pub use self::selective::ReqSr;
pub use self::send_queue::PostError;
pub use self::send_queue::SqEntry;
pub use self::sr_counters::ReqSrCounters;

/// The requester's tallies of its events ([`RcEvent`]; rdma_rxe's names where they exist).
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
    /// Messages the device's in-flight budget did not admit at once: the requester waited
    /// for room (or, for the message after one ending, asked for the acknowledgment).
    pub admit_waits: u64,
}

impl ReqCounters {
    /// Adds `n` to the tally of `ev`, if it is one of these.
    fn record(&mut self, ev: RcEvent, n: u64) {
        let c = match ev {
            RcEvent::Retry => &mut self.retries,
            RcEvent::Timeout => &mut self.timeouts,
            RcEvent::RnrNakRcvd => &mut self.rnr_naks,
            RcEvent::SeqNakRcvd => &mut self.seq_naks,
            RcEvent::Resent => &mut self.resent_pkts,
            RcEvent::DupResponse => &mut self.dup_responses,
            RcEvent::RetryExceeded => &mut self.retry_exceeded,
            RcEvent::RnrRetryExceeded => &mut self.rnr_retry_exceeded,
            RcEvent::AdmitWait => &mut self.admit_waits,
            _ => return,
        };
        *c += n;
    }
}

/// How long the requester waits after the egress queue refused a packet before it offers
/// that packet again (the kernel's timer rounds it up to a jiffy). The queue drains at the
/// link's rate meanwhile; trying at once would only build and drop the same skb again.
pub(super) const TX_BUSY_WAIT_US: u64 = 200;

/// The requester and completer of one connected QP, over a slot ring `S`, with its
/// selective-retransmission state in `E` when its device runs an SR scheme.
pub struct Requester<S, E> {
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
    /// The messages the device's in-flight budget admitted end here (RC): what the
    /// requester holds of it ends at `admitted_end` ([`Self::admitted_psns`]).
    admitted_end: Psn,
    /// Go-back-N: the engine while the format is standard RoCEv2.
    engine: Gbn,
    /// The window in the standard format (`RcConfig::gbn_window`, clamped).
    gbn_window: u32,
    /// Selective retransmission (`None`: standard RoCEv2 only).
    sr: Option<E>,
    /// MSN-ETH numbers for the next message that consumes a receive WQE (SEND, RDMA WRITE
    /// with immediate) and for the next RDMA READ (24 bits each).
    recv_msn: u32,
    read_msn: u32,
    rto_deadline: Option<u64>,
    rnr_deadline: Option<u64>,
    /// The egress queue refused a packet: sending waits until then ([`TX_BUSY_WAIT_US`]).
    busy_deadline: Option<u64>,
    retries_left: u8,
    rnr_left: u8,
    /// A go-back to this PSN was made and nothing was acknowledged since.
    retry_psn: Option<Psn>,
    rd_atomic_out: u32,
    noack_pkts: u32,
    /// Timeouts since the last round trip measured: each doubles the next timeout (at most
    /// 2^MAX_BACKOFF times), so a responder that is only slow (a long receive backlog) is
    /// not buried under go-back-N resends. An RTT sample resets it (Karn, RFC 6298 5.7):
    /// progress made by resent packets does not, unless a sequence-error NAK asked for them
    /// (`nak_sample`).
    backoff: u32,
    /// RTT measurement in progress (Karn's rule: a packet sent once, cancelled by any
    /// resend): its PSN, send time and UNACK then.
    rtt_probe: Option<(Psn, u64, Psn)>,
    /// The device's in-flight budget refused the requester room since the RTT probe went
    /// out: the sample measures its share of the path (`path.rs`).
    budget_held: bool,
    /// The PSN a sequence-error NAK sent the requester back to, until its resend goes: that
    /// resend is then the RTT probe. The responder dropped every copy from there on, so
    /// only the resend can be answered (Karn's ambiguity is a timeout's, where the first
    /// copy may yet be).
    nak_sample: Option<Psn>,
    /// SR format: the watch for losses nothing after them shows (`loss_probe`).
    probe: loss_probe::LossProbe,
    /// What the path holds, from the RTT samples (`path`).
    path: path::PathEstimate,
    /// Smoothed RTT and its mean deviation (RFC 6298), microseconds; 0 before a sample.
    srtt_us: u64,
    rttvar_us: u64,
    /// Path MTU the PSN ranges are cut at, fixed for the requester's life (a later path
    /// MTU change cannot re-cut queued requests); non-zero, so divisions cannot fault.
    pmtu: NonZeroU32,
    /// Statistics.
    pub counters: ReqCounters,
    /// Set when the requester gave up on the peer (RETRY_EXC_ERR), for the kernel log.
    pub retry_note: Option<RetryNote>,
    /// The FEC offer's exchange (`fec.rs`).
    fec: FecRequesterCaps,
}

/// What drew the resend that found no retry left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryCause {
    /// The retransmission timeout.
    Timeout,
    /// A sequence-error NAK.
    SeqNak,
    /// A lost READ response or atomic ACK (standard RoCEv2: a go-back).
    LostResponse,
}

/// Why a requester moved its QP to the Error state with RETRY_EXC_ERR: `retry_cnt` resends
/// in a row without progress. For the kernel log (rdma_rxe's completer says as much with
/// rxe_dbg_qp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryNote {
    /// The first PSN of the request that failed.
    pub psn: Psn,
    /// Its opcode.
    pub opcode: SendOpcode,
    /// What drew the last resend.
    pub cause: RetryCause,
    /// Over the QP's life: timeouts, sequence-error NAKs, packets resent.
    pub timeouts: u64,
    /// See `timeouts`.
    pub seq_naks: u64,
    /// See `timeouts`.
    pub resent_pkts: u64,
    /// The SR engine's state for the log ("standard" before the peer agreed to SR).
    pub engine: &'static str,
}

impl<S: DerefMut<Target = [SqEntry]>, B: WindowWords, E: DerefMut<Target = ReqSr<B>>>
    Requester<S, E>
{
    /// A requester whose first packet carries `sq_psn`, over `slots` (its capacity), with
    /// `sr` (made with [`ReqSr::new`] for `sq_psn`) when the device runs an SR scheme.
    pub fn new(slots: S, sq_psn: Psn, cfg: &RcConfig, sr: Option<E>) -> Self {
        let sr_probes = sr.is_some();
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
            admitted_end: sq_psn,
            engine: Gbn::new(sq_psn, sq_psn, rto),
            gbn_window: cfg.gbn_window.clamp(MAX_UNACKED_PSNS, GBN_MAX_UNACKED_PSNS),
            sr,
            recv_msn: 0,
            read_msn: 0,
            rto_deadline: None,
            rnr_deadline: None,
            busy_deadline: None,
            retries_left: cfg.retry_cnt,
            rnr_left: cfg.rnr_retry,
            retry_psn: None,
            rd_atomic_out: 0,
            noack_pkts: 0,
            backoff: 0,
            rtt_probe: None,
            budget_held: false,
            path: path::PathEstimate::new(),
            nak_sample: None,
            probe: loss_probe::LossProbe::new(),
            srtt_us: 0,
            rttvar_us: 0,
            pmtu: NonZeroU32::new(cfg.pmtu).unwrap_or(NonZeroU32::MIN),
            counters: ReqCounters::default(),
            retry_note: None,
            fec: fec::initial_caps(cfg, sq_psn, sr_probes),
        }
    }

    /// Counts one event `ev` of the requester: in its tallies, and through `env`.
    pub(super) fn count(&mut self, env: &mut dyn RcEnv, ev: RcEvent) {
        self.counters.record(ev, 1);
        env.count(ev, 1);
    }
}
