// SPDX-License-Identifier: GPL-2.0
//! The counters of a requester's selective retransmission: the SR feedback it took and the
//! resends and probes it made.

use crate::proto::rc::RcEvent;

/// Selective-retransmission counters of a requester.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReqSrCounters {
    /// SACKs received.
    pub sacks_rcvd: u64,
    /// FNACKs received.
    pub fnacks_rcvd: u64,
    /// HOLE acknowledgments (MELO / SRNIC hole lists) received.
    pub holes_rcvd: u64,
    /// ACKs received that moved UNACK while a later PSN was known received (a SACK or a
    /// hole list reported it, or its READ response arrived): UNACK was a hole, now filled
    /// (FaSR's AACK).
    pub aacks_rcvd: u64,
    /// Packets resent one by one (the engine's ranges, not a go-back).
    pub selective_resent: u64,
    /// Resends of RCV-NXT found lost: a SACK named a packet first sent after the resend
    /// while RCV-NXT was still missing, or no acknowledgment of it came within the
    /// measured round trip's bound; it was resent again without waiting for the
    /// retransmission timeout.
    pub lost_resends: u64,
    /// Probes that sent UNACK again without waiting for the retransmission timeout: UNACK
    /// unanswered for the probe bound after it last moved or was sent (a tail loss; a
    /// READ request lost with the NAK its successors drew), or nothing at all back for
    /// twice the least round trip (the pipe drained; the READ repairs still missing went
    /// too).
    pub stall_probes: u64,
}

impl ReqSrCounters {
    /// All counters at zero.
    pub const ZERO: ReqSrCounters = ReqSrCounters {
        sacks_rcvd: 0,
        fnacks_rcvd: 0,
        holes_rcvd: 0,
        aacks_rcvd: 0,
        selective_resent: 0,
        lost_resends: 0,
        stall_probes: 0,
    };

    /// Adds `n` to the tally of `ev`, if it is one of these.
    pub(super) fn record(&mut self, ev: RcEvent, n: u64) {
        let c = match ev {
            RcEvent::SackRcvd => &mut self.sacks_rcvd,
            RcEvent::FnackRcvd => &mut self.fnacks_rcvd,
            RcEvent::HoleRcvd => &mut self.holes_rcvd,
            RcEvent::AackRcvd => &mut self.aacks_rcvd,
            RcEvent::SelectiveResent => &mut self.selective_resent,
            RcEvent::LostResend => &mut self.lost_resends,
            RcEvent::StallProbe => &mut self.stall_probes,
            _ => return,
        };
        *c += n;
    }
}
