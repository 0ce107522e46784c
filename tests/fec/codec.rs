// SPDX-License-Identifier: GPL-2.0
//! The encoder and decoder together, over packets with real ICRCs: what is rebuilt is
//! exactly what was lost, and whatever else comes out fails the ICRC the receive path
//! checks.

use crate::common::*;
use rxe_sr::proto::fec::decoder::{DataOutcome, Decoder, RepairOutcome, DEC_UNITS};
use rxe_sr::proto::fec::encoder::{Encoder, ENC_UNITS};
use rxe_sr::proto::fec::{FecParams, RepairHeader, FEC_MAX_PACKET};
use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::rc::SR_DEFAULT_WINDOW_PSNS;
use rxe_sr::proto::wire::icrc;
use rxe_sr::proto::wire::repair::RH_LEN;

#[test]
fn one_loss_per_unit_is_rebuilt_byte_for_byte() {
    for (n, d, start) in [(32, 4, 0), (32, 1, 0xff_ff80), (8, 2, 5), (4, 8, 0x12_3401)] {
        let p = FecParams::new(n, d).unwrap();
        let mut rng = Rng(0x5eed ^ u64::from(n * 131 + d));
        // Whole blocks from an aligned start, a partial first and last block otherwise.
        let count = 4 * p.block();
        let (sent, wire) = send(&mut rng, p, start, count, true);
        let at = data_at(&wire);
        // One packet lost in every unit: index (unit number * 7) mod n of each, in the
        // units that were sent at least two packets (one alone gets no repair).
        let unit_of = |s: &Sent| {
            let (b, j, _) = p.place(s.psn);
            (b, j)
        };
        let lost: Vec<usize> = (0..sent.len())
            .filter(|&k| {
                let (b, j, i) = p.place(sent[k].psn);
                let others = sent.iter().filter(|s| unit_of(s) == (b, j)).count();
                i == (b * d + j) * 7 % n && others >= 2
            })
            .collect();
        assert!(lost.len() as u32 >= 4 * d - 2, "{} lost", lost.len());
        let lost_wire: Vec<usize> = lost.iter().map(|&k| at[k]).collect();
        let got = decode(p, &wire, |k| lost_wire.contains(&k));
        assert_same(&got.rebuilt, &sent, &lost);
        assert_eq!(got.unrepairable, 0);
    }
}

#[test]
fn two_losses_in_a_unit_are_not_rebuilt() {
    let p = FecParams::new(32, 1).unwrap();
    let mut rng = Rng(7);
    let (sent, wire) = send(&mut rng, p, 64, 96, false);
    let at = data_at(&wire);
    // Unit 0 loses two, unit 1 one, unit 2 none.
    let lost = [3usize, 17, 40];
    let got = decode(p, &wire, |k| lost.iter().any(|&l| at[l] == k));
    assert_same(&got.rebuilt, &sent, &[40]);
    assert_eq!(got.unrepairable, 1);
}

#[test]
fn a_burst_as_deep_as_the_interleaving_is_rebuilt() {
    for d in [1u32, 2, 4, 8] {
        let p = FecParams::new(32, d).unwrap();
        let mut rng = Rng(99 + u64::from(d));
        let (sent, wire) = send(&mut rng, p, 0, 3 * p.block(), true);
        let at = data_at(&wire);
        // A burst of d consecutive packets in the middle of each block.
        let lost: Vec<usize> = (0..sent.len())
            .filter(|&k| (k as u32 % p.block()).wrapping_sub(p.block() / 2) < d)
            .collect();
        let got = decode(p, &wire, |k| lost.iter().any(|&l| at[l] == k));
        assert_same(&got.rebuilt, &sent, &lost);
        // One more than the depth puts two losses in one unit.
        let over: Vec<usize> = (0..sent.len())
            .filter(|&k| (k as u32 % p.block()).wrapping_sub(p.block() / 2) <= d)
            .collect();
        let got = decode(p, &wire, |k| over.iter().any(|&l| at[l] == k));
        assert_eq!(got.unrepairable, 3, "depth {d}");
        assert_eq!(got.rebuilt.len() as u32, 3 * (d - 1), "depth {d}");
    }
}

#[test]
fn a_flush_covers_what_was_sent_and_the_unit_goes_on() {
    let p = FecParams::new(32, 1).unwrap();
    let mut rng = Rng(3);
    let mut enc = Encoder::new(p, 0x11, vec![0u8; ENC_UNITS * FEC_MAX_PACKET]);
    let mut wire = Vec::new();
    let mut sent = Vec::new();
    for (from, count) in [(0u32, 1u32), (1, 9), (10, 22)] {
        for k in from..from + count {
            let s = packet(&mut rng, Psn::new(k), 300);
            wire.push(Wire::Data(s.clone()));
            let mut emit = |rh: &RepairHeader, pl: &[u8]| wire.push(Wire::Repair(*rh, pl.to_vec()));
            enc.on_sent(s.psn, s.ip_id, &s.bytes, &mut emit);
            sent.push(s);
        }
        enc.flush_idle(&mut |rh, pl| wire.push(Wire::Repair(*rh, pl.to_vec())));
    }
    // One packet alone is not flushed; 1 + 9 are (covering 0..10); the unit's end is.
    let masks: Vec<u32> = wire
        .iter()
        .filter_map(|w| match w {
            Wire::Repair(rh, _) => Some(rh.covered),
            Wire::Data(_) => None,
        })
        .collect();
    assert_eq!(masks, [0x3ff, !0]);
    // A loss before the flush is rebuilt by it, a loss after it by the unit's end.
    let at = data_at(&wire);
    for lost in [4usize, 20] {
        let got = decode(p, &wire, |k| k == at[lost]);
        assert_same(&got.rebuilt, &sent, &[lost]);
    }
}

#[test]
fn unmarked_packets_are_not_coded() {
    let p = FecParams::new(4, 1).unwrap();
    let mut rng = Rng(11);
    // 0, 1 and 2 are first sent (marked as coded), then resent (unmarked), then 3 is sent:
    // the four first sends are coded, the resends not, on either side.
    let mut enc = Encoder::new(p, 0x11, vec![0u8; ENC_UNITS * FEC_MAX_PACKET]);
    let mut dec = Decoder::new(p, SR_DEFAULT_WINDOW_PSNS, vec![0u8; DEC_UNITS * FEC_MAX_PACKET]);
    let mut masks = Vec::new();
    let coded: Vec<(bool, DataOutcome)> = [
        (0u32, true),
        (1, true),
        (2, true),
        (1, false),
        (2, false),
        (0, false),
        (3, true),
    ]
    .iter()
    .map(|&(k, first)| {
        let mut s = packet(&mut rng, Psn::new(k), 100);
        if !first {
            s.bytes[8] = 0;
            let (ip, udp) = headers(s.bytes.len(), s.ip_id);
            icrc::fill(&ip, &udp, &mut s.bytes).unwrap();
        }
        let c = enc.on_sent(s.psn, s.ip_id, &s.bytes, &mut |rh, _| {
            masks.push(rh.covered)
        });
        (c, dec.on_data(s.psn, s.ip_id, &s.bytes))
    })
    .collect();
    let u = DataOutcome::Uncoded;
    let c = DataOutcome::Coded;
    assert_eq!(
        coded,
        [
            (true, c),
            (true, c),
            (true, c),
            (false, u),
            (false, u),
            (false, u),
            (true, c)
        ]
    );
    assert_eq!(masks, [0xf]);
}

/// Random schedules: Bernoulli and burst loss of data and repairs, duplicates and
/// reordering within a few packets. Whatever is rebuilt is the lost packet byte for byte;
/// with the order kept, every unit that lost one packet and kept its repair is rebuilt.
#[test]
fn random_schedules_rebuild_only_what_was_sent() {
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (n, d) = [(32, 4), (16, 2), (8, 1), (4, 8)][seed as usize % 4];
        let p = FecParams::new(n, d).unwrap();
        let start = rng.below(1 << 24) as u32;
        let (sent, wire) = send(&mut rng, p, start, 600, true);
        let loss_ppm = [0u64, 2_000, 20_000, 100_000][(seed / 4) as usize % 4];
        let reorder = seed % 3 == 0;
        // The schedule: what is dropped, duplicated, and the delivery order.
        let mut order: Vec<usize> = Vec::new();
        let mut burst = 0;
        for k in 0..wire.len() {
            if burst > 0 || rng.below(1_000_000) < loss_ppm {
                burst = if burst > 0 {
                    burst - 1
                } else {
                    rng.below(u64::from(d) + 2)
                };
                continue;
            }
            order.push(k);
            if rng.below(50) == 0 {
                order.push(k);
            }
        }
        if reorder {
            for k in 1..order.len() {
                if rng.below(8) == 0 {
                    order.swap(k - 1, k);
                }
            }
        }
        let mut dec = Decoder::new(p, SR_DEFAULT_WINDOW_PSNS, vec![0u8; DEC_UNITS * FEC_MAX_PACKET]);
        let mut out = vec![0u8; FEC_MAX_PACKET];
        let by_psn = |psn: Psn| sent.iter().find(|s| s.psn == psn).unwrap();
        let mut rebuilt = std::collections::HashSet::new();
        for &k in &order {
            match &wire[k] {
                Wire::Data(s) => {
                    dec.on_data(s.psn, s.ip_id, &s.bytes);
                }
                Wire::Repair(rh, pl) => {
                    if let RepairOutcome::Rebuilt { psn, ip_id, len } =
                        dec.on_repair(rh, pl, &mut out)
                    {
                        let s = by_psn(psn);
                        assert_eq!((ip_id, &out[..len]), (s.ip_id, &s.bytes[..]), "seed {seed}");
                        // In order, only a packet that never arrives is rebuilt (out of
                        // order, one that is late may be).
                        let arrives = order
                            .iter()
                            .any(|&o| matches!(&wire[o], Wire::Data(x) if x.psn == psn));
                        assert!(
                            reorder || !arrives,
                            "seed {seed}: {psn:?} rebuilt, and arrives"
                        );
                        assert!(
                            rebuilt.insert(psn.get()),
                            "seed {seed}: {psn:?} rebuilt twice"
                        );
                    }
                }
            }
        }
        if !reorder {
            // Each unit's last repair: if kept, and exactly one of its packets was lost
            // (and not delivered twice), that packet must have been rebuilt.
            for (k, w) in wire.iter().enumerate() {
                let Wire::Repair(rh, _) = w else { continue };
                let last = !wire[k + 1..]
                    .iter()
                    .any(|x| matches!(x, Wire::Repair(r, _) if r.first_psn == rh.first_psn));
                if !last || !order.contains(&k) {
                    continue;
                }
                let missing: Vec<u32> = (0..n)
                    .filter(|&i| rh.covered & (1 << i) != 0)
                    .map(|i| p.psn_of(rh.first_psn, i).get())
                    .filter(|&q| {
                        !order
                            .iter()
                            .any(|&o| matches!(&wire[o], Wire::Data(x) if x.psn.get() == q))
                    })
                    .collect();
                if missing.len() == 1 {
                    assert!(
                        rebuilt.contains(&missing[0]),
                        "seed {seed}: PSN {:#x} not rebuilt",
                        missing[0]
                    );
                }
            }
        }
    }
}

/// Forged repairs (random headers and payloads that parse) never panic, and what they
/// rebuild fails the ICRC, which the receive path checks before anything is placed.
#[test]
fn forged_repairs_rebuild_nothing_that_passes_the_icrc() {
    let p = FecParams::DEFAULT;
    let mut rng = Rng(0xbad);
    let (sent, _) = send(&mut rng, p, 0, 2 * p.block(), false);
    let mut dec = Decoder::new(p, SR_DEFAULT_WINDOW_PSNS, vec![0u8; DEC_UNITS * FEC_MAX_PACKET]);
    let mut out = vec![0u8; FEC_MAX_PACKET];
    // Everything but one packet per unit arrives; no genuine repair does.
    let mut len_xor = [0u16; 8];
    for (k, s) in sent.iter().enumerate() {
        if k % 128 / 4 != 5 {
            assert_eq!(dec.on_data(s.psn, s.ip_id, &s.bytes), DataOutcome::Coded);
            len_xor[k / 128 * 4 + k % 4] ^= s.bytes.len() as u16;
        }
    }
    let (mut tried, mut rebuilt) = (0, 0);
    for _ in 0..20_000 {
        let mut b = vec![0u8; RH_LEN + 4 * (1 + rng.below(300) as usize)];
        for x in b.iter_mut() {
            *x = rng.next() as u8;
        }
        // A header that parses, for a unit that exists, most of the time.
        b[0] = 0x1f;
        b[4] = 0;
        b[5] = 1;
        b[6] = 1;
        b[7] = 0x52;
        b[8] = 0;
        b[9] = 0;
        b[10] = 0;
        b[11] = (rng.below(2 * p.block() as u64) as u8) & !0x7c;
        if rng.below(2) == 0 {
            b[12..16].copy_from_slice(&[0xff; 4]);
        }
        // Half of them with the lengths right, as a forger who saw the traffic would.
        if rng.below(2) == 0 {
            let unit = usize::from(b[11] >> 7) * 4 + usize::from(b[11] & 3);
            let l = len_xor[unit] ^ (b.len() - RH_LEN) as u16;
            b[16..18].copy_from_slice(&l.to_be_bytes());
        }
        let Ok((rh, pl)) = RepairHeader::parse(&b) else {
            continue;
        };
        tried += 1;
        if let RepairOutcome::Rebuilt { len, ip_id, .. } = dec.on_repair(&rh, pl, &mut out) {
            rebuilt += 1;
            let (ip, udp) = headers(len, ip_id);
            assert!(icrc::verify(&ip, &udp, &out[..len]).is_err());
        }
    }
    assert!(
        tried > 10_000 && rebuilt > 0,
        "tried {tried}, rebuilt {rebuilt}"
    );
}

/// A coded packet that did not go out (the egress refused it) breaks its unit: the unit
/// gets no repair, the others theirs; the packet sent again later is not coded twice.
#[test]
fn a_packet_that_did_not_go_out_breaks_its_unit() {
    let p = FecParams::new(4, 2).unwrap();
    let mut rng = Rng(5);
    let mut enc = Encoder::new(p, 0x11, vec![0u8; ENC_UNITS * FEC_MAX_PACKET]);
    let mut firsts = Vec::new();
    for k in 0..8u32 {
        let s = packet(&mut rng, Psn::new(k), 200);
        let mut emit = |rh: &RepairHeader, _: &[u8]| firsts.push(rh.first_psn.get());
        enc.prepare(s.psn, 0, &mut emit);
        assert!(enc.code(s.psn, s.ip_id, &s.bytes));
        if k == 3 {
            // Refused: unit 1 (PSNs 1, 3, 5, 7) is broken.
            enc.poison(s.psn);
        }
        enc.emit_due(&mut emit);
    }
    assert_eq!(firsts, [0], "unit 0's repair only");
}
