// SPDX-License-Identifier: GPL-2.0
//! Golden vectors from real rdma_rxe traffic: tests/data/rdma_rxe.pcap was captured between
//! two rdma_rxe guests of the testbed (scripts/capture-rxe: SEND with data check, UD SEND,
//! WRITE, READ, atomics, and a lossy WRITE for NAKs and retransmissions). Every captured
//! RoCEv2 packet must parse, carry a correct ICRC, and re-emit byte-identical; and the
//! capture must hold every packet kind those operations produce.

use std::collections::BTreeMap;

use rxe_sr::proto::wire::ip::RoceDatagram;
use rxe_sr::proto::wire::{Opcode, PacketRepr};

const PCAP: &[u8] = include_bytes!("data/rdma_rxe.pcap");

/// The frames of a classic pcap file (microsecond or nanosecond, either byte order).
fn pcap_frames(file: &[u8]) -> Vec<&[u8]> {
    assert!(file.len() >= 24, "pcap too short");
    let magic = u32::from_le_bytes(file[0..4].try_into().unwrap());
    let le = match magic {
        0xa1b2_c3d4 | 0xa1b2_3c4d => true,
        0xd4c3_b2a1 | 0x4d3c_b2a1 => false,
        m => panic!("not a pcap file (magic {m:#x})"),
    };
    let u32_at = |b: &[u8], o: usize| {
        let w: [u8; 4] = b[o..o + 4].try_into().unwrap();
        if le { u32::from_le_bytes(w) } else { u32::from_be_bytes(w) }
    };
    assert_eq!(u32_at(file, 20), 1, "link type is not Ethernet");
    let mut frames = Vec::new();
    let mut off = 24;
    while off + 16 <= file.len() {
        let caplen = u32_at(file, off + 8) as usize;
        let origlen = u32_at(file, off + 12) as usize;
        assert_eq!(caplen, origlen, "frame truncated by the capture");
        frames.push(&file[off + 16..off + 16 + caplen]);
        off += 16 + caplen;
    }
    assert_eq!(off, file.len(), "trailing bytes in the pcap");
    frames
}

#[test]
fn every_rdma_rxe_packet_parses_checks_its_icrc_and_reemits_identically() {
    let frames = pcap_frames(PCAP);
    let mut seen: BTreeMap<u8, usize> = BTreeMap::new();
    let mut naks = 0;
    for (i, f) in frames.iter().enumerate() {
        let ethertype = u16::from_be_bytes([f[12], f[13]]);
        assert!(ethertype == 0x0800 || ethertype == 0x86dd, "frame {i}: ethertype {ethertype:#x}");
        let dg = RoceDatagram::parse(&f[14..]).unwrap_or_else(|e| panic!("frame {i}: {e:?}"));
        let p = PacketRepr::parse_checked(dg.ip_header, dg.udp_header, dg.ib)
            .unwrap_or_else(|e| panic!("frame {i} (opcode {:#x}): {e:?}", dg.ib[0]));
        assert!(!p.is_sr(), "frame {i}: rdma_rxe sent an SR-format packet");
        let mut out = vec![0u8; p.buffer_len()];
        let n = p
            .emit_with_icrc(dg.ip_header, dg.udp_header, &mut out)
            .unwrap_or_else(|e| panic!("frame {i}: emit {e:?}"));
        assert_eq!(&out[..n], dg.ib, "frame {i}: re-emitted bytes differ");
        if p.bth.opcode == Opcode::RC_ACKNOWLEDGE {
            // AETH syndrome 011x_xxxx is a NAK; 0x60 is "PSN sequence error".
            let syndrome = dg.ib[12];
            if syndrome & 0x60 == 0x60 {
                naks += 1;
            }
        }
        *seen.entry(p.bth.opcode.0).or_default() += 1;
    }
    eprintln!("{} frames; opcodes seen: {:x?}; NAKs: {naks}", frames.len(), seen);
    let want = [
        (Opcode::RC_SEND_FIRST, "SEND_FIRST"),
        (Opcode::RC_SEND_MIDDLE, "SEND_MIDDLE"),
        (Opcode::RC_SEND_LAST, "SEND_LAST"),
        (Opcode::RC_RDMA_WRITE_FIRST, "RDMA_WRITE_FIRST"),
        (Opcode::RC_RDMA_WRITE_MIDDLE, "RDMA_WRITE_MIDDLE"),
        (Opcode::RC_RDMA_WRITE_LAST, "RDMA_WRITE_LAST"),
        (Opcode::RC_RDMA_READ_REQUEST, "RDMA_READ_REQUEST"),
        (Opcode::RC_RDMA_READ_RESPONSE_FIRST, "RDMA_READ_RESPONSE_FIRST"),
        (Opcode::RC_RDMA_READ_RESPONSE_MIDDLE, "RDMA_READ_RESPONSE_MIDDLE"),
        (Opcode::RC_RDMA_READ_RESPONSE_LAST, "RDMA_READ_RESPONSE_LAST"),
        (Opcode::RC_ACKNOWLEDGE, "ACKNOWLEDGE"),
        (Opcode::RC_ATOMIC_ACKNOWLEDGE, "ATOMIC_ACKNOWLEDGE"),
        (Opcode::RC_COMPARE_SWAP, "COMPARE_SWAP"),
        (Opcode::RC_FETCH_ADD, "FETCH_ADD"),
        (Opcode::UD_SEND_ONLY, "UD_SEND_ONLY"),
    ];
    for (op, name) in want {
        assert!(seen.contains_key(&op.0), "no {name} in the capture");
    }
    assert!(naks > 0, "the lossy run produced no NAK");
}

#[test]
fn a_corrupted_captured_packet_is_rejected() {
    let frames = pcap_frames(PCAP);
    let f = frames.iter().find(|f| f.len() > 100).expect("a data frame");
    let mut bad = f[14..].to_vec();
    let last = bad.len() - 5; // a payload byte, just before the ICRC
    bad[last] ^= 0x01;
    let dg = RoceDatagram::parse(&bad).unwrap();
    assert!(PacketRepr::parse_checked(dg.ip_header, dg.udp_header, dg.ib).is_err());
}
