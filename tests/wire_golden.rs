// SPDX-License-Identifier: GPL-2.0
//! Golden RoCEv2 packets: parse, check every field, re-emit byte-identical, ICRC correct.
//!
//! Sources of the bytes:
//! - `CNP_CONNECTX4_FRAME`: a RoCEv2 CNP captured on a Mellanox ConnectX-4 Lx, from
//!   scapy's test suite (secdev/scapy `test/contrib/roce.uts`, "RoCE CNP captured on
//!   ConnectX-4 Lx"), ICRC 0x82fd002a as carried on the wire. Real hardware, real ICRC:
//!   the strongest check of the masking rules.
//! - `SCAPY_UC_SEND_ONLY`: the UC SEND_ONLY example of the same scapy test, rebuilt byte
//!   for byte from its field list (its IP checksum 0xb4d5 and UDP checksum 0xaca2 match the
//!   test's asserts); ICRC 0x78f353f3 as asserted there (computed by scapy's roce.py).
//! - The other packets were built from the IBTA layouts by an independent generator (a
//!   short Python script: struct for the headers, `zlib.crc32` over 8 x 0xFF + the masked
//!   IP/UDP/BTH + rest, as scapy's `compute_icrc` does) which reproduces both scapy
//!   vectors above; none of their bytes come from this crate.

use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::wire::ext_headers::{
    Aeth, AethKind, AtomicAckEth, AtomicEth, Deth, Ieth, ImmDt, Reth, AETH_NAK_PSN_SEQ_ERROR,
};
use rxe_sr::proto::wire::ip::{ipv4_checksum, RoceDatagram, MAX_IPV6_EXT_HEADERS};
use rxe_sr::proto::wire::sr_ext::{MsnEth, SrAckEth, SrAckKind};
use rxe_sr::proto::wire::{
    icrc, CapAnswer, Error, Opcode, Packet, PacketRepr, RequesterCaps, RequesterState,
    ResponderCaps, SrCap, SrScheme,
};

/// Ethernet + IPv4 + UDP + CNP, from scapy's roce.uts (ConnectX-4 Lx capture).
const CNP_CONNECTX4_FRAME: [u8; 74] = [
    0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45, 0xc2,
    0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00,
    0x12, 0x01, 0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff, 0xff, 0x40, 0x00,
    0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd, 0x00, 0x2a,
];

/// IPv4 + UDP + UC SEND_ONLY (M, pad 2), from scapy's roce.uts.
const SCAPY_UC_SEND_ONLY: [u8; 64] = [
    0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0xb4, 0xd5, 0xc0, 0xa8, 0x00, 0x07,
    0xc0, 0xa8, 0x00, 0x07, 0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac, 0xa2, 0x24, 0x60, 0xff, 0xff,
    0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10, 0x46, 0x30, 0x81, 0x8b, 0xe2, 0x89, 0x35, 0xd9,
    0x0e, 0x9a, 0x95, 0x50, 0x54, 0x01, 0xbe, 0x88, 0x5e, 0x50, 0x00, 0x00, 0x78, 0xf3, 0x53, 0xf3,
];

/// 60 bytes; ICRC b9c6b1a2 (zlib.crc32, little-endian on the wire).
const V4_RC_SEND_ONLY: [u8; 60] = [
    0x45, 0x02, 0x00, 0x3c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x0c, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x04, 0x20, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x11, 0x80, 0x00, 0x0a, 0xbc, 0x72, 0x78, 0x65, 0x5f, 0x73, 0x72, 0x20, 0x67,
    0x6f, 0x6c, 0x64, 0x65, 0x6e, 0x21, 0x00, 0x00, 0xb9, 0xc6, 0xb1, 0xa2,
];

/// 96 bytes; ICRC 9c74a4c2 (zlib.crc32, little-endian on the wire).
const V6_RC_RDMA_WRITE_FIRST: [u8; 96] = [
    0x60, 0x21, 0x23, 0x45, 0x00, 0x38, 0x11, 0x40, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x66, 0xc0, 0x02, 0x12, 0xb7, 0x00, 0x38, 0x00, 0x00,
    0x06, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x7f, 0x12,
    0x34, 0x56, 0x00, 0x00, 0x00, 0x00, 0x12, 0x34, 0x00, 0x00, 0x20, 0x00, 0x00, 0x01, 0x02, 0x03,
    0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x9c, 0x74, 0xa4, 0xc2,
];

/// 60 bytes; ICRC e8d3bf13 (zlib.crc32, little-endian on the wire).
const V4_RC_RDMA_READ_REQUEST: [u8; 60] = [
    0x45, 0x8a, 0x00, 0x3c, 0x12, 0x34, 0x40, 0x00, 0x03, 0x11, 0xe1, 0x84, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x0c, 0x00, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x13, 0x80, 0x00, 0x02, 0x00, 0x00, 0x00, 0x7f, 0x00, 0xde, 0xad, 0xb0, 0x00,
    0x00, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x10, 0x00, 0xe8, 0xd3, 0xbf, 0x13,
];

/// 48 bytes; ICRC aac82f77 (zlib.crc32, little-endian on the wire).
const V4_RC_ACKNOWLEDGE: [u8; 48] = [
    0x45, 0x02, 0x00, 0x30, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x18, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0xff, 0x12, 0xb7, 0x00, 0x1c, 0x5a, 0x5a, 0x11, 0x00, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x01, 0x00, 0x1f, 0x00, 0x00, 0x07, 0xaa, 0xc8, 0x2f, 0x77,
];

/// 48 bytes; ICRC 253ac227 (zlib.crc32, little-endian on the wire).
const V4_RC_NAK_PSN_SEQ: [u8; 48] = [
    0x45, 0x02, 0x00, 0x30, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x18, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x14, 0x00, 0x0f, 0xff, 0xff, 0x60, 0x00, 0x00, 0x08, 0x25, 0x3a, 0xc2, 0x27,
];

/// 72 bytes; ICRC 85feef0b (zlib.crc32, little-endian on the wire).
const V4_RC_COMPARE_SWAP: [u8; 72] = [
    0x45, 0x02, 0x00, 0x48, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x00, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x34, 0x00, 0x00, 0x13, 0x00, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x15, 0x80, 0xff, 0xff, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
    0x00, 0x00, 0x00, 0x77, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x11, 0x11, 0x11, 0x11,
    0x11, 0x11, 0x11, 0x11, 0x85, 0xfe, 0xef, 0x0b,
];

/// 56 bytes; ICRC a0b0ce06 (zlib.crc32, little-endian on the wire).
const V4_RC_ATOMIC_ACKNOWLEDGE: [u8; 56] = [
    0x45, 0x02, 0x00, 0x38, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x10, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x24, 0x00, 0x00, 0x12, 0x00, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x16, 0x00, 0xff, 0xff, 0xfe, 0x1f, 0x00, 0x00, 0x09, 0x11, 0x11, 0x11, 0x11,
    0x11, 0x11, 0x11, 0x11, 0xa0, 0xb0, 0xce, 0x06,
];

/// 80 bytes; ICRC 019ff393 (zlib.crc32, little-endian on the wire).
const V6_UD_SEND_ONLY_WITH_IMMEDIATE: [u8; 80] = [
    0x60, 0x21, 0x23, 0x45, 0x00, 0x28, 0x11, 0x40, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x66, 0xc0, 0x02, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00,
    0x65, 0x90, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x42, 0x80, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x05, 0xca, 0xfe, 0xf0, 0x0d, 0x61, 0x62, 0x63, 0x00, 0x01, 0x9f, 0xf3, 0x93,
];

/// 56 bytes; ICRC 4826d89e (zlib.crc32, little-endian on the wire).
const V4_RC_SEND_LAST_WITH_INVALIDATE: [u8; 56] = [
    0x45, 0x02, 0x00, 0x38, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x10, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x24, 0x00, 0x00, 0x16, 0x90, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x17, 0x80, 0x00, 0x03, 0x00, 0x00, 0xc0, 0xff, 0xee, 0x31, 0x32, 0x33, 0x34,
    0x35, 0x36, 0x37, 0x00, 0x48, 0x26, 0xd8, 0x9e,
];

/// 60 bytes; ICRC 498eea4a (zlib.crc32, little-endian on the wire).
const V4_SR_SEND_MIDDLE: [u8; 60] = [
    0x45, 0x02, 0x00, 0x3c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x0c, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x01, 0x01, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x21, 0x00, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02,
    0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x49, 0x8e, 0xea, 0x4a,
];

/// 68 bytes; ICRC 6ff16eae (zlib.crc32, little-endian on the wire).
const V4_SR_RDMA_WRITE_MIDDLE: [u8; 68] = [
    0x45, 0x02, 0x00, 0x44, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x04, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x30, 0x00, 0x00, 0x07, 0x21, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x22, 0x00, 0x00, 0x05, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04, 0x00,
    0x00, 0x00, 0x00, 0x99, 0x00, 0x00, 0x10, 0x00, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0x00, 0x00,
    0x6f, 0xf1, 0x6e, 0xae,
];

/// 96 bytes; ICRC 5722c714 (zlib.crc32, little-endian on the wire).
const V6_SR_RDMA_WRITE_LAST_WITH_IMMEDIATE: [u8; 96] = [
    0x60, 0x21, 0x23, 0x45, 0x00, 0x38, 0x11, 0x40, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x66, 0xc0, 0x02, 0x12, 0xb7, 0x00, 0x38, 0x00, 0x00,
    0x09, 0x21, 0xff, 0xff, 0x00, 0x00, 0x00, 0x23, 0x80, 0x00, 0x05, 0x03, 0x00, 0x00, 0x00, 0x04,
    0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x99,
    0x00, 0x00, 0x0c, 0x02, 0x01, 0x02, 0x03, 0x04, 0x78, 0x79, 0x00, 0x00, 0x57, 0x22, 0xc7, 0x14,
];

/// 56 bytes; ICRC adea001a (zlib.crc32, little-endian on the wire).
const V4_SR_SACK: [u8; 56] = [
    0x45, 0x02, 0x00, 0x38, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x10, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x24, 0x00, 0x00, 0x11, 0x01, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x06, 0x00, 0x11, 0x00, 0x06, 0x05, 0x0a, 0x00, 0x06, 0x05,
    0x60, 0x00, 0x00, 0x0b, 0xad, 0xea, 0x00, 0x1a,
];

/// 56 bytes; ICRC ee569255 (zlib.crc32, little-endian on the wire).
const V4_SR_FNACK: [u8; 56] = [
    0x45, 0x02, 0x00, 0x38, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x10, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x24, 0x00, 0x00, 0x11, 0x01, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x06, 0x00, 0x2f, 0x00, 0x06, 0x40, 0x09, 0x00, 0x06, 0x10,
    0x60, 0x00, 0x00, 0x0b, 0xee, 0x56, 0x92, 0x55,
];

/// 56 bytes; ICRC a624f8a3 (zlib.crc32, little-endian on the wire).
const V4_SR_READ_ACK: [u8; 56] = [
    0x45, 0x02, 0x00, 0x38, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x10, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x24, 0x00, 0x00, 0x11, 0x01, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x25, 0x00, 0x00, 0x07, 0x00, 0x30, 0x00, 0x07, 0x00, 0x16, 0x00, 0x07, 0x00,
    0x1f, 0x00, 0x00, 0x0c, 0xa6, 0x24, 0xf8, 0xa3,
];

/// 68 bytes; ICRC e526ea4f (zlib.crc32, little-endian on the wire).
const V4_SR_RDMA_READ_REQUEST: [u8; 68] = [
    0x45, 0x02, 0x00, 0x44, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x04, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x30, 0x00, 0x00, 0x0c, 0x01, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x25, 0x80, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x55, 0x00, 0x00, 0x08, 0x00,
    0xe5, 0x26, 0xea, 0x4f,
];

/// 56 bytes; ICRC 80983ee6 (zlib.crc32, little-endian on the wire).
const V4_SR_RDMA_READ_RESPONSE_MIDDLE: [u8; 56] = [
    0x45, 0x02, 0x00, 0x38, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x10, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x24, 0x00, 0x00, 0x0e, 0x01, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x26, 0x00, 0x00, 0x07, 0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x01,
    0x3c, 0x3c, 0x3c, 0x3c, 0x80, 0x98, 0x3e, 0xe6,
];

/// 48 bytes; ICRC 39616d08 (zlib.crc32, little-endian on the wire).
const V4_CAP_PROBE_SEND_ONLY: [u8; 48] = [
    0x45, 0x02, 0x00, 0x30, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x18, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x04, 0x00, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x27, 0xcc, 0x00, 0x00, 0x10, 0x70, 0x69, 0x6e, 0x67, 0x39, 0x61, 0x6d, 0x08,
];

/// 48 bytes; ICRC 045d7d63 (zlib.crc32, little-endian on the wire).
const V4_CAP_ECHO_ACK: [u8; 48] = [
    0x45, 0x02, 0x00, 0x30, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x18, 0xc0, 0xa8, 0x01, 0x0a,
    0xc0, 0xa8, 0x01, 0x14, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x28, 0x4c, 0x00, 0x00, 0x10, 0x1f, 0x00, 0x00, 0x01, 0x04, 0x5d, 0x7d, 0x63,
];

/// Splits, parses with ICRC check, re-emits (ICRC recomputed) and compares byte for byte.
fn golden(datagram: &[u8]) -> PacketRepr<'_> {
    let d = RoceDatagram::parse(datagram).expect("datagram");
    if d.ip_header[0] >> 4 == 4 {
        assert_eq!(ipv4_checksum(d.ip_header), 0, "IPv4 checksum of the golden packet");
    }
    let r = PacketRepr::parse_checked(d.ip_header, d.udp_header, d.ib).expect("parse");
    assert_eq!(r.buffer_len(), d.ib.len());
    let mut out = [0u8; 256];
    let n = r.emit_with_icrc(d.ip_header, d.udp_header, &mut out).expect("emit");
    assert_eq!(&out[..n], d.ib, "re-emit is byte-identical");
    // The zero-copy view agrees with the representation.
    let v = Packet::new_checked(d.ib).expect("view");
    assert_eq!(v.payload(), r.payload);
    assert_eq!(v.opcode(), r.bth.opcode);
    assert_eq!(v.bth().psn(), r.bth.psn);
    assert_eq!(v.verify_icrc(d.ip_header, d.udp_header), Ok(()));
    // Any single covered bit flipped is caught by the ICRC (or by the parser).
    let mut bad = [0u8; 256];
    let ib = &mut bad[..d.ib.len()];
    ib.copy_from_slice(d.ib);
    ib[8] ^= 0x01; // Resv7 LSB: covered, and changes nothing the parser checks
    assert_eq!(
        PacketRepr::parse_checked(d.ip_header, d.udp_header, ib),
        Err(Error::BadIcrc)
    );
    r
}

#[test]
fn connectx4_cnp_capture() {
    let ip_datagram = &CNP_CONNECTX4_FRAME[14..];
    let r = golden(ip_datagram);
    assert_eq!(r.bth.opcode, Opcode::CNP);
    assert!(r.bth.becn && !r.bth.fecn);
    assert_eq!(r.bth.dest_qpn, 0x118);
    assert_eq!(r.bth.pkey, 0xffff);
    assert_eq!(r.bth.psn, Psn::new(0));
    assert_eq!(r.payload, &[0u8; 16]);
    let d = RoceDatagram::parse(ip_datagram).unwrap();
    assert_eq!(icrc::carried(d.ib), Ok(u32::from_le_bytes([0x82, 0xfd, 0x00, 0x2a])));
    assert_eq!(
        icrc::compute(d.ip_header, d.udp_header, &d.ib[..d.ib.len() - 4]),
        Ok(0x2a00_fd82)
    );
}

#[test]
fn scapy_uc_send_only() {
    let r = golden(&SCAPY_UC_SEND_ONLY);
    assert_eq!(r.bth.opcode, Opcode::UC_SEND_ONLY);
    assert!(r.bth.migreq && !r.bth.se);
    assert_eq!(r.bth.pad_cnt, 2);
    assert_eq!(r.bth.dest_qpn, 211);
    assert_eq!(r.bth.psn, Psn::new(13_571_856));
    assert_eq!(r.payload.len(), 18);
    assert_eq!(&r.payload[..2], b"F0");
}

#[test]
fn rc_send_only_ipv4() {
    let r = golden(&V4_RC_SEND_ONLY);
    assert_eq!(r.bth.opcode, Opcode::RC_SEND_ONLY);
    assert_eq!((r.bth.pad_cnt, r.bth.dest_qpn, r.bth.ack_req), (2, 0x11, true));
    assert_eq!(r.bth.psn, Psn::new(0xabc));
    assert_eq!(r.payload, b"rxe_sr golden!");
    assert!(!r.is_sr());
}

#[test]
fn rc_rdma_write_first_ipv6() {
    let r = golden(&V6_RC_RDMA_WRITE_FIRST);
    assert_eq!(r.bth.opcode, Opcode::RC_RDMA_WRITE_FIRST);
    assert_eq!(
        r.ext.reth,
        Some(Reth { va: 0x0000_7f12_3456_0000, rkey: 0x1234, dma_len: 8192 })
    );
    assert_eq!(r.payload.len(), 16);
}

#[test]
fn rc_rdma_read_request() {
    let r = golden(&V4_RC_RDMA_READ_REQUEST);
    assert_eq!(r.bth.opcode, Opcode::RC_RDMA_READ_REQUEST);
    assert_eq!(
        r.ext.reth,
        Some(Reth { va: 0x0000_7f00_dead_b000, rkey: 0x00ab_cdef, dma_len: 4096 })
    );
    assert!(r.payload.is_empty());
}

#[test]
fn rc_acknowledge_and_nak() {
    let r = golden(&V4_RC_ACKNOWLEDGE);
    assert_eq!(r.ext.aeth, Some(Aeth::ack(7)));
    assert_eq!(r.ext.aeth.unwrap().kind(), AethKind::Ack { credits: 0x1f });
    let r = golden(&V4_RC_NAK_PSN_SEQ);
    assert_eq!(r.ext.aeth.unwrap().syndrome, AETH_NAK_PSN_SEQ_ERROR);
    assert_eq!(r.ext.aeth.unwrap().kind(), AethKind::Nak { code: 0 });
    assert_eq!(r.bth.psn, Psn::new(0x0f_ffff));
}

#[test]
fn rc_atomics() {
    let r = golden(&V4_RC_COMPARE_SWAP);
    assert_eq!(
        r.ext.atomic_eth,
        Some(AtomicEth {
            va: 0x1000,
            rkey: 0x77,
            swap_add: 0x2222_2222_2222_2222,
            compare: 0x1111_1111_1111_1111
        })
    );
    let r = golden(&V4_RC_ATOMIC_ACKNOWLEDGE);
    assert_eq!(r.ext.aeth, Some(Aeth::ack(9)));
    assert_eq!(r.ext.atomic_ack_eth, Some(AtomicAckEth { orig_rem_data: 0x1111_1111_1111_1111 }));
}

#[test]
fn ud_send_only_with_immediate_ipv6() {
    let r = golden(&V6_UD_SEND_ONLY_WITH_IMMEDIATE);
    assert_eq!(r.bth.opcode, Opcode::UD_SEND_ONLY_WITH_IMMEDIATE);
    assert!(r.bth.se);
    assert_eq!(r.ext.deth, Some(Deth { qkey: 0x8001_0000, resv8: 0, src_qpn: 5 }));
    assert_eq!(r.ext.imm_dt, Some(ImmDt { data: 0xcafe_f00d }));
    assert_eq!(r.payload, b"abc");
    assert_eq!(r.bth.pad_cnt, 1);
}

#[test]
fn rc_send_last_with_invalidate() {
    let r = golden(&V4_RC_SEND_LAST_WITH_INVALIDATE);
    assert_eq!(r.ext.ieth, Some(Ieth { rkey: 0x00c0_ffee }));
    assert_eq!(r.payload, b"1234567");
}

#[test]
fn sr_send_middle() {
    let r = golden(&V4_SR_SEND_MIDDLE);
    assert!(r.is_sr());
    assert_eq!(r.ext.msn_eth, Some(MsnEth { msn: 3, offset: 2 }));
    assert_eq!(r.payload, &[0x5a; 8]);
}

#[test]
fn sr_write_packets_carry_their_address() {
    let r = golden(&V4_SR_RDMA_WRITE_MIDDLE);
    assert_eq!(r.ext.reth, Some(Reth { va: 0x10400, rkey: 0x99, dma_len: 4096 }));
    assert_eq!(r.ext.msn_eth, None);
    let r = golden(&V6_SR_RDMA_WRITE_LAST_WITH_IMMEDIATE);
    assert_eq!(r.ext.msn_eth, Some(MsnEth { msn: 4, offset: 3 }));
    assert_eq!(r.ext.reth, Some(Reth { va: 0x10c00, rkey: 0x99, dma_len: 3074 }));
    assert_eq!(r.ext.imm_dt, Some(ImmDt { data: 0x0102_0304 }));
    assert_eq!(r.payload, b"xy");
}

#[test]
fn sr_sack_fnack_read_ack() {
    let r = golden(&V4_SR_SACK);
    let s = r.ext.sr_ack_eth.unwrap();
    assert_eq!(s.kind, SrAckKind::Sack);
    assert_eq!((s.lost_cnt, s.lost_cnt_overflow), (1, false));
    assert_eq!((s.sack_high, s.trigger_psn), (Psn::new(0x605), Psn::new(0x605)));
    assert_eq!(s.window_log2, 10); // the sender's SR window: 1024 PSNs
    assert_eq!(r.bth.psn, Psn::new(0x600)); // RCV-NXT, the missing PSN
    let r = golden(&V4_SR_FNACK);
    assert_eq!(
        r.ext.sr_ack_eth,
        Some(SrAckEth {
            kind: SrAckKind::Fnack,
            lost_cnt: 7,
            lost_cnt_overflow: true,
            sack_high: Psn::new(0x640),
            trigger_psn: Psn::new(0x610),
            window_log2: 9,
        })
    );
    let r = golden(&V4_SR_READ_ACK);
    assert_eq!(r.ext.sr_ack_eth.unwrap().kind, SrAckKind::ReadAck);
    assert_eq!(r.ext.sr_ack_eth.unwrap().window_log2, 22);
    // Byte 4 of SR-ACK-ETH as version 2 sent it (reserved, 0), or a window out of range:
    // malformed.
    let d = RoceDatagram::parse(&V4_SR_SACK).unwrap();
    for w in [0, 8, 23, 0xff] {
        let mut ib = d.ib.to_vec();
        ib[12 + 4] = w;
        assert_eq!(PacketRepr::parse(&ib), Err(Error::BadSrHeader), "window {w}");
    }
    assert_eq!(r.ext.aeth, Some(Aeth::ack(12)));
}

#[test]
fn sr_read_request_and_response() {
    let r = golden(&V4_SR_RDMA_READ_REQUEST);
    assert_eq!(r.ext.msn_eth, Some(MsnEth { msn: 20, offset: 0 }));
    assert_eq!(r.ext.reth.unwrap().dma_len, 2048);
    let r = golden(&V4_SR_RDMA_READ_RESPONSE_MIDDLE);
    assert_eq!(r.ext.msn_eth, Some(MsnEth { msn: 20, offset: 1 }));
    assert_eq!(r.payload, &[0x3c; 4]);
}

/// The capability probe is a standard packet (TVer 0) that only sets Resv7, and the echo
/// drives the requester to the SR format.
#[test]
fn capability_probe_and_echo() {
    let probe = golden(&V4_CAP_PROBE_SEND_ONLY);
    assert_eq!(probe.bth.tver, 0);
    assert_eq!(SrCap::from_resv7(probe.bth.resv7), Some(SrCap::new(SrScheme::Fasr)));
    let resp = ResponderCaps::new(Some(SrCap::new(SrScheme::Fasr)));
    assert_eq!(
        resp.answer(probe.bth.tver, probe.bth.resv7),
        CapAnswer { tver: 0, resv7: 0x4c }
    );
    let echo = golden(&V4_CAP_ECHO_ACK);
    let mut req = RequesterCaps::new(Some(SrCap::new(SrScheme::Fasr)));
    assert_eq!(
        req.on_response(echo.bth.tver, echo.bth.resv7),
        RequesterState::Sr(SrCap::new(SrScheme::Fasr))
    );
    // The same ACK from a standard peer (Resv7 = 0) means: stay on GBN.
    let std_ack = golden(&V4_RC_ACKNOWLEDGE);
    let mut req = RequesterCaps::new(Some(SrCap::new(SrScheme::Fasr)));
    assert_eq!(req.on_response(std_ack.bth.tver, std_ack.bth.resv7), RequesterState::Standard);
}

/// Probe timeouts never decide. After `MAX_UNANSWERED_PROBES` of them the requests to a
/// silent peer go out plain (it may drop marked packets), and the first response decides:
/// a plain answer (standard), or the late echo of a marked request (SR: the peer was only
/// slow, and timeouts alone must not make a QP standard toward an rxe_sr peer). Toward a peer whose own requests carry our capability (or the SR
/// format) the requests stay marked.
#[test]
fn probe_timeouts_never_decide_the_format() {
    let fasr = SrCap::new(SrScheme::Fasr);
    let max = RequesterCaps::MAX_UNANSWERED_PROBES;
    let marked = CapAnswer { tver: 0, resv7: fasr.to_resv7() };
    let plain = CapAnswer { tver: 0, resv7: 0 };
    // Marked until the MAX-th timeout, plain from then on, still probing after many.
    let timeouts = |req: &mut RequesterCaps, n: u8| -> Vec<CapAnswer> {
        (0..n)
            .map(|_| {
                assert!(matches!(req.on_probe_timeout(), RequesterState::Probing { .. }));
                req.request_marks()
            })
            .collect()
    };
    let mut req = RequesterCaps::new(Some(fasr));
    assert_eq!(req.request_marks(), marked);
    let marks = timeouts(&mut req, 2 * max);
    assert!(marks[..usize::from(max) - 1].iter().all(|m| *m == marked), "{marks:?}");
    assert!(marks[usize::from(max) - 1..].iter().all(|m| *m == plain), "{marks:?}");
    // A late echo of a marked request still switches to SR.
    let echo = golden(&V4_CAP_ECHO_ACK);
    assert_eq!(req.on_response(echo.bth.tver, echo.bth.resv7), RequesterState::Sr(fasr));
    // A plain answer makes it standard.
    let std_ack = golden(&V4_RC_ACKNOWLEDGE);
    let mut req = RequesterCaps::new(Some(fasr));
    let _ = timeouts(&mut req, max);
    assert_eq!(req.on_response(std_ack.bth.tver, std_ack.bth.resv7), RequesterState::Standard);
    // Requests marked with another scheme, or unmarked, prove nothing.
    let mut req = RequesterCaps::new(Some(fasr));
    req.on_peer_request(0, SrCap::new(SrScheme::Melo).to_resv7());
    req.on_peer_request(0, 0);
    assert_eq!(timeouts(&mut req, max).last(), Some(&plain));
    // A peer probing with our capability, or already in the SR format: marked throughout.
    let probe = golden(&V4_CAP_PROBE_SEND_ONLY);
    for (tver, resv7) in [(probe.bth.tver, probe.bth.resv7), (1, 0)] {
        let mut req = RequesterCaps::new(Some(fasr));
        req.on_peer_request(tver, resv7);
        assert!(timeouts(&mut req, 2 * max).iter().all(|m| *m == marked));
        assert_eq!(req.on_response(echo.bth.tver, echo.bth.resv7), RequesterState::Sr(fasr));
    }
    // A requester with no capability (recovery=gbn) is standard whatever the peer sends.
    let mut req = RequesterCaps::new(None);
    req.on_peer_request(probe.bth.tver, probe.bth.resv7);
    assert_eq!((req.state(), req.request_marks()), (RequesterState::Standard, plain));
}

/// A standard (TVer 0) parse of an SR packet's bytes is impossible: the SR packets are
/// only valid with TVer 1, and clearing TVer changes the header layout the opcode implies.
#[test]
fn sr_packets_differ_from_standard_ones() {
    let d = RoceDatagram::parse(&V4_SR_SEND_MIDDLE).unwrap();
    let mut ib = [0u8; 64];
    let ib = &mut ib[..d.ib.len()];
    ib.copy_from_slice(d.ib);
    ib[1] &= 0xf0; // TVer 0: now a plain SEND_MIDDLE whose payload starts with the MSN-ETH
    let r = PacketRepr::parse(ib).unwrap();
    assert_eq!(r.ext.msn_eth, None);
    assert_eq!(r.payload.len(), 16);
    ib[1] |= 0x02; // TVer 2: unknown
    assert_eq!(PacketRepr::parse(ib), Err(Error::BadVersion));
}

#[test]
fn emit_headers_matches_emit() {
    use rxe_sr::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr, Reth};
    let payload: Vec<u8> = (0..1001u32).map(|i| i as u8).collect();
    let full = PacketRepr {
        bth: BthRepr {
            opcode: Opcode::RC_RDMA_WRITE_FIRST,
            pad_cnt: BthRepr::pad_for(payload.len()),
            dest_qpn: 0x12,
            ack_req: true,
            ..Default::default()
        },
        ext: ExtHeaders {
            reth: Some(Reth { va: 0x1000, rkey: 0x77, dma_len: 4000 }),
            ..Default::default()
        },
        payload: &payload,
    };
    let mut a = vec![0xaau8; 2000];
    let n = full.emit(&mut a).unwrap();
    let mut b = vec![0x55u8; 2000];
    let (off, total) = PacketRepr { payload: &[], ..full }.emit_headers(payload.len(), &mut b).unwrap();
    b[off..off + payload.len()].copy_from_slice(&payload);
    assert_eq!(total, n);
    assert_eq!(a[..n], b[..n]);
    // A pad count that does not match the length, or a payload on a header-only opcode, is refused.
    assert!(PacketRepr { payload: &[], ..full }.emit_headers(1000, &mut b).is_err());
    let ack = PacketRepr {
        bth: BthRepr { opcode: Opcode::RC_RDMA_READ_REQUEST, ..Default::default() },
        ext: ExtHeaders { reth: Some(Reth::default()), ..Default::default() },
        payload: &[],
    };
    assert!(ack.emit_headers(0, &mut b).is_ok());
    assert!(ack.emit_headers(4, &mut b).is_err());
    // The headers alone, into a buffer that ends with them (a datagram sent by reference).
    let mut h = vec![0x33u8; off];
    assert_eq!(PacketRepr { payload: &[], ..full }.emit_header_bytes(payload.len(), &mut h), Ok(off));
    assert_eq!(h[..], a[..off]);
    assert!(PacketRepr { payload: &[], ..full }.emit_header_bytes(1000, &mut h).is_err());
    assert!(PacketRepr { payload: &[], ..full }.emit_header_bytes(payload.len(), &mut h[..off - 1]).is_err());
}

#[test]
fn dest_gid_maps_ipv4_and_keeps_ipv6() {
    // 192.168.1.20 -> ::ffff:192.168.1.20
    let d = RoceDatagram::parse(&V4_CAP_ECHO_ACK).unwrap();
    let mut want = [0u8; 16];
    want[10] = 0xff;
    want[11] = 0xff;
    want[12..].copy_from_slice(&[0xc0, 0xa8, 0x01, 0x14]);
    assert_eq!(d.dest_gid(), want);
    // An IPv6 header's destination as it is.
    let mut v6 = vec![0u8; 40 + 8 + 12 + 4];
    v6[0] = 0x60;
    v6[4..6].copy_from_slice(&((8 + 12 + 4) as u16).to_be_bytes());
    v6[6] = 17;
    for (i, b) in v6[24..40].iter_mut().enumerate() {
        *b = 0xf0 + i as u8;
    }
    v6[42..44].copy_from_slice(&4791u16.to_be_bytes());
    v6[44..46].copy_from_slice(&((8 + 12 + 4) as u16).to_be_bytes());
    for (i, b) in v6[8..24].iter_mut().enumerate() {
        *b = 0x10 + i as u8;
    }
    let d = RoceDatagram::parse(&v6).unwrap();
    assert_eq!(d.dest_gid().to_vec(), v6[24..40].to_vec());
    assert_eq!(d.src_gid().to_vec(), v6[8..24].to_vec());
}

/// The source GID a connected QP's packets are checked against: the IPv4
/// source, mapped.
#[test]
fn src_gid_maps_the_ipv4_source() {
    let d = RoceDatagram::parse(&V4_CAP_ECHO_ACK).unwrap();
    let mut want = [0u8; 16];
    want[10] = 0xff;
    want[11] = 0xff;
    want[12..].copy_from_slice(&V4_CAP_ECHO_ACK[12..16]);
    assert_eq!(d.src_gid(), want);
    assert_ne!(d.src_gid(), d.dest_gid());
}

/// `V6_UD_SEND_ONLY_WITH_IMMEDIATE` with an 8-byte destination options header (a PadN
/// option) between the IPv6 and UDP headers: next header 60, payload length 48. The ICRC
/// (bc9d4a8c on the wire) covers the fixed 40-byte header as sent, then UDP and IB, the
/// extension header left out; computed by the independent generator described above.
const V6_UD_WITH_DEST_OPTIONS: [u8; 88] = [
    0x60, 0x21, 0x23, 0x45, 0x00, 0x30, 0x3c, 0x40, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x66, 0x11, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00,
    0xc0, 0x02, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x65, 0x90, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x42, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0xca, 0xfe, 0xf0, 0x0d,
    0x61, 0x62, 0x63, 0x00, 0xbc, 0x9d, 0x4a, 0x8c,
];

#[test]
fn ipv6_with_a_destination_options_header() {
    let r = golden(&V6_UD_WITH_DEST_OPTIONS);
    assert_eq!(r.bth.opcode, Opcode::UD_SEND_ONLY_WITH_IMMEDIATE);
    assert_eq!(r.ext.deth, Some(Deth { qkey: 0x8001_0000, resv8: 0, src_qpn: 5 }));
    assert_eq!(r.payload, b"abc");
    let d = RoceDatagram::parse(&V6_UD_WITH_DEST_OPTIONS).unwrap();
    assert_eq!(d.ip_header, &V6_UD_WITH_DEST_OPTIONS[..40]);
    assert_eq!(d.src_gid()[15], 0x55);
    // The same bytes with the option changed in flight still check (the ICRC does not
    // cover extension headers); a changed fixed header does not.
    let mut opt = V6_UD_WITH_DEST_OPTIONS;
    opt[44] = 0xee;
    assert!(golden(&opt).ext.deth.is_some());
    let mut fixed = V6_UD_WITH_DEST_OPTIONS;
    fixed[23] ^= 1; // source address
    let d = RoceDatagram::parse(&fixed).unwrap();
    assert_eq!(
        PacketRepr::parse_checked(d.ip_header, d.udp_header, d.ib).err(),
        Some(Error::BadIcrc)
    );
}

/// An IPv6 datagram to port 4791 with the extension headers `ext` (each: its type and
/// its length in bytes, a multiple of 8) before the UDP header, and 8 IB bytes.
fn v6(ext: &[(u8, usize)]) -> Vec<u8> {
    let ext_len: usize = ext.iter().map(|e| e.1).sum();
    let mut d = vec![0u8; 40 + ext_len + 16];
    d[0] = 0x60;
    d[4..6].copy_from_slice(&((ext_len + 16) as u16).to_be_bytes());
    let mut at = 6;
    let mut off = 40;
    for &(t, len) in ext {
        d[at] = t;
        at = off;
        d[off + 1] = (len / 8 - 1) as u8;
        off += len;
    }
    d[at] = 17u8;
    d[off + 2..off + 4].copy_from_slice(&4791u16.to_be_bytes());
    d[off + 4..off + 6].copy_from_slice(&16u16.to_be_bytes());
    d
}

#[test]
fn steps_over_ipv6_extension_headers() {
    let plain = v6(&[]);
    let r = RoceDatagram::parse(&plain).unwrap();
    assert_eq!((r.ip_header.len(), r.ib.len()), (40, 8));
    // Destination options (8 bytes), then hop-by-hop (8) + routing (24) + dest opts (16).
    for ext in [vec![(60, 8)], vec![(0, 8), (43, 24), (60, 16)]] {
        let d = v6(&ext);
        let r = RoceDatagram::parse(&d).unwrap();
        assert_eq!(r.ip_header, &d[..40], "the fixed header, as the ICRC covers it");
        let udp_at = 40 + ext.iter().map(|e| e.1).sum::<usize>();
        assert_eq!(r.udp_header, &d[udp_at..udp_at + 8], "{ext:?}");
        assert_eq!(r.ib.len(), 8);
        assert_eq!(r.src_gid(), [0; 16]);
    }
    // The most headers taken, and one more.
    let eight = vec![(60u8, 8usize); MAX_IPV6_EXT_HEADERS];
    assert!(RoceDatagram::parse(&v6(&eight)).is_ok());
    let nine = vec![(60u8, 8usize); MAX_IPV6_EXT_HEADERS + 1];
    assert_eq!(RoceDatagram::parse(&v6(&nine)), Err(Error::BadIpHeader));
    // Fragment, AH, ESP, or TCP: not a whole RoCE datagram we can read.
    for t in [44u8, 51, 50, 6] {
        assert_eq!(RoceDatagram::parse(&v6(&[(t, 8)])), Err(Error::BadIpHeader), "{t}");
    }
    // An extension header claiming more bytes than the payload holds.
    let mut d = v6(&[(60, 8)]);
    d[41] = 200;
    assert_eq!(RoceDatagram::parse(&d), Err(Error::BadLength));
    // The chain cut short by the payload length.
    let mut d = v6(&[(0, 8), (60, 8)]);
    d[4..6].copy_from_slice(&12u16.to_be_bytes());
    assert!(RoceDatagram::parse(&d).is_err());
}

