// SPDX-License-Identifier: GPL-2.0
//! The requester's receiving side of coded responses: responses past the one the
//! requester waits for are held until that one is rebuilt, so a go-back-N requester never
//! sees the loss, ACKs among them included, and every response comes out exactly once.

use crate::common::*;
use rxe_sr::proto::fec::decoder::{RepairOutcome, DEC_UNITS};
use rxe_sr::proto::fec::encoder::{Encoder, ENC_UNITS};
use rxe_sr::proto::fec::resp_rx::{RespPass, RespRx};
use rxe_sr::proto::fec::{FecParams, RepairHeader, FEC_MAX_PACKET};
use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::rc::SR_DEFAULT_WINDOW_PSNS;
use rxe_sr::proto::wire::icrc;

/// A go-back-N requester's view of responses: it waits for the coded responses in PSN
/// order (READ data); an ACK (uncoded) past the one it waits for, or a later response,
/// would make it ask again.
struct Requester {
    owed: Vec<Psn>,
    next: usize,
    go_backs: u32,
    taken: Vec<Sent>,
}

impl Requester {
    fn owed(&self) -> Option<Psn> {
        self.owed.get(self.next).copied()
    }

    fn deliver(&mut self, s: Sent) {
        let coded = s.bytes[8] != 0;
        match self.owed() {
            Some(o) if coded && s.psn == o => {
                self.next += 1;
                self.taken.push(s);
            }
            Some(o) if s.psn.after(o) => self.go_backs += 1,
            _ => {}
        }
    }
}

/// Responses on PSNs `start..start + count`: every fifth PSN an ACK (not coded), the
/// others coded READ responses, through a responder's encoder. Returns the coded ones and
/// the wire.
fn respond(rng: &mut Rng, p: FecParams, start: u32, count: u32) -> (Vec<Sent>, Vec<Wire>) {
    let mut enc = Encoder::for_responses(p, 0x11, vec![0u8; ENC_UNITS * FEC_MAX_PACKET]);
    let (mut coded, mut wire) = (vec![], vec![]);
    for k in 0..count {
        let mut s = packet(rng, Psn::new(start).add(k), 1100);
        if k % 5 == 4 {
            s.bytes[8] = 0;
            let (ip, udp) = headers(s.bytes.len(), s.ip_id);
            icrc::fill(&ip, &udp, &mut s.bytes).unwrap();
            wire.push(Wire::Data(s));
            continue;
        }
        wire.push(Wire::Data(s.clone()));
        let mut emit = |rh: &RepairHeader, pl: &[u8]| wire.push(Wire::Repair(*rh, pl.to_vec()));
        assert!(enc.on_sent(s.psn, s.ip_id, &s.bytes, &mut emit));
        coded.push(s);
    }
    enc.flush_idle(&mut |rh, pl| wire.push(Wire::Repair(*rh, pl.to_vec())));
    (coded, wire)
}

type Rx = RespRx<Sent, Vec<u8>, Vec<Option<(Sent, u32)>>>;

/// One response through the shim into the requester, with what it lets go.
fn pass(rx: &mut Rx, req: &mut Requester, s: Sent) {
    let una = req.owed().unwrap_or(s.psn);
    rx.code(s.psn, s.ip_id, &s.bytes, una);
    match rx.pass(s.psn, s, req.owed()) {
        RespPass::Held => return,
        RespPass::Now(s) => req.deliver(s),
        RespPass::AfterHeld(s) => {
            release(rx, req);
            req.deliver(s);
        }
    }
    release(rx, req);
}

fn release(rx: &mut Rx, req: &mut Requester) {
    while let Some(s) = rx.release(req.owed()) {
        req.deliver(s);
    }
}

/// Feeds `wire` without the items in `lost`; returns the responses rebuilt.
fn feed(rx: &mut Rx, req: &mut Requester, wire: &[Wire], lost: &[usize]) -> u32 {
    let mut out = vec![0u8; FEC_MAX_PACKET];
    let mut rebuilt = 0;
    for (k, w) in wire.iter().enumerate().filter(|(k, _)| !lost.contains(k)) {
        match w {
            Wire::Data(s) => pass(rx, req, s.clone()),
            Wire::Repair(rh, pl) => {
                if let RepairOutcome::Rebuilt { psn, ip_id, len } =
                    rx.on_repair(rh, pl, &mut out, req.owed())
                {
                    let (ip, udp) = headers(len, ip_id);
                    assert!(icrc::verify(&ip, &udp, &out[..len]).is_ok(), "item {k}");
                    let bytes = out[..len].to_vec();
                    pass(rx, req, Sent { psn, ip_id, bytes });
                    rebuilt += 1;
                }
                release(rx, req);
            }
        }
    }
    rebuilt
}

/// One lost response in every unit of the blocks after the first, ACKs between the
/// responses: all rebuilt, the requester takes every response in order and never goes
/// back; with no slots the same losses make it go back.
#[test]
fn a_rebuilt_response_never_reaches_the_requester_as_a_gap() {
    for (n, d) in [(8, 1), (8, 2), (32, 4)] {
        let p = FecParams::new(n, d).unwrap();
        let mut rng = Rng(0x5e5 ^ u64::from(n * 31 + d));
        let (coded, wire) = respond(&mut rng, p, 0x100, 4 * p.block());
        let mut seen = std::collections::HashSet::new();
        let lost: Vec<usize> = wire
            .iter()
            .enumerate()
            .filter_map(|(k, w)| match w {
                Wire::Data(s) if s.bytes[8] != 0 => {
                    let (b, j, _) = p.place(s.psn);
                    let first_block = b == p.place(Psn::new(0x100)).0;
                    (!first_block && seen.insert((b, j))).then_some(k)
                }
                _ => None,
            })
            .collect();
        for (slots, want_go_backs) in [(2 * p.block() as usize, false), (0, true)] {
            let mut rx: Rx = RespRx::new(
                p,
                SR_DEFAULT_WINDOW_PSNS,
                vec![0u8; DEC_UNITS * FEC_MAX_PACKET],
                (0..slots).map(|_| None).collect(),
            );
            let mut req = Requester {
                owed: coded.iter().map(|s| s.psn).collect(),
                next: 0,
                go_backs: 0,
                taken: vec![],
            };
            let rebuilt = feed(&mut rx, &mut req, &wire, &lost);
            assert_eq!(rebuilt as usize, lost.len(), "{n}x{d}");
            assert_eq!(rx.held(), 0, "{n}x{d}, {slots} slots");
            if want_go_backs {
                assert!(req.go_backs > 0, "{n}x{d}: no slots, and no go-back");
                continue;
            }
            assert_eq!(req.go_backs, 0, "{n}x{d}");
            assert_eq!(req.taken.len(), coded.len(), "{n}x{d}");
            for (t, s) in req.taken.iter().zip(&coded) {
                assert!(t.psn == s.psn && t.bytes == s.bytes, "{n}x{d}: {:?}", s.psn);
            }
        }
    }
}
