// SPDX-License-Identifier: GPL-2.0
//! The receiving side with its held packets, in front of a go-back-N responder: a loss
//! the shim rebuilds never reaches the transport as a gap, and every packet handed to the
//! shim comes out exactly once.

use crate::common::*;
use rxe_sr::proto::fec::decoder::{RepairOutcome, DEC_UNITS};
use rxe_sr::proto::fec::rx::FecRx;
use rxe_sr::proto::fec::{FecParams, FEC_MAX_PACKET};
use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::rc::SR_DEFAULT_WINDOW_PSNS;
use rxe_sr::proto::wire::icrc;

/// What a go-back-N responder makes of the packets the shim delivers: it takes ePSN
/// only; a later PSN is a sequence error (dropped), an earlier one a duplicate.
#[derive(Default)]
struct Gbn {
    epsn: Option<Psn>,
    taken: Vec<Sent>,
    seq_errors: u32,
    /// Every packet delivered, in order: (PSN, copy number).
    delivered: Vec<(u32, u32)>,
}

impl Gbn {
    fn deliver(&mut self, (s, copy): (Sent, u32)) {
        self.delivered.push((s.psn.get(), copy));
        let e = *self.epsn.get_or_insert(s.psn);
        if s.psn == e {
            self.epsn = Some(e.next());
            self.taken.push(s);
        } else if s.psn.after(e) {
            self.seq_errors += 1;
        }
    }
}

type Rx = FecRx<(Sent, u32), Vec<u8>, Vec<Option<((Sent, u32), u32)>>>;

fn new_rx(p: FecParams, slots: usize) -> Rx {
    FecRx::new(
        p,
        SR_DEFAULT_WINDOW_PSNS,
        vec![0u8; DEC_UNITS * FEC_MAX_PACKET],
        (0..slots).map(|_| None).collect(),
    )
}

/// Feeds the wire items of `order` (indices, repeats allowed: copy numbers count them)
/// through `rx` into `gbn`. Rebuilt packets pass the ICRC check first, as in the module.
fn feed(rx: &mut Rx, gbn: &mut Gbn, wire: &[Wire], order: &[usize]) -> u32 {
    let mut out = vec![0u8; FEC_MAX_PACKET];
    let mut copies = std::collections::HashMap::new();
    let mut rebuilt = 0;
    // Into the responder in order, once each call of the shim returns.
    let to_gbn =
        |rx_out: Vec<(Sent, u32)>, gbn: &mut Gbn| rx_out.into_iter().for_each(|x| gbn.deliver(x));
    for &k in order {
        let copy = {
            let c = copies.entry(k).or_insert(0u32);
            *c += 1;
            *c
        };
        match &wire[k] {
            Wire::Data(s) => {
                let epsn = gbn.epsn.unwrap_or(s.psn);
                rx.code(s.psn, s.ip_id, &s.bytes, epsn);
                let mut v = vec![];
                rx.pass(s.psn, 1, (s.clone(), copy), epsn, &mut |x| v.push(x));
                to_gbn(v, gbn);
            }
            Wire::Repair(rh, pl) => {
                if let RepairOutcome::Rebuilt { psn, ip_id, len } = rx.on_repair(rh, pl, &mut out, gbn.epsn.unwrap_or(rh.first_psn)) {
                    let (ip, udp) = headers(len, ip_id);
                    if icrc::verify(&ip, &udp, &out[..len]).is_ok() {
                        let s = Sent {
                            psn,
                            ip_id,
                            bytes: out[..len].to_vec(),
                        };
                        let epsn = gbn.epsn.unwrap_or(psn);
                        rx.code(psn, ip_id, &s.bytes, epsn);
                        let mut v = vec![];
                        rx.pass(psn, 1, (s, 0), epsn, &mut |x| v.push(x));
                        to_gbn(v, gbn);
                        rebuilt += 1;
                    }
                }
                let mut v = vec![];
                rx.settle(&mut |x| v.push(x));
                to_gbn(v, gbn);
            }
        }
    }
    rebuilt
}

/// One loss in every unit of two blocks (after a first one without loss: the receiver
/// holds nothing before a repair showed that the peer sends them), each geometry; with no
/// slots (nothing held) the same losses reach the responder as gaps.
#[test]
fn a_rebuilt_loss_never_reaches_the_transport_as_a_gap() {
    for (n, d) in [(32, 4), (8, 1), (4, 8), (16, 2)] {
        let p = FecParams::new(n, d).unwrap();
        let mut rng = Rng(0xfec ^ u64::from(n * 17 + d));
        let (sent, wire) = send(&mut rng, p, 0, 3 * p.block(), true);
        let at = data_at(&wire);
        let lost: Vec<usize> = (0..sent.len())
            .filter(|&k| {
                let (b, j, i) = p.place(sent[k].psn);
                b > 0 && i == (b * 3 + j * 5 + 1) % n
            })
            .map(|k| at[k])
            .collect();
        let order: Vec<usize> = (0..wire.len()).filter(|k| !lost.contains(k)).collect();
        for (slots, want_gaps) in [(2 * p.block() as usize, false), (0, true)] {
            let mut rx = new_rx(p, slots);
            let mut gbn = Gbn::default();
            let rebuilt = feed(&mut rx, &mut gbn, &wire, &order);
            assert_eq!(rebuilt as usize, lost.len(), "{n}x{d}");
            assert_eq!(rx.held(), 0, "{n}x{d}");
            if want_gaps {
                assert!(gbn.seq_errors > 0, "{n}x{d}: no slots, and no gap seen");
                continue;
            }
            assert_eq!(gbn.seq_errors, 0, "{n}x{d}, {slots} slots");
            assert_eq!(gbn.taken.len(), sent.len());
            for (t, s) in gbn.taken.iter().zip(&sent) {
                assert!(t.psn == s.psn && t.bytes == s.bytes, "{n}x{d}: {:?}", s.psn);
            }
        }
    }
}

/// Two losses in a unit: its repair gives the unit up and the held packets go on at
/// once; a lost repair holds them only until the unit's block is left behind.
#[test]
fn what_cannot_be_rebuilt_is_let_go() {
    let p = FecParams::new(8, 1).unwrap();
    let mut rng = Rng(21);
    let (sent, wire) = send(&mut rng, p, 0, 40, true);
    let at = data_at(&wire);
    // Unit 1 (PSNs 8..16) loses 10 and 13 (unit 0's repair showed that repairs come).
    let order: Vec<usize> = (0..wire.len())
        .filter(|&k| k != at[10] && k != at[13])
        .collect();
    let mut rx = new_rx(p, 16);
    let mut gbn = Gbn::default();
    let repair1 = at[15] + 1;
    let upto = order.iter().position(|&k| k == repair1).unwrap();
    feed(&mut rx, &mut gbn, &wire, &order[..upto]);
    assert_eq!(
        (rx.held(), gbn.delivered.len()),
        (4, 10),
        "11, 12, 14, 15 and nothing else held"
    );
    feed(&mut rx, &mut gbn, &wire, &[repair1]);
    assert_eq!(
        rx.held(),
        0,
        "the repair found two missing: nothing more to wait for"
    );
    // Unit 2 (PSNs 16..24) loses 17 and its repair: held until PSN 32 leaves the slots.
    let (l, r) = (at[17], at[23] + 1);
    assert!(matches!(wire[r], Wire::Repair(..)));
    let mut rx = new_rx(p, 16);
    let mut gbn = Gbn::default();
    let order: Vec<usize> = (0..wire.len()).filter(|&k| k != l && k != r).collect();
    let upto = order.iter().position(|&k| k == at[32]).unwrap();
    feed(&mut rx, &mut gbn, &wire, &order[..upto]);
    assert_eq!(rx.held(), 14, "18..32 wait for 17");
    feed(&mut rx, &mut gbn, &wire, &order[upto..]);
    assert_eq!(rx.held(), 0);
    // The responder took 0..17 and sees the gap at 17; all else was delivered once.
    assert_eq!(gbn.taken.len(), 17);
    assert_eq!(gbn.delivered.len(), sent.len() - 1);
}

/// Random schedules (loss of data and repairs, bursts, duplicates, reordering): each
/// packet handed to the shim comes out once, rebuilt ones are the packets sent, and
/// nothing stays held once everything is let go.
#[test]
fn random_schedules_deliver_each_packet_once() {
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (n, d) = [(32, 4), (16, 2), (8, 1), (4, 8)][seed as usize % 4];
        let p = FecParams::new(n, d).unwrap();
        let start = rng.below(1 << 24) as u32;
        let (sent, wire) = send(&mut rng, p, start, 500, true);
        let loss_ppm = [5_000u64, 30_000, 150_000][seed as usize % 3];
        let mut order = Vec::new();
        for k in 0..wire.len() {
            if rng.below(1_000_000) < loss_ppm {
                continue;
            }
            order.push(k);
            if rng.below(40) == 0 {
                order.push(k);
            }
        }
        if seed % 2 == 0 {
            for k in 1..order.len() {
                if rng.below(6) == 0 {
                    order.swap(k - 1, k);
                }
            }
        }
        let slots = [2 * p.block() as usize, 16, 1][seed as usize % 3];
        let mut rx = new_rx(p, slots);
        let mut gbn = Gbn::default();
        feed(&mut rx, &mut gbn, &wire, &order);
        rx.release_all(&mut |x| gbn.deliver(x));
        assert_eq!(rx.held(), 0);
        // Each (PSN, copy) of a data packet fed in comes out exactly once.
        let mut fed: Vec<(u32, u32)> = Vec::new();
        let mut copies = std::collections::HashMap::new();
        for &k in &order {
            let c = copies.entry(k).or_insert(0u32);
            *c += 1;
            if let Wire::Data(s) = &wire[k] {
                fed.push((s.psn.get(), *c));
            }
        }
        let mut out: Vec<(u32, u32)> = gbn
            .delivered
            .iter()
            .copied()
            .filter(|&(_, c)| c != 0)
            .collect();
        fed.sort_unstable();
        out.sort_unstable();
        assert_eq!(out, fed, "seed {seed}");
        for t in &gbn.taken {
            let s = sent.iter().find(|s| s.psn == t.psn).unwrap();
            assert!(s.bytes == t.bytes, "seed {seed}: {:?} differs", t.psn);
        }
    }
}

/// In order with nothing held, a packet goes straight on (the kernel's fast path, no
/// handing over); after a gap it must be handed over, and once the gap is filled the fast
/// path opens again.
#[test]
fn in_order_packets_take_the_fast_path() {
    let p = FecParams::new(4, 1).unwrap();
    let mut rx = new_rx(p, 8);
    let e = Psn::new(100);
    assert!(rx.pass_in_order(Psn::new(100), 1, e));
    // A READ request for three PSNs: the next expected is 104.
    assert!(rx.pass_in_order(Psn::new(101), 3, e));
    assert!(rx.pass_in_order(Psn::new(104), 1, e));
    // A duplicate goes straight on and changes nothing; outside the window too.
    assert!(rx.pass_in_order(Psn::new(102), 1, e));
    assert!(rx.pass_in_order(Psn::new(99), 1, e));
    assert!(rx.pass_in_order(Psn::new(100 + 5000), 1, e));
    // 105 is missing: 106 is not in order.
    assert!(!rx.pass_in_order(Psn::new(106), 1, e));
    let mut out = vec![];
    rx.pass(
        Psn::new(105),
        1,
        (packet(&mut Rng(1), Psn::new(105), 64), 1),
        e,
        &mut |x| out.push(x.0.psn.get()),
    );
    assert_eq!(out, [105]);
    assert!(rx.pass_in_order(Psn::new(106), 1, e));
}
