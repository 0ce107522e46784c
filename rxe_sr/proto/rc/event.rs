// SPDX-License-Identifier: GPL-2.0
//! What the connected transport counts: each event is reported where it happens, through
//! [`RcEnv::count`](super::RcEnv::count) (the kernel adds it to the device's counters at
//! once, the host tests tally it), and the QP's own tallies ([`ReqCounters`],
//! [`ReqSrCounters`], [`RespCounters`], [`RespSrCounters`]) take the same event.
//!
//! The SR engines (`proto::recovery`) keep counters of their own and tell the sink of
//! their actions each event as they count it ([`ActionSink::counted`]): the requester's and
//! the responder's sinks report it at once, as the [`RcEvent`] that `engine_event` names.
//!
//! [`ActionSink::counted`]: crate::proto::recovery::ActionSink::counted
//! [`ReqCounters`]: super::requester::ReqCounters
//! [`ReqSrCounters`]: super::requester::ReqSrCounters
//! [`RespCounters`]: super::responder::RespCounters
//! [`RespSrCounters`]: super::responder::RespSrCounters

use crate::proto::recovery::EngineEvent;

/// A countable event of a connected QP. Each names the QP tally it adds to, if any.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum RcEvent {
    /// Requester: went back after a timeout or a NAK, spending a retry (`retries`).
    Retry,
    /// Requester: the retransmission timeout fired (`timeouts`).
    Timeout,
    /// Requester: an RNR NAK arrived (`rnr_naks`).
    RnrNakRcvd,
    /// Requester: a NAK "PSN sequence error" arrived (`seq_naks`).
    SeqNakRcvd,
    /// Requester: a packet went again (`resent_pkts`).
    Resent,
    /// Requester: a response was dropped as duplicate or unexpected (`dup_responses`).
    DupResponse,
    /// Requester: a work request failed with RETRY_EXC_ERR (`retry_exceeded`).
    RetryExceeded,
    /// Requester: a work request failed with RNR_RETRY_EXC_ERR (`rnr_retry_exceeded`).
    RnrRetryExceeded,
    /// Requester: the device's in-flight budget did not admit a message at once
    /// (`admit_waits`).
    AdmitWait,
    /// Requester: the peer agreed to the SR format.
    SrAgreed,
    /// Requester: the peer's first answer settled the QP on standard RoCEv2.
    SrDeclined,
    /// SR requester: a SACK arrived (`sacks_rcvd`).
    SackRcvd,
    /// SR requester: an FNACK arrived (`fnacks_rcvd`).
    FnackRcvd,
    /// SR requester: a HOLE acknowledgment arrived (`holes_rcvd`).
    HoleRcvd,
    /// SR requester: an ACK moved UNACK past a filled hole (`aacks_rcvd`).
    AackRcvd,
    /// SR requester: a packet was resent alone (`selective_resent`).
    SelectiveResent,
    /// SR requester: a resend of RCV-NXT was found lost (`lost_resends`).
    LostResend,
    /// SR requester: UNACK went again on a probe (`stall_probes`).
    StallProbe,
    /// Responder: a request past ePSN was dropped (`seq_err`).
    OutOfSequence,
    /// Responder: a duplicate request arrived (`duplicates`).
    Duplicate,
    /// Responder: an RNR NAK went (`rnr_naks_sent`).
    RnrNakSent,
    /// Responder: an error NAK went (`err_naks_sent`).
    ErrNakSent,
    /// Responder, UC: a packet was dropped for a gap (`uc_dropped`).
    UcDropped,
    /// Responder: a duplicate READ or atomic matched no saved resource (`dup_unmatched`).
    DupUnmatched,
    /// Responder: an SR-format request came to a QP without SR (`sr_refused`).
    SrUnsupported,
    /// Responder: a READ repair asked only for responses still to go (`repairs_redundant`).
    RepairRedundant,
    /// Responder: a request was dropped behind READ responses still to go (`busy_dropped`).
    BusyDropped,
    /// SR responder: a request packet was placed out of order (`ooo_placed`).
    OooPlaced,
    /// SR responder: an SR-format ACK went (`acks_sent`).
    SrAckSent,
    /// SR responder: of those, an AACK (`aacks_sent`).
    AackSent,
    /// SR responder: a SACK went (`sacks_sent`).
    SackSent,
    /// SR responder: a SACK was held back (`sacks_coalesced`).
    SackCoalesced,
    /// SR responder: an FNACK went (`fnacks_sent`).
    FnackSent,
    /// SR responder: a HOLE acknowledgment went (`holes_sent`).
    HoleSent,
    /// SR responder: an engine in go-back-N fallback sent a NAK (`naks_sent`).
    SrNakSent,
    /// SR responder: a READ or atomic arrived before RCV-NXT reached it (`ordered_early`).
    OrderedEarly,
    /// SR responder: a SEND packet fell past the receive-WQE window (`window_full`).
    WindowFull,
    /// SR responder: a SEND past RCV-NXT found no receive WQE (`early_rnr`).
    EarlyRnr,
    /// SR responder: a packet past RCV-NXT would have been refused (`early_refused`).
    EarlyRefused,
    /// SR responder: a standard request came after the switch to SR (`stale_standard`).
    StaleStandard,
    /// SR responder: an SR-format request was refused (`refused`).
    SrRefused,
    /// SR responder: an SR-format request fell past the SR window (`out_of_window`).
    OutOfWindow,
    /// SR engine: operations done without a bitmap.
    FastPath,
    /// SR engine: operations that needed a bitmap (or SRNIC's slow path).
    SlowPath,
    /// SR engine: a QP side fell back to go-back-N.
    GbnFallback,
    /// SR engine (FaSR): the lost-cnt overflowed.
    LostCntOverflow,
    /// SR engine (SRNIC): onload-queue entries served.
    OnloadServed,
    /// SR engine (SRNIC): microseconds those entries waited.
    OnloadDelayUs,
    /// SR engine (SRNIC): the QP's onload queue reached a new peak; the count is the peak
    /// itself, a maximum rather than a sum.
    OnloadQueuePeak,
}

/// The event an SR engine's counted `ev` is reported as, by the sink of a `responder`'s
/// engine or of a requester's: only a responder's reports FaSR's lost-cnt overflows and
/// SRNIC's onload queue (a requester's engine keeps none).
pub(super) const fn engine_event(ev: EngineEvent, responder: bool) -> Option<RcEvent> {
    let rc = match ev {
        EngineEvent::FastPath => RcEvent::FastPath,
        EngineEvent::SlowPath => RcEvent::SlowPath,
        EngineEvent::GbnFallback => RcEvent::GbnFallback,
        _ if !responder => return None,
        EngineEvent::LostCntOverflow => RcEvent::LostCntOverflow,
        EngineEvent::OnloadServed => RcEvent::OnloadServed,
        EngineEvent::OnloadDelay => RcEvent::OnloadDelayUs,
        EngineEvent::OnloadQueuePeak => RcEvent::OnloadQueuePeak,
    };
    Some(rc)
}
