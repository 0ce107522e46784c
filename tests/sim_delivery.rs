// SPDX-License-Identifier: GPL-2.0
//! Property: every engine delivers every message exactly once and in order under 0-10%
//! loss (Bernoulli or bursty), ACK loss, retransmission loss and reordering, across the
//! 24-bit PSN wrap. The simulator's check mode verifies every action against the truth:
//! each PSN placed once and only when it arrives, RCV-NXT only over placed PSNs, UNACK
//! never ahead of RCV-NXT, retransmissions only of sent PSNs, pools back to empty.

#[path = "../sim/engine/mod.rs"]
mod engine;

use engine::{run, Config, LossModel, Scheme, Workload};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

fn scheme() -> impl Strategy<Value = Scheme> {
    prop::sample::select(Scheme::ALL.to_vec())
}

fn loss() -> impl Strategy<Value = LossModel> {
    prop_oneof![
        (0.0f64..0.002).prop_map(LossModel::Bernoulli),
        (0.0f64..0.10).prop_map(LossModel::Bernoulli),
        (0.0f64..0.10, 1.0f64..6.0).prop_map(|(r, b)| LossModel::bursty(r, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, rng_seed: RngSeed::Fixed(0x5EED_0003), ..ProptestConfig::default() })]

    #[test]
    fn every_message_exactly_once_in_order(
        scheme in scheme(),
        qps in 1usize..5,
        loss in loss(),
        ack_loss in 0.0f64..0.10,
        retx_loss in 0.0f64..0.10,
        reorder in 0.0f64..0.05,
        reorder_delay in 1u64..40,
        bdp in prop::sample::select(vec![16u64, 64]),
        initial_psn in prop_oneof![Just(0xFF_FF00u32), 0u32..0x100_0000],
        seed in any::<u64>(),
        per_qp in 20u64..400,
    ) {
        let mut c = Config::new(scheme, qps, 0.0);
        c.bdp = bdp;
        c.rto.rto_low = 3 * bdp;
        c.rto.rto_high = 10 * bdp;
        c.loss = loss;
        c.ack_loss = ack_loss;
        c.retx_loss = retx_loss;
        c.reorder = reorder;
        c.reorder_delay = reorder_delay;
        c.initial_psn = initial_psn;
        c.seed = seed;
        c.check = true;
        c.workload = Workload::Messages { per_qp, limit: 20_000_000 };
        let r = run(&c);
        prop_assert!(r.violations.is_empty(), "{:?}", r.violations);
        prop_assert!(r.completed, "{:?}: not all messages delivered by the time limit: {} of {}",
            scheme, r.messages, per_qp * qps as u64);
        prop_assert_eq!(r.messages, per_qp * qps as u64);
        prop_assert_eq!(r.delivered, per_qp * qps as u64 * c.msg_pkts);
    }
}

/// The same property on fixed seeds for each scheme, with every loss kind at once.
#[test]
fn each_scheme_survives_everything_at_once() {
    for s in Scheme::ALL {
        for seed in 1..4 {
            let mut c = Config::new(s, 3, 0.0);
            c.bdp = 32;
            c.rto.rto_low = 96;
            c.rto.rto_high = 320;
            c.loss = LossModel::bursty(0.08, 3.0);
            c.ack_loss = 0.08;
            c.retx_loss = 0.08;
            c.reorder = 0.03;
            c.reorder_delay = 20;
            c.initial_psn = 0xFF_FFF0;
            c.seed = seed;
            c.check = true;
            c.workload = Workload::Messages {
                per_qp: 400,
                limit: 50_000_000,
            };
            let r = run(&c);
            assert!(
                r.violations.is_empty(),
                "{s:?} seed {seed}: {:?}",
                r.violations
            );
            assert!(r.completed, "{s:?} seed {seed}: {} messages", r.messages);
            assert_eq!(r.messages, 1200);
            assert!(r.data_lost > 0 && r.acks_lost > 0, "the run lost nothing");
        }
    }
}

/// Long loss-free stretches between rare losses: per-QP state (ring bitmaps, pools) must
/// follow RCV-NXT across thousands of PSNs and across the wrap.
#[test]
fn each_scheme_long_run_with_rare_loss() {
    for s in Scheme::ALL {
        let mut c = Config::new(s, 1, 0.0);
        c.loss = LossModel::Bernoulli(0.0005);
        c.retx_loss = 0.2;
        c.ack_loss = 0.01;
        c.initial_psn = 0xFF_8000;
        c.seed = 11;
        c.check = true;
        c.workload = Workload::Messages {
            per_qp: 8000,
            limit: 50_000_000,
        };
        let r = run(&c);
        assert!(r.violations.is_empty(), "{s:?}: {:?}", r.violations);
        assert!(
            r.completed && r.messages == 8000,
            "{s:?}: {} messages",
            r.messages
        );
        assert!(r.data_lost >= 10, "{s:?}: only {} losses", r.data_lost);
    }
}
