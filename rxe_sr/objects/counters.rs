// SPDX-License-Identifier: GPL-2.0
//! Per-device counters, as `rdma statistic show link DEV/1` lists them. Names are rdma_rxe's
//! where the meaning is the same; each is described in Documentation/counters.md.

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
    /// RC QPs whose requester switched to the SR format: its peer, an rxe_sr device running the
    /// same scheme, echoed the capability (rxe_sr's).
    SrQpsNegotiated = 16,
    /// RC QPs of an SR scheme whose requester stays standard RoCEv2: the peer did not echo
    /// (rdma_rxe, another scheme, hardware; rxe_sr's).
    SrQpsStandard = 17,
    /// Loss-recovery operations done without a bitmap (FaSR's fast path; rxe_sr's).
    SrFastPath = 18,
    /// Loss-recovery operations that needed a bitmap, or SRNIC's software slow path (rxe_sr's).
    SrSlowPath = 19,
    /// SACKs sent (rxe_sr's).
    SrSacksSent = 20,
    /// SACKs received (rxe_sr's).
    SrSacksRcvd = 21,
    /// ACKs sent that moved RCV-NXT past a filled hole (FaSR's AACK; rxe_sr's).
    SrAacksSent = 22,
    /// FNACKs sent: a retransmission was lost (FaSR; rxe_sr's).
    SrFnacksSent = 23,
    /// FNACKs received (rxe_sr's).
    SrFnacksRcvd = 24,
    /// Hole acknowledgments sent, one per hole (MELO, SRNIC; rxe_sr's).
    SrHolesSent = 25,
    /// Hole acknowledgments received (rxe_sr's).
    SrHolesRcvd = 26,
    /// Packets resent one by one, as the engine named them (not go-back-N; rxe_sr's).
    SrResentPkts = 27,
    /// Times a QP side fell back to go-back-N: the SR pool was exhausted (rxe_sr's).
    SrGbnFallbacks = 28,
    /// FaSR lost-cnt overflows (rxe_sr's).
    SrLostCntOverflows = 29,
    /// Request packets placed out of order (rxe_sr's).
    SrOooPlaced = 30,
    /// READ and atomic requests that arrived ahead of RCV-NXT, dropped unrecorded to run in
    /// order (rxe_sr's).
    SrOrderedEarly = 31,
    /// SEND packets past the window of receive WQEs taken ahead, dropped unrecorded (rxe_sr's).
    SrWindowFull = 32,
    /// Standard-format requests after the QP switched to the SR format, dropped (rxe_sr's).
    SrStaleStandard = 33,
    /// SR-format requests refused: no SR on the QP, or malformed (rxe_sr's).
    SrRefused = 34,
    /// SRNIC: out-of-order tracking entries its slow path (bitmap onloading, in the QP's
    /// slow-path work item) served (rxe_sr's).
    SrOnloadServed = 35,
    /// SRNIC: microseconds those entries waited in the onload queue, in all; divided by
    /// `sr_onload_served`, the slow path's mean delay (rxe_sr's).
    SrOnloadDelayUs = 36,
    /// SRNIC: most entries one QP's onload queue held at once (a maximum, not a sum;
    /// rxe_sr's).
    SrOnloadQueuePeak = 37,
    /// Resends found lost and sent again without waiting for the retransmission timeout:
    /// a resend of RCV-NXT that a later packet's SACK or READ response, or its probe bound,
    /// showed lost, and READ repairs asked for again (rxe_sr's).
    SrLostResends = 38,
    /// FaSR SACKs held back: they only moved sack-high by one (rxe_sr's).
    SrSacksCoalesced = 39,
    /// Packets the egress queue refused because it was full (e.g. netem's limit); a
    /// request packet is offered again later, a response is left to the requester's
    /// recovery (rxe_sr's).
    SendBusy = 40,
    /// Probes that sent UNACK again without waiting for the retransmission timeout: UNACK
    /// unanswered within the probe bound (a lost packet, or its acknowledgments, with
    /// nothing after it to show the loss), or nothing back at all for twice the least
    /// round trip (with the READ repairs still missing) (rxe_sr's).
    SrStallProbes = 41,
    /// Retransmission timeouts of the requester (the local ACK timeout expired with PSNs
    /// unacknowledged; mlx5's name).
    LocalAckTimeoutErr = 42,
    /// ACKs received that moved UNACK while a later PSN was known received (a SACK or a
    /// hole list reported it, or its READ response arrived): the hole at UNACK was filled
    /// (FaSR's AACK; rxe_sr's).
    SrAacksRcvd = 43,
    /// Times the device's in-flight budget (`dev_inflight_psns`) did not admit an RC
    /// QP's next PSNs (a message's, or its next chunk's) at once: the QP waited for room
    /// (rxe_sr's).
    InflightWaits = 44,
    /// Most PSNs in flight across the device's RC requesters at once (a maximum, not a
    /// sum; rxe_sr's).
    InflightPeak = 45,
    /// Datagrams dropped because the device's receive queue (RXE_SR_RX_QUEUE_MAX, 4096)
    /// was full: a flood faster than the receive work (of those counted in
    /// `rcvd_dropped`; rxe_sr's).
    RcvdQueueFull = 46,
    /// Octets sent: each packet's BTH to ICRC (the IBTA PortXmitData's octets; rxe_sr's).
    SentBytes = 47,
    /// Octets received, counted as `sent_bytes` (PortRcvData's octets; rxe_sr's).
    RcvdBytes = 48,
    /// Of the packets sent, to a multicast group (rxe_sr's).
    SentMcastPkts = 49,
    /// Of the packets received, to a multicast group (rxe_sr's).
    RcvdMcastPkts = 50,
    /// Datagrams whose IP/UDP framing, ICRC or IBTA headers were malformed (of those
    /// counted in `rcvd_dropped`; PortRcvErrors; rxe_sr's).
    RcvdMalformed = 51,
    /// SR-format SEND packets past RCV-NXT that found no receive WQE: dropped unrecorded,
    /// as an RNR NAK goes only at RCV-NXT (rxe_sr's).
    SrEarlyRnr = 52,
    /// SR-format request packets past RCV-NXT that would have been refused (a NAK and the
    /// QP's error): dropped unrecorded, as such a NAK goes only at RCV-NXT (rxe_sr's).
    SrEarlyRefused = 53,
    /// SR-format request packets at or past RCV-NXT + the SR window (4096 PSNs), which no
    /// requester has outstanding: dropped unrecorded (rxe_sr's).
    SrOutOfWindow = 54,
    /// Runs of a UD QP's send path (the caller's doorbell, or the QP's work) that met
    /// their budget of requests and left the rest of the ring to the QP's work (rxe_sr's).
    UdSendDeferred = 55,
    /// FEC repair packets sent (rxe_sr's).
    FecRepairsSent = 56,
    /// FEC repair packets received that reached their QP's shim (rxe_sr's).
    FecRepairsRcvd = 57,
    /// Request packets the FEC shim rebuilt from a repair, before the receive checks
    /// (one that fails them is also counted in `rcvd_malformed`; rxe_sr's).
    FecRebuilt = 58,
    /// FEC coding units a repair found two or more packets short of (the transport
    /// recovers them; rxe_sr's).
    FecUnrepairable = 59,
    /// FEC asks sent: the receiving side asked its peer for other coding parameters
    /// (rxe_sr's).
    FecAsksSent = 60,
    /// FEC asks the requester took: its next packets are coded with the parameters asked
    /// for (rxe_sr's).
    FecAsksTaken = 61,
    /// FEC takes sent: a UC receiving side took its peer's offer (rxe_sr's).
    FecTakesSent = 62,
    /// Of the packets sent, those whose payload went by reference: the memory's pages
    /// attached to the datagram, not copied (`tx_zero_copy`; rxe_sr's).
    SentByRefPkts = 63,
    /// Requester deadlines (retransmission timeout, probe, RNR wait) that passed while the
    /// receive queue held datagrams, and waited for the receive work to take them
    /// (rxe_sr's).
    TimerHolds = 64,
}

/// How many counters there are.
pub(crate) const COUNT: usize = 65;

/// Statistics read from the device's SR pools and in-flight budget when asked (not
/// counters), after the counters in [`NAMES`]: `sr_pool_units` (FaSR SR-pool units in use
/// now), `sr_pool_units_peak` (most FaSR SR-pool units in use at once), `sr_pool_blocks`
/// (FaSR bitmap blocks in use now), `sr_pool_blocks_peak` (most FaSR bitmap blocks in use at
/// once), `sr_pool_exhaustions` (FaSR pool allocations that failed), `melo_pool_blocks` (MELO
/// bits blocks in use now), `melo_pool_blocks_peak` (most MELO bits blocks in use at once),
/// `melo_pool_exhaustions` (MELO pool allocations that failed), `inflight_psns` (PSNs in
/// flight across the device's RC requesters now: admitted by the in-flight budget and not yet
/// acknowledged), `inflight_waiters` (QPs waiting for room now), `inflight_budget` (the
/// budget as it stands: `dev_inflight_psns`, or the largest of the requesters' path
/// allowances when larger), `inflight_budget_peak` (the largest the budget has stood at).
pub(crate) const GAUGES: usize = 12;

/// The names of the counters, in [`Counter`] order, then of the gauges.
pub(crate) const NAMES: [&CStr; COUNT + GAUGES] = [
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
    c"sr_qps_negotiated",
    c"sr_qps_standard",
    c"sr_fast_path",
    c"sr_slow_path",
    c"sr_sacks_sent",
    c"sr_sacks_rcvd",
    c"sr_aacks_sent",
    c"sr_fnacks_sent",
    c"sr_fnacks_rcvd",
    c"sr_holes_sent",
    c"sr_holes_rcvd",
    c"sr_resent_pkts",
    c"sr_gbn_fallbacks",
    c"sr_lost_cnt_overflows",
    c"sr_ooo_placed",
    c"sr_ordered_early",
    c"sr_window_full",
    c"sr_stale_standard",
    c"sr_refused",
    c"sr_onload_served",
    c"sr_onload_delay_us",
    c"sr_onload_queue_peak",
    c"sr_lost_resends",
    c"sr_sacks_coalesced",
    c"send_busy",
    c"sr_stall_probes",
    c"local_ack_timeout_err",
    c"sr_aacks_rcvd",
    c"inflight_waits",
    c"inflight_peak",
    c"rcvd_queue_full",
    c"sent_bytes",
    c"rcvd_bytes",
    c"sent_mcast_pkts",
    c"rcvd_mcast_pkts",
    c"rcvd_malformed",
    c"sr_early_rnr",
    c"sr_early_refused",
    c"sr_out_of_window",
    c"ud_send_deferred",
    c"fec_repairs_sent",
    c"fec_repairs_rcvd",
    c"fec_rebuilt",
    c"fec_unrepairable",
    c"fec_asks_sent",
    c"fec_asks_taken",
    c"fec_takes_sent",
    c"sent_by_ref_pkts",
    c"timer_holds",
    c"sr_pool_units",
    c"sr_pool_units_peak",
    c"sr_pool_blocks",
    c"sr_pool_blocks_peak",
    c"sr_pool_exhaustions",
    c"melo_pool_blocks",
    c"melo_pool_blocks_peak",
    c"melo_pool_exhaustions",
    c"inflight_psns",
    c"inflight_waiters",
    c"inflight_budget",
    c"inflight_budget_peak",
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

    /// The current value of `c`.
    pub(crate) fn get(&self, c: Counter) -> u64 {
        self.0
            .get(c as usize)
            .map_or(0, |x| x.load(Ordering::Relaxed))
    }

    /// Raises `c` to `v` if it is below (a maximum, not a count).
    pub(crate) fn max(&self, c: Counter, v: u64) {
        if let Some(x) = self.0.get(c as usize) {
            x.fetch_max(v, Ordering::Relaxed);
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
