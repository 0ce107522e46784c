// SPDX-License-Identifier: GPL-2.0
//! The BTH opcode table (IBTA Vol. 1 9.2.1 table 35, RoCEv2 Annex A17 for CNP).
//!
//! The top 3 bits of an opcode name the transport (RC 000, UC 001, RD 010, UD 011,
//! CNP 100, XRC 101, manufacturer-specific 110/111); the low 5 bits the operation. This
//! table covers what rdma_rxe speaks: RC (including SEND with invalidate, FLUSH and
//! ATOMIC_WRITE), UC, UD, plus the RoCEv2 CNP. RD, XRC and manufacturer opcodes are
//! [`Error::BadOpcode`].
//!
//! For every opcode the table gives the extension headers that follow the BTH (in wire
//! order), whether a payload may follow, its position in a message and its role. With
//! `sr = true` (BTH TVer = [`BTH_TVER_SR`](super::sr_ext::BTH_TVER_SR)) it gives the
//! headers of rxe_sr's SR format instead; see [`sr_ext`](super::sr_ext).

use super::{Error, Result};

/// A set of extension headers following the BTH.
///
/// On the wire they appear in the order of the constants below (the IBTA order, with the
/// SR headers first, right after the BTH).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct Headers(u16);

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl Headers {
    /// No extension header.
    pub const NONE: Headers = Headers(0);
    /// rxe_sr MSN-ETH: message sequence number + packet offset (SR format only).
    pub const MSN_ETH: Headers = Headers(1 << 0);
    /// rxe_sr SR-ACK-ETH: SACK / FNACK / READ-ACK information (SR format only).
    pub const SR_ACK_ETH: Headers = Headers(1 << 1);
    /// Datagram ETH (UD): Q_Key, source QPN.
    pub const DETH: Headers = Headers(1 << 2);
    /// FLUSH ETH: selectivity level and placement type.
    pub const FETH: Headers = Headers(1 << 3);
    /// RDMA ETH: virtual address, R_Key, DMA length.
    pub const RETH: Headers = Headers(1 << 4);
    /// Atomic ETH: VA, R_Key, swap/add data, compare data.
    pub const ATOMIC_ETH: Headers = Headers(1 << 5);
    /// ACK ETH: syndrome and MSN.
    pub const AETH: Headers = Headers(1 << 6);
    /// Atomic ACK ETH: original remote data.
    pub const ATOMIC_ACK_ETH: Headers = Headers(1 << 7);
    /// Immediate data.
    pub const IMM_DT: Headers = Headers(1 << 8);
    /// Invalidate ETH: the R_Key to invalidate.
    pub const IETH: Headers = Headers(1 << 9);

    /// Every header, in wire order, with its length in bytes.
    pub const WIRE_ORDER: [(Headers, usize); 10] = [
        (Headers::MSN_ETH, super::sr_ext::MsnEth::LEN),
        (Headers::SR_ACK_ETH, super::sr_ext::SrAckEth::LEN),
        (Headers::DETH, super::ext_headers::Deth::LEN),
        (Headers::FETH, super::ext_headers::Feth::LEN),
        (Headers::RETH, super::ext_headers::Reth::LEN),
        (Headers::ATOMIC_ETH, super::ext_headers::AtomicEth::LEN),
        (Headers::AETH, super::ext_headers::Aeth::LEN),
        (
            Headers::ATOMIC_ACK_ETH,
            super::ext_headers::AtomicAckEth::LEN,
        ),
        (Headers::IMM_DT, super::ext_headers::ImmDt::LEN),
        (Headers::IETH, super::ext_headers::Ieth::LEN),
    ];

    /// The union of two sets.
    pub const fn union(self, other: Headers) -> Headers {
        Headers(self.0 | other.0)
    }

    /// True when every header of `other` is in `self`.
    pub const fn contains(self, other: Headers) -> bool {
        self.0 & other.0 == other.0
    }

    /// The raw bits.
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// Offset of header `h` from the start of the BTH when this set follows it, or `None`
    /// when `h` is not in the set (rdma_rxe's `rxe_opcode[].offset[]`).
    pub const fn offset_of(self, h: Headers) -> Option<usize> {
        if h.0.count_ones() != 1 || !self.contains(h) {
            return None;
        }
        let mut off = super::BTH_LEN;
        let mut i = 0;
        while i < Self::WIRE_ORDER.len() {
            let (x, len) = Self::WIRE_ORDER[i];
            if x.0 == h.0 {
                return Some(off);
            }
            if self.contains(x) {
                off += len;
            }
            i += 1;
        }
        None
    }

    /// Total length in bytes of the headers in the set.
    pub const fn ext_len(self) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < Self::WIRE_ORDER.len() {
            let (h, len) = Self::WIRE_ORDER[i];
            if self.contains(h) {
                n += len;
            }
            i += 1;
        }
        n
    }
}

/// The transport service an opcode belongs to (its top 3 bits).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum Transport {
    /// Reliable Connected (000).
    Rc,
    /// Unreliable Connected (001).
    Uc,
    /// Reliable Datagram (010); not supported.
    Rd,
    /// Unreliable Datagram (011).
    Ud,
    /// RoCEv2 Congestion Notification Packet (100).
    Cnp,
    /// Extended Reliable Connected (101); not supported.
    Xrc,
    /// Manufacturer specific (110, 111); not supported.
    Manufacturer,
}

/// What an opcode does.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum OpKind {
    /// SEND (any position, with or without immediate or invalidate).
    Send,
    /// RDMA WRITE (any position, with or without immediate).
    RdmaWrite,
    /// RDMA READ request.
    RdmaReadRequest,
    /// RDMA READ response (any position).
    RdmaReadResponse,
    /// ACKNOWLEDGE (ACK, RNR NAK, NAK; SACK/FNACK/READ-ACK in the SR format).
    Acknowledge,
    /// ATOMIC ACKNOWLEDGE.
    AtomicAcknowledge,
    /// CompareSwap atomic request.
    CompareSwap,
    /// FetchAdd atomic request.
    FetchAdd,
    /// FLUSH request (IBTA 1.5).
    Flush,
    /// ATOMIC WRITE request (IBTA 1.5): 8 bytes of payload.
    AtomicWrite,
    /// RoCEv2 CNP: 16 reserved bytes, exposed as the payload.
    Cnp,
}

impl OpKind {
    /// True for a response (to the requester's completer): an ACKNOWLEDGE, an ATOMIC
    /// ACKNOWLEDGE or a READ response.
    pub const fn is_response(self) -> bool {
        matches!(
            self,
            OpKind::Acknowledge | OpKind::AtomicAcknowledge | OpKind::RdmaReadResponse
        )
    }
}

/// Where a packet sits in its message.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum Position {
    /// First packet of a multi-packet message.
    First,
    /// Middle packet.
    Middle,
    /// Last packet of a multi-packet message.
    Last,
    /// The only packet of a message.
    Only,
}

impl Position {
    /// True for the first or only packet of a message.
    pub const fn starts_message(self) -> bool {
        matches!(self, Position::First | Position::Only)
    }

    /// True for the last or only packet of a message.
    pub const fn ends_message(self) -> bool {
        matches!(self, Position::Last | Position::Only)
    }
}

/// The static description of one opcode.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct OpInfo {
    /// The transport service.
    pub transport: Transport,
    /// The operation.
    pub kind: OpKind,
    /// Position in the message.
    pub position: Position,
    /// Standard (IBTA) extension headers, in wire order.
    pub headers: Headers,
    /// A payload may follow the headers.
    pub payload: bool,
    /// Carries immediate data (ImmDt).
    pub immediate: bool,
    /// Carries an IETH (SEND with invalidate).
    pub invalidate: bool,
    /// Sent by a requester (false: a response/acknowledgment, or a CNP).
    pub request: bool,
    /// The message consumes a receive WQE at the responder (SEND, WRITE with immediate).
    pub consumes_rwqe: bool,
}

const fn info(
    transport: Transport,
    kind: OpKind,
    position: Position,
    headers: Headers,
    payload: bool,
) -> OpInfo {
    let immediate = headers.contains(Headers::IMM_DT);
    let request = !matches!(
        kind,
        OpKind::RdmaReadResponse | OpKind::Acknowledge | OpKind::AtomicAcknowledge | OpKind::Cnp
    );
    let consumes_rwqe =
        matches!(kind, OpKind::Send) || (matches!(kind, OpKind::RdmaWrite) && immediate);
    OpInfo {
        transport,
        kind,
        position,
        headers,
        payload,
        immediate,
        invalidate: headers.contains(Headers::IETH),
        request,
        consumes_rwqe,
    }
}

/// A BTH opcode (8 bits).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, Default)]
pub struct Opcode(pub u8);

impl Opcode {
    /// RC SEND_FIRST (0x00).
    pub const RC_SEND_FIRST: Opcode = Opcode(0x00);
    /// RC SEND_MIDDLE (0x01).
    pub const RC_SEND_MIDDLE: Opcode = Opcode(0x01);
    /// RC SEND_LAST (0x02).
    pub const RC_SEND_LAST: Opcode = Opcode(0x02);
    /// RC SEND_LAST_WITH_IMMEDIATE (0x03).
    pub const RC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x03);
    /// RC SEND_ONLY (0x04).
    pub const RC_SEND_ONLY: Opcode = Opcode(0x04);
    /// RC SEND_ONLY_WITH_IMMEDIATE (0x05).
    pub const RC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x05);
    /// RC RDMA_WRITE_FIRST (0x06).
    pub const RC_RDMA_WRITE_FIRST: Opcode = Opcode(0x06);
    /// RC RDMA_WRITE_MIDDLE (0x07).
    pub const RC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x07);
    /// RC RDMA_WRITE_LAST (0x08).
    pub const RC_RDMA_WRITE_LAST: Opcode = Opcode(0x08);
    /// RC RDMA_WRITE_LAST_WITH_IMMEDIATE (0x09).
    pub const RC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x09);
    /// RC RDMA_WRITE_ONLY (0x0a).
    pub const RC_RDMA_WRITE_ONLY: Opcode = Opcode(0x0a);
    /// RC RDMA_WRITE_ONLY_WITH_IMMEDIATE (0x0b).
    pub const RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x0b);
    /// RC RDMA_READ_REQUEST (0x0c).
    pub const RC_RDMA_READ_REQUEST: Opcode = Opcode(0x0c);
    /// RC RDMA_READ_RESPONSE_FIRST (0x0d).
    pub const RC_RDMA_READ_RESPONSE_FIRST: Opcode = Opcode(0x0d);
    /// RC RDMA_READ_RESPONSE_MIDDLE (0x0e).
    pub const RC_RDMA_READ_RESPONSE_MIDDLE: Opcode = Opcode(0x0e);
    /// RC RDMA_READ_RESPONSE_LAST (0x0f).
    pub const RC_RDMA_READ_RESPONSE_LAST: Opcode = Opcode(0x0f);
    /// RC RDMA_READ_RESPONSE_ONLY (0x10).
    pub const RC_RDMA_READ_RESPONSE_ONLY: Opcode = Opcode(0x10);
    /// RC ACKNOWLEDGE (0x11).
    pub const RC_ACKNOWLEDGE: Opcode = Opcode(0x11);
    /// RC ATOMIC_ACKNOWLEDGE (0x12).
    pub const RC_ATOMIC_ACKNOWLEDGE: Opcode = Opcode(0x12);
    /// RC COMPARE_SWAP (0x13).
    pub const RC_COMPARE_SWAP: Opcode = Opcode(0x13);
    /// RC FETCH_ADD (0x14).
    pub const RC_FETCH_ADD: Opcode = Opcode(0x14);
    /// RC SEND_LAST_WITH_INVALIDATE (0x16).
    pub const RC_SEND_LAST_WITH_INVALIDATE: Opcode = Opcode(0x16);
    /// RC SEND_ONLY_WITH_INVALIDATE (0x17).
    pub const RC_SEND_ONLY_WITH_INVALIDATE: Opcode = Opcode(0x17);
    /// RC FLUSH (0x1c).
    pub const RC_FLUSH: Opcode = Opcode(0x1c);
    /// RC ATOMIC_WRITE (0x1d).
    pub const RC_ATOMIC_WRITE: Opcode = Opcode(0x1d);
    /// UC SEND_FIRST (0x20).
    pub const UC_SEND_FIRST: Opcode = Opcode(0x20);
    /// UC SEND_MIDDLE (0x21).
    pub const UC_SEND_MIDDLE: Opcode = Opcode(0x21);
    /// UC SEND_LAST (0x22).
    pub const UC_SEND_LAST: Opcode = Opcode(0x22);
    /// UC SEND_LAST_WITH_IMMEDIATE (0x23).
    pub const UC_SEND_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x23);
    /// UC SEND_ONLY (0x24).
    pub const UC_SEND_ONLY: Opcode = Opcode(0x24);
    /// UC SEND_ONLY_WITH_IMMEDIATE (0x25).
    pub const UC_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x25);
    /// UC RDMA_WRITE_FIRST (0x26).
    pub const UC_RDMA_WRITE_FIRST: Opcode = Opcode(0x26);
    /// UC RDMA_WRITE_MIDDLE (0x27).
    pub const UC_RDMA_WRITE_MIDDLE: Opcode = Opcode(0x27);
    /// UC RDMA_WRITE_LAST (0x28).
    pub const UC_RDMA_WRITE_LAST: Opcode = Opcode(0x28);
    /// UC RDMA_WRITE_LAST_WITH_IMMEDIATE (0x29).
    pub const UC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Opcode = Opcode(0x29);
    /// UC RDMA_WRITE_ONLY (0x2a).
    pub const UC_RDMA_WRITE_ONLY: Opcode = Opcode(0x2a);
    /// UC RDMA_WRITE_ONLY_WITH_IMMEDIATE (0x2b).
    pub const UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x2b);
    /// UD SEND_ONLY (0x64).
    pub const UD_SEND_ONLY: Opcode = Opcode(0x64);
    /// UD SEND_ONLY_WITH_IMMEDIATE (0x65).
    pub const UD_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x65);
    /// RoCEv2 Congestion Notification Packet (0x81).
    pub const CNP: Opcode = Opcode(0x81);
}

impl Opcode {
    /// The transport named by the top 3 bits.
    pub const fn transport(self) -> Transport {
        match self.0 >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            4 => Transport::Cnp,
            5 => Transport::Xrc,
            _ => Transport::Manufacturer,
        }
    }

    /// The table entry, or `None` for an opcode this implementation does not speak.
    pub const fn info(self) -> Option<OpInfo> {
        use Headers as H;
        use OpKind::*;
        use Position::*;
        let t = self.transport();
        let op = self.0 & 0x1f;
        match t {
            Transport::Rc | Transport::Uc => {
                let rc = matches!(t, Transport::Rc);
                let i = match op {
                    0x00 => info(t, Send, First, H::NONE, true),
                    0x01 => info(t, Send, Middle, H::NONE, true),
                    0x02 => info(t, Send, Last, H::NONE, true),
                    0x03 => info(t, Send, Last, H::IMM_DT, true),
                    0x04 => info(t, Send, Only, H::NONE, true),
                    0x05 => info(t, Send, Only, H::IMM_DT, true),
                    0x06 => info(t, RdmaWrite, First, H::RETH, true),
                    0x07 => info(t, RdmaWrite, Middle, H::NONE, true),
                    0x08 => info(t, RdmaWrite, Last, H::NONE, true),
                    0x09 => info(t, RdmaWrite, Last, H::IMM_DT, true),
                    0x0a => info(t, RdmaWrite, Only, H::RETH, true),
                    0x0b => info(t, RdmaWrite, Only, H::RETH.union(H::IMM_DT), true),
                    0x0c if rc => info(t, RdmaReadRequest, Only, H::RETH, false),
                    0x0d if rc => info(t, RdmaReadResponse, First, H::AETH, true),
                    0x0e if rc => info(t, RdmaReadResponse, Middle, H::NONE, true),
                    0x0f if rc => info(t, RdmaReadResponse, Last, H::AETH, true),
                    0x10 if rc => info(t, RdmaReadResponse, Only, H::AETH, true),
                    0x11 if rc => info(t, Acknowledge, Only, H::AETH, false),
                    0x12 if rc => info(
                        t,
                        AtomicAcknowledge,
                        Only,
                        H::AETH.union(H::ATOMIC_ACK_ETH),
                        false,
                    ),
                    0x13 if rc => info(t, CompareSwap, Only, H::ATOMIC_ETH, false),
                    0x14 if rc => info(t, FetchAdd, Only, H::ATOMIC_ETH, false),
                    0x16 if rc => info(t, Send, Last, H::IETH, true),
                    0x17 if rc => info(t, Send, Only, H::IETH, true),
                    0x1c if rc => info(t, Flush, Only, H::FETH.union(H::RETH), false),
                    0x1d if rc => info(t, AtomicWrite, Only, H::RETH, true),
                    _ => return None,
                };
                Some(i)
            }
            Transport::Ud => match op {
                0x04 => Some(info(t, Send, Only, H::DETH, true)),
                0x05 => Some(info(t, Send, Only, H::DETH.union(H::IMM_DT), true)),
                _ => None,
            },
            Transport::Cnp => match op {
                0x01 => Some(info(t, Cnp, Only, H::NONE, true)),
                _ => None,
            },
            Transport::Rd | Transport::Xrc | Transport::Manufacturer => None,
        }
    }

    /// The extension headers this opcode carries: the IBTA set when `sr` is false, rxe_sr's
    /// SR format when `sr` is true (see [`sr_ext`](super::sr_ext) for the rules).
    pub const fn headers(self, sr: bool) -> Result<Headers> {
        let Some(i) = self.info() else {
            return Err(Error::BadOpcode);
        };
        if !sr {
            return Ok(i.headers);
        }
        if !matches!(i.transport, Transport::Rc) {
            return Err(Error::BadVersion);
        }
        let h = i.headers;
        Ok(match i.kind {
            OpKind::Send | OpKind::RdmaReadRequest | OpKind::RdmaReadResponse => {
                h.union(Headers::MSN_ETH)
            }
            OpKind::RdmaWrite => {
                let h = h.union(Headers::RETH);
                if i.immediate {
                    h.union(Headers::MSN_ETH)
                } else {
                    h
                }
            }
            OpKind::Acknowledge => h.union(Headers::SR_ACK_ETH),
            _ => h,
        })
    }

    /// Fixed payload length the opcode requires, if any (CNP: 16, ATOMIC_WRITE: 8).
    pub const fn fixed_payload_len(self) -> Option<usize> {
        match self {
            Opcode::CNP => Some(16),
            Opcode::RC_ATOMIC_WRITE => Some(8),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_rdma_rxe_lengths() {
        // Header lengths (BTH excluded) as rdma_rxe's rxe_opcode[].length - RXE_BTH_BYTES.
        let expect: &[(u8, usize)] = &[
            (0x00, 0),
            (0x03, 4),
            (0x06, 16),
            (0x0b, 20),
            (0x0c, 16),
            (0x0d, 4),
            (0x0e, 0),
            (0x11, 4),
            (0x12, 12),
            (0x13, 28),
            (0x14, 28),
            (0x16, 4),
            (0x17, 4),
            (0x1c, 20),
            (0x1d, 16),
            (0x2b, 20),
            (0x64, 8),
            (0x65, 12),
            (0x81, 0),
        ];
        for &(op, len) in expect {
            let h = Opcode(op).headers(false).unwrap();
            assert_eq!(h.ext_len(), len, "opcode {op:#x}");
        }
    }

    #[test]
    fn offsets_match_rdma_rxe() {
        // (opcode, header, offset from the BTH start) as in rdma_rxe's rxe_opcode[].offset.
        let expect: &[(Opcode, Headers, usize)] = &[
            (Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, Headers::RETH, 12),
            (
                Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
                Headers::IMM_DT,
                28,
            ),
            (Opcode::RC_ATOMIC_ACKNOWLEDGE, Headers::AETH, 12),
            (Opcode::RC_ATOMIC_ACKNOWLEDGE, Headers::ATOMIC_ACK_ETH, 16),
            (Opcode::RC_FLUSH, Headers::FETH, 12),
            (Opcode::RC_FLUSH, Headers::RETH, 16),
            (Opcode::UD_SEND_ONLY_WITH_IMMEDIATE, Headers::DETH, 12),
            (Opcode::UD_SEND_ONLY_WITH_IMMEDIATE, Headers::IMM_DT, 20),
            (Opcode::RC_SEND_ONLY_WITH_INVALIDATE, Headers::IETH, 12),
            (Opcode::RC_COMPARE_SWAP, Headers::ATOMIC_ETH, 12),
        ];
        for &(op, h, off) in expect {
            assert_eq!(op.headers(false).unwrap().offset_of(h), Some(off), "{op:?}");
        }
        let sr = Opcode::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE
            .headers(true)
            .unwrap();
        assert_eq!(sr.offset_of(Headers::MSN_ETH), Some(12));
        assert_eq!(sr.offset_of(Headers::RETH), Some(20));
        assert_eq!(sr.offset_of(Headers::IMM_DT), Some(36));
        assert_eq!(sr.offset_of(Headers::AETH), None);
        assert_eq!(sr.offset_of(Headers::RETH.union(Headers::IMM_DT)), None);
    }

    #[test]
    fn unsupported_opcodes_are_errors() {
        let mut supported = 0;
        for op in 0..=255u8 {
            match Opcode(op).info() {
                Some(i) => {
                    supported += 1;
                    assert_eq!(Opcode(op).headers(false), Ok(i.headers));
                }
                None => assert_eq!(Opcode(op).headers(false), Err(Error::BadOpcode)),
            }
        }
        // 25 RC + 12 UC + 2 UD + CNP.
        assert_eq!(supported, 25 + 12 + 2 + 1);
        assert!(Opcode(0x15).info().is_none());
        assert!(Opcode(0x2c).info().is_none()); // UC has no READ
        assert!(Opcode(0x40).info().is_none()); // RD
        assert!(Opcode(0xa0).info().is_none()); // XRC
        assert!(Opcode(0xc0).info().is_none()); // manufacturer
    }

    #[test]
    fn roles_and_positions() {
        let i = Opcode::RC_SEND_ONLY_WITH_IMMEDIATE.info().unwrap();
        assert!(i.immediate && i.request && i.consumes_rwqe && i.payload);
        assert!(i.position.starts_message() && i.position.ends_message());
        let i = Opcode::RC_RDMA_WRITE_MIDDLE.info().unwrap();
        assert!(!i.consumes_rwqe && !i.position.starts_message());
        let i = Opcode::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE.info().unwrap();
        assert!(i.consumes_rwqe && i.position.ends_message());
        let i = Opcode::RC_ACKNOWLEDGE.info().unwrap();
        assert!(!i.request && !i.payload);
        let i = Opcode::RC_SEND_ONLY_WITH_INVALIDATE.info().unwrap();
        assert!(i.invalidate);
        assert_eq!(Opcode::CNP.transport(), Transport::Cnp);
    }

    #[test]
    fn sr_format_headers() {
        let sr = |op: Opcode| op.headers(true).unwrap();
        assert_eq!(sr(Opcode::RC_SEND_MIDDLE), Headers::MSN_ETH);
        assert_eq!(sr(Opcode::RC_RDMA_WRITE_MIDDLE), Headers::RETH);
        assert_eq!(sr(Opcode::RC_RDMA_WRITE_FIRST), Headers::RETH);
        assert_eq!(
            sr(Opcode::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE),
            Headers::MSN_ETH.union(Headers::RETH).union(Headers::IMM_DT)
        );
        assert_eq!(
            sr(Opcode::RC_RDMA_READ_REQUEST),
            Headers::MSN_ETH.union(Headers::RETH)
        );
        assert_eq!(sr(Opcode::RC_RDMA_READ_RESPONSE_MIDDLE), Headers::MSN_ETH);
        assert_eq!(
            sr(Opcode::RC_ACKNOWLEDGE),
            Headers::SR_ACK_ETH.union(Headers::AETH)
        );
        assert_eq!(sr(Opcode::RC_FETCH_ADD), Headers::ATOMIC_ETH);
        assert_eq!(Opcode::UC_SEND_ONLY.headers(true), Err(Error::BadVersion));
        assert_eq!(Opcode::UD_SEND_ONLY.headers(true), Err(Error::BadVersion));
        assert_eq!(Opcode::CNP.headers(true), Err(Error::BadVersion));
        assert_eq!(Opcode(0x15).headers(true), Err(Error::BadOpcode));
    }
}
