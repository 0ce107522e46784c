// SPDX-License-Identifier: GPL-2.0
//! Arbitrary event sequences against every engine (tiny pools, three QPs sharing them):
//! no panic, and the safety rules hold whatever the peer sends:
//! - a responder places only the arriving packet, each PSN at most once;
//! - RCV-NXT only moves forward and only over placed PSNs;
//! - a requester retransmits only PSNs it sent and not yet acknowledged, and never
//!   acknowledges past what it sent;
//! - shared pools stay within their size, consistent, and empty after `release()`.

use std::collections::HashSet;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rxe_sr::proto::pool::bits_pool::BitsPool;
use rxe_sr::proto::pool::sr_pool::SrPool;
use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::recovery::fasr::Fasr;
use rxe_sr::proto::recovery::gbn::Gbn;
use rxe_sr::proto::recovery::irn::Irn;
use rxe_sr::proto::words::InlineWords;
use rxe_sr::proto::recovery::melo::Melo;
use rxe_sr::proto::recovery::srnic::Srnic;
use rxe_sr::proto::recovery::{Action, Feedback, Hole, Recovery, ReqEvent, RespEvent, RtoConfig, Timer};

const RTO: RtoConfig = RtoConfig {
    rto_low: 30,
    rto_high: 300,
    n_low: 3,
};
const BASE: u32 = 0xFF_FFF0;

#[derive(Clone, Debug)]
enum In {
    Data(usize, u32),
    Send(usize),
    Fb(usize, u8, u32, u32, u8, bool),
    Rto(usize),
    Slow(usize),
}

fn offset() -> impl Strategy<Value = u32> {
    prop_oneof![8 => 0u32..80, 1 => any::<u32>()]
}

fn input() -> impl Strategy<Value = In> {
    prop_oneof![
        6 => (0usize..3, offset()).prop_map(|(q, o)| In::Data(q, o)),
        4 => (0usize..3).prop_map(In::Send),
        4 => (0usize..3, 0u8..6, offset(), offset(), 0u8..10, any::<bool>())
            .prop_map(|(q, k, a, b, l, o)| In::Fb(q, k, a, b, l, o)),
        1 => (0usize..3).prop_map(In::Rto),
        1 => (0usize..3).prop_map(In::Slow),
    ]
}

struct Side {
    snd_nxt: u32,
    una: Psn,
    rcv_nxt: Psn,
    placed: HashSet<u32>,
}

fn check<E: Recovery>(mut qps: Vec<E>, shared: &mut E::Shared, inputs: &[In]) -> Result<(), TestCaseError> {
    let mut sides: Vec<Side> = (0..qps.len())
        .map(|_| Side { snd_nxt: 0, una: Psn::new(BASE), rcv_nxt: Psn::new(BASE), placed: HashSet::new() })
        .collect();
    for (now, inp) in inputs.iter().enumerate() {
        let now = now as u64 * 7;
        let mut acts = Vec::new();
        let (q, data) = match *inp {
            In::Data(q, o) => {
                let psn = Psn::new(BASE).add(o);
                qps[q].on_responder(shared, RespEvent::Data { psn, now }, &mut |a| acts.push(a));
                (q, Some(psn))
            }
            In::Send(q) => {
                let psn = Psn::new(BASE).add(sides[q].snd_nxt);
                sides[q].snd_nxt += 1;
                qps[q].on_requester(shared, ReqEvent::Sent { psn, now }, &mut |a| acts.push(a));
                (q, None)
            }
            In::Fb(q, k, a, b, l, o) => {
                let r = Psn::new(BASE).add(a);
                let s = Psn::new(BASE).add(b);
                let fb = match k {
                    0 => Feedback::Ack { rcv_nxt: r },
                    // A run of up to 20 PSNs ending at `s` (a coalesced SACK), or one past it.
                    1 => Feedback::Sack { rcv_nxt: r, sack_psn: s, run_from: s.sub(a % 21).add(u32::from(a % 23 == 22)), lost_cnt: l, overflow: o },
                    2 => Feedback::Nak { rcv_nxt: r },
                    3 => Feedback::Fnack { rcv_nxt: r, psn: s },
                    // A gap of up to 20 PSNs before `s`, or none.
                    4 => Feedback::SackGap { rcv_nxt: r, sack_psn: s, gap_from: s.sub(a % 21), lost_cnt: l, overflow: o },
                    _ => Feedback::Holes {
                        rcv_nxt: r,
                        holes: [Hole { first: s, count: u32::from(l) }, Hole { first: r, count: b % 5 }, Hole::default()],
                    },
                };
                qps[q].on_requester(shared, ReqEvent::Feedback { fb, now }, &mut |a| acts.push(a));
                (q, None)
            }
            In::Rto(q) => {
                qps[q].on_requester(shared, ReqEvent::Timer { timer: Timer::Rto, now }, &mut |a| acts.push(a));
                (q, None)
            }
            In::Slow(q) => {
                qps[q].on_responder(shared, RespEvent::Timer { timer: Timer::SlowPath, now }, &mut |a| acts.push(a));
                (q, None)
            }
        };
        let side = &mut sides[q];
        let snd_nxt = Psn::new(BASE).add(side.snd_nxt);
        for a in acts {
            match a {
                Action::Deliver { psn } => {
                    prop_assert_eq!(Some(psn), data, "placed a packet that did not arrive");
                    prop_assert!(side.placed.insert(psn.get()), "PSN {} placed twice", psn.get());
                }
                Action::Advance { rcv_nxt } => {
                    let d = rcv_nxt.diff(side.rcv_nxt);
                    prop_assert!(d > 0 && d < 10_000, "RCV-NXT moved by {}", d);
                    let mut x = side.rcv_nxt;
                    while x != rcv_nxt {
                        prop_assert!(side.placed.contains(&x.get()), "RCV-NXT passed unplaced PSN {}", x.get());
                        x = x.next();
                    }
                    side.rcv_nxt = rcv_nxt;
                }
                Action::Acked { una } => {
                    prop_assert!(!una.after(snd_nxt) && una.after(side.una), "Acked {} (una {}, sent up to {})", una.get(), side.una.get(), snd_nxt.get());
                    side.una = una;
                }
                Action::Retransmit { first, count } => {
                    prop_assert!(count > 0);
                    prop_assert!(!first.before(side.una), "retransmit {} before UNACK {}", first.get(), side.una.get());
                    prop_assert!(!first.add(count).after(snd_nxt), "retransmit {}+{} past {}", first.get(), count, snd_nxt.get());
                }
                Action::GoBack { from } => {
                    prop_assert!(!from.before(side.una) && from.before(snd_nxt));
                }
                _ => {}
            }
        }
    }
    for q in qps.iter_mut() {
        q.release(shared);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, rng_seed: RngSeed::Fixed(0x5EED_F00D), ..ProptestConfig::default() })]

    #[test]
    fn fasr_fuzz(inputs in prop::collection::vec(input(), 0..300)) {
        let mut pool: SrPool<2, 3, 16> = SrPool::new();
        let qps = (0..3).map(|_| Fasr::new(Psn::new(BASE), Psn::new(BASE), RTO)).collect();
        check(qps, &mut pool, &inputs)?;
        prop_assert!(pool.peak_units() <= 2 && pool.peak_blocks() <= 3);
        prop_assert_eq!(pool.count_in_use(), (0, 0));
        prop_assert_eq!((pool.used_units(), pool.used_blocks()), (0, 0));
    }

    #[test]
    fn gbn_fuzz(inputs in prop::collection::vec(input(), 0..300)) {
        let qps = (0..3).map(|_| Gbn::new(Psn::new(BASE), Psn::new(BASE), RTO)).collect();
        check(qps, &mut (), &inputs)?;
    }

    #[test]
    fn irn_fuzz(inputs in prop::collection::vec(input(), 0..300)) {
        let qps = (0..3).map(|_| Irn::<InlineWords<1>>::new(Psn::new(BASE), Psn::new(BASE), RTO)).collect();
        check(qps, &mut (), &inputs)?;
    }

    #[test]
    fn srnic_fuzz(inputs in prop::collection::vec(input(), 0..300), delay in 0u64..50) {
        let qps = (0..3).map(|_| Srnic::<3, InlineWords<1>>::new(Psn::new(BASE), Psn::new(BASE), RTO, delay)).collect();
        check(qps, &mut (), &inputs)?;
    }

    #[test]
    fn melo_fuzz(inputs in prop::collection::vec(input(), 0..300)) {
        let mut pool: BitsPool<4, 8> = BitsPool::new();
        let qps = (0..3).map(|_| Melo::new(Psn::new(BASE), Psn::new(BASE), RTO)).collect();
        check(qps, &mut pool, &inputs)?;
        prop_assert!(pool.peak() <= 4);
        prop_assert_eq!(pool.used(), 0);
    }
}
