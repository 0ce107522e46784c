// SPDX-License-Identifier: GPL-2.0
//! What the FEC tests share: packets with real ICRCs, an encoder's wire, a decoder's
//! reading of it.

use rxe_sr::proto::fec::decoder::{DataOutcome, Decoder, RepairOutcome, DEC_UNITS};
use rxe_sr::proto::fec::encoder::{Encoder, ENC_UNITS};
use rxe_sr::proto::fec::{fec_coded, FecParams, RepairHeader, FEC_MAX_PACKET};
use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::rc::SR_DEFAULT_WINDOW_PSNS;
use rxe_sr::proto::wire::icrc;

/// A small deterministic generator (xorshift64*).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The IPv4 and UDP headers of a datagram carrying `len` bytes of IB packet.
pub(crate) fn headers(len: usize, ip_id: u16) -> ([u8; 20], [u8; 8]) {
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((20 + 8 + len) as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&ip_id.to_be_bytes());
    ip[6] = 0x40; // DF
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 77, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 77, 0, 2]);
    let mut udp = [0xc3, 0x50, 0x12, 0xb7, 0, 0, 0, 0];
    udp[4..6].copy_from_slice(&((8 + len) as u16).to_be_bytes());
    (ip, udp)
}

/// One request packet as sent: PSN, IPv4 Identification, BTH to ICRC.
#[derive(Clone)]
pub(crate) struct Sent {
    pub(crate) psn: Psn,
    pub(crate) ip_id: u16,
    pub(crate) bytes: Vec<u8>,
}

/// A packet of PSN `psn` with random contents and length and a valid ICRC.
pub(crate) fn packet(rng: &mut Rng, psn: Psn, max: usize) -> Sent {
    let len = 16 + 4 * rng.below((max as u64 - 16) / 4 + 1) as usize;
    let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    bytes[0] = 0x0a; // RC RDMA WRITE MIDDLE
    bytes[8] = fec_coded(0); // AckReq clear, coded in epoch 0
    bytes[9..12].copy_from_slice(&psn.get().to_be_bytes()[1..]);
    let ip_id = rng.next() as u16;
    let (ip, udp) = headers(len, ip_id);
    icrc::fill(&ip, &udp, &mut bytes).unwrap();
    Sent { psn, ip_id, bytes }
}

/// What crosses the link toward the decoder.
#[derive(Clone)]
pub(crate) enum Wire {
    Data(Sent),
    Repair(RepairHeader, Vec<u8>),
}

/// Sends `count` packets from `start` through an encoder (flushing at the end when
/// `flush`), giving the packets sent and everything on the wire in order.
pub(crate) fn send(
    rng: &mut Rng,
    p: FecParams,
    start: u32,
    count: u32,
    flush: bool,
) -> (Vec<Sent>, Vec<Wire>) {
    let mut enc = Encoder::new(p, 0x11, vec![0u8; ENC_UNITS * FEC_MAX_PACKET]);
    let (mut sent, mut wire) = (Vec::new(), Vec::new());
    for k in 0..count {
        let s = packet(rng, Psn::new(start).add(k), 1100);
        wire.push(Wire::Data(s.clone()));
        let mut emit = |rh: &RepairHeader, pl: &[u8]| wire.push(Wire::Repair(*rh, pl.to_vec()));
        assert!(enc.on_sent(s.psn, s.ip_id, &s.bytes, &mut emit));
        sent.push(s);
    }
    if flush {
        enc.flush_idle(&mut |rh, pl| wire.push(Wire::Repair(*rh, pl.to_vec())));
    }
    (sent, wire)
}

/// What the decoder made of a wire: the packets it rebuilt (each checked against the
/// ICRC as the receive path would) and the units it found unrepairable.
pub(crate) struct Decoded {
    pub(crate) rebuilt: Vec<Sent>,
    pub(crate) unrepairable: u32,
}

pub(crate) fn decode(p: FecParams, wire: &[Wire], lost: impl Fn(usize) -> bool) -> Decoded {
    let mut dec = Decoder::new(p, SR_DEFAULT_WINDOW_PSNS, vec![0u8; DEC_UNITS * FEC_MAX_PACKET]);
    let mut out = vec![0u8; FEC_MAX_PACKET];
    let mut d = Decoded {
        rebuilt: Vec::new(),
        unrepairable: 0,
    };
    for (k, w) in wire.iter().enumerate() {
        if lost(k) {
            continue;
        }
        match w {
            Wire::Data(s) => {
                let o = dec.on_data(s.psn, s.ip_id, &s.bytes);
                assert_ne!(o, DataOutcome::Stale);
            }
            Wire::Repair(rh, pl) => match dec.on_repair(rh, pl, &mut out) {
                RepairOutcome::Rebuilt { psn, ip_id, len } => {
                    let bytes = out[..len].to_vec();
                    let (ip, udp) = headers(len, ip_id);
                    assert_eq!(
                        icrc::verify(&ip, &udp, &bytes),
                        Ok(()),
                        "rebuilt PSN {psn:?}"
                    );
                    d.rebuilt.push(Sent { psn, ip_id, bytes });
                }
                RepairOutcome::Unrepairable { first: true } => d.unrepairable += 1,
                _ => {}
            },
        }
    }
    d
}

/// The index on the wire of each data packet, by its place in `sent`.
pub(crate) fn data_at(wire: &[Wire]) -> Vec<usize> {
    (0..wire.len())
        .filter(|&k| matches!(wire[k], Wire::Data(_)))
        .collect()
}

pub(crate) fn assert_same(rebuilt: &[Sent], sent: &[Sent], lost: &[usize]) {
    let mut want: Vec<_> = lost.iter().map(|&i| sent[i].clone()).collect();
    let mut got = rebuilt.to_vec();
    want.sort_by_key(|s| s.psn.get());
    got.sort_by_key(|s| s.psn.get());
    assert_eq!(
        got.len(),
        want.len(),
        "rebuilt {} of {} lost",
        got.len(),
        want.len()
    );
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.psn, g.ip_id), (w.psn, w.ip_id));
        assert!(g.bytes == w.bytes, "PSN {:?}: rebuilt bytes differ", g.psn);
    }
}
