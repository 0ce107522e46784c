// SPDX-License-Identifier: GPL-2.0
//! The simulated testbed: two hosts, the bottleneck link, the WQE scheduler and the
//! events between them, driving one engine pair per QP (see the parent module doc).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::recovery::{Action, Counters, Feedback, Recovery, ReqEvent, RespEvent, Timer};

use super::loss::{Channel, Rng};
use super::qpc::{QpcCache, SrMemory};
use super::{Config, PoolStats, Report, Scheme, Workload};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Data packet `abs` of `qp` reaches B (`resend`: not its first transmission).
    Data { qp: usize, abs: u64, resend: bool },
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

/// One run: the QPs' engine pairs, the hosts' pools and NIC state, the event queue.
pub(super) struct Testbed<'c, E: Recovery, S, P> {
    cfg: &'c Config,
    qps: Vec<Qp<E>>,
    /// Each host's shared pool, and how an engine is lent it.
    shared: [S; 2],
    lend: Lend<E, S>,
    pool_stats: P,
    /// Host A's on-chip QPC store (`None`: every context on chip, nothing counted).
    qpc: Option<QpcCache>,
    /// The bottleneck is busy (sending, or stalled) until this tick.
    link_free: u64,
    /// SRNIC: B's receive pipeline is paused until this tick.
    rx_pause_until: u64,
    /// Measurement starts at this tick.
    measure_from: u64,
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

impl<'c, E: Recovery, S, P: Fn(&S) -> PoolStats> Testbed<'c, E, S, P> {
    pub(super) fn new(
        cfg: &'c Config,
        mem: SrMemory,
        make: impl Fn(Psn, Psn) -> E,
        (shared, lend): Pools<E, S>,
        pool_stats: P,
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
        let nq = cfg.qps.max(1);
        Testbed {
            cfg,
            qps,
            shared,
            lend,
            pool_stats,
            qpc: cfg.nic.map(|nic| QpcCache::new(&nic, &mem, nq, cfg.seed)),
            link_free: 0,
            rx_pause_until: 0,
            measure_from: match cfg.workload {
                Workload::Timed(_) => cfg.warmup,
                Workload::Messages { .. } => 0,
            },
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
                sr_bytes_per_qp: mem.bytes_per_qp(nq),
                memory: mem,
                qpc: Default::default(),
                rx_pause_ticks: 0,
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
        if let Some(p) = self.next_retx(i) {
            return Some((p, true));
        }
        let window = self.window;
        let total = self.total_pkts;
        let q = &mut self.qps[i];
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

    /// Puts the next packet on the link; returns the ticks the link is busy: one, plus the
    /// stall while a missing QPC is fetched before the packet can leave.
    fn transmit(&mut self) -> u64 {
        let mut from_retx = None;
        while let Some(i) = self.retx_q.pop_front() {
            self.qps[i].in_retx_q = false;
            if let Some(abs) = self.next_retx(i) {
                from_retx = Some((i, abs, true));
                self.wake(i);
                break;
            }
        }
        let (i, abs, resend) = if let Some(x) = from_retx {
            x
        } else {
            loop {
                let (i, left) = match self.turn.take() {
                    Some(t) => t,
                    None => {
                        let Some(i) = self.ready.pop_front() else {
                            return 1;
                        };
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
            }
        };
        self.rep.sent += 1;
        if resend {
            self.rep.resent += 1;
        }
        let stall = self.qpc.as_mut().map_or(0, |c| c.access(i));
        let now = self.now;
        self.requester(
            i,
            ReqEvent::Sent {
                psn: psn_of(self.cfg, abs),
                now,
            },
        );
        let mut lost = self.chan.lose(&mut self.rng);
        if !lost && resend && self.rng.chance(self.cfg.retx_loss) {
            lost = true;
        }
        if lost {
            self.rep.data_lost += 1;
            return stall + 1;
        }
        let mut t = now + stall + 1 + self.cfg.bdp / 2;
        if self.rng.chance(self.cfg.reorder) {
            t += self.cfg.reorder_delay;
        }
        self.push(t, Ev::Data { qp: i, abs, resend });
        stall + 1
    }

    fn requester(&mut self, i: usize, ev: ReqEvent) {
        let mut acts = std::mem::take(&mut self.acts);
        acts.clear();
        {
            let q = &mut self.qps[i];
            q.a.on_requester((self.lend)(&mut self.shared[0]), ev, &mut |a: Action| {
                acts.push(a)
            });
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
                    let msg = format!(
                        "qp{i}: Acked una={u} beyond responder rcv_nxt={}",
                        q.rcv_nxt
                    );
                    self.violation(msg);
                }
            }
            Action::Retransmit { first, count } => {
                let q = &mut self.qps[i];
                let f = abs_of(cfg, first, q.una);
                q.retx.push_back((f, u64::from(count)));
                if f + u64::from(count) > q.max_sent {
                    let msg = format!(
                        "qp{i}: Retransmit {f}+{count} beyond max_sent {}",
                        q.max_sent
                    );
                    self.violation(msg);
                }
            }
            Action::GoBack { from } => {
                let q = &mut self.qps[i];
                let f = abs_of(cfg, from, q.una);
                q.retx.clear();
                q.snd_ptr = f.max(q.una).min(q.max_sent);
            }
            Action::ArmTimer {
                timer: Timer::Rto,
                deadline,
            } => {
                self.qps[i].rto_deadline = Some(deadline);
                self.push(
                    deadline.max(now),
                    Ev::Timer {
                        qp: i,
                        side: 0,
                        deadline,
                    },
                );
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
            q.b.on_responder((self.lend)(&mut self.shared[1]), ev, &mut |a: Action| {
                acts.push(a)
            });
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
                    let msg =
                        format!("qp{i}: Deliver {abs} but the arriving packet is {arriving:?}");
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
                    let msg = format!(
                        "qp{i}: Advance to {r} from {} (max_sent {})",
                        q.rcv_nxt, q.max_sent
                    );
                    self.violation(msg);
                    return;
                }
                if cfg.check {
                    for p in q.rcv_nxt..r {
                        if q.placed.get(p as usize).copied().unwrap_or(0) != 1 {
                            let msg =
                                format!("qp{i}: Advance over PSN {p} not placed exactly once");
                            self.violation(msg);
                            break;
                        }
                    }
                }
                let q = &mut self.qps[i];
                let m = cfg.msg_pkts.max(1);
                self.rep.messages += r / m - q.rcv_nxt / m;
                if now >= self.measure_from {
                    self.rep.delivered += r - q.rcv_nxt;
                }
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
            Action::ArmTimer {
                timer: Timer::SlowPath,
                deadline,
            } => {
                self.qps[i].slow_deadline = Some(deadline);
                self.push(
                    deadline.max(now),
                    Ev::Timer {
                        qp: i,
                        side: 1,
                        deadline,
                    },
                );
            }
            Action::DisarmTimer {
                timer: Timer::SlowPath,
            } => self.qps[i].slow_deadline = None,
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
            Ev::Data { qp, abs, resend } => {
                let psn = psn_of(self.cfg, abs);
                let slow = self.qps[qp].b.counters().slow_path;
                self.responder(qp, RespEvent::Data { psn, now }, Some(abs));
                let pause = self.cfg.scheme == Scheme::Srnic && self.cfg.srnic_rx_pause;
                if pause && resend && self.qps[qp].b.counters().slow_path > slow {
                    // FaSR §II-A: the receiver pauses its pipeline until software answers
                    // the bitmap query; the link behind it idles (back-pressure).
                    let start = self.rx_pause_until.max(now);
                    self.rx_pause_until = start + self.cfg.srnic_delay;
                    self.link_free = self.link_free.max(self.rx_pause_until);
                    self.rep.rx_pause_ticks += self.cfg.srnic_delay;
                }
            }
            Ev::Fb { qp, idx } => {
                let fb = self.fbs[idx];
                self.free_fbs.push(idx);
                self.requester(qp, ReqEvent::Feedback { fb, now });
            }
            Ev::Timer {
                qp,
                side: 0,
                deadline,
            } => {
                if self.qps[qp].rto_deadline == Some(deadline) {
                    self.qps[qp].rto_deadline = None;
                    self.requester(
                        qp,
                        ReqEvent::Timer {
                            timer: Timer::Rto,
                            now,
                        },
                    );
                }
            }
            Ev::Timer { qp, deadline, .. } => {
                if self.qps[qp].slow_deadline == Some(deadline) {
                    self.qps[qp].slow_deadline = None;
                    self.responder(
                        qp,
                        RespEvent::Timer {
                            timer: Timer::SlowPath,
                            now,
                        },
                        None,
                    );
                }
            }
        }
    }

    fn done(&self) -> bool {
        self.qps
            .iter()
            .all(|q| q.rcv_nxt >= self.total_pkts && q.una >= self.total_pkts)
    }

    pub(super) fn run(mut self) -> Report {
        let end = match self.cfg.workload {
            Workload::Timed(d) => d,
            Workload::Messages { limit, .. } => limit,
        };
        for i in 0..self.qps.len() {
            self.wake(i);
        }
        let mut warm = self.measure_from == 0;
        loop {
            if !warm && self.now >= self.measure_from {
                // Count the QPC and the pauses from the end of the warm-up only.
                warm = true;
                if let Some(c) = self.qpc.as_mut() {
                    c.stats.lookups = 0;
                    c.stats.misses = 0;
                    c.stats.stall_ticks = 0;
                }
                self.rep.rx_pause_ticks = 0;
            }
            let next_ev = self.heap.peek().map(|Reverse((t, _, _))| *t);
            if self.has_work() && next_ev.is_none_or(|t| self.link_free <= t) {
                self.now = self.now.max(self.link_free);
                if self.now >= end {
                    break;
                }
                let busy = self.transmit();
                self.link_free = self.link_free.max(self.now + busy);
                continue;
            }
            let Some(Reverse((t, _, ev))) = self.heap.pop() else {
                break;
            };
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
            Workload::Timed(d) => d.saturating_sub(self.measure_from),
            Workload::Messages { .. } => self.now,
        };
        rep.qpc = self.qpc.as_ref().map(|c| c.stats).unwrap_or_default();
        rep.completed = self.qps.iter().all(|q| q.rcv_nxt >= self.total_pkts);
        for q in &self.qps {
            rep.counters.accumulate(q.a.counters());
            rep.counters.accumulate(q.b.counters());
        }
        rep.pools = [
            (self.pool_stats)(&self.shared[0]),
            (self.pool_stats)(&self.shared[1]),
        ];
        if self.cfg.check && rep.completed {
            for (s, p) in rep.pools.iter().enumerate() {
                if p.used_units != 0 || p.used_blocks != 0 {
                    rep.violations.push(format!(
                        "host {s}: pool leaked {} units {} blocks",
                        p.used_units, p.used_blocks
                    ));
                }
            }
        }
        for (s, p) in rep.pools.iter().enumerate() {
            if p.peak_units > p.cap_units || p.peak_blocks > p.cap_blocks || !p.consistent {
                rep.violations.push(format!(
                    "host {s}: pool over its size or inconsistent: {p:?}"
                ));
            }
        }
        rep
    }
}
