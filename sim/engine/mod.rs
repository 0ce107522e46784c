// SPDX-License-Identifier: GPL-2.0
//! Deterministic packet-level simulator over rxe_sr's recovery engines.
//!
//! Model (all times in ticks; one tick = one MTU packet's serialization time on the
//! bottleneck link):
//! - host A runs N requesters, host B the N responders; the requesters share A's egress
//!   link (the bottleneck, one packet per tick). A round-robin scheduler gives each ready
//!   QP a turn of up to `burst` back-to-back packets (as SRNIC's/FaSR's WQE scheduler
//!   fetches a burst per QP): go-back-N resends first, then new data within the QP's
//!   window. Selective retransmissions bypass the scheduler through a priority queue (FaSR
//!   Fig. 6's RetxQueue);
//! - one-way propagation is `bdp / 2` ticks each way, so the base RTT is `bdp` ticks and
//!   the link's BDP is `bdp` packets;
//! - data packets meet the loss model at the bottleneck (Bernoulli or Gilbert-Elliott),
//!   retransmissions an extra loss probability, and a reordering probability that delays
//!   a packet by `reorder_delay` ticks; feedback packets meet `ack_loss`;
//! - every engine runs unchanged: the simulator only turns its actions into packets,
//!   timers and bookkeeping, and in check mode verifies every action against the truth
//!   (each PSN placed exactly once, RCV-NXT only over placed PSNs, UNACK never ahead of
//!   RCV-NXT, every message completed in order);
//! - the NIC's on-chip QPC memory ([`qpc`]): each QP's context is the base QPC plus the
//!   scheme's SR state measured from its engine type, on the NIC the scheme ran on in
//!   FaSR's evaluation (a CX6-style cache for go-back-N, the FPGA's QPC SRAM for the
//!   others). When the contexts do not all fit, the transmit pipeline stalls for a PCIe
//!   round trip whenever it serves a QP whose context is not on chip. Host B's NIC sees
//!   the same QP order one burst later, so its misses coincide with A's and are not
//!   charged twice; ACK processing does not look contexts up;
//! - SRNIC's receive pipeline pauses for the software SR query after each retransmitted
//!   packet it hands to the slow path (FaSR §II-A); the pause back-pressures the
//!   bottleneck (the link idles), serialised when pauses overlap.
//!
//! Each QP's window (the same for every scheme, standing in for congestion control) is
//! `max(2 * burst, ceil(window_bdps * bdp / qps))` packets.
//!
//! This module is compiled into the `sim` binary and into the `tests/sim_*.rs` checks
//! (`#[path]`); each uses a different subset, hence the allowances below.
#![allow(dead_code, unreachable_pub)]

pub mod fig7;
pub mod loss;
pub mod qpc;
mod testbed;

use rxe_sr::proto::pool::bits_pool::BitsPool;
use rxe_sr::proto::pool::ops::{BitsPoolOps, SrPoolOps};
use rxe_sr::proto::pool::sr_pool::SrPool;
use rxe_sr::proto::recovery::{fasr, gbn, irn, melo, srnic, Counters, RtoConfig};
use rxe_sr::proto::words::InlineWords;

pub use loss::LossModel;
pub use qpc::{NicMemory, QpcStats, SrMemory};
use testbed::Testbed;

/// FaSR's shared SR pool as the simulator sizes it (the paper's 20 units, 70 blocks of 16).
pub type FasrPool = SrPool<20, 70, 16>;
/// MELO's shared bits pool as the simulator sizes it.
pub type MeloPool = BitsPool<128, 8>;
/// IRN with its default BDP-cap.
pub type IrnEngine = irn::Irn<InlineWords<{ irn::DEFAULT_WORDS }>>;
/// SRNIC with its default slow-path queue and software bitmap.
pub type SrnicEngine =
    srnic::Srnic<{ srnic::DEFAULT_QUEUE }, InlineWords<{ srnic::DEFAULT_WORDS }>>;

/// The schemes the simulator can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// rdma_rxe go-back-N.
    Gbn,
    /// IRN.
    Irn,
    /// FaSR.
    Fasr,
    /// SRNIC.
    Srnic,
    /// MELO.
    Melo,
}

impl Scheme {
    /// All schemes, in table order.
    pub const ALL: [Scheme; 5] = [
        Scheme::Gbn,
        Scheme::Irn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Melo,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Gbn => "gbn",
            Scheme::Irn => "irn",
            Scheme::Fasr => "fasr",
            Scheme::Srnic => "srnic",
            Scheme::Melo => "melo",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|x| x.name() == s)
    }
}

/// How long a run lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Infinite backlog, measured for this many ticks.
    Timed(u64),
    /// Each QP sends this many messages; run until all complete (or `limit` ticks pass).
    Messages {
        /// Messages per QP.
        per_qp: u64,
        /// Give up after this many ticks.
        limit: u64,
    },
}

/// One simulation's parameters.
#[derive(Clone, Debug)]
pub struct Config {
    /// Scheme.
    pub scheme: Scheme,
    /// Number of QPs.
    pub qps: usize,
    /// Link BDP in packets (= base RTT in ticks).
    pub bdp: u64,
    /// Data loss model at the bottleneck.
    pub loss: LossModel,
    /// Extra loss probability for retransmitted packets.
    pub retx_loss: f64,
    /// Feedback (ACK/SACK/NAK/FNACK) loss probability.
    pub ack_loss: f64,
    /// Probability a data packet is delayed by `reorder_delay` ticks.
    pub reorder: f64,
    /// Extra delay of a reordered packet.
    pub reorder_delay: u64,
    /// Packets per message.
    pub msg_pkts: u64,
    /// Sum of the QPs' windows in BDPs (see the module doc).
    pub window_bdps: u64,
    /// Packets per scheduling turn.
    pub burst: u64,
    /// Workload.
    pub workload: Workload,
    /// RNG seed.
    pub seed: u64,
    /// Initial PSN of every QP (set near 2^24 to exercise the wrap).
    pub initial_psn: u32,
    /// RTO_low / RTO_high / N.
    pub rto: RtoConfig,
    /// SRNIC slow-path service delay in ticks.
    pub srnic_delay: u64,
    /// SRNIC's receive pipeline pauses `srnic_delay` ticks for each retransmission it
    /// hands to software (FaSR §II-A).
    pub srnic_rx_pause: bool,
    /// The NIC's on-chip QPC memory; `None` puts every context on chip.
    pub nic: Option<NicMemory>,
    /// Ticks before measurement starts (timed workloads: lets the QPC cache settle).
    pub warmup: u64,
    /// Verify every action (costs memory and time).
    pub check: bool,
}

impl Config {
    /// Defaults: 128-packet BDP (100 Gb/s, 1 KiB MTU, ~10.5 us RTT), RTO_low = 3 RTT,
    /// RTO_high = 10 RTT (IRN's ratios), 8-packet messages (8 KiB, as FaSR §V-B), a window
    /// sum of 3 BDPs, SRNIC delay 17 ticks (1.4 us, FaSR §II-A) with its pipeline pause,
    /// and the NIC each scheme ran on in FaSR's evaluation ([`NicMemory::for_scheme`]).
    pub fn new(scheme: Scheme, qps: usize, loss: f64) -> Self {
        let bdp = 128;
        Config {
            scheme,
            qps,
            bdp,
            loss: if loss > 0.0 {
                LossModel::Bernoulli(loss)
            } else {
                LossModel::None
            },
            retx_loss: 0.0,
            ack_loss: 0.0,
            reorder: 0.0,
            reorder_delay: 0,
            msg_pkts: 8,
            window_bdps: 3,
            burst: 8,
            workload: Workload::Timed(200_000),
            seed: 1,
            initial_psn: 0,
            rto: RtoConfig {
                rto_low: 3 * bdp,
                rto_high: 10 * bdp,
                n_low: 3,
            },
            srnic_delay: 17,
            srnic_rx_pause: true,
            nic: Some(NicMemory::for_scheme(scheme)),
            warmup: 0,
            check: false,
        }
    }

    /// Per-QP window.
    pub fn window(&self) -> u64 {
        let q = self.qps.max(1) as u64;
        (self.window_bdps * self.bdp)
            .div_ceil(q)
            .max(2 * self.burst.max(1))
    }
}

/// Shared-pool statistics of one host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Units / blocks the pool has.
    pub cap_units: u64,
    /// Blocks the pool has.
    pub cap_blocks: u64,
    /// Peak units in use.
    pub peak_units: u64,
    /// Peak blocks in use.
    pub peak_blocks: u64,
    /// Units in use now.
    pub used_units: u64,
    /// Blocks in use now.
    pub used_blocks: u64,
    /// Failed allocations.
    pub exhaustions: u64,
    /// The availability bitmaps agree with the counts.
    pub consistent: bool,
}

/// Statistics of a scheme without a shared pool.
const NO_POOL: PoolStats = PoolStats {
    cap_units: 0,
    cap_blocks: 0,
    peak_units: 0,
    peak_blocks: 0,
    used_units: 0,
    used_blocks: 0,
    exhaustions: 0,
    consistent: true,
};

/// What a run measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// Scheme.
    pub scheme: Scheme,
    /// QPs.
    pub qps: usize,
    /// Mean data loss rate configured.
    pub loss: f64,
    /// Ticks measured (after the warm-up).
    pub duration: u64,
    /// PSNs delivered in order after the warm-up (sum of RCV-NXT advances).
    pub delivered: u64,
    /// Messages completed.
    pub messages: u64,
    /// Data packets put on the wire.
    pub sent: u64,
    /// Of which resends.
    pub resent: u64,
    /// Data packets lost on the link.
    pub data_lost: u64,
    /// Feedback packets lost.
    pub acks_lost: u64,
    /// Engine counters summed over all QPs and both sides.
    pub counters: Counters,
    /// Pool statistics of host A (requesters) and B (responders).
    pub pools: [PoolStats; 2],
    /// SR bytes per QP on one device, measured ([`SrMemory::bytes_per_qp`]).
    pub sr_bytes_per_qp: f64,
    /// The scheme's SR memory, measured from its engine types.
    pub memory: SrMemory,
    /// Host A's QPC store.
    pub qpc: QpcStats,
    /// Ticks SRNIC's receive pipeline paused for software SR queries.
    pub rx_pause_ticks: u64,
    /// Every QP finished its messages (Messages workload).
    pub completed: bool,
    /// Invariant violations seen in check mode (empty = none).
    pub violations: Vec<String>,
}

impl Report {
    /// Goodput in packets per tick: the share of the line rate (the link carries at most 1).
    pub fn goodput(&self) -> f64 {
        if self.duration == 0 {
            0.0
        } else {
            self.delivered as f64 / self.duration as f64
        }
    }

    /// Resent packets per lost data packet.
    pub fn retx_per_loss(&self) -> f64 {
        if self.data_lost == 0 {
            0.0
        } else {
            self.resent as f64 / self.data_lost as f64
        }
    }

    /// Share of SR operations done on the fast path (None when there were none).
    pub fn fast_path_share(&self) -> Option<f64> {
        let t = self.counters.fast_path + self.counters.slow_path;
        (t > 0).then(|| self.counters.fast_path as f64 / t as f64)
    }

    /// Peak units over both hosts.
    pub fn pool_peak_units(&self) -> u64 {
        self.pools[0].peak_units.max(self.pools[1].peak_units)
    }

    /// Peak blocks over both hosts.
    pub fn pool_peak_blocks(&self) -> u64 {
        self.pools[0].peak_blocks.max(self.pools[1].peak_blocks)
    }
}

/// Runs one simulation.
pub fn run(cfg: &Config) -> Report {
    let rto = cfg.rto;
    let mem = qpc::measure(cfg.scheme);
    match cfg.scheme {
        Scheme::Gbn => Testbed::new(
            cfg,
            mem,
            |a, b| gbn::Gbn::new(a, b, rto),
            ([(), ()], |s| s),
            |_| NO_POOL,
        )
        .run(),
        Scheme::Irn => Testbed::new(
            cfg,
            mem,
            |a, b| IrnEngine::new(a, b, rto),
            ([(), ()], |s| s),
            |_| NO_POOL,
        )
        .run(),
        Scheme::Fasr => Testbed::new(
            cfg,
            mem,
            |a, b| fasr::Fasr::new(a, b, rto),
            (
                [FasrPool::new(), FasrPool::new()],
                |p: &mut FasrPool| -> &mut dyn SrPoolOps { p },
            ),
            |p: &FasrPool| {
                let (u, b) = p.count_in_use();
                PoolStats {
                    cap_units: p.capacity_units() as u64,
                    cap_blocks: p.capacity_blocks() as u64,
                    peak_units: u64::from(p.peak_units()),
                    peak_blocks: u64::from(p.peak_blocks()),
                    used_units: u64::from(p.used_units()),
                    used_blocks: u64::from(p.used_blocks()),
                    exhaustions: p.exhaustions(),
                    consistent: u == usize::from(p.used_units())
                        && b == usize::from(p.used_blocks()),
                }
            },
        )
        .run(),
        Scheme::Srnic => {
            let d = cfg.srnic_delay;
            Testbed::new(
                cfg,
                mem,
                move |a, b| SrnicEngine::new(a, b, rto, d),
                ([(), ()], |s| s),
                |_| NO_POOL,
            )
            .run()
        }
        Scheme::Melo => Testbed::new(
            cfg,
            mem,
            |a, b| melo::Melo::new(a, b, rto),
            (
                [MeloPool::new(), MeloPool::new()],
                |p: &mut MeloPool| -> &mut dyn BitsPoolOps { p },
            ),
            |p: &MeloPool| PoolStats {
                cap_units: 0,
                cap_blocks: p.capacity() as u64,
                peak_units: 0,
                peak_blocks: p.peak() as u64,
                used_units: 0,
                used_blocks: p.used() as u64,
                exhaustions: p.failures(),
                consistent: true,
            },
        )
        .run(),
    }
}

/// Goodput of `cfg` divided by the same configuration's lossless goodput.
pub fn goodput_ratio(cfg: &Config) -> (f64, Report) {
    let lossy = run(cfg);
    let mut base = cfg.clone();
    base.loss = LossModel::None;
    base.retx_loss = 0.0;
    base.ack_loss = 0.0;
    base.reorder = 0.0;
    let lossless = run(&base);
    let g0 = lossless.goodput();
    (if g0 > 0.0 { lossy.goodput() / g0 } else { 0.0 }, lossy)
}
