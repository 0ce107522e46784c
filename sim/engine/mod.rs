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
//!   RCV-NXT, every message completed in order).
//!
//! Each QP's window (the same for every scheme, standing in for congestion control) is
//! `max(2 * burst, ceil(window_bdps * bdp / qps))` packets.
//!
//! This module is compiled into the `sim` binary and into the `tests/sim_*.rs` checks
//! (`#[path]`); each uses a different subset, hence the allowances below.
#![allow(dead_code, unreachable_pub)]

pub mod loss;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rxe_sr::proto::pool::bits_pool::BitsPool;
use rxe_sr::proto::pool::ops::{BitsPoolOps, SrPoolOps};
use rxe_sr::proto::pool::sr_pool::SrPool;
use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::recovery::{
    fasr, gbn, irn, melo, srnic, Action, Counters, Feedback, Recovery, ReqEvent, RespEvent, RtoConfig,
    Timer,
};

pub use loss::{Channel, LossModel, Rng};

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
    pub const ALL: [Scheme; 5] = [Scheme::Gbn, Scheme::Irn, Scheme::Fasr, Scheme::Srnic, Scheme::Melo];

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
    /// Verify every action (costs memory and time).
    pub check: bool,
}

impl Config {
    /// Defaults: 128-packet BDP (100 Gb/s, 1 KiB MTU, ~10.5 us RTT), RTO_low = 3 RTT,
    /// RTO_high = 10 RTT (IRN's ratios), 8-packet messages (8 KiB, as FaSR §V-B), a window
    /// sum of 3 BDPs, SRNIC delay 17 ticks (1.4 us, FaSR §II-A).
    pub fn new(scheme: Scheme, qps: usize, loss: f64) -> Self {
        let bdp = 128;
        Config {
            scheme,
            qps,
            bdp,
            loss: if loss > 0.0 { LossModel::Bernoulli(loss) } else { LossModel::None },
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
            check: false,
        }
    }

    /// Per-QP window.
    pub fn window(&self) -> u64 {
        let q = self.qps.max(1) as u64;
        (self.window_bdps * self.bdp).div_ceil(q).max(2 * self.burst.max(1))
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
    /// Ticks simulated.
    pub duration: u64,
    /// PSNs delivered in order (sum of RCV-NXT advances).
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
    /// SR bytes per QP on one device.
    pub sr_bytes_per_qp: f64,
    /// Every QP finished its messages (Messages workload).
    pub completed: bool,
    /// Invariant violations seen in check mode (empty = none).
    pub violations: Vec<String>,
}

impl Report {
    /// Goodput in packets per tick (the link carries at most 1).
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
    let q = cfg.qps.max(1) as f64;
    match cfg.scheme {
        Scheme::Gbn => Sim::new(cfg, |a, b| gbn::Gbn::new(a, b, rto), ([(), ()], |s| s), |_| NO_POOL, gbn::SR_BYTES_PER_QP as f64).run(),
        Scheme::Irn => Sim::new(
            cfg,
            |a, b| irn::Irn::<{ irn::DEFAULT_WORDS }>::new(a, b, rto),
            ([(), ()], |s| s),
            |_| NO_POOL,
            irn::Irn::<{ irn::DEFAULT_WORDS }>::sr_bytes_per_qp() as f64,
        )
        .run(),
        Scheme::Fasr => {
            let bytes = fasr::SR_BYTES_PER_QP as f64 + SrPool::<20, 70, 16>::new().footprint_bytes() as f64 / q;
            Sim::new(
                cfg,
                |a, b| fasr::Fasr::new(a, b, rto),
                ([SrPool::new(), SrPool::new()], |p: &mut SrPool<20, 70, 16>| -> &mut dyn SrPoolOps { p }),
                |p: &SrPool<20, 70, 16>| {
                    let (u, b) = p.count_in_use();
                    PoolStats {
                        cap_units: 20,
                        cap_blocks: 70,
                        peak_units: u64::from(p.peak_units()),
                        peak_blocks: u64::from(p.peak_blocks()),
                        used_units: u64::from(p.used_units()),
                        used_blocks: u64::from(p.used_blocks()),
                        exhaustions: p.exhaustions(),
                        consistent: u == usize::from(p.used_units()) && b == usize::from(p.used_blocks()),
                    }
                },
                bytes,
            )
            .run()
        }
        Scheme::Srnic => {
            let d = cfg.srnic_delay;
            Sim::new(
                cfg,
                move |a, b| srnic::Srnic::<{ srnic::DEFAULT_QUEUE }, { srnic::DEFAULT_WORDS }>::new(a, b, rto, d),
                ([(), ()], |s| s),
                |_| NO_POOL,
                srnic::SR_BYTES_PER_QP as f64,
            )
            .run()
        }
        Scheme::Melo => {
            let bytes = melo::SR_BYTES_PER_QP as f64 + BitsPool::<128, 8>::new().footprint_bytes() as f64 / q;
            Sim::new(
                cfg,
                |a, b| melo::Melo::new(a, b, rto),
                ([BitsPool::new(), BitsPool::new()], |p: &mut BitsPool<128, 8>| -> &mut dyn BitsPoolOps { p }),
                |p: &BitsPool<128, 8>| PoolStats {
                    cap_units: 0,
                    cap_blocks: 128,
                    peak_units: 0,
                    peak_blocks: p.peak() as u64,
                    used_units: 0,
                    used_blocks: p.used() as u64,
                    exhaustions: p.failures(),
                    consistent: true,
                },
                bytes,
            )
            .run()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Data packet `abs` of `qp` reaches B.
    Data { qp: usize, abs: u64 },
    /// Feedback reaches A.
    Fb { qp: usize, idx: usize },
    /// Timer of side 0 (A, requester) or 1 (B, responder).
    Timer { qp: usize, side: u8, deadline: u64 },
}

struct Qp<E> {
    a: E,
    b: E,
    // Requester bookkeeping (host A).
    una: u64,
    snd_ptr: u64,
    max_sent: u64,
    retx: VecDeque<(u64, u64)>,
    rto_deadline: Option<u64>,
    ready: bool,
    in_retx_q: bool,
    // Responder bookkeeping (host B).
    rcv_nxt: u64,
    placed: Vec<u8>,
    slow_deadline: Option<u64>,
}

/// Each host's pool, and how an engine is lent it.
type Pools<E, S> = ([S; 2], Lend<E, S>);
/// Lends an engine its pool.
type Lend<E, S> = fn(&mut S) -> &mut <E as Recovery>::Shared;

struct Sim<'c, E: Recovery, S, P> {
    cfg: &'c Config,
    qps: Vec<Qp<E>>,
    /// Each host's shared pool, and how an engine is lent it.
    shared: [S; 2],
    lend: Lend<E, S>,
    pool_stats: P,
    sr_bytes: f64,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    fbs: Vec<Feedback>,
    free_fbs: Vec<usize>,
    ready: VecDeque<usize>,
    /// The QP whose turn it is and the packets left in its burst.
    turn: Option<(usize, u64)>,
    /// QPs with selective retransmissions queued (served before any turn).
    retx_q: VecDeque<usize>,
    rng: Rng,
    chan: Channel,
    now: u64,
    total_pkts: u64,
    window: u64,
    rep: Report,
    acts: Vec<Action>,
}

fn psn_of(cfg: &Config, abs: u64) -> Psn {
    Psn::new(cfg.initial_psn.wrapping_add(abs as u32))
}

fn abs_of(cfg: &Config, psn: Psn, reference: u64) -> u64 {
    let d = i64::from(psn.diff(psn_of(cfg, reference)));
    (reference as i64 + d).max(0) as u64
}

impl<'c, E: Recovery, S, P: Fn(&S) -> PoolStats> Sim<'c, E, S, P> {
    fn new(
        cfg: &'c Config,
        make: impl Fn(Psn, Psn) -> E,
        (shared, lend): Pools<E, S>,
        pool_stats: P,
        sr_bytes: f64,
    ) -> Self {
        let ipsn = psn_of(cfg, 0);
        let total_pkts = match cfg.workload {
            Workload::Timed(_) => u64::MAX,
            Workload::Messages { per_qp, .. } => per_qp * cfg.msg_pkts,
        };
        let qps = (0..cfg.qps.max(1))
            .map(|_| Qp {
                a: make(ipsn, ipsn),
                b: make(ipsn, ipsn),
                una: 0,
                snd_ptr: 0,
                max_sent: 0,
                retx: VecDeque::new(),
                rto_deadline: None,
                ready: false,
                in_retx_q: false,
                rcv_nxt: 0,
                placed: Vec::new(),
                slow_deadline: None,
            })
            .collect();
        Sim {
            cfg,
            qps,
            shared,
            lend,
            pool_stats,
            sr_bytes,
            heap: BinaryHeap::new(),
            seq: 0,
            fbs: Vec::new(),
            free_fbs: Vec::new(),
            ready: VecDeque::new(),
            turn: None,
            retx_q: VecDeque::new(),
            rng: Rng::new(cfg.seed),
            chan: Channel::new(cfg.loss),
            now: 0,
            total_pkts,
            window: cfg.window(),
            rep: Report {
                scheme: cfg.scheme,
                qps: cfg.qps,
                loss: cfg.loss.mean(),
                duration: 0,
                delivered: 0,
                messages: 0,
                sent: 0,
                resent: 0,
                data_lost: 0,
                acks_lost: 0,
                counters: Counters::default(),
                pools: [PoolStats::default(); 2],
                sr_bytes_per_qp: 0.0,
                completed: false,
                violations: Vec::new(),
            },
            acts: Vec::new(),
        }
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    fn violation(&mut self, msg: String) {
        if self.rep.violations.len() < 20 {
            self.rep.violations.push(format!("t={} {}", self.now, msg));
        }
    }

    fn can_send(&self, i: usize) -> bool {
        let q = &self.qps[i];
        if q.retx.iter().any(|&(f, c)| f + c > q.una && f < q.max_sent) {
            return true;
        }
        let ptr = q.snd_ptr.max(q.una);
        ptr < q.max_sent || (ptr < self.total_pkts && ptr - q.una < self.window)
    }

    fn has_retx(&self, i: usize) -> bool {
        let q = &self.qps[i];
        q.retx.iter().any(|&(f, c)| f + c > q.una && f < q.max_sent)
    }

    fn wake(&mut self, i: usize) {
        if !self.qps[i].in_retx_q && self.has_retx(i) {
            self.qps[i].in_retx_q = true;
            self.retx_q.push_back(i);
        }
        if !self.qps[i].ready && self.can_send(i) {
            self.qps[i].ready = true;
            self.ready.push_back(i);
        }
    }

    fn next_packet(&mut self, i: usize) -> Option<(u64, bool)> {
        let window = self.window;
        let total = self.total_pkts;
        let q = &mut self.qps[i];
        while let Some(&mut (ref mut f, ref mut c)) = q.retx.front_mut() {
            if *f < q.una {
                let skip = (q.una - *f).min(*c);
                *f += skip;
                *c -= skip;
            }
            if *c == 0 || *f >= q.max_sent {
                q.retx.pop_front();
                continue;
            }
            let p = *f;
            *f += 1;
            *c -= 1;
            return Some((p, true));
        }
        q.snd_ptr = q.snd_ptr.max(q.una);
        if q.snd_ptr < q.max_sent {
            q.snd_ptr += 1;
            return Some((q.snd_ptr - 1, true));
        }
        if q.snd_ptr < total && q.snd_ptr - q.una < window {
            q.snd_ptr += 1;
            q.max_sent = q.snd_ptr;
            return Some((q.snd_ptr - 1, false));
        }
        None
    }

    fn has_work(&self) -> bool {
        self.turn.is_some() || !self.ready.is_empty() || !self.retx_q.is_empty()
    }

    /// Next queued selective retransmission of `i`.
    fn next_retx(&mut self, i: usize) -> Option<u64> {
        let q = &mut self.qps[i];
        while let Some(&mut (ref mut f, ref mut c)) = q.retx.front_mut() {
            if *f < q.una {
                let skip = (q.una - *f).min(*c);
                *f += skip;
                *c -= skip;
            }
            if *c == 0 || *f >= q.max_sent {
                q.retx.pop_front();
                continue;
            }
            *f += 1;
            *c -= 1;
            return Some(*f - 1);
        }
        None
    }

    fn transmit(&mut self) {
        let mut from_retx = None;
        while let Some(i) = self.retx_q.pop_front() {
            self.qps[i].in_retx_q = false;
            if let Some(abs) = self.next_retx(i) {
                from_retx = Some((i, abs, true));
                self.wake(i);
                break;
            }
        }
        let (i, abs, resend) = if let Some(x) = from_retx { x } else { loop {
            let (i, left) = match self.turn.take() {
                Some(t) => t,
                None => {
                    let Some(i) = self.ready.pop_front() else { return };
                    (i, self.cfg.burst.max(1))
                }
            };
            // `ready` stays set while the QP holds the turn, so wake() does not queue it.
            self.qps[i].ready = true;
            let Some((abs, resend)) = self.next_packet(i) else {
                self.qps[i].ready = false;
                self.wake(i);
                continue;
            };
            if left > 1 && self.can_send(i) {
                self.turn = Some((i, left - 1));
            } else {
                self.qps[i].ready = false;
                self.wake(i);
            }
            break (i, abs, resend);
        } };
        self.rep.sent += 1;
        if resend {
            self.rep.resent += 1;
        }
        let now = self.now;
        self.requester(i, ReqEvent::Sent { psn: psn_of(self.cfg, abs), now });
        let mut lost = self.chan.lose(&mut self.rng);
        if !lost && resend && self.rng.chance(self.cfg.retx_loss) {
            lost = true;
        }
        if lost {
            self.rep.data_lost += 1;
            return;
        }
        let mut t = now + 1 + self.cfg.bdp / 2;
        if self.rng.chance(self.cfg.reorder) {
            t += self.cfg.reorder_delay;
        }
        self.push(t, Ev::Data { qp: i, abs });
    }

    fn requester(&mut self, i: usize, ev: ReqEvent) {
        let mut acts = std::mem::take(&mut self.acts);
        acts.clear();
        {
            let q = &mut self.qps[i];
            q.a.on_requester((self.lend)(&mut self.shared[0]), ev, &mut |a: Action| acts.push(a));
        }
        for a in acts.drain(..) {
            self.requester_action(i, a);
        }
        self.acts = acts;
        self.wake(i);
    }

    fn requester_action(&mut self, i: usize, a: Action) {
        let cfg = self.cfg;
        let now = self.now;
        match a {
            Action::Acked { una } => {
                let q = &mut self.qps[i];
                let u = abs_of(cfg, una, q.una);
                if u < q.una || u > q.max_sent {
                    let msg = format!("qp{i}: Acked una={u} outside [{}, {}]", q.una, q.max_sent);
                    self.violation(msg);
                    return;
                }
                q.una = u;
                if u > q.rcv_nxt {
                    let msg = format!("qp{i}: Acked una={u} beyond responder rcv_nxt={}", q.rcv_nxt);
                    self.violation(msg);
                }
            }
            Action::Retransmit { first, count } => {
                let q = &mut self.qps[i];
                let f = abs_of(cfg, first, q.una);
                q.retx.push_back((f, u64::from(count)));
                if f + u64::from(count) > q.max_sent {
                    let msg = format!("qp{i}: Retransmit {f}+{count} beyond max_sent {}", q.max_sent);
                    self.violation(msg);
                }
            }
            Action::GoBack { from } => {
                let q = &mut self.qps[i];
                let f = abs_of(cfg, from, q.una);
                q.retx.clear();
                q.snd_ptr = f.max(q.una).min(q.max_sent);
            }
            Action::ArmTimer { timer: Timer::Rto, deadline } => {
                self.qps[i].rto_deadline = Some(deadline);
                self.push(deadline.max(now), Ev::Timer { qp: i, side: 0, deadline });
            }
            Action::DisarmTimer { timer: Timer::Rto } => self.qps[i].rto_deadline = None,
            Action::Fallback => {}
            other => {
                let msg = format!("qp{i}: responder action {other:?} from the requester side");
                self.violation(msg);
            }
        }
    }

    fn responder(&mut self, i: usize, ev: RespEvent, arriving: Option<u64>) {
        let mut acts = std::mem::take(&mut self.acts);
        acts.clear();
        {
            let q = &mut self.qps[i];
            q.b.on_responder((self.lend)(&mut self.shared[1]), ev, &mut |a: Action| acts.push(a));
        }
        for a in acts.drain(..) {
            self.responder_action(i, a, arriving);
        }
        self.acts = acts;
    }

    fn responder_action(&mut self, i: usize, a: Action, arriving: Option<u64>) {
        let cfg = self.cfg;
        let now = self.now;
        match a {
            Action::Deliver { psn } => {
                let q = &mut self.qps[i];
                let abs = abs_of(cfg, psn, q.rcv_nxt);
                if arriving != Some(abs) {
                    let msg = format!("qp{i}: Deliver {abs} but the arriving packet is {arriving:?}");
                    self.violation(msg);
                    return;
                }
                if cfg.check {
                    let idx = abs as usize;
                    if q.placed.len() <= idx {
                        q.placed.resize(idx + 1, 0);
                    }
                    q.placed[idx] = q.placed[idx].saturating_add(1);
                    if q.placed[idx] > 1 || abs < q.rcv_nxt {
                        let msg = format!("qp{i}: PSN {abs} placed twice");
                        self.violation(msg);
                    }
                }
            }
            Action::Drop { .. } => {}
            Action::Advance { rcv_nxt } => {
                let q = &mut self.qps[i];
                let r = abs_of(cfg, rcv_nxt, q.rcv_nxt);
                if r < q.rcv_nxt || r > q.max_sent {
                    let msg = format!("qp{i}: Advance to {r} from {} (max_sent {})", q.rcv_nxt, q.max_sent);
                    self.violation(msg);
                    return;
                }
                if cfg.check {
                    for p in q.rcv_nxt..r {
                        if q.placed.get(p as usize).copied().unwrap_or(0) != 1 {
                            let msg = format!("qp{i}: Advance over PSN {p} not placed exactly once");
                            self.violation(msg);
                            break;
                        }
                    }
                }
                let q = &mut self.qps[i];
                let m = cfg.msg_pkts.max(1);
                self.rep.messages += r / m - q.rcv_nxt / m;
                self.rep.delivered += r - q.rcv_nxt;
                q.rcv_nxt = r;
            }
            Action::Send(fb) => {
                if self.rng.chance(cfg.ack_loss) {
                    self.rep.acks_lost += 1;
                    return;
                }
                let idx = match self.free_fbs.pop() {
                    Some(k) => {
                        self.fbs[k] = fb;
                        k
                    }
                    None => {
                        self.fbs.push(fb);
                        self.fbs.len() - 1
                    }
                };
                self.push(now + cfg.bdp.div_ceil(2), Ev::Fb { qp: i, idx });
            }
            Action::ArmTimer { timer: Timer::SlowPath, deadline } => {
                self.qps[i].slow_deadline = Some(deadline);
                self.push(deadline.max(now), Ev::Timer { qp: i, side: 1, deadline });
            }
            Action::DisarmTimer { timer: Timer::SlowPath } => self.qps[i].slow_deadline = None,
            Action::Fallback => {}
            other => {
                let msg = format!("qp{i}: requester action {other:?} from the responder side");
                self.violation(msg);
            }
        }
    }

    fn handle(&mut self, ev: Ev) {
        let now = self.now;
        match ev {
            Ev::Data { qp, abs } => {
                let psn = psn_of(self.cfg, abs);
                self.responder(qp, RespEvent::Data { psn, now }, Some(abs));
            }
            Ev::Fb { qp, idx } => {
                let fb = self.fbs[idx];
                self.free_fbs.push(idx);
                self.requester(qp, ReqEvent::Feedback { fb, now });
            }
            Ev::Timer { qp, side: 0, deadline } => {
                if self.qps[qp].rto_deadline == Some(deadline) {
                    self.qps[qp].rto_deadline = None;
                    self.requester(qp, ReqEvent::Timer { timer: Timer::Rto, now });
                }
            }
            Ev::Timer { qp, deadline, .. } => {
                if self.qps[qp].slow_deadline == Some(deadline) {
                    self.qps[qp].slow_deadline = None;
                    self.responder(qp, RespEvent::Timer { timer: Timer::SlowPath, now }, None);
                }
            }
        }
    }

    fn done(&self) -> bool {
        self.qps.iter().all(|q| q.rcv_nxt >= self.total_pkts && q.una >= self.total_pkts)
    }

    fn run(mut self) -> Report {
        let end = match self.cfg.workload {
            Workload::Timed(d) => d,
            Workload::Messages { limit, .. } => limit,
        };
        for i in 0..self.qps.len() {
            self.wake(i);
        }
        let mut link_free = 0u64;
        loop {
            let next_ev = self.heap.peek().map(|Reverse((t, _, _))| *t);
            if self.has_work() && next_ev.is_none_or(|t| link_free <= t) {
                self.now = self.now.max(link_free);
                if self.now >= end {
                    break;
                }
                self.transmit();
                link_free = self.now + 1;
                continue;
            }
            let Some(Reverse((t, _, ev))) = self.heap.pop() else { break };
            if t >= end {
                self.now = end;
                break;
            }
            self.now = t;
            self.handle(ev);
            if matches!(self.cfg.workload, Workload::Messages { .. }) && self.done() {
                break;
            }
        }
        let mut rep = self.rep;
        rep.duration = match self.cfg.workload {
            Workload::Timed(d) => d,
            Workload::Messages { .. } => self.now,
        };
        rep.completed = self.qps.iter().all(|q| q.rcv_nxt >= self.total_pkts);
        for q in &self.qps {
            rep.counters.accumulate(q.a.counters());
            rep.counters.accumulate(q.b.counters());
        }
        rep.pools = [(self.pool_stats)(&self.shared[0]), (self.pool_stats)(&self.shared[1])];
        rep.sr_bytes_per_qp = self.sr_bytes;
        if self.cfg.check && rep.completed {
            for (s, p) in rep.pools.iter().enumerate() {
                if p.used_units != 0 || p.used_blocks != 0 {
                    rep.violations.push(format!("host {s}: pool leaked {} units {} blocks", p.used_units, p.used_blocks));
                }
            }
        }
        for (s, p) in rep.pools.iter().enumerate() {
            if p.peak_units > p.cap_units || p.peak_blocks > p.cap_blocks || !p.consistent {
                rep.violations.push(format!("host {s}: pool over its size or inconsistent: {p:?}"));
            }
        }
        rep
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
