// SPDX-License-Identifier: GPL-2.0
//! gbn, irn, srnic and melo engines, event by event.

use rxe_sr::proto::pool::bits_pool::BitsPool;
use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::recovery::gbn::Gbn;
use rxe_sr::proto::recovery::irn;
use rxe_sr::proto::recovery::melo::Melo;
use rxe_sr::proto::recovery::srnic;
use rxe_sr::proto::words::InlineWords;
use rxe_sr::proto::recovery::{Action, Feedback, Hole, Recovery, ReqEvent, RespEvent, RtoConfig, Timer};

const RTO: RtoConfig = RtoConfig {
    rto_low: 100,
    rto_high: 1000,
    n_low: 3,
};

fn p(v: u32) -> Psn {
    Psn::new(v)
}

fn rx<E: Recovery>(e: &mut E, sh: &mut E::Shared, psn: u32, now: u64) -> Vec<Action> {
    let mut v = Vec::new();
    e.on_responder(sh, RespEvent::Data { psn: p(psn), now }, &mut |a| v.push(a));
    v
}

fn tx<E: Recovery>(e: &mut E, sh: &mut E::Shared, ev: ReqEvent) -> Vec<Action> {
    let mut v = Vec::new();
    e.on_requester(sh, ev, &mut |a| v.push(a));
    v
}

fn fb(f: Feedback, now: u64) -> ReqEvent {
    ReqEvent::Feedback { fb: f, now }
}

fn feedback(acts: &[Action]) -> Vec<Feedback> {
    acts.iter()
        .filter_map(|a| if let Action::Send(f) = *a { Some(f) } else { None })
        .collect()
}

fn retx(acts: &[Action]) -> Vec<(u32, u32)> {
    acts.iter()
        .filter_map(|a| match *a {
            Action::Retransmit { first, count } => Some((first.get(), count)),
            _ => None,
        })
        .collect()
}

#[test]
fn gbn_one_nak_per_gap_and_out_of_order_dropped() {
    let mut g = Gbn::new(p(0), p(0), RTO);
    assert!(rx(&mut g, &mut (), 0, 0).contains(&Action::Advance { rcv_nxt: p(1) }));
    assert_eq!(rx(&mut g, &mut (), 2, 0), vec![Action::Drop { psn: p(2) }, Action::Send(Feedback::Nak { rcv_nxt: p(1) })]);
    assert_eq!(rx(&mut g, &mut (), 3, 0), vec![Action::Drop { psn: p(3) }]);
    assert!(rx(&mut g, &mut (), 1, 0).contains(&Action::Deliver { psn: p(1) }));
    // A new gap gets a new NAK.
    assert_eq!(feedback(&rx(&mut g, &mut (), 5, 0)), vec![Feedback::Nak { rcv_nxt: p(2) }]);
    // A duplicate is re-acknowledged.
    assert_eq!(rx(&mut g, &mut (), 0, 0), vec![Action::Drop { psn: p(0) }, Action::Send(Feedback::Ack { rcv_nxt: p(2) })]);
    assert_eq!(g.counters().naks_sent, 2);
}

#[test]
fn gbn_requester_goes_back_on_nak_and_timeout() {
    let mut g = Gbn::new(p(0), p(0), RTO);
    let a = tx(&mut g, &mut (), ReqEvent::Sent { psn: p(0), now: 5 });
    assert_eq!(a, vec![Action::ArmTimer { timer: Timer::Rto, deadline: 1005 }], "rxe has one timeout: RTO_high");
    for i in 1..8 {
        tx(&mut g, &mut (), ReqEvent::Sent { psn: p(i), now: 5 });
    }
    let a = tx(&mut g, &mut (), fb(Feedback::Nak { rcv_nxt: p(3) }, 50));
    assert!(a.contains(&Action::Acked { una: p(3) }));
    assert!(a.contains(&Action::GoBack { from: p(3) }));
    let a = tx(&mut g, &mut (), ReqEvent::Timer { timer: Timer::Rto, now: 2000 });
    assert!(a.contains(&Action::GoBack { from: p(3) }));
    assert_eq!(g.counters().rto_fired, 1);
    let a = tx(&mut g, &mut (), fb(Feedback::Ack { rcv_nxt: p(8) }, 2100));
    assert!(a.contains(&Action::DisarmTimer { timer: Timer::Rto }));
}

// The default BDP-cap covers the 800-packet fabric BDP the accounting assumes.
/// IRN at the paper's bitmap size.
type Irn = irn::Irn<InlineWords<{ irn::DEFAULT_WORDS }>>;
/// SRNIC at the simulator's sizes.
type Srnic = srnic::Srnic<{ srnic::DEFAULT_QUEUE }, InlineWords<{ srnic::DEFAULT_WORDS }>>;

const _: () = assert!(irn::DEFAULT_WORDS * 64 >= 800);

#[test]
fn irn_rto_low_with_few_packets_in_flight() {
    let mut e: Irn = Irn::new(p(0), p(0), RTO);
    for i in 0..10 {
        tx(&mut e, &mut (), ReqEvent::Sent { psn: p(i), now: 0 });
    }
    let a = tx(&mut e, &mut (), fb(Feedback::Ack { rcv_nxt: p(1) }, 10));
    assert!(a.contains(&Action::ArmTimer { timer: Timer::Rto, deadline: 1010 }), "9 in flight: RTO_high");
    let a = tx(&mut e, &mut (), fb(Feedback::Ack { rcv_nxt: p(8) }, 20));
    assert!(a.contains(&Action::ArmTimer { timer: Timer::Rto, deadline: 120 }), "2 in flight: RTO_low");
}

#[test]
fn irn_selective_repeat_with_bitmaps() {
    let mut e: Irn = Irn::new(p(0), p(0), RTO);
    // Responder: 1 lost; 2, 3 arrive out of order and are NACKed.
    rx(&mut e, &mut (), 0, 0);
    let a = rx(&mut e, &mut (), 2, 0);
    assert!(a.contains(&Action::Deliver { psn: p(2) }));
    assert_eq!(feedback(&a), vec![Feedback::Sack { rcv_nxt: p(1), sack_psn: p(2), run_from: p(2), lost_cnt: 0, overflow: false }]);
    rx(&mut e, &mut (), 3, 0);
    assert!(rx(&mut e, &mut (), 1, 0).contains(&Action::Advance { rcv_nxt: p(4) }));
    // Requester: SACKs mark later packets received; each hole is resent once per round.
    let mut r: Irn = Irn::new(p(0), p(0), RTO);
    for i in 0..10 {
        tx(&mut r, &mut (), ReqEvent::Sent { psn: p(i), now: 0 });
    }
    let sack = |s: u32| fb(Feedback::Sack { rcv_nxt: p(0), sack_psn: p(s), run_from: p(s), lost_cnt: 0, overflow: false }, 10);
    assert_eq!(retx(&tx(&mut r, &mut (), sack(2))), vec![(0, 2)]);
    assert_eq!(retx(&tx(&mut r, &mut (), sack(5))), vec![(3, 2)]);
    assert!(retx(&tx(&mut r, &mut (), sack(6))).is_empty());
    // Timeout: every un-SACKed outstanding PSN.
    let a = tx(&mut r, &mut (), ReqEvent::Timer { timer: Timer::Rto, now: 2000 });
    assert_eq!(retx(&a), vec![(0, 2), (3, 2), (7, 3)]);
    // Memory: five BDP-cap bitmaps + 20 B.
    assert_eq!(irn::Irn::<InlineWords<13>>::sr_bytes_per_qp(), 5 * 832 / 8 + 20);
}

#[test]
fn srnic_slow_path_answers_after_its_delay() {
    let mut e: Srnic = Srnic::new(p(0), p(0), RTO, 50);
    rx(&mut e, &mut (), 0, 0);
    // 1 lost: 2 is placed at once but its metadata waits for software.
    let a = rx(&mut e, &mut (), 2, 10);
    assert_eq!(a, vec![Action::ArmTimer { timer: Timer::SlowPath, deadline: 60 }, Action::Deliver { psn: p(2) }]);
    // Sequential after the run: hardware only.
    assert_eq!(rx(&mut e, &mut (), 3, 11), vec![Action::Deliver { psn: p(3) }]);
    // Software serves the entry: it NAKs the hole.
    let mut v = Vec::new();
    e.on_responder(&mut (), RespEvent::Timer { timer: Timer::SlowPath, now: 60 }, &mut |a| v.push(a));
    assert_eq!(
        feedback(&v),
        vec![Feedback::Holes { rcv_nxt: p(1), holes: [Hole { first: p(1), count: 1 }, Hole::default(), Hole::default()] }]
    );
    // The retransmission is placed but ePSN only moves when software answers.
    let a = rx(&mut e, &mut (), 1, 100);
    assert!(!a.iter().any(|x| matches!(x, Action::Advance { .. })));
    assert_eq!(e.e_psn(), p(1));
    let mut v = Vec::new();
    e.on_responder(&mut (), RespEvent::Timer { timer: Timer::SlowPath, now: 150 }, &mut |a| v.push(a));
    // Fast exit: the new ePSN falls in [psn_left, psn_right + 1] -> psn_right + 1.
    assert!(v.contains(&Action::Advance { rcv_nxt: p(4) }), "{v:?}");
    assert_eq!(e.e_psn(), p(4));
    assert_eq!(rx(&mut e, &mut (), 4, 160)[1], Action::Advance { rcv_nxt: p(5) });
}

#[test]
fn srnic_requester_resends_named_holes() {
    let mut e: Srnic = Srnic::new(p(0), p(0), RTO, 0);
    for i in 0..10 {
        tx(&mut e, &mut (), ReqEvent::Sent { psn: p(i), now: 0 });
    }
    let holes = [Hole { first: p(4), count: 2 }, Hole { first: p(1), count: 1 }, Hole::default()];
    let a = tx(&mut e, &mut (), fb(Feedback::Holes { rcv_nxt: p(1), holes }, 10));
    assert_eq!(retx(&a), vec![(1, 1), (4, 2)]);
    // A timeout during recovery resends UNACK alone.
    let a = tx(&mut e, &mut (), ReqEvent::Timer { timer: Timer::Rto, now: 2000 });
    assert_eq!(retx(&a), vec![(1, 1)]);
    // Its ACK moves UNACK by that PSN alone and no hole list follows: the responder holds
    // nothing past it (its slow path dropped the rest), so the next timeout goes back.
    tx(&mut e, &mut (), fb(Feedback::Ack { rcv_nxt: p(2) }, 2100));
    let a = tx(&mut e, &mut (), ReqEvent::Timer { timer: Timer::Rto, now: 5000 });
    assert_eq!(retx(&a), vec![]);
    assert!(a.contains(&Action::GoBack { from: p(2) }), "{a:?}");
    // A new hole list allows one lone resend again.
    let holes = [Hole { first: p(6), count: 1 }, Hole::default(), Hole::default()];
    assert_eq!(retx(&tx(&mut e, &mut (), fb(Feedback::Holes { rcv_nxt: p(2), holes }, 5100))), vec![(6, 1)]);
    let a = tx(&mut e, &mut (), ReqEvent::Timer { timer: Timer::Rto, now: 9000 });
    assert_eq!(retx(&a), vec![(2, 1)]);
}

#[test]
fn melo_nack_carries_the_three_most_recent_holes() {
    let mut pool: BitsPool<128, 8> = BitsPool::new();
    let mut e: Melo = Melo::new(p(0), p(0), RTO);
    rx(&mut e, &mut pool, 0, 0);
    let mut last = Vec::new();
    // Holes at 1, 3, 5, 7 (each followed by one received PSN).
    for s in [2, 4, 6, 8] {
        last = feedback(&rx(&mut e, &mut pool, s, 0));
    }
    assert_eq!(
        last,
        vec![Feedback::Holes {
            rcv_nxt: p(1),
            holes: [
                Hole { first: p(7), count: 1 },
                Hole { first: p(5), count: 1 },
                Hole { first: p(3), count: 1 }
            ]
        }]
    );
    // In-sequence growth of RCV.HIGH sends no NACK.
    assert_eq!(feedback(&rx(&mut e, &mut pool, 9, 0)), vec![Feedback::Ack { rcv_nxt: p(1) }]);
    // A packet for the middle of the bitmap is dropped.
    assert_eq!(rx(&mut e, &mut pool, 5, 0)[0], Action::Drop { psn: p(5) });
    assert!(pool.used() > 0);
    for (s, nxt) in [(1, 3), (3, 5), (5, 7), (7, 10)] {
        assert!(rx(&mut e, &mut pool, s, 0).contains(&Action::Advance { rcv_nxt: p(nxt) }));
    }
    assert_eq!(pool.used(), 0, "bits returned to the pool");
}

#[test]
fn melo_requester_skips_holes_already_resent() {
    let mut pool: BitsPool<128, 8> = BitsPool::new();
    let mut e: Melo = Melo::new(p(0), p(0), RTO);
    for i in 0..20 {
        tx(&mut e, &mut pool, ReqEvent::Sent { psn: p(i), now: 0 });
    }
    let h = |f: u32, c: u32| Hole { first: p(f), count: c };
    let a = tx(&mut e, &mut pool, fb(Feedback::Holes { rcv_nxt: p(1), holes: [h(1, 2), Hole::default(), Hole::default()] }, 5));
    assert_eq!(retx(&a), vec![(1, 2)]);
    let a = tx(&mut e, &mut pool, fb(Feedback::Holes { rcv_nxt: p(1), holes: [h(6, 1), h(1, 2), Hole::default()] }, 6));
    assert_eq!(retx(&a), vec![(6, 1)]);
    let a = tx(&mut e, &mut pool, ReqEvent::Timer { timer: Timer::Rto, now: 2000 });
    assert!(a.contains(&Action::GoBack { from: p(1) }));
}

#[test]
fn melo_drops_what_the_pool_cannot_record() {
    let mut pool: BitsPool<2, 8> = BitsPool::new();
    let mut e: Melo = Melo::new(p(0), p(0), RTO);
    rx(&mut e, &mut pool, 2, 0);
    let a = rx(&mut e, &mut pool, 30, 0);
    assert!(a.contains(&Action::Fallback) && a.contains(&Action::Drop { psn: p(30) }), "{a:?}");
    assert_eq!(e.counters().gbn_fallbacks, 1);
}

#[test]
fn melo_counts_each_fallback_while_in_order() {
    // Another QP holds the pool's one block: this QP, in order, finds no bits twice, with
    // in-order progress between the two drops; each is a fallback of its own.
    let mut pool: BitsPool<1, 8> = BitsPool::new();
    let mut other: Melo = Melo::new(p(0), p(0), RTO);
    rx(&mut other, &mut pool, 2, 0);
    let mut e: Melo = Melo::new(p(0), p(0), RTO);
    assert!(rx(&mut e, &mut pool, 2, 0).contains(&Action::Fallback));
    for s in 0..3 {
        rx(&mut e, &mut pool, s, 0);
    }
    assert!(rx(&mut e, &mut pool, 5, 0).contains(&Action::Fallback));
    assert_eq!(e.counters().gbn_fallbacks, 2);
}
