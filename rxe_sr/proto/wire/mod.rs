// SPDX-License-Identifier: GPL-2.0
//! The RoCEv2 wire format: IBTA transport headers, rxe_sr's SR extension headers and the
//! ICRC.
//!
//! Built in the smoltcp `wire` manner: zero-copy views over byte slices ([`bth::Bth`],
//! [`packet::Packet`]) and plain representation structs with `parse` / `emit`
//! ([`bth::BthRepr`], [`ext_headers`], [`sr_ext`], [`packet::PacketRepr`]). Nothing here
//! allocates, leaves safe Rust, uses floating point, or panics on any input: every access to
//! packet bytes is bounds-checked and every failure is an [`Error`].
//!
//! What a RoCEv2 packet looks like (IBTA Vol. 1 ch. 9 and Annex A17):
//!
//! ```text
//! | IPv4/IPv6 | UDP (dport 4791) | BTH | ext headers | payload | pad | ICRC |
//!                                  \_______________ "IB packet" ___________/
//! ```
//!
//! - [`ip`]: splits an IP datagram into IP header, UDP header and IB packet.
//! - [`bth`]: the Base Transport Header (12 bytes).
//! - [`opcode`]: the opcode table: which extension headers an opcode carries, payload,
//!   first/middle/last/only position, immediate data, request or response.
//! - [`ext_headers`]: RETH, AETH, DETH, ImmDt, IETH, AtomicETH, AtomicAckETH, FETH.
//! - [`sr_ext`]: rxe_sr's selective-retransmission extension headers (MSN-ETH, SR-ACK-ETH),
//!   only ever sent on QPs that negotiated them; `recovery=gbn` is byte-for-byte RoCEv2.
//! - [`caps`]: the per-QP capability exchange that decides SR or standard GBN.
//! - [`packet`]: whole IB packet parse/emit: BTH, headers by opcode, payload, pad, ICRC.
//! - [`icrc`]: the invariant CRC with the RoCEv2 masked fields.
//! - `repair`, `fec_caps`: the FEC shim's repair header and its offer in BTH Resv7
//!   (host-only until the transport sends them).
//! - [`pma`]: the Performance Management Agent's MADs (port counters), which the RDMA
//!   core sends the driver for the port's `counters/` in sysfs.

pub mod bth;
pub mod caps;
pub mod ext_headers;
pub mod fec_caps;
pub mod icrc;
pub mod ip;
pub mod opcode;
pub mod packet;
pub mod pma;
pub mod repair;
pub mod sr_ext;

pub use bth::{Bth, BthRepr};
pub use caps::{CapAnswer, RequesterCaps, RequesterState, ResponderCaps, SrCap, SrScheme};
pub use ext_headers::{Aeth, AethKind, AtomicAckEth, AtomicEth, Deth, Feth, Ieth, ImmDt, Reth};
pub use icrc::ICRC_LEN;
pub use opcode::{Headers, OpInfo, OpKind, Opcode, Position, Transport};
pub use packet::{ExtHeaders, Packet, PacketRepr};
pub use sr_ext::{MsnEth, SrAckEth, SrAckKind, BTH_TVER_SR, BTH_TVER_STD};

/// The UDP destination port of RoCEv2 (IANA "roce").
pub const ROCEV2_UDP_PORT: u16 = 4791;

/// Why a packet or header could not be parsed or emitted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Error {
    /// The bytes end before a header or field that must be there.
    Truncated,
    /// The BTH opcode is reserved, unknown, or not supported (RD, XRC, manufacturer).
    BadOpcode,
    /// The pad count does not fit: payload + pad is not 4-byte aligned, pad exceeds the
    /// payload, or an opcode without payload has pad or payload bytes.
    BadPad,
    /// The ICRC carried in the packet differs from the one computed over it.
    BadIcrc,
    /// The BTH transport header version (TVer) is neither 0 (IBTA) nor rxe_sr's SR
    /// version, or SR headers were signalled on a transport that has none (UC, UD, CNP).
    BadVersion,
    /// A length is inconsistent: an opcode's fixed payload size (CNP, ATOMIC_WRITE), or the
    /// IP/UDP length fields against the bytes present.
    BadLength,
    /// An SR extension header is malformed: nonzero reserved bits, unknown kind, or a kind
    /// that contradicts the AETH syndrome.
    BadSrHeader,
    /// The IP or UDP header is not a RoCEv2 one (version, protocol, fragment, port).
    BadIpHeader,
    /// A representation field does not fit its wire field (a 24-bit QPN above 2^24 ...),
    /// or the extension headers given do not match the opcode.
    BadField,
    /// The output buffer is too small for what is emitted.
    BufferTooSmall,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = match self {
            Error::Truncated => "truncated",
            Error::BadOpcode => "bad opcode",
            Error::BadPad => "bad pad",
            Error::BadIcrc => "bad ICRC",
            Error::BadVersion => "bad transport header version",
            Error::BadLength => "bad length",
            Error::BadSrHeader => "bad SR extension header",
            Error::BadIpHeader => "bad IP/UDP header",
            Error::BadField => "field out of range",
            Error::BufferTooSmall => "buffer too small",
        };
        f.write_str(s)
    }
}

/// The result type of this module.
pub type Result<T> = core::result::Result<T, Error>;

/// Largest value of a 24-bit wire field (QPN, PSN, MSN, offsets).
pub const U24_MAX: u32 = (1 << 24) - 1;

/// Length of the BTH in bytes: where the extension headers of every packet begin.
pub const BTH_LEN: usize = 12;

/// Bounds-checked big-endian field access shared by the header modules.
pub(crate) mod field {
    use super::{Error, Result};

    /// `N` bytes at `off`, or `Truncated`.
    pub(crate) fn array<const N: usize>(b: &[u8], off: usize) -> Result<[u8; N]> {
        let end = off.checked_add(N).ok_or(Error::Truncated)?;
        let s = b.get(off..end).ok_or(Error::Truncated)?;
        crate::bytes::array(s).ok_or(Error::Truncated)
    }

    /// The byte at `off`.
    pub(crate) fn u8_at(b: &[u8], off: usize) -> Result<u8> {
        b.get(off).copied().ok_or(Error::Truncated)
    }

    /// Big-endian u16 at `off`.
    pub(crate) fn be16(b: &[u8], off: usize) -> Result<u16> {
        array::<2>(b, off).map(u16::from_be_bytes)
    }

    /// Big-endian 24-bit value at `off`.
    pub(crate) fn be24(b: &[u8], off: usize) -> Result<u32> {
        let a = array::<3>(b, off)?;
        Ok(u32::from_be_bytes([0, a[0], a[1], a[2]]))
    }

    /// Big-endian u32 at `off`.
    pub(crate) fn be32(b: &[u8], off: usize) -> Result<u32> {
        array::<4>(b, off).map(u32::from_be_bytes)
    }

    /// Big-endian u64 at `off`.
    pub(crate) fn be64(b: &[u8], off: usize) -> Result<u64> {
        array::<8>(b, off).map(u64::from_be_bytes)
    }

    /// Writes `src` at `off`, or `BufferTooSmall`.
    pub(crate) fn put(b: &mut [u8], off: usize, src: &[u8]) -> Result<()> {
        let end = off.checked_add(src.len()).ok_or(Error::BufferTooSmall)?;
        let dst = b.get_mut(off..end).ok_or(Error::BufferTooSmall)?;
        if crate::bytes::copy(dst, src) {
            Ok(())
        } else {
            Err(Error::BufferTooSmall)
        }
    }

    /// Writes a byte at `off`.
    pub(crate) fn put_u8(b: &mut [u8], off: usize, v: u8) -> Result<()> {
        put(b, off, &[v])
    }

    /// Writes a big-endian 24-bit value at `off`; `BadField` if it does not fit.
    pub(crate) fn put_be24(b: &mut [u8], off: usize, v: u32) -> Result<()> {
        if v > super::U24_MAX {
            return Err(Error::BadField);
        }
        let a = v.to_be_bytes();
        put(b, off, &[a[1], a[2], a[3]])
    }

    /// Writes a big-endian u16 at `off`.
    pub(crate) fn put_be16(b: &mut [u8], off: usize, v: u16) -> Result<()> {
        put(b, off, &v.to_be_bytes())
    }

    /// Writes a big-endian u32 at `off`.
    pub(crate) fn put_be32(b: &mut [u8], off: usize, v: u32) -> Result<()> {
        put(b, off, &v.to_be_bytes())
    }

    /// Writes a big-endian u64 at `off`.
    pub(crate) fn put_be64(b: &mut [u8], off: usize, v: u64) -> Result<()> {
        put(b, off, &v.to_be_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::field;
    use super::Error;

    #[test]
    fn field_access_is_bounds_checked() {
        let b = [1u8, 2, 3, 4, 5];
        assert_eq!(field::be32(&b, 1), Ok(0x0203_0405));
        assert_eq!(field::be32(&b, 2), Err(Error::Truncated));
        assert_eq!(field::be24(&b, usize::MAX), Err(Error::Truncated));
        assert_eq!(field::be64(&b, 0), Err(Error::Truncated));
        let mut o = [0u8; 3];
        assert_eq!(
            field::put_be24(&mut o, 0, 0x1_000_000),
            Err(Error::BadField)
        );
        assert_eq!(field::put_be24(&mut o, 0, 0xabcdef), Ok(()));
        assert_eq!(o, [0xab, 0xcd, 0xef]);
        assert_eq!(field::put_be32(&mut o, 0, 1), Err(Error::BufferTooSmall));
        assert_eq!(
            field::put(&mut o, usize::MAX, &[1]),
            Err(Error::BufferTooSmall)
        );
    }
}
