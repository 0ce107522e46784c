// SPDX-License-Identifier: GPL-2.0
//! End-to-end use of the SR format through real packet bytes: the capability exchange
//! between two ends, then SR-format SEND and WRITE messages delivered out of order and
//! placed from their own headers alone, and the SACK/FNACK the responder sends back.

use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::wire::ext_headers::{Aeth, Reth, AETH_NAK_PSN_SEQ_ERROR};
use rxe_sr::proto::wire::sr_ext::{MsnEth, SrAckEth, SrAckKind};
use rxe_sr::proto::wire::{
    BthRepr, ExtHeaders, Opcode, PacketRepr, RequesterCaps, RequesterState, ResponderCaps,
    SrCap, SrScheme,
};

const IP4: [u8; 20] = [
    0x45, 0x00, 0x00, 0x00, 0x00, 0x01, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1, 10, 0,
    0, 2,
];
const UDP: [u8; 8] = [0xc0, 0x00, 0x12, 0xb7, 0x00, 0x00, 0x00, 0x00];
const PMTU: usize = 256;

fn wire(r: &PacketRepr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit_with_icrc(&IP4, &UDP, &mut b).unwrap();
    b
}

fn bth(opcode: Opcode, psn: u32, tver: u8, resv7: u8, payload_len: usize) -> BthRepr {
    BthRepr {
        opcode,
        tver,
        resv7,
        dest_qpn: 0x42,
        psn: Psn::new(psn),
        pad_cnt: BthRepr::pad_for(payload_len),
        ..Default::default()
    }
}

/// Splits a message into SR-format SEND packets (MSN-ETH on each).
fn sr_send(msg: &[u8], msn: u32, first_psn: u32) -> Vec<Vec<u8>> {
    let chunks: Vec<&[u8]> = msg.chunks(PMTU).collect();
    let n = chunks.len();
    chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let op = match (i, n) {
                (_, 1) => Opcode::RC_SEND_ONLY,
                (0, _) => Opcode::RC_SEND_FIRST,
                (i, n) if i + 1 == n => Opcode::RC_SEND_LAST,
                _ => Opcode::RC_SEND_MIDDLE,
            };
            let ext = ExtHeaders {
                msn_eth: Some(MsnEth { msn, offset: i as u32 }),
                ..Default::default()
            };
            wire(&PacketRepr { bth: bth(op, first_psn + i as u32, 1, 0, c.len()), ext, payload: c })
        })
        .collect()
}

/// Splits an RDMA WRITE into SR-format packets (RETH on each, VA of that packet).
fn sr_write(msg: &[u8], va: u64, rkey: u32, first_psn: u32) -> Vec<Vec<u8>> {
    let chunks: Vec<&[u8]> = msg.chunks(PMTU).collect();
    let n = chunks.len();
    chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let op = match (i, n) {
                (_, 1) => Opcode::RC_RDMA_WRITE_ONLY,
                (0, _) => Opcode::RC_RDMA_WRITE_FIRST,
                (i, n) if i + 1 == n => Opcode::RC_RDMA_WRITE_LAST,
                _ => Opcode::RC_RDMA_WRITE_MIDDLE,
            };
            let ext = ExtHeaders {
                reth: Some(Reth {
                    va: va + (i * PMTU) as u64,
                    rkey,
                    dma_len: msg.len() as u32,
                }),
                ..Default::default()
            };
            wire(&PacketRepr { bth: bth(op, first_psn + i as u32, 1, 0, c.len()), ext, payload: c })
        })
        .collect()
}

#[test]
fn capability_exchange_over_the_wire() {
    let cap = SrCap::new(SrScheme::Fasr);
    let mut req = RequesterCaps::new(Some(cap));
    let resp = ResponderCaps::new(Some(cap));

    // First request: standard format, capability in Resv7.
    let m = req.request_marks();
    let probe = wire(&PacketRepr {
        bth: bth(Opcode::RC_SEND_ONLY, 0, m.tver, m.resv7, 4),
        ext: ExtHeaders::default(),
        payload: b"ping",
    });
    let p = PacketRepr::parse_checked(&IP4, &UDP, &probe).unwrap();
    assert!(!p.is_sr());
    // The responder answers with an ACK marked as its mirror rule says.
    let a = resp.answer(p.bth.tver, p.bth.resv7);
    let ack = wire(&PacketRepr {
        bth: bth(Opcode::RC_ACKNOWLEDGE, 0, a.tver, a.resv7, 0),
        ext: ExtHeaders { aeth: Some(Aeth::ack(1)), ..Default::default() },
        payload: &[],
    });
    let k = PacketRepr::parse_checked(&IP4, &UDP, &ack).unwrap();
    assert_eq!(req.on_response(k.bth.tver, k.bth.resv7), RequesterState::Sr(cap));
    assert_eq!(req.request_marks().tver, 1);
}

#[test]
fn out_of_order_send_is_placed_from_headers() {
    let msg: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
    let mut pkts = sr_send(&msg, 9, 100);
    assert_eq!(pkts.len(), 4);
    pkts.swap(0, 3);
    pkts.swap(1, 2);
    let mut rbuf = vec![0u8; 1024];
    for p in &pkts {
        let r = PacketRepr::parse_checked(&IP4, &UDP, p).unwrap();
        assert!(r.is_sr());
        let m = r.ext.msn_eth.unwrap();
        assert_eq!(m.msn, 9); // which receive WQE
        let at = m.offset as usize * PMTU;
        rbuf[at..at + r.payload.len()].copy_from_slice(r.payload);
        // The offset agrees with the PSN distance from the message's first PSN.
        assert_eq!(r.bth.psn.distance_from(Psn::new(100)), m.offset);
    }
    assert_eq!(&rbuf[..msg.len()], &msg[..]);
}

#[test]
fn out_of_order_write_is_placed_from_headers() {
    let msg: Vec<u8> = (0..700u32).map(|i| (i ^ 0x5a) as u8).collect();
    let base = 0x7f00_0000_1000u64;
    let mut pkts = sr_write(&msg, base, 0x1234, 0xff_fffe); // PSNs wrap
    pkts.reverse();
    let mut mr = vec![0u8; 1024];
    for p in &pkts {
        let r = PacketRepr::parse_checked(&IP4, &UDP, p).unwrap();
        let reth = r.ext.reth.expect("every SR WRITE packet carries a RETH");
        assert_eq!((reth.rkey, reth.dma_len), (0x1234, 700));
        let at = (reth.va - base) as usize;
        mr[at..at + r.payload.len()].copy_from_slice(r.payload);
    }
    assert_eq!(&mr[..msg.len()], &msg[..]);
}

#[test]
fn sack_and_fnack_round_trip() {
    // Receiver: RCV-NXT = 100 missing, 101..=105 arrived: SACK. Then the retransmission
    // of 100 is lost and the next retransmitted packet, 103 (RCV-NXT < 103 < sack-high),
    // arrives: the FNACK names it (FaSR §III-E).
    let sack = SrAckEth {
        kind: SrAckKind::Sack,
        lost_cnt: 1,
        lost_cnt_overflow: false,
        sack_high: Psn::new(105),
        trigger_psn: Psn::new(105),
        window_log2: 10,
    };
    let fnack = SrAckEth { kind: SrAckKind::Fnack, trigger_psn: Psn::new(103), ..sack };
    for s in [sack, fnack] {
        let b = wire(&PacketRepr {
            bth: bth(Opcode::RC_ACKNOWLEDGE, 100, 1, 0, 0),
            ext: ExtHeaders {
                sr_ack_eth: Some(s),
                aeth: Some(Aeth::nak(0, 7)),
                ..Default::default()
            },
            payload: &[],
        });
        assert_eq!(b.len(), 12 + 8 + 4 + 4);
        let r = PacketRepr::parse_checked(&IP4, &UDP, &b).unwrap();
        assert_eq!(r.ext.sr_ack_eth, Some(s));
        assert_eq!(r.ext.aeth.unwrap().syndrome, AETH_NAK_PSN_SEQ_ERROR);
        assert_eq!(r.bth.psn, Psn::new(100));
    }
    // A SACK must be a NAK-sequence-error; as a plain ACK it is refused on both paths.
    let bad = PacketRepr {
        bth: bth(Opcode::RC_ACKNOWLEDGE, 100, 1, 0, 0),
        ext: ExtHeaders { sr_ack_eth: Some(sack), aeth: Some(Aeth::ack(7)), ..Default::default() },
        payload: &[],
    };
    let mut buf = [0u8; 64];
    assert!(bad.emit(&mut buf).is_err());
}
