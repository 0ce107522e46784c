// SPDX-License-Identifier: GPL-2.0
//! FaSR Fig. 7: goodput against the number of concurrent QPs, lossless (Fig. 7(b)) and
//! at 1% loss (Fig. 7(c) at 5K QPs, Fig. 7(a) at one QP), each scheme on the NIC it ran
//! on in the paper ([`NicMemory::for_scheme`]), beside what the paper says of its figures.
//!
//! Goodput is normalised as the paper's figures are: throughput over the line rate (one
//! packet per tick here).
//!
//! The paper's values come from its TEXT (fasr.txt): the plots themselves are not in it, so
//! nothing is read off a plot. Where the text gives a number it is quoted (`~` where it is
//! derived from a stated ratio); where it only describes a curve the description is given.

use super::qpc::{measure, NicMemory};
use super::{Config, Scheme, Workload};

/// QP counts of the sweep: Fig. 7(b) spans 16 to 5K; one QP is Fig. 7(a).
pub const QPS: [usize; 7] = [1, 16, 64, 256, 1024, 2048, 5000];
/// Loss rates: lossless (Fig. 7(b)) and 1% (Fig. 7(a)/(c)).
pub const LOSSES: [f64; 2] = [0.0, 0.01];
/// Schemes in the sweep. MELO is not in FaSR's figure; it runs on the FPGA NIC for
/// comparison.
pub const SCHEMES: [Scheme; 5] = [
    Scheme::Gbn,
    Scheme::Irn,
    Scheme::Srnic,
    Scheme::Fasr,
    Scheme::Melo,
];

/// Base RTT of FaSR's testbed, 6 us (§V-A), in ticks of 1 KiB at 100 Gb/s.
pub const TESTBED_BDP: u64 = 73;
/// Packets per scheduler turn: SRNIC's burst_size of 16 KB, the PCIe BDP (SRNIC §4.3),
/// over which one context fetch is spread.
pub const TESTBED_BURST: u64 = 16;

/// Ticks of one scheduler round over `qps` QPs when every turn misses its context.
fn round(qps: usize) -> u64 {
    qps as u64 * (TESTBED_BURST + NicMemory::FPGA.miss_penalty)
}

/// One point of the sweep: FaSR's testbed (1 KiB MTU, 8 KB messages, 6 us RTT) in the
/// simulator. The warm-up (one scheduler round, at least 20K ticks) lets the QPC cache
/// settle; two more rounds (at least 150K ticks) are measured.
pub fn config(scheme: Scheme, qps: usize, loss: f64) -> Config {
    let mut c = Config::new(scheme, qps, loss);
    c.bdp = TESTBED_BDP;
    c.rto.rto_low = 3 * c.bdp;
    c.rto.rto_high = 10 * c.bdp;
    c.burst = TESTBED_BURST;
    c.warmup = round(qps).max(20_000);
    c.workload = Workload::Timed(c.warmup + (2 * round(qps)).max(150_000));
    c
}

/// What the paper's text says of a curve.
#[derive(Clone, Copy, Debug)]
pub struct PaperCurve {
    /// Fig. 7(b), lossless, 16 to 5K QPs.
    pub lossless: &'static str,
    /// Fig. 7(a), one QP at 1% loss.
    pub one_qp_1pct: &'static str,
    /// Fig. 7(c), 5K QPs at 1% loss.
    pub qps5k_1pct: &'static str,
}

/// The paper's statements for `scheme` (FaSR §V-B and §V-C; the abstract's ratios).
pub fn paper(scheme: Scheme) -> Option<PaperCurve> {
    Some(match scheme {
        Scheme::Gbn => PaperCurve {
            lossless: "CX6: drops past 256 QPs (cache misses)",
            one_qp_1pct: "~0.10",
            qps5k_1pct: "~0.07 (FaSR 13x / 12.6x)",
        },
        Scheme::Irn => PaperCurve {
            lossless: "IRN+: slips past 2K QPs (cache misses)",
            one_qp_1pct: ">0.93",
            qps5k_1pct: "~0.70 (30% loss)",
        },
        Scheme::Srnic => PaperCurve {
            lossless: "flat from 16 to 5K QPs",
            one_qp_1pct: "~0.75 (25% loss)",
            qps5k_1pct: "~0.75-0.79 (25% loss; FaSR +16%)",
        },
        Scheme::Fasr => PaperCurve {
            lossless: "flat from 16 to 5K QPs",
            one_qp_1pct: ">0.93",
            qps5k_1pct: ">0.92",
        },
        Scheme::Melo => return None,
    })
}

/// FaSR Fig. 8(b): past this many QPs FaSR's SR memory (its per-QP part plus the shared
/// pool spread over the QPs) is the smallest of FaSR, IRN and SRNIC.
pub const PAPER_FIG8B_CROSSOVER: usize = 145;

/// The same crossover from the measured SR memory of the engines (`None` if FaSR never
/// has the least up to 100K QPs).
pub fn measured_fig8b_crossover() -> Option<usize> {
    let (fasr, irn, srnic) = (
        measure(Scheme::Fasr),
        measure(Scheme::Irn),
        measure(Scheme::Srnic),
    );
    (1..=100_000).find(|&q| {
        let f = fasr.bytes_per_qp(q);
        f < irn.bytes_per_qp(q) && f < srnic.bytes_per_qp(q)
    })
}
