// SPDX-License-Identifier: GPL-2.0
//! A whole IB packet (the UDP payload of a RoCEv2 datagram):
//!
//! ```text
//! | BTH (12) | extension headers (by opcode, TVer) | payload | pad (0..3) | ICRC (4) |
//! ```
//!
//! Rules checked by [`PacketRepr::parse`] (each failure an [`Error`], never a panic):
//! - at least BTH + ICRC bytes, and every header the opcode names ([`Error::Truncated`]);
//! - an opcode from the table ([`Error::BadOpcode`]); TVer 0, or 1 on RC for the SR format
//!   ([`Error::BadVersion`]);
//! - payload + pad is a multiple of 4 bytes and the pad count does not exceed it; opcodes
//!   without payload have neither ([`Error::BadPad`], [`Error::BadLength`]); CNP carries
//!   exactly 16 reserved bytes and ATOMIC_WRITE exactly 8 ([`Error::BadLength`]);
//! - SR headers well formed and consistent with the AETH ([`Error::BadSrHeader`]).
//!
//! The ICRC needs the IP and UDP headers: [`PacketRepr::parse_checked_with`] verifies it,
//! [`icrc::fill_with`] writes it after [`PacketRepr::emit`]. Pad bytes are ignored on parse and
//! emitted as zeros (as rdma_rxe does); everything else round-trips bit for bit.

use super::bth::{Bth, BthRepr};
use super::ext_headers::{Aeth, AtomicAckEth, AtomicEth, Deth, Feth, Ieth, ImmDt, Reth};
use super::icrc::{self, Crc32, ICRC_LEN};
use super::opcode::{Headers, Opcode};
use super::sr_ext::{MsnEth, SrAckEth, BTH_TVER_SR, BTH_TVER_STD};
use super::BTH_LEN;
use super::{Error, Result};

/// The extension headers of one packet; `Some` exactly for those its opcode carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct ExtHeaders {
    /// rxe_sr MSN-ETH (SR format).
    pub msn_eth: Option<MsnEth>,
    /// rxe_sr SR-ACK-ETH (SR format).
    pub sr_ack_eth: Option<SrAckEth>,
    /// DETH.
    pub deth: Option<Deth>,
    /// FETH.
    pub feth: Option<Feth>,
    /// RETH.
    pub reth: Option<Reth>,
    /// AtomicETH.
    pub atomic_eth: Option<AtomicEth>,
    /// AETH.
    pub aeth: Option<Aeth>,
    /// AtomicAckETH.
    pub atomic_ack_eth: Option<AtomicAckEth>,
    /// ImmDt.
    pub imm_dt: Option<ImmDt>,
    /// IETH.
    pub ieth: Option<Ieth>,
}

impl ExtHeaders {
    /// The set of headers present.
    pub fn set(&self) -> Headers {
        let mut h = Headers::NONE;
        let flags = [
            (self.msn_eth.is_some(), Headers::MSN_ETH),
            (self.sr_ack_eth.is_some(), Headers::SR_ACK_ETH),
            (self.deth.is_some(), Headers::DETH),
            (self.feth.is_some(), Headers::FETH),
            (self.reth.is_some(), Headers::RETH),
            (self.atomic_eth.is_some(), Headers::ATOMIC_ETH),
            (self.aeth.is_some(), Headers::AETH),
            (self.atomic_ack_eth.is_some(), Headers::ATOMIC_ACK_ETH),
            (self.imm_dt.is_some(), Headers::IMM_DT),
            (self.ieth.is_some(), Headers::IETH),
        ];
        for (present, bit) in flags {
            if present {
                h = h.union(bit);
            }
        }
        h
    }

    /// Parses the headers of `set` from `b` (the bytes right after the BTH), in wire order.
    pub fn parse(set: Headers, b: &[u8]) -> Result<Self> {
        let mut e = ExtHeaders::default();
        let mut off = 0usize;
        for (h, len) in Headers::WIRE_ORDER {
            if !set.contains(h) {
                continue;
            }
            let s = b.get(off..).ok_or(Error::Truncated)?;
            match h {
                Headers::MSN_ETH => e.msn_eth = Some(MsnEth::parse(s)?),
                Headers::SR_ACK_ETH => e.sr_ack_eth = Some(SrAckEth::parse(s)?),
                Headers::DETH => e.deth = Some(Deth::parse(s)?),
                Headers::FETH => e.feth = Some(Feth::parse(s)?),
                Headers::RETH => e.reth = Some(Reth::parse(s)?),
                Headers::ATOMIC_ETH => e.atomic_eth = Some(AtomicEth::parse(s)?),
                Headers::AETH => e.aeth = Some(Aeth::parse(s)?),
                Headers::ATOMIC_ACK_ETH => e.atomic_ack_eth = Some(AtomicAckEth::parse(s)?),
                Headers::IMM_DT => e.imm_dt = Some(ImmDt::parse(s)?),
                Headers::IETH => e.ieth = Some(Ieth::parse(s)?),
                _ => {}
            }
            off = off.checked_add(len).ok_or(Error::Truncated)?;
        }
        Ok(e)
    }

    /// Writes the present headers into `b` in wire order; returns the bytes written.
    pub fn emit(&self, b: &mut [u8]) -> Result<usize> {
        let mut off = 0usize;
        for (h, len) in Headers::WIRE_ORDER {
            let s = match b.get_mut(off..) {
                Some(s) => s,
                None => return Err(Error::BufferTooSmall),
            };
            let written = match h {
                Headers::MSN_ETH => self.msn_eth.map(|x| x.emit(s)),
                Headers::SR_ACK_ETH => self.sr_ack_eth.map(|x| x.emit(s)),
                Headers::DETH => self.deth.map(|x| x.emit(s)),
                Headers::FETH => self.feth.map(|x| x.emit(s)),
                Headers::RETH => self.reth.map(|x| x.emit(s)),
                Headers::ATOMIC_ETH => self.atomic_eth.map(|x| x.emit(s)),
                Headers::AETH => self.aeth.map(|x| x.emit(s)),
                Headers::ATOMIC_ACK_ETH => self.atomic_ack_eth.map(|x| x.emit(s)),
                Headers::IMM_DT => self.imm_dt.map(|x| x.emit(s)),
                Headers::IETH => self.ieth.map(|x| x.emit(s)),
                _ => None,
            };
            if let Some(r) = written {
                r?;
                off = off.checked_add(len).ok_or(Error::BufferTooSmall)?;
            }
        }
        Ok(off)
    }
}

/// The SR flag of a TVer value: 0 standard, 1 SR, others unsupported.
fn sr_of(tver: u8) -> Result<bool> {
    match tver {
        BTH_TVER_STD => Ok(false),
        BTH_TVER_SR => Ok(true),
        _ => Err(Error::BadVersion),
    }
}

/// Everything in an IB packet but the ICRC and the pad bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PacketRepr<'a> {
    /// The BTH; `bth.pad_cnt` must equal `BthRepr::pad_for(payload.len())`.
    pub bth: BthRepr,
    /// The extension headers the opcode (and TVer) call for.
    pub ext: ExtHeaders,
    /// The payload, without pad.
    pub payload: &'a [u8],
}

impl<'a> PacketRepr<'a> {
    /// Parses and validates an IB packet (BTH .. ICRC). The ICRC is not checked; see
    /// [`Self::parse_checked`].
    pub fn parse(ib: &'a [u8]) -> Result<Self> {
        let total = ib.len();
        if total < BTH_LEN + ICRC_LEN {
            return Err(Error::Truncated);
        }
        let bth = BthRepr::parse(ib)?;
        let sr = sr_of(bth.tver)?;
        let set = bth.opcode.headers(sr)?;
        let info = bth.opcode.info().ok_or(Error::BadOpcode)?;
        let hdr_len = BTH_LEN + set.ext_len();
        let body_end = total - ICRC_LEN;
        if body_end < hdr_len {
            return Err(Error::Truncated);
        }
        let ext = ExtHeaders::parse(set, ib.get(BTH_LEN..hdr_len).ok_or(Error::Truncated)?)?;
        let body = ib.get(hdr_len..body_end).ok_or(Error::Truncated)?;
        if body.len() % 4 != 0 {
            return Err(Error::BadPad);
        }
        let pad = usize::from(bth.pad_cnt);
        if !info.payload && !body.is_empty() {
            return Err(Error::BadLength);
        }
        let plen = body.len().checked_sub(pad).ok_or(Error::BadPad)?;
        let payload = body.get(..plen).ok_or(Error::BadPad)?;
        if let Some(n) = bth.opcode.fixed_payload_len() {
            if plen != n {
                return Err(Error::BadLength);
            }
        }
        if let (Some(s), Some(a)) = (ext.sr_ack_eth, ext.aeth) {
            s.check_aeth(&a)?;
        }
        Ok(PacketRepr { bth, ext, payload })
    }

    /// Parses an IB packet and verifies its ICRC (computed with `C`) against the IP and UDP
    /// headers it came in.
    pub fn parse_checked_with<C: Crc32>(ip: &[u8], udp: &[u8], ib: &'a [u8]) -> Result<Self> {
        // The ICRC first, so that the parsed packet is built where the caller keeps it.
        icrc::verify_with::<C>(ip, udp, ib)?;
        Self::parse(ib)
    }

    /// [`Self::parse_checked_with`] with the host's CRC-32.
    #[cfg(not(MODULE))]
    pub fn parse_checked(ip: &[u8], udp: &[u8], ib: &'a [u8]) -> Result<Self> {
        Self::parse_checked_with::<icrc::SoftCrc32>(ip, udp, ib)
    }

    /// True for a packet in rxe_sr's SR format (BTH TVer = 1).
    pub fn is_sr(&self) -> bool {
        self.bth.tver == BTH_TVER_SR
    }

    /// Length of BTH plus extension headers.
    pub fn header_len(&self) -> usize {
        BTH_LEN + self.ext.set().ext_len()
    }

    /// Length of the whole IB packet: headers, payload, pad and ICRC.
    pub fn buffer_len(&self) -> usize {
        self.header_len()
            + self.payload.len()
            + usize::from(BthRepr::pad_for(self.payload.len()))
            + ICRC_LEN
    }

    /// Checks that the representation describes a valid packet (the same rules as parse).
    pub fn check(&self) -> Result<()> {
        let sr = sr_of(self.bth.tver)?;
        let set = self.bth.opcode.headers(sr)?;
        let info = self.bth.opcode.info().ok_or(Error::BadOpcode)?;
        if self.ext.set() != set {
            return Err(Error::BadField);
        }
        if !info.payload && !self.payload.is_empty() {
            return Err(Error::BadLength);
        }
        if let Some(n) = self.bth.opcode.fixed_payload_len() {
            if self.payload.len() != n {
                return Err(Error::BadLength);
            }
        }
        if self.bth.pad_cnt != BthRepr::pad_for(self.payload.len()) {
            return Err(Error::BadPad);
        }
        if let (Some(s), Some(a)) = (self.ext.sr_ack_eth, self.ext.aeth) {
            s.check_aeth(&a)?;
        }
        Ok(())
    }

    /// Writes the packet into the first [`Self::buffer_len`] bytes of `buf`, pad bytes
    /// and ICRC as zeros (fill the ICRC with [`icrc::fill`]). Returns the length written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        self.check()?;
        let len = self.buffer_len();
        let out = buf.get_mut(..len).ok_or(Error::BufferTooSmall)?;
        self.bth.emit(out)?;
        let hdr = BTH_LEN
            + self
                .ext
                .emit(out.get_mut(BTH_LEN..).ok_or(Error::BufferTooSmall)?)?;
        let end = hdr + self.payload.len();
        if !crate::bytes::copy(
            out.get_mut(hdr..end).ok_or(Error::BufferTooSmall)?,
            self.payload,
        ) {
            return Err(Error::BufferTooSmall);
        }
        out.get_mut(end..).ok_or(Error::BufferTooSmall)?.fill(0);
        Ok(len)
    }

    /// Writes a packet whose `payload_len`-byte payload the caller fills in place: the
    /// headers, then (after the payload) zero pad bytes and a zero ICRC. `self.payload` must
    /// be empty and `bth.pad_cnt` must match `payload_len`. Returns (offset of the payload,
    /// total length); the packet is `buf[..total]`.
    #[cfg(not(MODULE))]
    pub fn emit_headers(&self, payload_len: usize, buf: &mut [u8]) -> Result<(usize, usize)> {
        let hdr = self.emit_header_bytes(payload_len, buf)?;
        let total = hdr + payload_len + usize::from(self.bth.pad_cnt) + ICRC_LEN;
        let out = buf.get_mut(..total).ok_or(Error::BufferTooSmall)?;
        out.get_mut(hdr + payload_len..)
            .ok_or(Error::BufferTooSmall)?
            .fill(0);
        Ok((hdr, total))
    }

    /// As `emit_headers`, writing only the headers (BTH and extension headers) at
    /// the start of `buf`, which may end there: for a caller whose buffer already holds
    /// zeros after the payload, or that sends the payload, pad and ICRC from elsewhere.
    /// Returns the header length.
    pub fn emit_header_bytes(&self, payload_len: usize, buf: &mut [u8]) -> Result<usize> {
        if !self.payload.is_empty() {
            return Err(Error::BadLength);
        }
        let set = self.bth.opcode.headers(sr_of(self.bth.tver)?)?;
        if self.ext.set() != set {
            return Err(Error::BadField);
        }
        if let (Some(s), Some(a)) = (self.ext.sr_ack_eth, self.ext.aeth) {
            s.check_aeth(&a)?;
        }
        let info = self.bth.opcode.info().ok_or(Error::BadOpcode)?;
        if (!info.payload && payload_len > 0) || self.bth.pad_cnt != BthRepr::pad_for(payload_len) {
            return Err(Error::BadLength);
        }
        if let Some(n) = self.bth.opcode.fixed_payload_len() {
            if payload_len != n {
                return Err(Error::BadLength);
            }
        }
        let hdr = self.header_len();
        let out = buf.get_mut(..hdr).ok_or(Error::BufferTooSmall)?;
        self.bth.emit(out)?;
        self.ext
            .emit(out.get_mut(BTH_LEN..).ok_or(Error::BufferTooSmall)?)?;
        Ok(hdr)
    }

    /// Emits the packet and fills in its ICRC for the given IP and UDP headers.
    #[cfg(not(MODULE))]
    pub fn emit_with_icrc(&self, ip: &[u8], udp: &[u8], buf: &mut [u8]) -> Result<usize> {
        let len = self.emit(buf)?;
        icrc::fill(ip, udp, buf.get_mut(..len).ok_or(Error::BufferTooSmall)?)?;
        Ok(len)
    }
}

/// A zero-copy view of a validated IB packet (BTH .. ICRC).
#[derive(Clone, Copy, Debug)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
    hdr_len: usize,
    payload_len: usize,
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl<T: AsRef<[u8]>> Packet<T> {
    /// Validates `buffer` with the rules of [`PacketRepr::parse`] and wraps it.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let (hdr_len, payload_len) = {
            let r = PacketRepr::parse(buffer.as_ref())?;
            (r.header_len(), r.payload.len())
        };
        Ok(Packet {
            buffer,
            hdr_len,
            payload_len,
        })
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The BTH.
    pub fn bth(&self) -> Bth<&[u8]> {
        Bth::new_unchecked(self.buffer.as_ref())
    }

    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        self.bth().opcode()
    }

    /// The bytes of the extension headers.
    pub fn ext_bytes(&self) -> &[u8] {
        self.buffer
            .as_ref()
            .get(BTH_LEN..self.hdr_len)
            .unwrap_or(&[])
    }

    /// The payload, without pad.
    pub fn payload(&self) -> &[u8] {
        self.buffer
            .as_ref()
            .get(self.hdr_len..self.hdr_len + self.payload_len)
            .unwrap_or(&[])
    }

    /// The ICRC value carried in the trailer.
    pub fn icrc(&self) -> u32 {
        icrc::carried(self.buffer.as_ref()).unwrap_or(0)
    }

    /// The parsed representation.
    pub fn repr(&self) -> Result<PacketRepr<'_>> {
        PacketRepr::parse(self.buffer.as_ref())
    }

    /// Verifies the ICRC against the IP and UDP headers.
    #[cfg(not(MODULE))]
    pub fn verify_icrc(&self, ip: &[u8], udp: &[u8]) -> Result<()> {
        icrc::verify(ip, udp, self.buffer.as_ref())
    }
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (s, e) = (self.hdr_len, self.hdr_len + self.payload_len);
        self.buffer.as_mut().get_mut(s..e).unwrap_or(&mut [])
    }

    /// Recomputes and stores the ICRC.
    #[cfg(not(MODULE))]
    pub fn fill_icrc(&mut self, ip: &[u8], udp: &[u8]) -> Result<u32> {
        icrc::fill(ip, udp, self.buffer.as_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::psn::Psn;

    fn send_only(payload: &[u8]) -> PacketRepr<'_> {
        PacketRepr {
            bth: BthRepr {
                opcode: Opcode::RC_SEND_ONLY,
                pad_cnt: BthRepr::pad_for(payload.len()),
                dest_qpn: 0x11,
                psn: Psn::new(5),
                ..Default::default()
            },
            ext: ExtHeaders::default(),
            payload,
        }
    }

    #[test]
    fn emit_parse_round_trip() {
        let p = send_only(b"hello");
        assert_eq!(p.buffer_len(), 12 + 5 + 3 + 4);
        let mut b = [0xaau8; 64];
        let n = p.emit(&mut b).unwrap();
        assert_eq!(n, 24);
        assert_eq!(&b[17..24], &[0; 7]); // pad and ICRC zeroed
        let q = PacketRepr::parse(&b[..n]).unwrap();
        assert_eq!(q, p);
        let v = Packet::new_checked(&b[..n]).unwrap();
        assert_eq!(v.payload(), b"hello");
        assert_eq!(v.opcode(), Opcode::RC_SEND_ONLY);
        assert_eq!(v.ext_bytes(), &[] as &[u8]);
    }

    #[test]
    fn malformed() {
        let p = send_only(b"hello");
        let mut b = [0u8; 24];
        p.emit(&mut b).unwrap();
        assert_eq!(PacketRepr::parse(&b[..15]), Err(Error::Truncated));
        assert_eq!(PacketRepr::parse(&b[..23]), Err(Error::BadPad));
        let mut bad = b;
        bad[0] = 0x15;
        assert_eq!(PacketRepr::parse(&bad), Err(Error::BadOpcode));
        let mut bad = b;
        bad[1] = 0x02; // TVer 2
        assert_eq!(PacketRepr::parse(&bad), Err(Error::BadVersion));
        // Pad count larger than payload + pad.
        let z = send_only(b"");
        let mut zb = [0u8; 16];
        z.emit(&mut zb).unwrap();
        zb[1] = 0x10;
        assert_eq!(PacketRepr::parse(&zb), Err(Error::BadPad));
        // ACK with payload.
        let mut ack = [0u8; 24];
        ack[0] = 0x11;
        assert_eq!(PacketRepr::parse(&ack), Err(Error::BadLength));
        // Wrong pad in a repr.
        let mut w = send_only(b"hello");
        w.bth.pad_cnt = 0;
        assert_eq!(w.emit(&mut b), Err(Error::BadPad));
        // Missing header in a repr.
        let mut w = send_only(b"");
        w.bth.opcode = Opcode::RC_RDMA_WRITE_ONLY;
        assert_eq!(w.emit(&mut b), Err(Error::BadField));
        assert_eq!(
            send_only(b"hello").emit(&mut b[..23]),
            Err(Error::BufferTooSmall)
        );
    }
}
