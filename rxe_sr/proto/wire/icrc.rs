// SPDX-License-Identifier: GPL-2.0
//! The invariant CRC (ICRC) of RoCEv2 (IBTA Vol. 1 7.8.1, Annex A17.3.3).
//!
//! The ICRC is the IEEE 802.3 CRC-32 (reflected polynomial 0xEDB88320, initial value all
//! ones, final complement) computed over:
//!
//! 1. 8 bytes of 0xFF standing for the masked LRH of native InfiniBand;
//! 2. the IP header with its variant fields replaced by ones:
//!    IPv4: Type of Service (DSCP + ECN), Time to Live, Header Checksum;
//!    IPv6: Traffic Class, Flow Label, Hop Limit;
//! 3. the UDP header with its Checksum replaced by ones;
//! 4. the BTH with byte 4 (F, B, Resv6a, the former Resv8a) replaced by ones;
//! 5. everything after the BTH up to the ICRC: extension headers, payload and pad.
//!
//! It is transmitted least-significant byte first (like the Ethernet FCS): rdma_rxe
//! stores `~crc32_le(...)` as a little-endian word. Step 1 is folded into the seed
//! [`ICRC_SEED`] as rdma_rxe does. Unlike rdma_rxe (which always takes 20 bytes), IPv4
//! options, if any, are covered like the rest of the IPv4 header.
//!
//! The CRC-32 itself is a parameter ([`Crc32`]): the module computes it with the kernel's
//! `crc32_le()` (what rdma_rxe uses), the host with [`SoftCrc32`], this file's slice-by-8.

use super::ext_headers::{Feth, Reth};
use super::opcode::Opcode;
use super::BTH_LEN;
use super::{Error, Result};
use crate::bytes;

/// Length of the ICRC trailer in bytes.
pub const ICRC_LEN: usize = 4;

/// CRC-32 state after the initial all-ones value and the 8 bytes of 0xFF of the masked
/// LRH (rdma_rxe's seed 0xdebb20e3).
pub const ICRC_SEED: u32 = 0xdebb_20e3;

/// The slice-by-8 tables: `T[0]` is the byte-wise CRC-32 table, `T[k][i]` the CRC of byte
/// `i` followed by `k` zero bytes. Built at compile time.
#[cfg(not(MODULE))]
const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut n = 1;
    while n < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[n - 1][i];
            t[n][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        n += 1;
    }
    t
}

#[cfg(not(MODULE))]
static CRC32_TABLES: [[u32; 256]; 8] = make_tables();

#[cfg(not(MODULE))]
#[inline(always)]
fn tab(n: usize, i: u32) -> u32 {
    // `i` is masked to 0..=255 by every caller and `n < 8`: the lookup cannot miss.
    CRC32_TABLES
        .get(n)
        .and_then(|t| t.get((i & 0xff) as usize))
        .copied()
        .unwrap_or(0)
}

/// A CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) with the Linux `crc32_le()`
/// contract: feeds `data` into a running state, no initial or final inversion.
pub trait Crc32 {
    /// The state after `data`, from state `crc`.
    fn crc32_le(crc: u32, data: &[u8]) -> u32;
}

/// This file's CRC-32: slice-by-8 over tables built at compile time.
#[cfg(not(MODULE))]
pub struct SoftCrc32;

#[cfg(not(MODULE))]
impl Crc32 for SoftCrc32 {
    fn crc32_le(crc: u32, data: &[u8]) -> u32 {
        crc32_le(crc, data)
    }
}

/// Feeds `data` into a running reflected CRC-32 state (no initial or final inversion;
/// the Linux `crc32_le()` contract). Eight bytes per step (slice-by-8), then byte-wise.
#[cfg(not(MODULE))]
fn crc32_le(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(<[u8; 8]>::try_from(c).unwrap_or_default()) ^ u64::from(crc);
        let (lo, hi) = (w as u32, (w >> 32) as u32);
        crc = tab(7, lo)
            ^ tab(6, lo >> 8)
            ^ tab(5, lo >> 16)
            ^ tab(4, lo >> 24)
            ^ tab(3, hi)
            ^ tab(2, hi >> 8)
            ^ tab(1, hi >> 16)
            ^ tab(0, hi >> 24);
    }
    for &b in chunks.remainder() {
        crc = tab(0, crc ^ u32::from(b)) ^ (crc >> 8);
    }
    crc
}

/// The masked IP header: feeds `ip` into `crc` with the variant fields set to ones.
fn crc_ip<C: Crc32>(crc: u32, ip: &[u8]) -> Result<u32> {
    let first = *ip.first().ok_or(Error::Truncated)?;
    match first >> 4 {
        4 => {
            let ihl = usize::from(first & 0x0f) * 4;
            if ihl < 20 || ip.len() != ihl {
                return Err(Error::BadIpHeader);
            }
            let mut m: [u8; 20] = bytes::array(ip).ok_or(Error::Truncated)?;
            m[1] = 0xff; // TOS: DSCP + ECN
            m[8] = 0xff; // TTL
            m[10] = 0xff; // header checksum
            m[11] = 0xff;
            let crc = C::crc32_le(crc, &m);
            Ok(C::crc32_le(crc, ip.get(20..).unwrap_or(&[])))
        }
        6 => {
            if ip.len() != 40 {
                return Err(Error::BadIpHeader);
            }
            let mut m: [u8; 8] = bytes::array(ip).ok_or(Error::Truncated)?;
            m[0] |= 0x0f; // traffic class, high nibble
            m[1] = 0xff; // traffic class low nibble + flow label
            m[2] = 0xff;
            m[3] = 0xff;
            m[7] = 0xff; // hop limit
            let crc = C::crc32_le(crc, &m);
            Ok(C::crc32_le(crc, ip.get(8..).unwrap_or(&[])))
        }
        _ => Err(Error::BadIpHeader),
    }
}

/// Computes the ICRC value of an IB packet.
///
/// - `ip`: the whole IPv4 (20..60 bytes, as its IHL says) or IPv6 (40 bytes) header;
/// - `udp`: the 8-byte UDP header;
/// - `ib`: BTH, extension headers, payload and pad, **without** the ICRC trailer.
///
/// The result goes on the wire as `value.to_le_bytes()`.
pub fn compute_with<C: Crc32>(ip: &[u8], udp: &[u8], ib: &[u8]) -> Result<u32> {
    crc_of::<C>(ip, udp, ib).map(|crc| !crc)
}

/// The CRC-32 state after the IP and UDP headers and the first IB bytes `head` (BTH
/// first): a computation the caller carries on over the rest of the packet (a payload it
/// holds elsewhere, the pad), then ends with [`finish`].
pub fn state_with<C: Crc32>(ip: &[u8], udp: &[u8], head: &[u8]) -> Result<u32> {
    crc_of::<C>(ip, udp, head)
}

/// The ICRC value from the state after every covered byte (see [`state_with`]).
pub fn finish(state: u32) -> u32 {
    !state
}

/// The CRC-32 state after steps 1-5 (before the final complement).
fn crc_of<C: Crc32>(ip: &[u8], udp: &[u8], ib: &[u8]) -> Result<u32> {
    if udp.len() != 8 {
        return Err(Error::BadIpHeader);
    }
    let bth = ib.get(..BTH_LEN).ok_or(Error::Truncated)?;
    let crc = crc_ip::<C>(ICRC_SEED, ip)?;
    let mut u: [u8; 8] = bytes::array(udp).ok_or(Error::BadIpHeader)?;
    u[6] = 0xff;
    u[7] = 0xff;
    let crc = C::crc32_le(crc, &u);
    let mut b: [u8; BTH_LEN] = bytes::array(bth).ok_or(Error::Truncated)?;
    b[4] = 0xff;
    let crc = C::crc32_le(crc, &b);
    Ok(C::crc32_le(crc, ib.get(BTH_LEN..).unwrap_or(&[])))
}

/// An RC FLUSH packet without its ICRC: BTH, FETH and RETH, nothing else.
const FLUSH_LEN: usize = BTH_LEN + Feth::LEN + Reth::LEN;

/// The ICRC rdma_rxe (6.12) gives an RC FLUSH: its opcode table has no payload offset for
/// FLUSH, so what it takes for the payload is the packet from the BTH on, and its ICRC
/// covers the headers a second time, unmasked (steps 1-5, then the 32 bytes of BTH, FETH
/// and RETH again). `None` for any other packet.
fn rdma_rxe_flush_icrc<C: Crc32>(ip: &[u8], udp: &[u8], ib: &[u8]) -> Result<Option<u32>> {
    if ib.len() != FLUSH_LEN || ib.first() != Some(&Opcode::RC_FLUSH.0) {
        return Ok(None);
    }
    let crc = crc_of::<C>(ip, udp, ib)?;
    Ok(Some(!C::crc32_le(crc, ib)))
}

/// Splits `ib` (BTH .. ICRC) into the covered part and the 4 ICRC bytes.
fn split(ib: &[u8]) -> Result<(&[u8], [u8; ICRC_LEN])> {
    let n = ib.len().checked_sub(ICRC_LEN).ok_or(Error::Truncated)?;
    let (body, tail) = ib.split_at(n);
    let t: [u8; ICRC_LEN] = bytes::array(tail).ok_or(Error::Truncated)?;
    Ok((body, t))
}

/// The ICRC value carried in the last 4 bytes of `ib`.
pub fn carried(ib: &[u8]) -> Result<u32> {
    split(ib).map(|(_, t)| u32::from_le_bytes(t))
}

/// [`compute_with`] with [`SoftCrc32`].
#[cfg(not(MODULE))]
pub fn compute(ip: &[u8], udp: &[u8], ib: &[u8]) -> Result<u32> {
    compute_with::<SoftCrc32>(ip, udp, ib)
}

/// [`verify_with`] with [`SoftCrc32`].
#[cfg(not(MODULE))]
pub fn verify(ip: &[u8], udp: &[u8], ib: &[u8]) -> Result<()> {
    verify_with::<SoftCrc32>(ip, udp, ib)
}

/// [`fill_with`] with [`SoftCrc32`].
#[cfg(not(MODULE))]
pub fn fill(ip: &[u8], udp: &[u8], ib: &mut [u8]) -> Result<u32> {
    fill_with::<SoftCrc32>(ip, udp, ib)
}

/// Checks the ICRC of `ib` (BTH .. ICRC, ICRC included); [`Error::BadIcrc`] on mismatch.
pub fn verify_with<C: Crc32>(ip: &[u8], udp: &[u8], ib: &[u8]) -> Result<()> {
    let (body, t) = split(ib)?;
    let carried = u32::from_le_bytes(t);
    if compute_with::<C>(ip, udp, body)? == carried {
        return Ok(());
    }
    // An RC FLUSH from rdma_rxe carries its own ICRC: taken too, so that its FLUSHes reach
    // rxe_sr (rxe_sr's own FLUSHes carry the IBTA ICRC).
    if rdma_rxe_flush_icrc::<C>(ip, udp, body)? == Some(carried) {
        return Ok(());
    }
    Err(Error::BadIcrc)
}

/// Computes the ICRC of `ib` (BTH .. ICRC) and writes it into its last 4 bytes.
pub fn fill_with<C: Crc32>(ip: &[u8], udp: &[u8], ib: &mut [u8]) -> Result<u32> {
    let n = ib.len().checked_sub(ICRC_LEN).ok_or(Error::Truncated)?;
    let (body, tail) = ib.split_at_mut(n);
    let v = compute_with::<C>(ip, udp, body)?;
    if !bytes::copy(tail, &v.to_le_bytes()) {
        return Err(Error::Truncated);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_by_8_matches_bytewise() {
        let data: [u8; 300] = core::array::from_fn(|i| (i as u8).wrapping_mul(97).wrapping_add(13));
        for len in 0..data.len() {
            for start in 0..3 {
                let d = &data[start..len.max(start)];
                let mut want = 0x1234_5678u32;
                for &b in d {
                    want = tab(0, want ^ u32::from(b)) ^ (want >> 8);
                }
                assert_eq!(crc32_le(0x1234_5678, d), want);
            }
        }
    }

    #[test]
    fn crc32_check_value() {
        // The CRC-32/ISO-HDLC check value of "123456789".
        assert_eq!(!crc32_le(!0, b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn seed_is_eight_ones_bytes() {
        assert_eq!(crc32_le(!0, &[0xff; 8]), ICRC_SEED);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let ip4 = [0x45u8; 20];
        let udp = [0u8; 8];
        let bth = [0u8; 12];
        assert_eq!(compute(&ip4, &udp, &bth[..11]), Err(Error::Truncated));
        assert_eq!(compute(&ip4, &udp[..7], &bth), Err(Error::BadIpHeader));
        assert_eq!(compute(&ip4[..19], &udp, &bth), Err(Error::BadIpHeader));
        assert_eq!(compute(&[], &udp, &bth), Err(Error::Truncated));
        assert_eq!(compute(&[0x55; 20], &udp, &bth), Err(Error::BadIpHeader));
        assert_eq!(compute(&[0x60; 39], &udp, &bth), Err(Error::BadIpHeader));
        assert_eq!(verify(&ip4, &udp, &[0; 3]), Err(Error::Truncated));
        assert_eq!(fill(&ip4, &udp, &mut [0; 3]), Err(Error::Truncated));
    }

    #[test]
    fn a_state_carried_over_a_split_packet_gives_the_same_icrc() {
        let mut ip4 = [0u8; 20];
        ip4[0] = 0x45;
        ip4[9] = 17;
        let udp = [0xc0, 0x00, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00];
        let mut ib = [0u8; 12 + 1027 + 1];
        ib[0] = 0x0a;
        for (i, b) in ib.iter_mut().enumerate().skip(12) {
            *b = (i * 7) as u8;
        }
        let whole = compute(&ip4, &udp, &ib).unwrap();
        // Headers, then the payload in pieces, then the pad, as a datagram sent by reference.
        for head in [12, 20, 512] {
            let mut st = state_with::<SoftCrc32>(&ip4, &udp, &ib[..head]).unwrap();
            for piece in ib[head..].chunks(333) {
                st = SoftCrc32::crc32_le(st, piece);
            }
            assert_eq!(finish(st), whole);
        }
        assert_eq!(
            state_with::<SoftCrc32>(&ip4, &udp, &ib[..11]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn masked_fields_do_not_matter_and_others_do() {
        let mut ip4 = [0u8; 20];
        ip4[0] = 0x45;
        ip4[9] = 17;
        let udp = [0xc0, 0x00, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00];
        let mut ib = [0u8; 16];
        ib[0] = 0x04;
        let base = compute(&ip4, &udp, &ib[..12]).unwrap();
        fill(&ip4, &udp, &mut ib).unwrap();
        assert_eq!(verify(&ip4, &udp, &ib), Ok(()));
        assert_eq!(carried(&ib), Ok(base));
        let mut v = ip4;
        v[1] = 0x8a; // DSCP/ECN
        v[8] = 3; // TTL
        v[10] = 0x12; // checksum
        let mut u = udp;
        u[6] = 0x55; // UDP checksum
        let mut b = ib;
        b[4] = 0xc0; // FECN/BECN
        assert_eq!(verify(&v, &u, &b), Ok(()));
        let mut b = ib;
        b[8] = 0x80; // AckReq is covered
        assert_eq!(verify(&ip4, &udp, &b), Err(Error::BadIcrc));
        let mut v = ip4;
        v[12] = 1; // source address is covered
        assert_eq!(verify(&v, &udp, &ib), Err(Error::BadIcrc));
    }

    /// rdma_rxe's ICRC of an RC FLUSH (the headers covered twice) is taken for a FLUSH only,
    /// beside the IBTA one.
    #[test]
    fn an_rdma_rxe_flush_icrc_is_taken_for_flush_only() {
        let mut ip4 = [0u8; 20];
        ip4[0] = 0x45;
        ip4[9] = 17;
        let udp = [0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0x00, 0x00];
        let mut ib = [0u8; FLUSH_LEN + ICRC_LEN];
        ib[0] = Opcode::RC_FLUSH.0;
        ib[4] = 0x3f; // F/B, Resv6a: masked for the IBTA ICRC, not in the second pass
        ib[8] = 0x80;
        ib[15] = 0x11; // FETH: SEL 1, PLT 1
        ib[16..24].copy_from_slice(&0x1234_5678_9abc_u64.to_be_bytes());
        let body = ib[..FLUSH_LEN].to_vec();
        // By hand: the IBTA CRC state, then the 32 bytes again, complemented.
        let ibta = compute(&ip4, &udp, &body).unwrap();
        let rxe = !crc32_le(!ibta, &body);
        assert_ne!(rxe, ibta);
        ib[FLUSH_LEN..].copy_from_slice(&ibta.to_le_bytes());
        assert_eq!(verify(&ip4, &udp, &ib), Ok(()));
        ib[FLUSH_LEN..].copy_from_slice(&rxe.to_le_bytes());
        assert_eq!(verify(&ip4, &udp, &ib), Ok(()));
        let mut bad = ib;
        bad[FLUSH_LEN] ^= 1;
        assert_eq!(verify(&ip4, &udp, &bad), Err(Error::BadIcrc));
        // The same bytes under another opcode (RDMA WRITE ONLY) with rdma_rxe's FLUSH rule.
        let mut write = ib;
        write[0] = 0x0a;
        let rxe = !crc32_le(
            !compute(&ip4, &udp, &write[..FLUSH_LEN]).unwrap(),
            &write[..FLUSH_LEN],
        );
        write[FLUSH_LEN..].copy_from_slice(&rxe.to_le_bytes());
        assert_eq!(verify(&ip4, &udp, &write), Err(Error::BadIcrc));
    }

    #[test]
    fn ipv6_masks() {
        let mut ip6 = [0u8; 40];
        ip6[0] = 0x60;
        ip6[6] = 17;
        let udp = [0u8; 8];
        let ib = [0u8; 12];
        let base = compute(&ip6, &udp, &ib).unwrap();
        let mut v = ip6;
        v[0] = 0x6a;
        v[1] = 0xbc;
        v[2] = 0x12;
        v[3] = 0x34;
        v[7] = 64;
        assert_eq!(compute(&v, &udp, &ib), Ok(base));
        v[4] = 1; // payload length is covered
        assert_ne!(compute(&v, &udp, &ib), Ok(base));
    }
}
