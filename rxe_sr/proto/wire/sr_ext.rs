// SPDX-License-Identifier: GPL-2.0
//! rxe_sr's selective-retransmission (SR) extension headers, from FaSR §IV-D and SRNIC
//! §4.4.1, and how they stay away from standard peers.
//!
//! # Why headers at all
//!
//! With selective retransmission the responder receives packets out of order and must
//! place each one directly into the user buffer ("in-place reordering", SRNIC), and the
//! requester must learn exactly which PSNs are missing (FaSR's sack-high / lost-cnt). The
//! IBTA headers do not allow that: a SEND_MIDDLE or WRITE_MIDDLE says nothing about where
//! its bytes go, a READ request is only answered by its data, and an ACK/NAK names one PSN.
//!
//! # The marker: BTH TVer = 1
//!
//! A packet in the SR format has BTH TVer = [`BTH_TVER_SR`] (IBTA packets have 0). Why
//! TVer rather than new opcodes or a spare bit:
//! - TVer is the IBTA's own "transport header version": a different header layout is
//!   exactly what it is for, and the IBTA requires a receiver to silently drop a packet
//!   whose TVer it does not support (rdma_rxe's `hdr_check()` drops `bth_tver() != 0`,
//!   hardware does the same). So even a misdirected SR packet is dropped by a standard
//!   peer, never misread and never a QP error.
//! - Every IBTA opcode keeps its meaning (first/middle/last/only, immediate, invalidate);
//!   the opcode table only adds headers ([`Opcode::headers`](super::opcode::Opcode::headers)
//!   with `sr = true`). Using the manufacturer-specific opcodes (0xC0..0xFF) instead would
//!   need a shadow opcode for each of ~25 RC opcodes.
//! - The whole packet, TVer included, stays covered by the ICRC.
//!
//! Only RC uses the SR format (UC/UD/CNP with TVer = 1 are [`Error::BadVersion`]).
//!
//! What each end may do with these headers (the SR format is adopted only after the
//! offer's echo, nothing outside the responder's SR window past RCV-NXT changes any state,
//! every NAK carries RCV-NXT) is stated in Documentation/sr-wire-format.md.
//!
//! # Layouts
//!
//! The SR headers come right after the BTH (fixed offset 12), before the IBTA headers,
//! so a receiver finds them without the opcode table. They are 8 bytes each, a multiple of
//! 4 like every IBTA header, so payload + pad stays 4-byte aligned.
//!
//! ```text
//! MSN-ETH     | Resv8 (0) | MSN (24)       | Resv8 (0) | Offset (24)       |
//! SR-ACK-ETH  | Kind(4) O(1) LostCnt(3) | SackHigh (24) | Window (8) | TriggerPSN (24) |
//! ```
//!
//! | packet (RC, TVer = 1)                   | headers after the BTH                  | why |
//! |-----------------------------------------|----------------------------------------|-----|
//! | SEND_* (all positions, imm, inv)        | MSN-ETH, then the IBTA ones            | MSN picks the receive WQE, Offset the place in it (FaSR/SRNIC: 3 B + 3 B) |
//! | RDMA_WRITE_FIRST / ONLY                 | RETH (as IBTA)                         | already self-describing |
//! | RDMA_WRITE_MIDDLE / LAST                | RETH added: VA of *this* packet, R_Key, DMA length of the message | every WRITE packet placeable alone (IRN, SRNIC) |
//! | RDMA_WRITE_*_WITH_IMMEDIATE             | MSN-ETH + RETH + ImmDt                 | the immediate consumes a receive WQE: MSN names it |
//! | RDMA_READ_REQUEST                       | MSN-ETH + RETH                         | MSN = requester's message number, echoed in the responses; Offset = first packet asked for (0, or where a re-read resumes) |
//! | RDMA_READ_RESPONSE_*                    | MSN-ETH (+ AETH as IBTA)               | names its READ and its place in it (SRNIC echo) |
//! | ACKNOWLEDGE                             | SR-ACK-ETH + AETH                      | ACK, SACK, FNACK, HOLE (and READ-ACK, defined, not sent) |
//! | atomics, ATOMIC_ACK, FLUSH, ATOMIC_WRITE| unchanged                              | single-packet, already self-describing |
//!
//! Field notes:
//! - MSN-ETH `MSN` (24 bits, mod 2^24): for SEND and WRITE-with-immediate, the sequence
//!   number of the message among the messages of the QP that consume a receive WQE (0 for
//!   the first), i.e. which receive WQE it lands in even when an earlier message is still
//!   incomplete. For READ request/response: the requester's message number of the READ.
//! - MSN-ETH `Offset` (24 bits): the packet's offset inside its message **in packets**
//!   (PSN − first PSN of the message); the byte offset is `Offset × path MTU`, since all
//!   but the last packet of a message are full. Counting packets, not bytes, is why 3 bytes
//!   suffice for any message (2^24 packets × 256 B MTU ≥ 2^31 B, the IBTA maximum).
//! - The 6 bytes of FaSR's MSN + offset become 8 with two reserved bytes; SRNIC's SEND
//!   extension is 8 bytes too. Reserved bytes must be 0 (room for a later version); a
//!   nonzero one is [`Error::BadSrHeader`].
//! - The WRITE extension is a full RETH (16 B) rather than FaSR's 8-byte VA: the R_Key is
//!   needed to validate a middle packet that arrives before its FIRST (IRN does the same),
//!   and reusing the IBTA RETH keeps one parser. DMA length is the message length in every
//!   packet, so the responder can bound-check each packet against the MR alone.
//! - READ requests: the format defines an ACKNOWLEDGE of kind [`SrAckKind::ReadAck`] (BTH
//!   PSN = the request's PSN) for a responder to confirm a READ before its responses; this
//!   implementation does not send it (a READ is acknowledged by its responses, and a
//!   requester takes a READ-ACK as carrying nothing) and asks again for each missing run
//!   of a READ's responses with a READ request for that run.
//!
//! SR-ACK-ETH:
//! - `Kind` ([`SrAckKind`]): 0 ACK, 1 SACK, 2 FNACK, 3 READ-ACK, 4 HOLE; others are
//!   malformed. Kind and AETH syndrome must agree: SACK, FNACK and HOLE carry the IBTA
//!   syndrome NAK "PSN sequence error" (0x60) and BTH PSN = the receiver's ePSN / RCV-NXT (the first missing
//!   PSN), exactly as the standard NAK they refine; READ-ACK carries an ACK syndrome; ACK
//!   carries any IBTA syndrome with its IBTA meaning (ACK, RNR NAK, fatal NAKs).
//! - `LostCnt` (3 bits) and `O` (1 bit): FaSR's per-QP lost-cnt and its overflow flag. FaSR
//!   marks overflow with an unused op-type value; a bit next to the counter is cheaper
//!   than burning an opcode and cannot be confused with one. Once O is set the receiver
//!   freezes LostCnt until recovery completes (FaSR §III-D).
//! - `SackHigh` (24 bits): the highest PSN received (FaSR sack-high); for a SACK, the
//!   last PSN it reports.
//! - `TriggerPSN` (24 bits): the PSN whose arrival produced this acknowledgment: for a
//!   SACK the first of the run of out-of-order PSNs it reports, TriggerPSN ..= SackHigh
//!   (equal for one packet; a responder that holds back the SACKs of a contiguous run
//!   reports it in one, at most 1024 PSNs), for an FNACK the packet that shows a lost
//!   retransmission (RCV-NXT < PSN < sack-high, FaSR §III-E), for a READ-ACK the READ
//!   request, for an ACK the packet acknowledged.
//! - HOLE (MELO's NACK, SRNIC's software NAK): one hole of the receiver's sequence space,
//!   the PSNs TriggerPSN ..= SackHigh, all missing. MELO and SRNIC report up to three
//!   holes at once; each goes out as its own HOLE acknowledgment, oldest first, in one
//!   burst (a hole list needs no header of variable length that way, and a lost HOLE
//!   costs one hole, not three).
//! - `Window` (8 bits): the SR window of the end that sends the acknowledgment (its
//!   responder side), as log2 of PSNs, [`SR_WINDOW_LOG2_MIN`]..=[`SR_WINDOW_LOG2_MAX`]
//!   (512 PSNs, what every end of this version tracks, up to 2^22, inside the PSN
//!   half-space); any other value is [`Error::BadSrHeader`]. The requester keeps at most
//!   that many PSNs outstanding past UNACK, and fewer if its own limit is lower.
//!
//! # Capability exchange, and a standard peer is never sent one
//!
//! Details and rationale in [`caps`](super::caps); in short: while probing, the requester
//! sends ordinary TVer = 0 requests with BTH Resv7 = `CAP(1) | scheme(3) | version(3)`
//! (FaSR, version 4: 0x4c), which every IBTA receiver ignores. An rxe_sr responder running
//! the same scheme and version echoes that value in the Resv7 of its response; every other
//! responder (rdma_rxe, hardware, rxe_sr `recovery=gbn`) answers with Resv7 = 0, which the
//! requester reads as "standard peer": GBN for the life of the QP. Probe timeouts decide
//! nothing: after a few the requests go out unmarked, and the first response decides. So the SR format is used on a QP direction only after
//! both ends showed they speak the same SR scheme and wire version:
//! - the requester sends SR-format requests only after a response echoed its capability;
//! - the responder answers each request in the format of that request, so it sends
//!   SR-format acknowledgments only to a requester that already sent SR-format requests;
//! - `recovery=gbn` advertises nothing and never sets TVer: byte-for-byte RoCEv2.
//!
//! A peer that never echoes (rdma_rxe, hardware, rxe_sr with `recovery=gbn` or another
//! scheme) leaves the QP on standard GBN.

use super::ext_headers::{Aeth, AethKind, AETH_NAK_PSN_SEQ_ERROR};
use super::field;
use super::{Error, Result, U24_MAX};
use crate::proto::psn::Psn;

/// BTH TVer of an IBTA (standard RoCEv2) packet.
pub const BTH_TVER_STD: u8 = 0;
/// BTH TVer of a packet in rxe_sr's SR format.
pub const BTH_TVER_SR: u8 = 1;

/// Largest value of the 3-bit lost-cnt.
pub const LOST_CNT_MAX: u8 = 7;

/// The least SR window an SR-ACK-ETH may advertise, as log2 of PSNs: 512 PSNs, which every
/// end of this wire version tracks past RCV-NXT.
pub const SR_WINDOW_LOG2_MIN: u8 = 9;
/// The largest SR window an SR-ACK-ETH may advertise, as log2 of PSNs: 2^22 PSNs, inside
/// the PSN half-space (2^23) in which PSNs compare.
pub const SR_WINDOW_LOG2_MAX: u8 = 22;

/// MSN-ETH: message sequence number and packet offset of a SEND, WRITE-with-immediate,
/// READ request or READ response packet in the SR format.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct MsnEth {
    /// Message sequence number (24 bits); see the module notes for what it counts.
    pub msn: u32,
    /// Offset of this packet inside its message, in packets (24 bits).
    pub offset: u32,
}

impl MsnEth {
    /// Length in bytes.
    pub const LEN: usize = 8;

    /// Parses the first [`Self::LEN`] bytes of `b`; nonzero reserved bytes are
    /// [`Error::BadSrHeader`].
    pub fn parse(b: &[u8]) -> Result<Self> {
        if b.len() < Self::LEN {
            return Err(Error::Truncated);
        }
        if field::u8_at(b, 0)? != 0 || field::u8_at(b, 4)? != 0 {
            return Err(Error::BadSrHeader);
        }
        Ok(MsnEth {
            msn: field::be24(b, 1)?,
            offset: field::be24(b, 5)?,
        })
    }

    /// Writes the header into the first [`Self::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        if self.msn > U24_MAX || self.offset > U24_MAX {
            return Err(Error::BadField);
        }
        let b = b.get_mut(..Self::LEN).ok_or(Error::BufferTooSmall)?;
        field::put_u8(b, 0, 0)?;
        field::put_be24(b, 1, self.msn)?;
        field::put_u8(b, 4, 0)?;
        field::put_be24(b, 5, self.offset)
    }
}

/// What an SR-format ACKNOWLEDGE says.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum SrAckKind {
    /// Cumulative acknowledgment (or an IBTA NAK), as the AETH says.
    Ack,
    /// Selective ACK: BTH PSN is RCV-NXT (missing), later PSNs up to sack-high arrived.
    Sack,
    /// FaSR's FNACK: a retransmission was lost; TriggerPSN names the packet that showed it.
    Fnack,
    /// A READ request was accepted (BTH PSN = the request's PSN); not its completion.
    ReadAck,
    /// One hole (MELO NACK / SRNIC software NAK): TriggerPSN ..= SackHigh are missing.
    Hole,
    /// FaSR's SACK of a new gap: SackHigh arrived while TriggerPSN up to it (not included)
    /// were missing.
    Gap,
}

impl SrAckKind {
    /// The 4-bit wire value.
    pub const fn to_wire(self) -> u8 {
        match self {
            SrAckKind::Ack => 0,
            SrAckKind::Sack => 1,
            SrAckKind::Fnack => 2,
            SrAckKind::ReadAck => 3,
            SrAckKind::Hole => 4,
            SrAckKind::Gap => 5,
        }
    }

    /// Decodes the 4-bit wire value.
    pub const fn from_wire(v: u8) -> Option<Self> {
        match v {
            0 => Some(SrAckKind::Ack),
            1 => Some(SrAckKind::Sack),
            2 => Some(SrAckKind::Fnack),
            3 => Some(SrAckKind::ReadAck),
            4 => Some(SrAckKind::Hole),
            5 => Some(SrAckKind::Gap),
            _ => None,
        }
    }
}

/// SR-ACK-ETH: the SR information of an SR-format ACKNOWLEDGE.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct SrAckEth {
    /// ACK, SACK, FNACK, READ-ACK, HOLE or GAP.
    pub kind: SrAckKind,
    /// FaSR lost-cnt (0..=[`LOST_CNT_MAX`]).
    pub lost_cnt: u8,
    /// FaSR lost-cnt overflow flag.
    pub lost_cnt_overflow: bool,
    /// FaSR sack-high: the highest PSN received.
    pub sack_high: Psn,
    /// The PSN whose arrival produced this acknowledgment.
    pub trigger_psn: Psn,
    /// The sender's SR window (PSNs its responder tracks past RCV-NXT), as log2 of PSNs:
    /// [`SR_WINDOW_LOG2_MIN`]..=[`SR_WINDOW_LOG2_MAX`].
    pub window_log2: u8,
}

impl Default for SrAckEth {
    fn default() -> Self {
        SrAckEth {
            kind: SrAckKind::Ack,
            lost_cnt: 0,
            lost_cnt_overflow: false,
            sack_high: Psn::new(0),
            trigger_psn: Psn::new(0),
            window_log2: SR_WINDOW_LOG2_MIN,
        }
    }
}

impl SrAckEth {
    /// Length in bytes.
    pub const LEN: usize = 8;

    /// Parses the first [`Self::LEN`] bytes of `b`; an unknown kind or a window out of
    /// range is [`Error::BadSrHeader`].
    pub fn parse(b: &[u8]) -> Result<Self> {
        if b.len() < Self::LEN {
            return Err(Error::Truncated);
        }
        let b0 = field::u8_at(b, 0)?;
        let kind = SrAckKind::from_wire(b0 >> 4).ok_or(Error::BadSrHeader)?;
        let window_log2 = field::u8_at(b, 4)?;
        if !Self::window_valid(window_log2) {
            return Err(Error::BadSrHeader);
        }
        Ok(SrAckEth {
            kind,
            lost_cnt: b0 & 0x7,
            lost_cnt_overflow: b0 & 0x8 != 0,
            sack_high: Psn::new(field::be24(b, 1)?),
            trigger_psn: Psn::new(field::be24(b, 5)?),
            window_log2,
        })
    }

    /// True when `window_log2` is a window an SR-ACK-ETH may carry.
    pub const fn window_valid(window_log2: u8) -> bool {
        SR_WINDOW_LOG2_MIN <= window_log2 && window_log2 <= SR_WINDOW_LOG2_MAX
    }

    /// Writes the header into the first [`Self::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        if self.lost_cnt > LOST_CNT_MAX || !Self::window_valid(self.window_log2) {
            return Err(Error::BadField);
        }
        let b = b.get_mut(..Self::LEN).ok_or(Error::BufferTooSmall)?;
        let b0 =
            (self.kind.to_wire() << 4) | (u8::from(self.lost_cnt_overflow) << 3) | self.lost_cnt;
        field::put_u8(b, 0, b0)?;
        field::put_be24(b, 1, self.sack_high.get())?;
        field::put_u8(b, 4, self.window_log2)?;
        field::put_be24(b, 5, self.trigger_psn.get())
    }

    /// Checks that the kind agrees with the AETH syndrome of the same packet: SACK, FNACK,
    /// HOLE and GAP need NAK "PSN sequence error", READ-ACK an ACK, ACK any non-reserved
    /// syndrome.
    pub fn check_aeth(&self, aeth: &Aeth) -> Result<()> {
        let ok = match self.kind {
            SrAckKind::Sack | SrAckKind::Fnack | SrAckKind::Hole | SrAckKind::Gap => {
                aeth.syndrome == AETH_NAK_PSN_SEQ_ERROR
            }
            SrAckKind::ReadAck => matches!(aeth.kind(), AethKind::Ack { .. }),
            SrAckKind::Ack => !matches!(aeth.kind(), AethKind::Reserved),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::BadSrHeader)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msn_eth_layout() {
        let m = MsnEth {
            msn: 0x010203,
            offset: 0xabcdef,
        };
        let mut b = [0xffu8; 8];
        m.emit(&mut b).unwrap();
        assert_eq!(b, [0, 1, 2, 3, 0, 0xab, 0xcd, 0xef]);
        assert_eq!(MsnEth::parse(&b), Ok(m));
        b[4] = 1;
        assert_eq!(MsnEth::parse(&b), Err(Error::BadSrHeader));
        assert_eq!(MsnEth::parse(&b[..7]), Err(Error::Truncated));
        let big = MsnEth {
            msn: 1 << 24,
            offset: 0,
        };
        assert_eq!(big.emit(&mut b), Err(Error::BadField));
    }

    #[test]
    fn sr_ack_eth_layout() {
        let s = SrAckEth {
            kind: SrAckKind::Sack,
            lost_cnt: 5,
            lost_cnt_overflow: true,
            sack_high: Psn::new(0x000102),
            trigger_psn: Psn::new(0xfffffe),
            window_log2: 10,
        };
        let mut b = [0u8; 8];
        s.emit(&mut b).unwrap();
        assert_eq!(b, [0x1d, 0x00, 0x01, 0x02, 0x0a, 0xff, 0xff, 0xfe]);
        assert_eq!(SrAckEth::parse(&b), Ok(s));
        let mut gap = b;
        gap[0] = 0x5d;
        let g = SrAckEth::parse(&gap).unwrap();
        assert_eq!(
            g,
            SrAckEth {
                kind: SrAckKind::Gap,
                ..s
            }
        );
        let mut bad = b;
        bad[0] = 0x6d;
        assert_eq!(SrAckEth::parse(&bad), Err(Error::BadSrHeader));
        let mut bad = b;
        bad[4] = 0x80;
        assert_eq!(SrAckEth::parse(&bad), Err(Error::BadSrHeader));
        let over = SrAckEth { lost_cnt: 8, ..s };
        assert_eq!(over.emit(&mut b), Err(Error::BadField));
    }

    #[test]
    fn the_window_round_trips_and_out_of_range_is_malformed() {
        let s = SrAckEth::default();
        let mut b = [0u8; 8];
        for w in SR_WINDOW_LOG2_MIN..=SR_WINDOW_LOG2_MAX {
            let s = SrAckEth {
                window_log2: w,
                ..s
            };
            s.emit(&mut b).unwrap();
            assert_eq!(b[4], w);
            assert_eq!(SrAckEth::parse(&b), Ok(s));
        }
        assert_eq!((SR_WINDOW_LOG2_MIN, SR_WINDOW_LOG2_MAX), (9, 22));
        // The reserved 0 of version 2, one below and above the bounds, the top value.
        for w in [0, 8, 23, 255] {
            b[4] = w;
            assert_eq!(SrAckEth::parse(&b), Err(Error::BadSrHeader), "window {w}");
            let bad = SrAckEth {
                window_log2: w,
                ..s
            };
            assert_eq!(bad.emit(&mut b), Err(Error::BadField), "window {w}");
        }
    }

    #[test]
    fn kinds_round_trip() {
        for v in 0..16u8 {
            if let Some(k) = SrAckKind::from_wire(v) {
                assert_eq!(k.to_wire(), v);
            } else {
                assert!(v > 4);
            }
        }
    }

    #[test]
    fn kind_must_match_syndrome() {
        let nak = Aeth::nak(0, 1);
        let ack = Aeth::ack(1);
        let sack = SrAckEth {
            kind: SrAckKind::Sack,
            ..Default::default()
        };
        let fnack = SrAckEth {
            kind: SrAckKind::Fnack,
            ..Default::default()
        };
        let read = SrAckEth {
            kind: SrAckKind::ReadAck,
            ..Default::default()
        };
        let plain = SrAckEth::default();
        assert_eq!(sack.check_aeth(&nak), Ok(()));
        assert_eq!(sack.check_aeth(&ack), Err(Error::BadSrHeader));
        assert_eq!(fnack.check_aeth(&nak), Ok(()));
        assert_eq!(fnack.check_aeth(&Aeth::nak(2, 1)), Err(Error::BadSrHeader));
        let hole = SrAckEth {
            kind: SrAckKind::Hole,
            ..Default::default()
        };
        assert_eq!(hole.check_aeth(&nak), Ok(()));
        assert_eq!(hole.check_aeth(&ack), Err(Error::BadSrHeader));
        assert_eq!(read.check_aeth(&ack), Ok(()));
        assert_eq!(read.check_aeth(&nak), Err(Error::BadSrHeader));
        assert_eq!(plain.check_aeth(&Aeth::rnr_nak(1, 1)), Ok(()));
        assert_eq!(
            plain.check_aeth(&Aeth {
                syndrome: 0x40,
                msn: 0
            }),
            Err(Error::BadSrHeader)
        );
    }
}
