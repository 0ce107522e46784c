// SPDX-License-Identifier: GPL-2.0
//! The IBTA extended transport headers (Vol. 1 9.3), all big endian:
//!
//! | header       | bytes | layout                                                     |
//! |--------------|-------|------------------------------------------------------------|
//! | RETH         | 16    | VA (8) · R_Key (4) · DMA Length (4)                        |
//! | AETH         | 4     | Syndrome (1) · MSN (3)                                     |
//! | DETH         | 8     | Q_Key (4) · Resv8 (1) · SrcQP (3)                          |
//! | ImmDt        | 4     | Immediate data                                             |
//! | IETH         | 4     | R_Key to invalidate                                        |
//! | AtomicETH    | 28    | VA (8) · R_Key (4) · Swap/Add Data (8) · Compare Data (8)  |
//! | AtomicAckETH | 8     | Original Remote Data                                       |
//! | FETH         | 4     | Reserved (26 bits) · SEL (2 bits) · PLT (4 bits)           |
//!
//! Each is a plain struct with `parse` (from the first `LEN` bytes of a slice) and `emit`
//! (into the first `LEN` bytes of a buffer). Reserved bits are kept where the IBTA has
//! them, so that re-emitting a parsed header is byte-identical.

use super::field;
use super::{Error, Result, U24_MAX};

/// RDMA Extended Transport Header: the remote buffer of a WRITE, READ, FLUSH or
/// ATOMIC_WRITE.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct Reth {
    /// Virtual address of the remote buffer.
    pub va: u64,
    /// R_Key of the remote memory region.
    pub rkey: u32,
    /// DMA length in bytes (of the whole message).
    pub dma_len: u32,
}

impl Reth {
    /// Length in bytes.
    pub const LEN: usize = 16;

    /// Parses the first [`Self::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        Ok(Reth {
            va: field::be64(b, 0)?,
            rkey: field::be32(b, 8)?,
            dma_len: field::be32(b, 12)?,
        })
    }

    /// Writes the header into the first [`Self::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        let b = b.get_mut(..Self::LEN).ok_or(Error::BufferTooSmall)?;
        field::put_be64(b, 0, self.va)?;
        field::put_be32(b, 8, self.rkey)?;
        field::put_be32(b, 12, self.dma_len)
    }
}

/// AETH syndrome of a positive ACK with an unlimited credit count (what rdma_rxe sends).
pub const AETH_ACK_UNLIMITED: u8 = 0x1f;
/// AETH syndrome of a NAK "PSN sequence error" (IBTA code 0).
pub const AETH_NAK_PSN_SEQ_ERROR: u8 = 0x60;
/// AETH syndrome of a NAK "invalid request" (code 1).
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const AETH_NAK_INVALID_REQUEST: u8 = 0x61;
/// AETH syndrome of a NAK "remote access error" (code 2).
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const AETH_NAK_REMOTE_ACCESS_ERROR: u8 = 0x62;
/// AETH syndrome of a NAK "remote operational error" (code 3).
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const AETH_NAK_REMOTE_OPERATIONAL_ERROR: u8 = 0x63;

/// The meaning of an AETH syndrome (IBTA 9.7.5.1, table 43).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum AethKind {
    /// Positive ACK (type 00) with its credit count (0x1f: unlimited / invalid).
    Ack {
        /// The 5-bit credit count.
        credits: u8,
    },
    /// Receiver-not-ready NAK (type 01) with its 5-bit timer code.
    RnrNak {
        /// The 5-bit RNR timer code.
        timer: u8,
    },
    /// NAK (type 11) with its 5-bit code (0 PSN sequence error, 1 invalid request,
    /// 2 remote access error, 3 remote operational error, 4 invalid RD request).
    Nak {
        /// The 5-bit NAK code.
        code: u8,
    },
    /// Type 10 or bit 7 set: reserved syndromes a receiver must not act on.
    Reserved,
}

/// ACK Extended Transport Header.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct Aeth {
    /// The raw 8-bit syndrome; see [`Aeth::kind`].
    pub syndrome: u8,
    /// MSN: the responder's message sequence number (24 bits).
    pub msn: u32,
}

impl Aeth {
    /// Length in bytes.
    pub const LEN: usize = 4;

    /// A positive ACK with unlimited credits.
    pub const fn ack(msn: u32) -> Self {
        Aeth {
            syndrome: AETH_ACK_UNLIMITED,
            msn,
        }
    }

    /// A NAK with `code` (0..=31).
    pub const fn nak(code: u8, msn: u32) -> Self {
        Aeth {
            syndrome: 0x60 | (code & 0x1f),
            msn,
        }
    }

    /// An RNR NAK with `timer` (0..=31).
    pub const fn rnr_nak(timer: u8, msn: u32) -> Self {
        Aeth {
            syndrome: 0x20 | (timer & 0x1f),
            msn,
        }
    }

    /// Decodes the syndrome.
    pub const fn kind(&self) -> AethKind {
        let low = self.syndrome & 0x1f;
        match self.syndrome >> 5 {
            0 => AethKind::Ack { credits: low },
            1 => AethKind::RnrNak { timer: low },
            3 => AethKind::Nak { code: low },
            _ => AethKind::Reserved,
        }
    }

    /// Parses the first [`Self::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        Ok(Aeth {
            syndrome: field::u8_at(b, 0)?,
            msn: field::be24(b, 1)?,
        })
    }

    /// Writes the header into the first [`Self::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        let b = b.get_mut(..Self::LEN).ok_or(Error::BufferTooSmall)?;
        field::put_u8(b, 0, self.syndrome)?;
        field::put_be24(b, 1, self.msn)
    }
}

/// Datagram Extended Transport Header (UD).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct Deth {
    /// Q_Key.
    pub qkey: u32,
    /// Resv8: reserved, 0 on send; kept for byte-identical re-emit.
    pub resv8: u8,
    /// SrcQP: the source QP number (24 bits).
    pub src_qpn: u32,
}

impl Deth {
    /// Length in bytes.
    pub const LEN: usize = 8;

    /// Parses the first [`Self::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        Ok(Deth {
            qkey: field::be32(b, 0)?,
            resv8: field::u8_at(b, 4)?,
            src_qpn: field::be24(b, 5)?,
        })
    }

    /// Writes the header into the first [`Self::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        if self.src_qpn > U24_MAX {
            return Err(Error::BadField);
        }
        let b = b.get_mut(..Self::LEN).ok_or(Error::BufferTooSmall)?;
        field::put_be32(b, 0, self.qkey)?;
        field::put_u8(b, 4, self.resv8)?;
        field::put_be24(b, 5, self.src_qpn)
    }
}

/// Immediate data (ImmDt), carried as sent (network order on the wire).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct ImmDt {
    /// The 32-bit immediate value, big endian on the wire.
    pub data: u32,
}

impl ImmDt {
    /// Length in bytes.
    pub const LEN: usize = 4;

    /// Parses the first [`Self::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        Ok(ImmDt {
            data: field::be32(b, 0)?,
        })
    }

    /// Writes the header into the first [`Self::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        field::put_be32(b, 0, self.data)
    }
}

/// Invalidate Extended Transport Header (SEND with invalidate).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct Ieth {
    /// The R_Key to invalidate.
    pub rkey: u32,
}

impl Ieth {
    /// Length in bytes.
    pub const LEN: usize = 4;

    /// Parses the first [`Self::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        Ok(Ieth {
            rkey: field::be32(b, 0)?,
        })
    }

    /// Writes the header into the first [`Self::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        field::put_be32(b, 0, self.rkey)
    }
}

/// Atomic Extended Transport Header (CompareSwap, FetchAdd).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct AtomicEth {
    /// Virtual address of the 8-byte target.
    pub va: u64,
    /// R_Key of the target region.
    pub rkey: u32,
    /// Swap data (CompareSwap) or add data (FetchAdd).
    pub swap_add: u64,
    /// Compare data (CompareSwap; unused by FetchAdd).
    pub compare: u64,
}

impl AtomicEth {
    /// Length in bytes.
    pub const LEN: usize = 28;

    /// Parses the first [`Self::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        Ok(AtomicEth {
            va: field::be64(b, 0)?,
            rkey: field::be32(b, 8)?,
            swap_add: field::be64(b, 12)?,
            compare: field::be64(b, 20)?,
        })
    }

    /// Writes the header into the first [`Self::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        let b = b.get_mut(..Self::LEN).ok_or(Error::BufferTooSmall)?;
        field::put_be64(b, 0, self.va)?;
        field::put_be32(b, 8, self.rkey)?;
        field::put_be64(b, 12, self.swap_add)?;
        field::put_be64(b, 20, self.compare)
    }
}

/// Atomic ACK Extended Transport Header.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct AtomicAckEth {
    /// The remote 8 bytes before the atomic operation.
    pub orig_rem_data: u64,
}

impl AtomicAckEth {
    /// Length in bytes.
    pub const LEN: usize = 8;

    /// Parses the first [`Self::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        Ok(AtomicAckEth {
            orig_rem_data: field::be64(b, 0)?,
        })
    }

    /// Writes the header into the first [`Self::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        field::put_be64(b, 0, self.orig_rem_data)
    }
}

/// FLUSH Extended Transport Header (IBTA 1.5), kept as its raw 32 bits.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
pub struct Feth {
    /// The raw word: reserved (31..6), SEL (5..4), PLT (3..0).
    pub bits: u32,
}

impl Feth {
    /// Length in bytes.
    pub const LEN: usize = 4;
    /// SEL 0: the RETH's range (`IB_FLUSH_RANGE`).
    pub const SEL_RANGE: u8 = 0;
    /// SEL 1: the whole memory region the R_Key names (`IB_FLUSH_MR`).
    pub const SEL_MR: u8 = 1;
    /// PLT bit 0: global visibility (`IB_FLUSH_GLOBAL`).
    pub const PLT_GLOBAL: u8 = 1;
    /// PLT bit 1: persistence (`IB_FLUSH_PERSISTENT`).
    pub const PLT_PERSISTENT: u8 = 2;

    /// A FETH with selectivity level `sel` (0..=3) and placement type `plt` (0..=15).
    pub const fn new(sel: u8, plt: u8) -> Self {
        Feth {
            bits: (((sel & 0x3) as u32) << 4) | ((plt & 0xf) as u32),
        }
    }

    /// SEL: selectivity level.
    pub const fn sel(&self) -> u8 {
        ((self.bits >> 4) & 0x3) as u8
    }

    /// PLT: placement type.
    pub const fn plt(&self) -> u8 {
        (self.bits & 0xf) as u8
    }

    /// Parses the first [`Self::LEN`] bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self> {
        Ok(Feth {
            bits: field::be32(b, 0)?,
        })
    }

    /// Writes the header into the first [`Self::LEN`] bytes of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        field::put_be32(b, 0, self.bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reth_layout() {
        let r = Reth {
            va: 0x0102_0304_0506_0708,
            rkey: 0x1122_3344,
            dma_len: 0x0000_1000,
        };
        let mut b = [0u8; 16];
        r.emit(&mut b).unwrap();
        assert_eq!(
            b,
            [1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x22, 0x33, 0x44, 0, 0, 0x10, 0]
        );
        assert_eq!(Reth::parse(&b), Ok(r));
        assert_eq!(Reth::parse(&b[..15]), Err(Error::Truncated));
        assert_eq!(r.emit(&mut [0u8; 15]), Err(Error::BufferTooSmall));
    }

    #[test]
    fn aeth_syndromes() {
        assert_eq!(Aeth::ack(5).kind(), AethKind::Ack { credits: 0x1f });
        assert_eq!(Aeth::nak(0, 5).syndrome, AETH_NAK_PSN_SEQ_ERROR);
        assert_eq!(Aeth::nak(2, 5).kind(), AethKind::Nak { code: 2 });
        assert_eq!(Aeth::rnr_nak(3, 0).kind(), AethKind::RnrNak { timer: 3 });
        assert_eq!(
            Aeth {
                syndrome: 0x40,
                msn: 0
            }
            .kind(),
            AethKind::Reserved
        );
        assert_eq!(
            Aeth {
                syndrome: 0x80,
                msn: 0
            }
            .kind(),
            AethKind::Reserved
        );
        let mut b = [0u8; 4];
        Aeth::ack(0x123456).emit(&mut b).unwrap();
        assert_eq!(b, [0x1f, 0x12, 0x34, 0x56]);
        assert_eq!(Aeth::parse(&b), Ok(Aeth::ack(0x123456)));
        assert_eq!(Aeth::ack(1 << 24).emit(&mut b), Err(Error::BadField));
    }

    #[test]
    fn deth_and_small_headers() {
        let d = Deth {
            qkey: 0x8001_0000,
            resv8: 0,
            src_qpn: 0x000abc,
        };
        let mut b = [0u8; 8];
        d.emit(&mut b).unwrap();
        assert_eq!(b, [0x80, 1, 0, 0, 0, 0, 0x0a, 0xbc]);
        assert_eq!(Deth::parse(&b), Ok(d));
        let mut b4 = [0u8; 4];
        ImmDt { data: 0xdead_beef }.emit(&mut b4).unwrap();
        assert_eq!(b4, [0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(Ieth::parse(&b4), Ok(Ieth { rkey: 0xdead_beef }));
        let f = Feth::new(1, 2);
        assert_eq!((f.sel(), f.plt(), f.bits), (1, 2, 0x12));
    }

    #[test]
    fn atomic_layouts() {
        let a = AtomicEth {
            va: 0x1000,
            rkey: 7,
            swap_add: 0xaaaa,
            compare: 0xbbbb,
        };
        let mut b = [0u8; 28];
        a.emit(&mut b).unwrap();
        assert_eq!(&b[8..12], &[0, 0, 0, 7]);
        assert_eq!(&b[18..20], &[0xaa, 0xaa]);
        assert_eq!(&b[26..28], &[0xbb, 0xbb]);
        assert_eq!(AtomicEth::parse(&b), Ok(a));
        let k = AtomicAckEth { orig_rem_data: 42 };
        let mut b = [0u8; 8];
        k.emit(&mut b).unwrap();
        assert_eq!(AtomicAckEth::parse(&b), Ok(k));
    }
}
