// SPDX-License-Identifier: GPL-2.0
//! The repair header (RH) of the FEC shim: LoWAR's repair and negotiation packets.
//!
//! A repair packet is a RoCEv2 datagram (UDP port 4791) whose first byte is 0x1F, an RC
//! opcode the IBTA reserves, followed by the destination QPN as LoWAR has it; a
//! negotiation packet (an ask, or a UC receiver's take) is the header alone. Both end
//! with an ICRC computed as for any RoCEv2 packet, so a corrupted one is dropped like any
//! other.
//!
//! ```text
//!  byte 0    1..3       4       5      6        7            8      9..11
//! | 0x1F | DestQPN | Resv 0 | Kind | Version | N|D (log2) | Epoch | FirstPSN |
//!  12..15         16..17   18..19
//! | CoveredMask | LenXor | IpIdXor |  XOR payload (repair only) | ICRC |
//! ```
//!
//! - Kind: 1 repair, 2 ask (the receiver asks the sender for the parameters in N|D), 3
//!   take (a UC receiver takes the offer, which no response of its can carry); 4 and 5
//!   are a repair and an ask of the other direction, the responder's READ responses and
//!   atomic ACKs, decoded by the requester.
//! - Epoch: the parameter epoch (0 to 3, counted modulo 4) of the unit a repair covers, or
//!   the one an ask asks the parameters for: the epoch after the one in use; 0 in a take.
//!   Request packets carry the epoch they were coded in (BTH Resv7, [`super::fec_caps`]).
//! - FirstPSN: a repair's unit's index 0; an ask's is the receiver's ePSN, which the
//!   requester checks as it would an acknowledgment's PSN; a take's is the PSN of the
//!   offering request it answers.
//! - N|D: log2 of the data packets per coding unit (high nibble, 2..=5: 4 to 32) and of the
//!   interleaving depth (low nibble, 0..=3: 1 to 8). A unit of a repair is the PSNs
//!   FirstPSN + i * D for i in 0..N; FirstPSN lies in the first D PSNs of a block of N * D
//!   PSNs (blocks are aligned on multiples of N * D).
//! - CoveredMask (0 in an ask or take): bit i set when the i-th PSN of the unit is in the
//!   XOR (the repair covers the unit as sent so far: a prefix of it in send order, or all
//!   of it).
//! - LenXor: XOR of the covered packets' lengths (BTH to ICRC inclusive); IpIdXor: XOR of
//!   their IPv4 Identification fields (0 over IPv6), which the ICRC covers.
//! - XOR payload: the covered packets from BTH to ICRC inclusive, each zero-padded to the
//!   longest, XORed together; a multiple of 4 bytes, as every RoCEv2 packet is.
//!
//! Byte 4 is reserved because the ICRC masks BTH byte 4: whatever sits there is not
//! protected. Only a peer that accepted the FEC offer is ever sent an RH.

use super::fec_caps::FEC_EPOCHS;
use super::{Error, Result, U24_MAX};
use crate::proto::psn::Psn;

/// The first byte of a repair or ask packet: RC opcode 0x1F, reserved by the IBTA.
pub const RH_OPCODE: u8 = 0x1f;

/// Length of the repair header in bytes.
pub const RH_LEN: usize = 20;

/// The version of the repair header this file describes.
pub const RH_VERSION: u8 = 1;

/// The longest packet (BTH to ICRC) a unit codes: a 4096-byte MTU's payload and every
/// header an RC request can carry, with room to spare. Longer packets are not coded.
pub const FEC_MAX_PACKET: usize = 4096 + 128;

/// What an RH is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RhKind {
    /// A repair packet: header and XOR payload.
    Repair,
    /// The receiver asks for other parameters (header only).
    Ask,
    /// A UC receiver takes the offer (header only): UC has no response to echo it in.
    Take,
    /// A repair of the responder's coded responses (READ responses, atomic ACKs).
    RespRepair,
    /// The requester asks the responder for other parameters for its responses.
    RespAsk,
}

impl RhKind {
    /// The kind's byte in the header.
    const fn to_byte(self) -> u8 {
        match self {
            RhKind::Repair => 1,
            RhKind::Ask => 2,
            RhKind::Take => 3,
            RhKind::RespRepair => 4,
            RhKind::RespAsk => 5,
        }
    }

    /// The kind a header byte names.
    const fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => RhKind::Repair,
            2 => RhKind::Ask,
            3 => RhKind::Take,
            4 => RhKind::RespRepair,
            5 => RhKind::RespAsk,
            _ => return None,
        })
    }

    /// True for a repair (with an XOR payload) of either direction.
    pub const fn is_repair(self) -> bool {
        matches!(self, RhKind::Repair | RhKind::RespRepair)
    }
}

/// The coding parameters: data packets per unit and interleaving depth, both powers of
/// two, so that a block of `n * d` PSNs divides the PSN space.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FecParams {
    n_log2: u8,
    d_log2: u8,
}

impl FecParams {
    /// Fewest data packets per unit.
    pub const MIN_N: u32 = 4;
    /// Most data packets per unit (the covered mask's width).
    pub const MAX_N: u32 = 32;
    /// Deepest interleaving.
    pub const MAX_D: u32 = 8;
    /// LoWAR's 32:1, interleaved 4 deep.
    #[cfg_attr(
        MODULE,
        expect(dead_code, reason = "the device has no FEC setting yet")
    )]
    pub const DEFAULT: FecParams = FecParams {
        n_log2: 5,
        d_log2: 2,
    };

    /// `n` data packets per unit and depth `d`; `None` unless both are powers of two in
    /// range.
    pub fn new(n: u32, d: u32) -> Option<Self> {
        let ok = n.is_power_of_two()
            && (Self::MIN_N..=Self::MAX_N).contains(&n)
            && d.is_power_of_two()
            && d <= Self::MAX_D;
        ok.then(|| FecParams {
            n_log2: n.trailing_zeros() as u8,
            d_log2: d.trailing_zeros() as u8,
        })
    }

    /// Data packets per unit.
    pub const fn n(self) -> u32 {
        1 << self.n_log2
    }

    /// Interleaving depth: units coded side by side.
    pub const fn d(self) -> u32 {
        1 << self.d_log2
    }

    /// PSNs per block (`n * d`).
    pub const fn block(self) -> u32 {
        1 << (self.n_log2 + self.d_log2)
    }

    /// The PSN's place: (block number, unit in the block, index in the unit).
    pub const fn place(self, psn: Psn) -> (u32, u32, u32) {
        let p = psn.get();
        let off = p & (self.block() - 1);
        (
            p >> (self.n_log2 + self.d_log2),
            off & (self.d() - 1),
            off >> self.d_log2,
        )
    }

    /// The PSN of index `i` of the unit whose index 0 is `first`.
    pub const fn psn_of(self, first: Psn, i: u32) -> Psn {
        first.add(i << self.d_log2)
    }

    /// The parameters as one byte (never 0), as the repair header carries them: log2 of
    /// N, then of D, a nibble each.
    pub fn to_byte(self) -> u8 {
        (self.n_log2 << 4) | self.d_log2
    }

    /// A setting as written to the device attribute `fec`: "off" (or "0") for none, else
    /// "N:D" (e.g. "32:4"); surrounding white space is ignored. [`Error::BadField`] when
    /// it is neither.
    pub fn from_setting(s: &[u8]) -> Result<Option<Self>> {
        let first = s
            .iter()
            .position(|c| !c.is_ascii_whitespace())
            .unwrap_or(s.len());
        let last = s
            .iter()
            .rposition(|c| !c.is_ascii_whitespace())
            .map_or(first, |i| i + 1);
        let s = s.get(first..last).unwrap_or(&[]);
        if s == b"off" || s == b"0" {
            return Ok(None);
        }
        let at = s.iter().position(|&c| c == b':').ok_or(Error::BadField)?;
        let (n, d) = (
            s.get(..at).ok_or(Error::BadField)?,
            s.get(at + 1..).ok_or(Error::BadField)?,
        );
        let num = |t: &[u8]| -> Result<u32> {
            if t.is_empty() || t.len() > 2 || !t.iter().all(u8::is_ascii_digit) {
                return Err(Error::BadField);
            }
            Ok(t.iter().fold(0, |v, &c| v * 10 + u32::from(c - b'0')))
        };
        Self::new(num(n)?, num(d)?).map(Some).ok_or(Error::BadField)
    }

    /// The parameters [`Self::to_byte`] gave, or `None`.
    pub fn from_byte(b: u8) -> Option<Self> {
        Self::new(1 << (b >> 4), 1 << (b & 0xf))
    }
}

/// A parsed repair header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RepairHeader {
    /// The QP the packet is for.
    pub dest_qpn: u32,
    /// Repair or ask.
    pub kind: RhKind,
    /// The unit's parameters (a repair), or those asked for (an ask).
    pub params: FecParams,
    /// The unit's parameter epoch (a repair), or the one asked for (an ask): below
    /// [`FEC_EPOCHS`].
    pub epoch: u8,
    /// PSN of the unit's index 0 (a repair), or the receiver's ePSN (an ask).
    pub first_psn: Psn,
    /// Indices in the XOR (0 in an ask).
    pub covered: u32,
    /// XOR of the covered packets' lengths.
    pub len_xor: u16,
    /// XOR of the covered packets' IPv4 Identification fields.
    pub ip_id_xor: u16,
}

impl RepairHeader {
    /// An ask to the QP `dest_qpn` for `params` as parameter epoch `epoch`, from a
    /// receiving side whose ePSN is `epsn`.
    pub const fn ask(dest_qpn: u32, epoch: u8, params: FecParams, epsn: Psn) -> Self {
        RepairHeader {
            dest_qpn,
            kind: RhKind::Ask,
            params,
            epoch,
            first_psn: epsn,
            covered: 0,
            len_xor: 0,
            ip_id_xor: 0,
        }
    }

    /// The requester's ask to the QP `dest_qpn` for `params` as parameter epoch `epoch` of
    /// the responses it codes, the requester waiting for the response of PSN `owed`.
    pub const fn resp_ask(dest_qpn: u32, epoch: u8, params: FecParams, owed: Psn) -> Self {
        RepairHeader {
            kind: RhKind::RespAsk,
            ..Self::ask(dest_qpn, epoch, params, owed)
        }
    }

    /// A UC receiving side set to `params` takes the offer of the QP `dest_qpn`, answering
    /// its request of PSN `psn`.
    pub const fn take(dest_qpn: u32, params: FecParams, psn: Psn) -> Self {
        RepairHeader {
            kind: RhKind::Take,
            ..Self::ask(dest_qpn, 0, params, psn)
        }
    }

    /// Parses an RH and its payload from `ib` (the UDP payload without the ICRC, which the
    /// caller checked): the header and the XOR payload, checked against each other.
    pub fn parse(ib: &[u8]) -> Result<(Self, &[u8])> {
        let h: [u8; RH_LEN] = crate::bytes::array(ib).ok_or(Error::Truncated)?;
        let payload = ib.get(RH_LEN..).ok_or(Error::Truncated)?;
        if h[0] != RH_OPCODE || h[4] != 0 || h[8] >= FEC_EPOCHS || h[6] != RH_VERSION {
            return Err(Error::BadField);
        }
        let kind = RhKind::from_byte(h[5]).ok_or(Error::BadField)?;
        let params = FecParams::from_byte(h[7]).ok_or(Error::BadField)?;
        let rh = RepairHeader {
            dest_qpn: u32::from_be_bytes([0, h[1], h[2], h[3]]),
            kind,
            params,
            epoch: h[8],
            first_psn: Psn::new(u32::from_be_bytes([0, h[9], h[10], h[11]])),
            covered: u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
            len_xor: u16::from_be_bytes([h[16], h[17]]),
            ip_id_xor: u16::from_be_bytes([h[18], h[19]]),
        };
        rh.check(payload.len())?;
        Ok((rh, payload))
    }

    /// The header's fields against each other and a payload of `len` bytes.
    fn check(&self, len: usize) -> Result<()> {
        if self.epoch >= FEC_EPOCHS {
            return Err(Error::BadField);
        }
        if !self.kind.is_repair() {
            let mut zero = self.covered | u32::from(self.len_xor | self.ip_id_xor);
            if self.kind == RhKind::Take {
                zero |= u32::from(self.epoch);
            }
            return if zero == 0 && len == 0 {
                Ok(())
            } else {
                Err(Error::BadField)
            };
        }
        let p = self.params;
        let wide = p.n() < 32 && self.covered >> p.n() != 0;
        let (_, _, i) = p.place(self.first_psn);
        if self.covered == 0 || wide || i != 0 {
            return Err(Error::BadField);
        }
        if len == 0 || len & 3 != 0 || len > FEC_MAX_PACKET {
            return Err(Error::BadLength);
        }
        Ok(())
    }

    /// Writes the header into the first [`RH_LEN`] bytes of `out`, for a payload of
    /// `payload_len` bytes (checked as [`Self::parse`] would).
    pub fn emit(&self, out: &mut [u8], payload_len: usize) -> Result<()> {
        if self.dest_qpn > U24_MAX {
            return Err(Error::BadField);
        }
        self.check(payload_len)?;
        let h = out.get_mut(..RH_LEN).ok_or(Error::BufferTooSmall)?;
        let q = self.dest_qpn.to_be_bytes();
        let f = self.first_psn.get().to_be_bytes();
        let kind = self.kind.to_byte();
        let [c0, c1, c2, c3] = self.covered.to_be_bytes();
        let [l0, l1] = self.len_xor.to_be_bytes();
        let [i0, i1] = self.ip_id_xor.to_be_bytes();
        h.copy_from_slice(&[
            RH_OPCODE,
            q[1],
            q[2],
            q[3],
            0,
            kind,
            RH_VERSION,
            self.params.to_byte(),
            self.epoch,
            f[1],
            f[2],
            f[3],
            c0,
            c1,
            c2,
            c3,
            l0,
            l1,
            i0,
            i1,
        ]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repair(first: u32, covered: u32) -> RepairHeader {
        RepairHeader {
            dest_qpn: 0x12_3456,
            kind: RhKind::Repair,
            params: FecParams::DEFAULT,
            epoch: 0,
            first_psn: Psn::new(first),
            covered,
            len_xor: 0x0420,
            ip_id_xor: 0xbeef,
        }
    }

    #[test]
    fn parameters_are_powers_of_two_in_range() {
        assert_eq!(FecParams::DEFAULT, FecParams::new(32, 4).unwrap());
        assert!(FecParams::new(24, 4).is_none());
        assert!(FecParams::new(2, 1).is_none());
        assert!(FecParams::new(64, 1).is_none());
        assert!(FecParams::new(32, 16).is_none());
        assert!(FecParams::new(32, 0).is_none());
        let p = FecParams::new(8, 2).unwrap();
        assert_eq!((p.n(), p.d(), p.block()), (8, 2, 16));
        // PSN 37 = block 2 (32..48), offset 5: unit 1, index 2.
        assert_eq!(p.place(Psn::new(37)), (2, 1, 2));
        assert_eq!(p.psn_of(Psn::new(33), 2), Psn::new(37));
        // The last block ends at the end of the PSN space.
        assert_eq!(p.place(Psn::new(0xff_ffff)), (0xff_ffff / 16, 1, 7));
    }

    #[test]
    fn settings_are_off_or_n_colon_d() {
        assert_eq!(FecParams::from_setting(b"off\n"), Ok(None));
        assert_eq!(FecParams::from_setting(b" 0 "), Ok(None));
        assert_eq!(
            FecParams::from_setting(b"32:4\n"),
            Ok(FecParams::new(32, 4))
        );
        assert_eq!(FecParams::from_setting(b"8:1"), Ok(FecParams::new(8, 1)));
        for bad in [
            &b"32"[..],
            b"24:4",
            b"32:3",
            b"32:",
            b":4",
            b"032:4",
            b"+8:1",
            b"on",
            b"8:1:1",
            b"",
        ] {
            assert_eq!(
                FecParams::from_setting(bad),
                Err(Error::BadField),
                "{:?}",
                core::str::from_utf8(bad)
            );
        }
        // Every setting names back to itself.
        for n in [4, 8, 16, 32] {
            for d in [1, 2, 4, 8] {
                let p = FecParams::new(n, d).unwrap();
                assert_eq!(FecParams::from_byte(p.to_byte()), Some(p));
            }
        }
    }

    #[test]
    fn emit_then_parse_is_the_identity() {
        let rh = repair(0x00_1202, 0x8000_0001);
        let mut b = [0u8; RH_LEN + 8];
        rh.emit(&mut b, 8).unwrap();
        assert_eq!(
            &b[..12],
            &[0x1f, 0x12, 0x34, 0x56, 0, 1, 1, 0x52, 0, 0, 0x12, 0x02]
        );
        assert_eq!(RepairHeader::parse(&b).unwrap(), (rh, &[0u8; 8][..]));
        let ask = RepairHeader {
            kind: RhKind::Ask,
            params: FecParams::new(16, 1).unwrap(),
            epoch: 3,
            first_psn: Psn::new(0xab_cdef),
            covered: 0,
            len_xor: 0,
            ip_id_xor: 0,
            ..rh
        };
        let mut a = [0u8; RH_LEN];
        ask.emit(&mut a, 0).unwrap();
        assert_eq!(a[7..12], [0x40, 3, 0xab, 0xcd, 0xef]);
        assert_eq!(RepairHeader::parse(&a).unwrap(), (ask, &[][..]));
        // The responses' repair and ask: kinds 4 and 5, the same fields.
        let rr = RepairHeader {
            kind: RhKind::RespRepair,
            ..rh
        };
        rr.emit(&mut b, 8).unwrap();
        assert_eq!(b[5], 4);
        assert_eq!(RepairHeader::parse(&b).unwrap(), (rr, &[0u8; 8][..]));
        let ra = RepairHeader::resp_ask(0x12_3456, 3, ask.params, ask.first_psn);
        ra.emit(&mut a, 0).unwrap();
        assert_eq!(a[5], 5);
        assert_eq!(RepairHeader::parse(&a).unwrap(), (ra, &[][..]));
        assert!(rr.kind.is_repair() && !ra.kind.is_repair());
    }

    #[test]
    fn malformed_headers_are_refused() {
        let mut good = [0u8; RH_LEN + 4];
        repair(0x00_1200, 1).emit(&mut good, 4).unwrap();
        assert!(RepairHeader::parse(&good).is_ok());
        // Each byte that is checked, changed alone.
        for (at, v) in [
            (0, 0x1e),
            (4, 1),
            (5, 0),
            (5, 6),
            (6, 2),
            (7, 0x62),
            (7, 0x14),
            (8, 4),
            (8, 0x80),
        ] {
            let mut b = good;
            b[at] = v;
            assert!(RepairHeader::parse(&b).is_err(), "byte {at} = {v:#x}");
        }
        // FirstPSN not at index 0 of its unit, an empty mask, a payload of 3 bytes.
        let mut b = good;
        b[11] = 0x04;
        assert_eq!(RepairHeader::parse(&b), Err(Error::BadField));
        let mut b = good;
        b[15] = 0;
        assert_eq!(RepairHeader::parse(&b), Err(Error::BadField));
        assert_eq!(
            RepairHeader::parse(&good[..RH_LEN + 3]),
            Err(Error::BadLength)
        );
        assert_eq!(RepairHeader::parse(&good[..RH_LEN]), Err(Error::BadLength));
        assert_eq!(
            RepairHeader::parse(&good[..RH_LEN - 1]),
            Err(Error::Truncated)
        );
        // A mask past N: 8 packets per unit, bit 8 set.
        let p8 = FecParams::new(8, 1).unwrap();
        let rh = RepairHeader {
            params: p8,
            covered: 0x100,
            ..repair(0x00_1200, 1)
        };
        assert_eq!(rh.emit(&mut [0u8; RH_LEN + 4], 4), Err(Error::BadField));
        // An ask with a payload or fields set.
        let ask = RepairHeader {
            kind: RhKind::Ask,
            ..repair(0, 1)
        };
        assert_eq!(ask.emit(&mut [0u8; RH_LEN], 0), Err(Error::BadField));
        // A take with an epoch, or with a payload.
        let take = RepairHeader::take(7, FecParams::DEFAULT, Psn::new(9));
        let mut t = [0u8; RH_LEN + 4];
        take.emit(&mut t, 0).unwrap();
        assert_eq!(t[5], 3);
        assert_eq!(RepairHeader::parse(&t[..RH_LEN]).unwrap(), (take, &[][..]));
        assert_eq!(RepairHeader::parse(&t), Err(Error::BadField));
        t[8] = 1;
        assert_eq!(RepairHeader::parse(&t[..RH_LEN]), Err(Error::BadField));
        let epoch4 = RepairHeader {
            epoch: 4,
            ..repair(0x00_1200, 1)
        };
        assert_eq!(epoch4.emit(&mut [0u8; RH_LEN + 4], 4), Err(Error::BadField));
    }
}
