// SPDX-License-Identifier: GPL-2.0
//! Per-device counters, as `rdma statistic show link DEV/1` lists them. Names are rdma_rxe's
//! where the meaning is the same; only counters some code path maintains are listed (more
//! join as the transport lands).

use core::ffi::CStr;
use core::sync::atomic::{AtomicU64, Ordering};

/// A counter.
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    /// RoCEv2 datagrams that arrived for this device (rdma_rxe: `rcvd_pkts`).
    RcvdPkts = 0,
    /// Of those, dropped: malformed (bad ICRC or headers), for no QP that can take them, a
    /// wrong Q_Key or P_Key, or no receive WQE for a UD message (rxe_sr's).
    RcvdDropped = 1,
    /// Times the port left ACTIVE with its netdev (rdma_rxe: `link_downed`).
    LinkDowned = 2,
    /// Packets sent (rdma_rxe: `sent_pkts`).
    SentPkts = 3,
    /// SEND messages sent (rdma_rxe: `rdma_sends`).
    RdmaSends = 4,
    /// SEND messages received (rdma_rxe: `rdma_recvs`).
    RdmaRecvs = 5,
    /// Responder: request packets past ePSN (a gap; rdma_rxe: `out_of_seq_request`).
    OutOfSeqRequest = 6,
    /// Responder: request packets before ePSN (rdma_rxe: `duplicate_request`).
    DuplicateRequest = 7,
    /// Responder: RNR NAKs sent, no receive WQE (rdma_rxe: `send_rnr_err`).
    SendRnrErr = 8,
    /// Requester: RNR NAKs received (rdma_rxe: `rcvd_rnr_err`).
    RcvdRnrErr = 9,
    /// Requester: PSN sequence error NAKs received (rdma_rxe: `rcvd_seq_err`).
    RcvdSeqErr = 10,
    /// Requester: retries after a timeout or a NAK (rdma_rxe: `completer_retry_err`).
    CompleterRetryErr = 11,
    /// Requester: work requests failed with RETRY_EXC_ERR (rdma_rxe: `retry_exceeded_err`).
    RetryExceededErr = 12,
    /// Requester: work requests failed with RNR_RETRY_EXC_ERR (rdma_rxe:
    /// `retry_rnr_exceeded_err`).
    RetryRnrExceededErr = 13,
    /// Responder: duplicate READ or atomic requests that matched none of the QP's saved
    /// READ/atomic resources, dropped (rxe_sr's).
    DupRdAtomicDropped = 14,
    /// RC/UC packets whose IP source or destination is not the QP's path (of those counted
    /// in `rcvd_dropped`; rxe_sr's).
    RcvdAddrMismatch = 15,
}

/// How many counters there are.
pub(crate) const COUNT: usize = 16;

/// Their names, in [`Counter`] order.
pub(crate) const NAMES: [&CStr; COUNT] = [
    c"rcvd_pkts",
    c"rcvd_dropped",
    c"link_downed",
    c"sent_pkts",
    c"rdma_sends",
    c"rdma_recvs",
    c"out_of_seq_request",
    c"duplicate_request",
    c"send_rnr_err",
    c"rcvd_rnr_err",
    c"rcvd_seq_err",
    c"completer_retry_err",
    c"retry_exceeded_err",
    c"retry_rnr_exceeded_err",
    c"dup_rd_atomic_dropped",
    c"rcvd_addr_mismatch",
];

/// The counters of one device (all-zero is a valid initial value).
pub(crate) struct Counters([AtomicU64; COUNT]);

impl Counters {
    /// All zero.
    pub(crate) fn new() -> Self {
        Counters([const { AtomicU64::new(0) }; COUNT])
    }

    /// One more event.
    pub(crate) fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    /// `n` more events.
    pub(crate) fn add(&self, c: Counter, n: u64) {
        if n != 0 {
            if let Some(x) = self.0.get(c as usize) {
                x.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// The current values, in [`Counter`] order.
    pub(crate) fn snapshot(&self) -> [u64; COUNT] {
        let mut v = [0u64; COUNT];
        for (out, c) in v.iter_mut().zip(self.0.iter()) {
            *out = c.load(Ordering::Relaxed);
        }
        v
    }
}
