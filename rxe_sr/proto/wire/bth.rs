// SPDX-License-Identifier: GPL-2.0
//! The Base Transport Header (IBTA Vol. 1 9.2), 12 bytes, big endian:
//!
//! ```text
//!  byte 0      1                  2..3     4              5..7       8            9..11
//! | OpCode | SE|M|Pad(2)|TVer(4) | P_Key | F|B|Resv6a(6) | DestQP  | A|Resv7(7) | PSN   |
//! ```
//!
//! `F`/`B` are the FECN/BECN bits RoCEv2 keeps in the former Resv8a byte; the ICRC masks
//! the whole byte 4 (see [`icrc`](super::icrc)). Reserved bits are kept in [`BthRepr`] so
//! that parse-then-emit is byte-identical; senders put 0 there, except that rxe_sr's
//! capability probe uses Resv7 (see [`caps`](super::caps)).

use super::field;
use super::opcode::Opcode;
use super::{Error, Result, BTH_LEN, U24_MAX};
use crate::proto::psn::Psn;

/// The default partition key.
pub const DEFAULT_PKEY: u16 = 0xffff;

/// A zero-copy read view of a BTH at the start of `buffer`.
#[derive(Clone, Copy, Debug)]
pub struct Bth<T: AsRef<[u8]>> {
    buffer: T,
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl<T: AsRef<[u8]>> Bth<T> {
    /// Wraps `buffer` after checking that it holds at least [`BTH_LEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Self> {
        if buffer.as_ref().len() < BTH_LEN {
            return Err(Error::Truncated);
        }
        Ok(Bth { buffer })
    }

    /// Wraps `buffer` without a length check; accessors then read 0 for missing bytes
    /// (never panic). Prefer [`Self::new_checked`].
    pub const fn new_unchecked(buffer: T) -> Self {
        Bth { buffer }
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn byte(&self, off: usize) -> u8 {
        // new_checked guarantees BTH_LEN bytes; the fallback is never taken.
        field::u8_at(self.buffer.as_ref(), off).unwrap_or(0)
    }

    fn be24(&self, off: usize) -> u32 {
        field::be24(self.buffer.as_ref(), off).unwrap_or(0)
    }

    /// OpCode.
    pub fn opcode(&self) -> Opcode {
        Opcode(self.byte(0))
    }

    /// SE: solicited event.
    pub fn se(&self) -> bool {
        self.byte(1) & 0x80 != 0
    }

    /// M: migration state.
    pub fn migreq(&self) -> bool {
        self.byte(1) & 0x40 != 0
    }

    /// PadCnt: bytes of pad after the payload (0..=3).
    pub fn pad_cnt(&self) -> u8 {
        (self.byte(1) >> 4) & 0x3
    }

    /// TVer: transport header version (0 for IBTA; see [`sr_ext`](super::sr_ext)).
    pub fn tver(&self) -> u8 {
        self.byte(1) & 0x0f
    }

    /// P_Key.
    pub fn pkey(&self) -> u16 {
        field::be16(self.buffer.as_ref(), 2).unwrap_or(0)
    }

    /// F: forward explicit congestion notification.
    pub fn fecn(&self) -> bool {
        self.byte(4) & 0x80 != 0
    }

    /// B: backward explicit congestion notification.
    pub fn becn(&self) -> bool {
        self.byte(4) & 0x40 != 0
    }

    /// Resv6a: reserved bits of byte 4.
    pub fn resv6a(&self) -> u8 {
        self.byte(4) & 0x3f
    }

    /// DestQP: destination QP number (24 bits).
    pub fn dest_qpn(&self) -> u32 {
        self.be24(5)
    }

    /// A: acknowledge request.
    pub fn ack_req(&self) -> bool {
        self.byte(8) & 0x80 != 0
    }

    /// Resv7: reserved bits of byte 8.
    pub fn resv7(&self) -> u8 {
        self.byte(8) & 0x7f
    }

    /// PSN: packet sequence number (24 bits).
    pub fn psn(&self) -> Psn {
        Psn::new(self.be24(9))
    }
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl<T: AsRef<[u8]> + AsMut<[u8]>> Bth<T> {
    fn update(&mut self, off: usize, mask: u8, bits: u8) {
        // A view made by new_checked always has the byte; new_unchecked ones may not.
        if let Some(b) = self.buffer.as_mut().get_mut(off) {
            *b = (*b & !mask) | (bits & mask);
        }
    }

    /// Sets the PSN in place; the ICRC covers it, refill it afterwards.
    pub fn set_psn(&mut self, psn: Psn) {
        let v = psn.get().to_be_bytes();
        self.update(9, 0xff, v[1]);
        self.update(10, 0xff, v[2]);
        self.update(11, 0xff, v[3]);
    }

    /// Sets the AckReq bit in place; the ICRC covers it, refill it afterwards.
    pub fn set_ack_req(&mut self, on: bool) {
        self.update(8, 0x80, if on { 0x80 } else { 0 });
    }

    /// Sets the FECN bit in place (not covered by the ICRC).
    pub fn set_fecn(&mut self, on: bool) {
        self.update(4, 0x80, if on { 0x80 } else { 0 });
    }

    /// Sets the BECN bit in place (not covered by the ICRC).
    pub fn set_becn(&mut self, on: bool) {
        self.update(4, 0x40, if on { 0x40 } else { 0 });
    }
}

/// The fields of a BTH.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct BthRepr {
    /// OpCode.
    pub opcode: Opcode,
    /// SE: solicited event.
    pub se: bool,
    /// M: migration state.
    pub migreq: bool,
    /// PadCnt (0..=3).
    pub pad_cnt: u8,
    /// TVer (0..=15); 0 is IBTA, [`BTH_TVER_SR`](super::sr_ext::BTH_TVER_SR) rxe_sr's SR format.
    pub tver: u8,
    /// P_Key.
    pub pkey: u16,
    /// F: FECN.
    pub fecn: bool,
    /// B: BECN.
    pub becn: bool,
    /// Resv6a (6 bits): reserved, 0 on send; kept for byte-identical re-emit.
    pub resv6a: u8,
    /// DestQP (24 bits).
    pub dest_qpn: u32,
    /// A: acknowledge request.
    pub ack_req: bool,
    /// Resv7 (7 bits): reserved, 0 on send except rxe_sr's capability probe.
    pub resv7: u8,
    /// PSN.
    pub psn: Psn,
}

impl Default for BthRepr {
    fn default() -> Self {
        BthRepr {
            opcode: Opcode::RC_SEND_ONLY,
            se: false,
            migreq: false,
            pad_cnt: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            resv6a: 0,
            dest_qpn: 0,
            ack_req: false,
            resv7: 0,
            psn: Psn::new(0),
        }
    }
}

impl BthRepr {
    /// Reads every field of a BTH view.
    pub fn from_view<T: AsRef<[u8]>>(v: &Bth<T>) -> Self {
        BthRepr {
            opcode: v.opcode(),
            se: v.se(),
            migreq: v.migreq(),
            pad_cnt: v.pad_cnt(),
            tver: v.tver(),
            pkey: v.pkey(),
            fecn: v.fecn(),
            becn: v.becn(),
            resv6a: v.resv6a(),
            dest_qpn: v.dest_qpn(),
            ack_req: v.ack_req(),
            resv7: v.resv7(),
            psn: v.psn(),
        }
    }

    /// Parses the BTH at the start of `b`. Only the length is checked: opcode and TVer are
    /// judged by [`PacketRepr::parse`](super::packet::PacketRepr::parse).
    pub fn parse(b: &[u8]) -> Result<Self> {
        Bth::new_checked(b).map(|v| Self::from_view(&v))
    }

    /// The pad count that makes a payload of `payload_len` bytes 4-byte aligned.
    pub const fn pad_for(payload_len: usize) -> u8 {
        (payload_len.wrapping_neg() & 3) as u8
    }

    /// Writes the BTH into the first [`BTH_LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        if self.pad_cnt > 3
            || self.tver > 0x0f
            || self.resv6a > 0x3f
            || self.resv7 > 0x7f
            || self.dest_qpn > U24_MAX
        {
            return Err(Error::BadField);
        }
        let out = b.get_mut(..BTH_LEN).ok_or(Error::BufferTooSmall)?;
        let b1 = (u8::from(self.se) << 7)
            | (u8::from(self.migreq) << 6)
            | (self.pad_cnt << 4)
            | self.tver;
        let b4 = (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6) | self.resv6a;
        let b8 = (u8::from(self.ack_req) << 7) | self.resv7;
        field::put_u8(out, 0, self.opcode.0)?;
        field::put_u8(out, 1, b1)?;
        field::put_be16(out, 2, self.pkey)?;
        field::put_u8(out, 4, b4)?;
        field::put_be24(out, 5, self.dest_qpn)?;
        field::put_u8(out, 8, b8)?;
        field::put_be24(out, 9, self.psn.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RC SEND_ONLY, SE, pad 2, P_Key 0xffff, FECN, QPN 0x000011, AckReq, PSN 0xabcdef.
    const BYTES: [u8; 12] = [
        0x04, 0xa0, 0xff, 0xff, 0x80, 0x00, 0x00, 0x11, 0x80, 0xab, 0xcd, 0xef,
    ];

    #[test]
    fn parse_fields() {
        let v = Bth::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.opcode(), Opcode::RC_SEND_ONLY);
        assert!(v.se() && !v.migreq());
        assert_eq!(v.pad_cnt(), 2);
        assert_eq!(v.tver(), 0);
        assert_eq!(v.pkey(), 0xffff);
        assert!(v.fecn() && !v.becn());
        assert_eq!(v.resv6a(), 0);
        assert_eq!(v.dest_qpn(), 0x11);
        assert!(v.ack_req());
        assert_eq!(v.resv7(), 0);
        assert_eq!(v.psn(), Psn::new(0xabcdef));
    }

    #[test]
    fn round_trip_every_bit() {
        let mut b = [0u8; 12];
        for (i, x) in b.iter_mut().enumerate() {
            *x = 0x5a ^ (i as u8).wrapping_mul(37);
        }
        let r = BthRepr::parse(&b).unwrap();
        let mut o = [0u8; 12];
        r.emit(&mut o).unwrap();
        assert_eq!(o, b);
        let all = [0xffu8; 12];
        let r = BthRepr::parse(&all).unwrap();
        r.emit(&mut o).unwrap();
        assert_eq!(o, all);
    }

    #[test]
    fn in_place_setters() {
        let mut b = BYTES;
        let mut v = Bth::new_checked(&mut b[..]).unwrap();
        v.set_psn(Psn::new(0x123456));
        v.set_ack_req(false);
        v.set_fecn(false);
        v.set_becn(true);
        assert_eq!(v.psn(), Psn::new(0x123456));
        assert!(!v.ack_req() && !v.fecn() && v.becn());
        assert_eq!(v.opcode(), Opcode::RC_SEND_ONLY);
        assert_eq!(&b[..4], &BYTES[..4]);
        assert_eq!(b[4], 0x40);
        // An unchecked view of too few bytes neither panics nor writes.
        let mut short = [0u8; 3];
        let mut v = Bth::new_unchecked(&mut short[..]);
        v.set_psn(Psn::new(1));
        v.set_becn(true);
        assert_eq!(v.psn(), Psn::new(0));
        assert_eq!(short, [0; 3]);
    }

    #[test]
    fn errors() {
        assert_eq!(BthRepr::parse(&BYTES[..11]), Err(Error::Truncated));
        let r = BthRepr {
            dest_qpn: 1 << 24,
            ..Default::default()
        };
        assert_eq!(r.emit(&mut [0u8; 12]), Err(Error::BadField));
        let r = BthRepr {
            pad_cnt: 4,
            ..Default::default()
        };
        assert_eq!(r.emit(&mut [0u8; 12]), Err(Error::BadField));
        assert_eq!(
            BthRepr::default().emit(&mut [0u8; 11]),
            Err(Error::BufferTooSmall)
        );
    }

    #[test]
    fn pad_for_aligns() {
        assert_eq!(BthRepr::pad_for(0), 0);
        assert_eq!(BthRepr::pad_for(1), 3);
        assert_eq!(BthRepr::pad_for(2), 2);
        assert_eq!(BthRepr::pad_for(3), 1);
        assert_eq!(BthRepr::pad_for(4096), 0);
        assert_eq!(BthRepr::pad_for(usize::MAX), 1);
    }
}
