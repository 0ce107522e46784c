// SPDX-License-Identifier: GPL-2.0
//! The IP and UDP encapsulation of RoCEv2, only as far as the ICRC and the tests need it:
//! splitting a datagram into IP header, UDP header and IB packet, with the length and
//! protocol checks that keep slicing in bounds. (In the kernel the network stack has
//! already done this; the IB packet is the UDP payload of the skb.)

use super::field;
use super::{Error, Result, ROCEV2_UDP_PORT};

/// Length of the UDP header.
pub const UDP_HEADER_LEN: usize = 8;
/// IP protocol / IPv6 next header number of UDP.
pub const IPPROTO_UDP: u8 = 17;

/// A RoCEv2 datagram split into its three parts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RoceDatagram<'a> {
    /// The whole IPv4 (with options) or IPv6 header.
    pub ip_header: &'a [u8],
    /// The 8-byte UDP header.
    pub udp_header: &'a [u8],
    /// The UDP payload: BTH .. ICRC.
    pub ib: &'a [u8],
}

impl<'a> RoceDatagram<'a> {
    /// Splits an IPv4 or IPv6 datagram (starting at the IP header) carrying UDP to port
    /// 4791. Bytes after the IP total length (Ethernet padding) are ignored. IPv6
    /// hop-by-hop, routing and destination options headers are stepped over (at most
    /// [`MAX_IPV6_EXT_HEADERS`]); `ip_header` is then the fixed 40-byte header, as the
    /// ICRC covers it. Fragments, other extension headers (AH, ESP, fragment) and length
    /// fields that disagree with the bytes present are [`Error::BadIpHeader`] or
    /// [`Error::BadLength`].
    pub fn parse(d: &'a [u8]) -> Result<Self> {
        let first = field::u8_at(d, 0)?;
        let (hlen, total) = match first >> 4 {
            4 => {
                let hlen = usize::from(first & 0x0f) * 4;
                if hlen < 20 {
                    return Err(Error::BadIpHeader);
                }
                let total = usize::from(field::be16(d, 2)?);
                let frag = field::be16(d, 6)?;
                // MF set or a fragment offset: not a whole datagram.
                if frag & 0x3fff != 0 || field::u8_at(d, 9)? != IPPROTO_UDP {
                    return Err(Error::BadIpHeader);
                }
                (hlen, total)
            }
            6 => {
                let payload = usize::from(field::be16(d, 4)?);
                (IPV6_HEADER_LEN, IPV6_HEADER_LEN + payload)
            }
            _ => return Err(Error::BadIpHeader),
        };
        if total < hlen + UDP_HEADER_LEN {
            return Err(Error::BadLength);
        }
        let d = d.get(..total).ok_or(Error::Truncated)?;
        let ip_header = d.get(..hlen).ok_or(Error::Truncated)?;
        let udp_off = if hlen == IPV6_HEADER_LEN {
            ipv6_udp_offset(d)?
        } else {
            hlen
        };
        let rest = d.get(udp_off..).ok_or(Error::Truncated)?;
        let udp_header = rest.get(..UDP_HEADER_LEN).ok_or(Error::Truncated)?;
        if field::be16(udp_header, 2)? != ROCEV2_UDP_PORT {
            return Err(Error::BadIpHeader);
        }
        let ulen = usize::from(field::be16(udp_header, 4)?);
        if ulen < UDP_HEADER_LEN || ulen != rest.len() {
            return Err(Error::BadLength);
        }
        let ib = rest.get(UDP_HEADER_LEN..).ok_or(Error::Truncated)?;
        Ok(RoceDatagram {
            ip_header,
            udp_header,
            ib,
        })
    }

    /// The destination as a RoCEv2 GID: an IPv6 address as it is, an IPv4 address mapped
    /// (`::ffff:a.b.c.d`). A multicast packet's group is its destination GID.
    pub fn dest_gid(&self) -> [u8; 16] {
        self.gid_at(24, 16)
    }

    /// The source as a RoCEv2 GID (mapped as [`Self::dest_gid`]).
    pub fn src_gid(&self) -> [u8; 16] {
        self.gid_at(8, 12)
    }

    /// The address at `v6_off` (IPv6) or `v4_off` (IPv4) of the IP header, as a GID.
    fn gid_at(&self, v6_off: usize, v4_off: usize) -> [u8; 16] {
        let mut gid = [0u8; 16];
        if self.ip_header.len() == 40 {
            if let Some(a) = self.ip_header.get(v6_off..v6_off + 16) {
                let _ = crate::bytes::copy(&mut gid, a);
            }
        } else if let (Some(dst), Some(a)) =
            (gid.get_mut(12..), self.ip_header.get(v4_off..v4_off + 4))
        {
            let _ = crate::bytes::copy(dst, a);
            gid[10] = 0xff;
            gid[11] = 0xff;
        }
        gid
    }
}

/// Length of the fixed IPv6 header.
pub const IPV6_HEADER_LEN: usize = 40;
/// Most IPv6 extension headers stepped over before the UDP header.
pub const MAX_IPV6_EXT_HEADERS: usize = 8;

/// Where the UDP header of the IPv6 datagram `d` (cut at its payload length) begins:
/// after the fixed header and any hop-by-hop (0), routing (43) and destination options
/// (60) headers, each `8 * (1 + Hdr Ext Len)` bytes (RFC 8200 4.3-4.6). The network stack
/// has processed them by the time the datagram reaches us (a routing header with segments
/// left was forwarded, not delivered); fragments are reassembled and lose their header.
fn ipv6_udp_offset(d: &[u8]) -> Result<usize> {
    const HOP_BY_HOP: u8 = 0;
    const ROUTING: u8 = 43;
    const DEST_OPTS: u8 = 60;
    let mut next = field::u8_at(d, 6)?;
    let mut off = IPV6_HEADER_LEN;
    for _ in 0..MAX_IPV6_EXT_HEADERS {
        match next {
            IPPROTO_UDP => return Ok(off),
            HOP_BY_HOP | ROUTING | DEST_OPTS => {
                next = field::u8_at(d, off)?;
                let len = (usize::from(field::u8_at(d, off + 1)?) + 1) * 8;
                off = off.checked_add(len).ok_or(Error::BadLength)?;
                if off > d.len() {
                    return Err(Error::BadLength);
                }
            }
            _ => return Err(Error::BadIpHeader),
        }
    }
    if next == IPPROTO_UDP {
        Ok(off)
    } else {
        Err(Error::BadIpHeader)
    }
}

/// The IPv4 header checksum (RFC 791) of `hdr` as it is, checksum field included: 0 when
/// the header is consistent. Used by the tests to build correct literal packets.
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in hdr.chunks(2) {
        let hi = u32::from(pair.first().copied().unwrap_or(0));
        let lo = u32::from(pair.get(1).copied().unwrap_or(0));
        sum = sum.wrapping_add((hi << 8) | lo);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(total: u16, proto: u8, frag: u16) -> [u8; 36] {
        let mut d = [0u8; 36];
        d[0] = 0x45;
        d[2..4].copy_from_slice(&total.to_be_bytes());
        d[6..8].copy_from_slice(&frag.to_be_bytes());
        d[9] = proto;
        d[22..24].copy_from_slice(&4791u16.to_be_bytes());
        d[24..26].copy_from_slice(&(total - 20).to_be_bytes());
        d
    }

    #[test]
    fn splits_ipv4() {
        let d = v4(36, 17, 0x4000);
        let r = RoceDatagram::parse(&d).unwrap();
        assert_eq!(r.ip_header.len(), 20);
        assert_eq!(r.udp_header.len(), 8);
        assert_eq!(r.ib.len(), 8);
        // Trailing Ethernet padding is ignored.
        let mut padded = [0u8; 60];
        padded[..36].copy_from_slice(&d);
        assert_eq!(RoceDatagram::parse(&padded).unwrap().ib.len(), 8);
    }

    #[test]
    fn rejects_non_roce() {
        assert_eq!(RoceDatagram::parse(&v4(36, 6, 0)), Err(Error::BadIpHeader));
        assert_eq!(
            RoceDatagram::parse(&v4(36, 17, 0x2000)),
            Err(Error::BadIpHeader)
        );
        assert_eq!(RoceDatagram::parse(&v4(36, 17, 1)), Err(Error::BadIpHeader));
        let mut d = v4(36, 17, 0);
        d[23] = 0;
        assert_eq!(RoceDatagram::parse(&d), Err(Error::BadIpHeader));
        let d = v4(36, 17, 0);
        assert_eq!(RoceDatagram::parse(&d[..35]), Err(Error::Truncated));
        let mut d = v4(36, 17, 0);
        d[25] = 9; // UDP length disagrees
        assert_eq!(RoceDatagram::parse(&d), Err(Error::BadLength));
        assert_eq!(RoceDatagram::parse(&[]), Err(Error::Truncated));
        assert_eq!(RoceDatagram::parse(&[0x44]), Err(Error::BadIpHeader));
    }

    #[test]
    fn checksum() {
        // RFC 1071 style example: a header whose checksum field is right sums to 0.
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let c = ipv4_checksum(&h);
        assert_eq!(c, 0xb861);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(ipv4_checksum(&h), 0);
    }
}
