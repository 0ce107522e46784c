// SPDX-License-Identifier: GPL-2.0
//! The simulator checks of issue 3 (fixed seeds): the papers' headline effects, measured
//! by running the real engines in the packet-level simulator.

#[path = "../sim/engine/mod.rs"]
mod engine;

use engine::{goodput_ratio, run, Config, LossModel, Report, Scheme, Workload};

const TICKS: u64 = 120_000;

fn cfg(scheme: Scheme, qps: usize, loss: f64) -> Config {
    let mut c = Config::new(scheme, qps, loss);
    c.workload = Workload::Timed(TICKS);
    c.seed = 7;
    c.check = true;
    c
}

fn clean(r: &Report) {
    assert!(r.violations.is_empty(), "{:?} {} QPs: {:?}", r.scheme, r.qps, r.violations);
}

#[test]
fn fasr_keeps_92_percent_at_1_percent_loss_with_1_and_1000_qps() {
    for qps in [1, 1000] {
        let (ratio, rep) = goodput_ratio(&cfg(Scheme::Fasr, qps, 0.01));
        clean(&rep);
        assert!(rep.data_lost > 100, "too few losses to mean anything: {}", rep.data_lost);
        assert!(ratio >= 0.92, "fasr goodput ratio {ratio:.3} at 1% loss, {qps} QPs");
    }
}

#[test]
fn gbn_falls_below_half_at_1_percent_loss() {
    let (ratio, rep) = goodput_ratio(&cfg(Scheme::Gbn, 1, 0.01));
    clean(&rep);
    assert!(ratio < 0.5, "gbn goodput ratio {ratio:.3} at 1% loss");
    // And FaSR's selective repeat is what makes the difference on the same link.
    let (fasr, _) = goodput_ratio(&cfg(Scheme::Fasr, 1, 0.01));
    assert!(fasr > ratio + 0.3, "fasr {fasr:.3} vs gbn {ratio:.3}");
}

#[test]
fn fasr_fast_path_share_rises_with_qp_count() {
    let mut shares = Vec::new();
    for qps in [1, 10, 100, 1000] {
        let rep = run(&cfg(Scheme::Fasr, qps, 0.01));
        clean(&rep);
        let share = rep.fast_path_share().expect("fasr did SR operations");
        shares.push((qps, share));
    }
    for w in shares.windows(2) {
        assert!(w[1].1 >= w[0].1 - 0.01, "fast-path share fell: {shares:?}");
    }
    assert!(shares[3].1 > shares[0].1 + 0.2, "no clear rise: {shares:?}");
    assert!(shares[3].1 > 0.7, "fast-path share at 1000 QPs: {shares:?}");
}

#[test]
fn fasr_pool_stays_within_its_fixed_size_and_is_small_per_qp() {
    // Stress the pool: heavy and bursty loss, lost retransmissions, many QPs.
    let mut stress = Vec::new();
    for (qps, loss) in [(1, LossModel::Bernoulli(0.05)), (100, LossModel::bursty(0.03, 8.0)), (1000, LossModel::Bernoulli(0.05))] {
        let mut c = cfg(Scheme::Fasr, qps, 0.0);
        c.loss = loss;
        c.retx_loss = 0.05;
        c.workload = Workload::Timed(60_000);
        let r = run(&c);
        clean(&r); // includes "peak <= size" and availability-bitmap consistency
        for p in &r.pools {
            assert!(p.peak_units <= p.cap_units && p.peak_blocks <= p.cap_blocks, "{p:?}");
            assert!(p.cap_units == 20 && p.cap_blocks == 70);
        }
        stress.push(r.pool_peak_units());
    }
    assert!(stress.iter().any(|&u| u > 0), "the stress runs never used the pool");

    let fasr = run(&cfg(Scheme::Fasr, 1000, 0.01));
    let irn = run(&cfg(Scheme::Irn, 1000, 0.01));
    clean(&fasr);
    clean(&irn);
    assert!(fasr.sr_bytes_per_qp <= 2.0, "fasr {} B/QP", fasr.sr_bytes_per_qp);
    assert!(irn.sr_bytes_per_qp >= 500.0, "irn {} B/QP", irn.sr_bytes_per_qp);
}

#[test]
fn srnic_goodput_falls_as_its_slow_path_delay_grows() {
    let mut g = Vec::new();
    for delay in [0, 128, 512] {
        let mut c = cfg(Scheme::Srnic, 1, 0.01);
        c.srnic_delay = delay;
        let (ratio, rep) = goodput_ratio(&c);
        clean(&rep);
        g.push((delay, ratio));
    }
    for w in g.windows(2) {
        assert!(w[1].1 < w[0].1 - 0.02, "srnic goodput did not fall with delay: {g:?}");
    }
}

#[test]
fn every_scheme_beats_gbn_at_one_qp() {
    let (gbn, _) = goodput_ratio(&cfg(Scheme::Gbn, 1, 0.01));
    for s in [Scheme::Irn, Scheme::Fasr, Scheme::Srnic, Scheme::Melo] {
        let (r, rep) = goodput_ratio(&cfg(s, 1, 0.01));
        clean(&rep);
        assert!(r > gbn, "{s:?} {r:.3} <= gbn {gbn:.3}");
    }
}
