// SPDX-License-Identifier: GPL-2.0
//! FaSR engine, event by event, against the paper's rules (FaSR §III-B, §III-D).

use rxe_sr::proto::pool::sr_pool::SrPool;
use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::recovery::fasr::Fasr;
use rxe_sr::proto::recovery::{Action, Feedback, Recovery, ReqEvent, RespEvent, RtoConfig, Timer};

const RTO: RtoConfig = RtoConfig {
    rto_low: 100,
    rto_high: 1000,
    n_low: 3,
};

type Pool = SrPool<20, 70, 16>;
type Qp = Fasr;

fn p(v: u32) -> Psn {
    Psn::new(v)
}

fn rx<const U: usize, const B: usize>(qp: &mut Fasr, pool: &mut SrPool<U, B, 16>, psn: u32) -> Vec<Action> {
    let mut v = Vec::new();
    qp.on_responder(pool, RespEvent::Data { psn: p(psn), now: 0 }, &mut |a| v.push(a));
    v
}

fn tx<const U: usize, const B: usize>(qp: &mut Fasr, pool: &mut SrPool<U, B, 16>, ev: ReqEvent) -> Vec<Action> {
    let mut v = Vec::new();
    qp.on_requester(pool, ev, &mut |a| v.push(a));
    v
}

fn sent(qp: &mut Qp, pool: &mut Pool, n: u32) {
    for i in 0..n {
        tx(qp, pool, ReqEvent::Sent { psn: p(i), now: 0 });
    }
}

fn sack(rcv_nxt: u32, s: u32, lost_cnt: u8) -> ReqEvent {
    ReqEvent::Feedback {
        fb: Feedback::Sack {
            rcv_nxt: p(rcv_nxt),
            sack_psn: p(s),
            run_from: p(s),
            lost_cnt,
            overflow: false,
        },
        now: 10,
    }
}

fn retx(acts: &[Action]) -> Vec<(u32, u32)> {
    acts.iter()
        .filter_map(|a| match *a {
            Action::Retransmit { first, count } => Some((first.get(), count)),
            _ => None,
        })
        .collect()
}

fn sent_fb(acts: &[Action]) -> Vec<Feedback> {
    acts.iter()
        .filter_map(|a| match *a {
            Action::Send(fb) => Some(fb),
            _ => None,
        })
        .collect()
}

#[test]
fn receiver_fast_path_single_loss_needs_no_bitmap() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    assert_eq!(rx(&mut qp, &mut pool, 0), vec![
        Action::Deliver { psn: p(0) },
        Action::Advance { rcv_nxt: p(1) },
        Action::Send(Feedback::Ack { rcv_nxt: p(1) }),
    ]);
    assert!(qp.rx_sr_state().is_none(), "no loss: null SR-state pointer");
    // 1 is lost; 2..=5 arrive out of order: lost-cnt 1, only sack-high moves.
    for s in 2..=5 {
        let a = rx(&mut qp, &mut pool, s);
        assert!(a.contains(&Action::Deliver { psn: p(s) }));
        assert_eq!(sent_fb(&a), vec![Feedback::Sack { rcv_nxt: p(1), sack_psn: p(s), run_from: p(s), lost_cnt: 1, overflow: false }]);
    }
    let u = qp.rx_sr_state().expect("a unit while in recovery");
    assert_eq!(pool.unit(u).unwrap().sack_high, p(5));
    assert_eq!((pool.used_units(), pool.used_blocks()), (1, 0));
    // The retransmission: RCV-NXT = sack-high + 1 directly, unit released.
    let a = rx(&mut qp, &mut pool, 1);
    assert_eq!(a, vec![
        Action::Deliver { psn: p(1) },
        Action::Advance { rcv_nxt: p(6) },
        Action::Send(Feedback::Ack { rcv_nxt: p(6) }),
    ]);
    assert!(qp.rx_sr_state().is_none());
    assert_eq!((pool.used_units(), pool.used_blocks()), (0, 0));
    assert_eq!(qp.counters().slow_path, 0);
    assert_eq!(qp.counters().fast_path, 5);
}

#[test]
fn receiver_slow_path_compression_and_aack() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    // 0 lost, a run of 20 arrives (fast path), then 21 lost: lost-cnt 2, slow path.
    for s in 1..=20 {
        rx(&mut qp, &mut pool, s);
    }
    assert_eq!(pool.used_blocks(), 0);
    let a = rx(&mut qp, &mut pool, 22);
    assert_eq!(sent_fb(&a), vec![Feedback::Sack { rcv_nxt: p(0), sack_psn: p(22), run_from: p(22), lost_cnt: 2, overflow: false }]);
    let u = qp.rx_sr_state().unwrap();
    let st = *pool.unit(u).unwrap();
    // The run 1..=20 (>= one block) is compressed: the bitmap starts after it.
    assert_eq!(st.compression_cnt, 20);
    assert_eq!(st.bm_base, p(21));
    assert_eq!(pool.used_blocks(), 1);
    // Retransmission of 0: RCV-NXT skips the compressed run and stops at the hole 21; AACK.
    let a = rx(&mut qp, &mut pool, 0);
    assert_eq!(a, vec![
        Action::Deliver { psn: p(0) },
        Action::Advance { rcv_nxt: p(21) },
        Action::Send(Feedback::Ack { rcv_nxt: p(21) }),
    ]);
    // lost-cnt back to 1: fast path again, bitmap blocks released.
    let st = *pool.unit(u).unwrap();
    assert_eq!(st.lost_cnt, 1);
    assert_eq!(pool.used_blocks(), 0);
    let a = rx(&mut qp, &mut pool, 21);
    assert!(a.contains(&Action::Advance { rcv_nxt: p(23) }));
    assert_eq!((pool.used_units(), pool.used_blocks()), (0, 0));
}

#[test]
fn short_runs_are_not_compressed() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    for s in [1, 2, 3, 5] {
        rx(&mut qp, &mut pool, s);
    }
    let st = *pool.unit(qp.rx_sr_state().unwrap()).unwrap();
    assert_eq!((st.compression_cnt, st.bm_base, st.lost_cnt), (0, p(1), 2));
    let a = rx(&mut qp, &mut pool, 0);
    assert!(a.contains(&Action::Advance { rcv_nxt: p(4) }));
    let a = rx(&mut qp, &mut pool, 4);
    assert!(a.contains(&Action::Advance { rcv_nxt: p(6) }));
    assert_eq!(pool.used_units(), 0);
}

#[test]
fn lost_retransmission_is_reported_by_fnack() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    // 0 and 2 lost: slow path.
    rx(&mut qp, &mut pool, 1);
    rx(&mut qp, &mut pool, 3);
    // The retransmission of 0 is lost, the one of 2 arrives: between RCV-NXT and sack-high.
    // It is kept (placed), and FNACKed.
    let a = rx(&mut qp, &mut pool, 2);
    assert_eq!(a, vec![Action::Deliver { psn: p(2) }, Action::Send(Feedback::Fnack { rcv_nxt: p(0), psn: p(2) })]);
    assert_eq!(qp.counters().fnacks_sent, 1);
    // A duplicate of a received PSN there is a plain duplicate, not an FNACK: SACKed again,
    // so the requester knows it arrived.
    let a = rx(&mut qp, &mut pool, 1);
    assert_eq!(a, vec![
        Action::Drop { psn: p(1) },
        Action::Send(Feedback::Sack { rcv_nxt: p(0), sack_psn: p(1), run_from: p(1), lost_cnt: 2, overflow: false }),
    ]);
    // So is the kept resend of 2, should it come again.
    assert_eq!(rx(&mut qp, &mut pool, 2)[0], Action::Drop { psn: p(2) });
    // The resend of 0 completes recovery: 1..=3 are all here.
    let a = rx(&mut qp, &mut pool, 0);
    assert!(a.contains(&Action::Advance { rcv_nxt: p(4) }), "{a:?}");
    assert_eq!(pool.used_units(), 0);
}

#[test]
fn lost_cnt_overflows_past_three_bits() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    // 0..=8 lost (9 > 7).
    let a = rx(&mut qp, &mut pool, 9);
    assert_eq!(sent_fb(&a), vec![Feedback::Sack { rcv_nxt: p(0), sack_psn: p(9), run_from: p(9), lost_cnt: 7, overflow: true }]);
    // Stays put (7, overflow) while more holes appear.
    let a = rx(&mut qp, &mut pool, 11);
    assert_eq!(sent_fb(&a), vec![Feedback::Sack { rcv_nxt: p(0), sack_psn: p(11), run_from: p(11), lost_cnt: 7, overflow: true }]);
    // RCV-NXT from the bitmap alone.
    for s in 0..=7 {
        let a = rx(&mut qp, &mut pool, s);
        assert!(a.contains(&Action::Advance { rcv_nxt: p(s + 1) }), "{s}: {a:?}");
    }
    let a = rx(&mut qp, &mut pool, 8);
    assert!(a.contains(&Action::Advance { rcv_nxt: p(10) }));
    let a = rx(&mut qp, &mut pool, 10);
    assert!(a.contains(&Action::Advance { rcv_nxt: p(12) }));
    assert_eq!((pool.used_units(), pool.used_blocks()), (0, 0));
}

#[test]
fn an_overflowed_lost_cnt_counts_again_once_the_bitmap_holds_seven_holes() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    // Holes 0, 2, 4, .., 16 (nine) under arrivals 1, 3, .., 17: overflowed.
    for s in (1..=17).step_by(2) {
        rx(&mut qp, &mut pool, s);
    }
    let a = rx(&mut qp, &mut pool, 18);
    assert_eq!(sent_fb(&a), vec![Feedback::Sack { rcv_nxt: p(0), sack_psn: p(18), run_from: p(18), lost_cnt: 7, overflow: true }]);
    // 0 filled: eight holes left, still overflowed.
    assert!(rx(&mut qp, &mut pool, 0).contains(&Action::Advance { rcv_nxt: p(2) }));
    let a = rx(&mut qp, &mut pool, 19);
    assert!(matches!(sent_fb(&a)[..], [Feedback::Sack { overflow: true, .. }]), "{a:?}");
    // 2 filled: seven holes (4, 6, .., 16), which lost-cnt counts exactly again.
    assert!(rx(&mut qp, &mut pool, 2).contains(&Action::Advance { rcv_nxt: p(4) }));
    let a = rx(&mut qp, &mut pool, 20);
    assert_eq!(sent_fb(&a), vec![Feedback::Sack { rcv_nxt: p(4), sack_psn: p(20), run_from: p(20), lost_cnt: 7, overflow: false }]);
    // And falls by one per fill from there.
    rx(&mut qp, &mut pool, 4);
    let a = rx(&mut qp, &mut pool, 21);
    assert_eq!(sent_fb(&a), vec![Feedback::Sack { rcv_nxt: p(6), sack_psn: p(21), run_from: p(21), lost_cnt: 6, overflow: false }]);
    for s in (6..=16).step_by(2) {
        rx(&mut qp, &mut pool, s);
    }
    assert_eq!((pool.used_units(), pool.used_blocks()), (0, 0), "recovery complete");
}

#[test]
fn exhausted_pool_falls_back_to_gbn_until_recovery_completes() {
    // One unit, one block of 16 bits.
    let mut pool: SrPool<1, 1, 16> = SrPool::new();
    let mut a: Fasr = Fasr::new(p(0), p(0), RTO);
    let mut b: Fasr = Fasr::new(p(0), p(0), RTO);
    rx(&mut a, &mut pool, 1); // QP a takes the only unit.
    let acts = rx(&mut b, &mut pool, 1); // QP b finds none: go-back-N.
    assert_eq!(acts, vec![Action::Fallback, Action::Drop { psn: p(1) }, Action::Send(Feedback::Nak { rcv_nxt: p(0) })]);
    // One NAK per gap; out-of-order packets are dropped.
    assert_eq!(rx(&mut b, &mut pool, 2), vec![Action::Drop { psn: p(2) }]);
    assert!(rx(&mut b, &mut pool, 0).contains(&Action::Advance { rcv_nxt: p(1) }));
    // QP a: slow path (0 and 2 lost), bitmap 1..=16 fits one block, 20 does not.
    rx(&mut a, &mut pool, 3);
    assert_eq!(pool.used_blocks(), 1);
    let acts = rx(&mut a, &mut pool, 20);
    assert_eq!(acts, vec![Action::Fallback, Action::Drop { psn: p(20) }, Action::Send(Feedback::Nak { rcv_nxt: p(0) })]);
    assert_eq!(a.counters().gbn_fallbacks, 1);
    // What was recorded is kept: 0 then 2 complete the recovery up to sack-high 3.
    assert!(rx(&mut a, &mut pool, 4).contains(&Action::Drop { psn: p(4) }));
    assert!(rx(&mut a, &mut pool, 0).contains(&Action::Advance { rcv_nxt: p(2) }));
    assert!(rx(&mut a, &mut pool, 2).contains(&Action::Advance { rcv_nxt: p(4) }));
    assert_eq!(pool.used_units(), 0, "recovery complete: unit back in the pool");
    // Back to SR: the next loss gets the unit and a SACK.
    rx(&mut a, &mut pool, 4);
    let acts = rx(&mut a, &mut pool, 6);
    assert!(matches!(sent_fb(&acts)[..], [Feedback::Sack { lost_cnt: 1, .. }]));
}

#[test]
fn sender_rto_by_lost_cnt() {
    // lost-cnt 0 (no SACK at all): resend from UNACK.
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    sent(&mut qp, &mut pool, 10);
    let a = tx(&mut qp, &mut pool, ReqEvent::Timer { timer: Timer::Rto, now: 1000 });
    assert!(a.contains(&Action::GoBack { from: p(0) }), "{a:?}");

    // lost-cnt 1: UNACK only, no bitmap.
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    sent(&mut qp, &mut pool, 10);
    let a = tx(&mut qp, &mut pool, sack(0, 1, 1));
    assert_eq!(retx(&a), vec![(0, 1)], "first SACK: UNACK..SACK at once");
    for s in 2..10 {
        assert!(retx(&tx(&mut qp, &mut pool, sack(0, s, 1))).is_empty());
    }
    assert_eq!(pool.used_blocks(), 0);
    let a = tx(&mut qp, &mut pool, ReqEvent::Timer { timer: Timer::Rto, now: 1000 });
    assert_eq!(retx(&a), vec![(0, 1)]);

    // lost-cnt > 1: UNACK and the bitmap's zeros up to sack-high.
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    sent(&mut qp, &mut pool, 20);
    assert_eq!(retx(&tx(&mut qp, &mut pool, sack(0, 2, 2))), vec![(0, 2)]);
    assert!(retx(&tx(&mut qp, &mut pool, sack(0, 3, 2))).is_empty());
    // 4 missing and lost-cnt grew: data loss, retransmit the gap.
    assert_eq!(retx(&tx(&mut qp, &mut pool, sack(0, 5, 3))), vec![(4, 1)]);
    // 6 missing but lost-cnt unchanged: 6's SACK was lost (or held back), not 6, so 6 counts
    // as SACKed and the timeout does not resend it.
    assert!(retx(&tx(&mut qp, &mut pool, sack(0, 7, 3))).is_empty());
    let a = tx(&mut qp, &mut pool, ReqEvent::Timer { timer: Timer::Rto, now: 1000 });
    assert_eq!(retx(&a), vec![(0, 1), (1, 1), (4, 1)]);
}

#[test]
fn a_fill_and_a_new_gap_between_two_sacks_do_not_cancel_out() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    sent(&mut qp, &mut pool, 20);
    // 0, 1, 2 lost: the SACK of 3 says lost-cnt 3, and they are resent at once.
    assert_eq!(retx(&tx(&mut qp, &mut pool, sack(0, 3, 3))), vec![(0, 3)]);
    // The resent 0 fills RCV-NXT (the responder's lost-cnt falls to 2): an AACK of 1.
    let ack = ReqEvent::Feedback { fb: Feedback::Ack { rcv_nxt: p(1) }, now: 20 };
    assert!(retx(&tx(&mut qp, &mut pool, ack)).is_empty());
    // Then 4 is lost and 5 arrives: lost-cnt 3 again, equal to the last SACK's but one
    // more than the fill left. 4 is new loss, resent now.
    assert_eq!(retx(&tx(&mut qp, &mut pool, sack(1, 5, 3))), vec![(4, 1)]);
    // Without a fill, the same lost-cnt over a gap is a lost (or held) SACK: 6 arrived.
    assert!(retx(&tx(&mut qp, &mut pool, sack(1, 7, 3))).is_empty());
    let a = tx(&mut qp, &mut pool, ReqEvent::Timer { timer: Timer::Rto, now: 1000 });
    assert_eq!(retx(&a), vec![(1, 1), (2, 1), (4, 1)]);
}

#[test]
fn sender_answers_one_fnack_per_new_ack() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    sent(&mut qp, &mut pool, 10);
    tx(&mut qp, &mut pool, sack(0, 1, 1));
    tx(&mut qp, &mut pool, sack(0, 3, 2));
    let fnack = |r: u32, s: u32| ReqEvent::Feedback { fb: Feedback::Fnack { rcv_nxt: p(r), psn: p(s) }, now: 20 };
    let a = tx(&mut qp, &mut pool, fnack(0, 2));
    assert_eq!(retx(&a), vec![(0, 1)], "UNACK alone: the responder kept 2");
    assert!(retx(&tx(&mut qp, &mut pool, fnack(0, 2))).is_empty(), "second FNACK before a new ACK");
    // 2 is recorded as received: a timeout resends UNACK alone too.
    let a = tx(&mut qp, &mut pool, ReqEvent::Timer { timer: Timer::Rto, now: 1000 });
    assert_eq!(retx(&a), vec![(0, 1)]);
    // A new ACK re-enables it.
    tx(&mut qp, &mut pool, ReqEvent::Feedback { fb: Feedback::Ack { rcv_nxt: p(2) }, now: 30 });
    let a = tx(&mut qp, &mut pool, fnack(2, 4));
    assert!(!retx(&a).is_empty());
    assert_eq!(qp.counters().fnacks_answered, 2);
}

#[test]
fn sender_overflow_retransmits_gaps_without_lost_cnt_growth() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    sent(&mut qp, &mut pool, 40);
    let ovf = |s: u32| ReqEvent::Feedback {
        fb: Feedback::Sack { rcv_nxt: p(0), sack_psn: p(s), run_from: p(s), lost_cnt: 7, overflow: true },
        now: 10,
    };
    assert_eq!(retx(&tx(&mut qp, &mut pool, ovf(9))), vec![(0, 9)]);
    assert_eq!(retx(&tx(&mut qp, &mut pool, ovf(12))), vec![(10, 2)]);
}

#[test]
fn recovery_ends_and_units_return_on_both_sides() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    sent(&mut qp, &mut pool, 10);
    tx(&mut qp, &mut pool, sack(0, 1, 1));
    assert!(qp.tx_sr_state().is_some());
    let a = tx(&mut qp, &mut pool, ReqEvent::Feedback { fb: Feedback::Ack { rcv_nxt: p(10) }, now: 50 });
    assert!(a.contains(&Action::Acked { una: p(10) }));
    assert!(a.contains(&Action::DisarmTimer { timer: Timer::Rto }));
    assert!(qp.tx_sr_state().is_none());
    assert_eq!(pool.used_units(), 0);
    // release() returns whatever a QP still holds.
    rx(&mut qp, &mut pool, 1);
    rx(&mut qp, &mut pool, 3);
    assert!(pool.used_units() == 1 && pool.used_blocks() == 1);
    qp.release(&mut pool);
    assert_eq!((pool.used_units(), pool.used_blocks()), (0, 0));
}

#[test]
fn works_across_the_psn_wrap() {
    let mut pool = Pool::new();
    let base = 0xFF_FFFEu32;
    let mut qp = Qp::new(p(base), p(base), RTO);
    rx(&mut qp, &mut pool, base);
    // base+1 lost; base+2 and base+3 wrap to 0 and 1.
    rx(&mut qp, &mut pool, 0);
    rx(&mut qp, &mut pool, 1);
    let a = rx(&mut qp, &mut pool, base + 1);
    assert!(a.contains(&Action::Advance { rcv_nxt: p(2) }), "{a:?}");
}

#[test]
fn exhaustion_on_the_way_to_the_slow_path_keeps_the_fast_path_state() {
    // Two units, one block: QP b takes the only block, so QP a cannot enter the slow path.
    let mut pool: SrPool<2, 1, 16> = SrPool::new();
    let mut a: Fasr = Fasr::new(p(0), p(0), RTO);
    let mut b: Fasr = Fasr::new(p(0), p(0), RTO);
    rx(&mut b, &mut pool, 2);
    assert_eq!(pool.used_blocks(), 1);
    rx(&mut a, &mut pool, 1); // fast path: RCV-NXT 0 missing, sack-high 1
    let acts = rx(&mut a, &mut pool, 3); // 2 missing too: needs a bitmap, none left
    assert_eq!(acts, vec![Action::Fallback, Action::Drop { psn: p(3) }, Action::Send(Feedback::Nak { rcv_nxt: p(0) })]);
    // The retransmission of 0 still completes through sack-high (1 was placed already)...
    let acts = rx(&mut a, &mut pool, 0);
    assert!(acts.contains(&Action::Advance { rcv_nxt: p(2) }), "{acts:?}");
    // ...and a resend of 1 is a duplicate, never placed twice.
    assert_eq!(rx(&mut a, &mut pool, 1)[0], Action::Drop { psn: p(1) });
    assert!(rx(&mut a, &mut pool, 2).contains(&Action::Advance { rcv_nxt: p(3) }));
    assert_eq!(pool.used_units(), 1, "only QP b still holds a unit");
}

#[test]
fn fnacks_go_out_for_the_first_kept_resends_at_an_rcv_nxt_not_for_each() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    // Holes 0, 2, .., 20 under arrivals 1, 3, .., 21 (slow path, overflowed).
    for s in (1..=21).step_by(2) {
        rx(&mut qp, &mut pool, s);
    }
    // The resend of 0 is lost; the eight after it are kept (placed), and FNACKed for the
    // 1st and 4th only.
    let mut fnacked = vec![];
    for s in (2..=16).step_by(2) {
        let a = rx(&mut qp, &mut pool, s);
        assert_eq!(a[0], Action::Deliver { psn: p(s) });
        if let [Feedback::Fnack { rcv_nxt, psn }] = sent_fb(&a)[..] {
            assert_eq!(rcv_nxt, p(0));
            fnacked.push(psn.get());
        }
    }
    assert_eq!(fnacked, vec![2, 8]);
    assert_eq!(qp.counters().fnacks_sent, 2);
    // 0 arrives at last: RCV-NXT moves past the kept resends to 18, whose resend is lost
    // too; the resend of 20 shows it, FNACKed at the new RCV-NXT.
    assert!(rx(&mut qp, &mut pool, 0).contains(&Action::Advance { rcv_nxt: p(18) }));
    let a = rx(&mut qp, &mut pool, 20);
    assert_eq!(sent_fb(&a), vec![Feedback::Fnack { rcv_nxt: p(18), psn: p(20) }]);
    // And the resend of 18 ends recovery.
    assert!(rx(&mut qp, &mut pool, 18).contains(&Action::Advance { rcv_nxt: p(22) }));
    assert_eq!(pool.used_units(), 0);
}

#[test]
fn the_standard_responders_nak_resends_the_standard_packets_only() {
    // The requester switched to the SR format with 0..10 sent in the standard format; 10..30
    // follow in the SR format.
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    qp.start_requester(p(0), p(10));
    for s in 10..30 {
        tx(&mut qp, &mut pool, ReqEvent::Sent { psn: p(s), now: 0 });
    }
    let nak = |r: u32| ReqEvent::Feedback { fb: Feedback::Nak { rcv_nxt: p(r) }, now: 5 };
    // 3 was lost: the standard responder dropped 4..10 and NAKed; its SR engine takes in
    // what comes in the SR format. Only 3..10 go again, not a go-back over 3..30.
    let a = tx(&mut qp, &mut pool, nak(3));
    assert_eq!(retx(&a), vec![(3, 7)]);
    assert!(!a.iter().any(|a| matches!(a, Action::GoBack { .. })), "{a:?}");
    // The first SACK (10 and 11 lost too) resends from the SR part on.
    let ovf = ReqEvent::Feedback {
        fb: Feedback::Sack { rcv_nxt: p(3), sack_psn: p(12), run_from: p(12), lost_cnt: 7, overflow: true },
        now: 10,
    };
    assert_eq!(retx(&tx(&mut qp, &mut pool, ovf)), vec![(10, 2)]);
    // Any later NAK is the SR responder's fallback to go-back-N.
    assert!(tx(&mut qp, &mut pool, nak(3)).contains(&Action::GoBack { from: p(3) }));
}

#[test]
fn a_hole_taken_for_received_goes_as_soon_as_it_is_rcv_nxt() {
    let mut pool = Pool::new();
    let mut qp = Qp::new(p(0), p(0), RTO);
    sent(&mut qp, &mut pool, 20);
    let ack = |r: u32| ReqEvent::Feedback { fb: Feedback::Ack { rcv_nxt: p(r) }, now: 20 };
    // 0, 1, 2 lost and resent.
    assert_eq!(retx(&tx(&mut qp, &mut pool, sack(0, 3, 3))), vec![(0, 3)]);
    // 0 and 1 fill RCV-NXT; the AACK of 0 is lost, the one of 1 comes (one fill seen).
    assert!(retx(&tx(&mut qp, &mut pool, ack(2))).is_empty());
    // 4 is lost, 5 arrives: the responder's lost-cnt is 2 (2 and 4). The requester expects
    // 3 - 1 = 2 too, so it takes 4's SACK for lost and 4 for received.
    assert!(retx(&tx(&mut qp, &mut pool, sack(2, 5, 2))).is_empty());
    // 2 fills RCV-NXT, which stops at 4: 4 was not received after all, and goes now.
    assert_eq!(retx(&tx(&mut qp, &mut pool, ack(4))), vec![(4, 1)]);
}

#[test]
fn the_events_taken_without_the_pool_do_what_the_pooled_path_does() {
    // Two QPs see the same events: one always with the pool (the reference), the other
    // through the pool-free entry points first, with the pool only when they decline (as the
    // kernel does, to skip the pool's lock on the fast path). Their actions, their state
    // and the pools must stay the same event by event; both entry points must take the
    // lossless stream's events and decline some of the lossy one's.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut roll = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let (mut a, mut b) = (Fasr::new(p(0), p(0), RTO), Fasr::new(p(0), p(0), RTO));
    let (mut pa, mut pb) = (Pool::new(), Pool::new());
    let (mut taken, mut declined) = (0u32, 0u32);
    let (mut snd, mut rcv) = (0u32, 0u32);
    for step in 0..20_000u32 {
        let lossy = step >= 2_000;
        let now = u64::from(step);
        let req = roll(2) == 0;
        let (mut va, mut vb) = (Vec::new(), Vec::new());
        if req {
            let k = roll(8);
            let ev = match k {
                _ if k <= 4 || (k == 7 && !lossy) => {
                    snd += 1;
                    ReqEvent::Sent { psn: p(snd - 1), now }
                }
                5 | 6 if !lossy => ReqEvent::Feedback { fb: Feedback::Ack { rcv_nxt: p(snd) }, now },
                5 => ReqEvent::Feedback { fb: Feedback::Ack { rcv_nxt: p(snd.saturating_sub(roll(40) as u32)) }, now },
                6 => sack(snd.saturating_sub(30), snd.saturating_sub(roll(20) as u32), roll(8) as u8),
                _ => ReqEvent::Timer { timer: Timer::Rto, now },
            };
            if a.on_requester_unpooled(ev, &mut |x| va.push(x)) {
                taken += 1;
            } else {
                declined += 1;
                a.on_requester(&mut pa, ev, &mut |x| va.push(x));
            }
            b.on_requester(&mut pb, ev, &mut |x| vb.push(x));
        } else {
            let psn = match roll(10) {
                0 if lossy => rcv + 1 + roll(30) as u32,
                1 if lossy => rcv.saturating_sub(roll(5) as u32),
                _ => rcv,
            };
            if psn == rcv {
                rcv += 1;
            }
            let ev = RespEvent::Data { psn: p(psn), now };
            if a.on_responder_unpooled(ev, &mut |x| va.push(x)) {
                taken += 1;
            } else {
                declined += 1;
                a.on_responder(&mut pa, ev, &mut |x| va.push(x));
            }
            b.on_responder(&mut pb, ev, &mut |x| vb.push(x));
        }
        assert_eq!(va, vb, "step {step}");
        assert_eq!((a.una(), a.rcv_nxt(), a.counters()), (b.una(), b.rcv_nxt(), b.counters()), "step {step}");
        assert_eq!(pa.count_in_use(), pb.count_in_use(), "step {step}");
        if step == 1_999 {
            assert_eq!(declined, 0, "the lossless stream needs no pool");
        }
    }
    assert!(taken > 5_000 && declined > 1_000, "taken {taken}, declined {declined}");
}

fn gap(rcv_nxt: u32, from: u32, s: u32, lost_cnt: u8, overflow: bool) -> ReqEvent {
    ReqEvent::Feedback {
        fb: Feedback::SackGap { rcv_nxt: p(rcv_nxt), sack_psn: p(s), gap_from: p(from), lost_cnt, overflow },
        now: 10,
    }
}

#[test]
fn requester_resends_the_gap_a_gap_names_and_not_the_run_held_before_it() {
    for slow in [false, true] {
        let mut pool = Pool::new();
        let mut qp = Qp::new(p(0), p(0), RTO);
        sent(&mut qp, &mut pool, 40);
        // 10 lost (and 11 on the slow path): the first SACK resends from UNACK.
        let first = if slow { 12 } else { 11 };
        let lost = if slow { 2 } else { 1 };
        assert_eq!(retx(&tx(&mut qp, &mut pool, sack(10, first, lost))), vec![(10, u32::from(lost))]);
        // The SACKs of first+1 ..= 19 were held; 20 and 21 lost; 22 arrived: one GAP.
        let a = tx(&mut qp, &mut pool, gap(10, 20, 22, lost + 2, false));
        assert_eq!(retx(&a), vec![(20, 2)], "slow {slow}");
        // The held run counts as received: a later SACK past it resends nothing.
        assert_eq!(retx(&tx(&mut qp, &mut pool, sack(10, 23, lost + 2))), vec![], "slow {slow}");
        // Overflowed: the gap alone again.
        let a = tx(&mut qp, &mut pool, gap(10, 30, 38, 7, true));
        assert_eq!(retx(&a), vec![(30, 8)], "slow {slow}");
    }
}
