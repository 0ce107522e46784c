// SPDX-License-Identifier: GPL-2.0
// A long fat path for the test net (`include!`d after rc_net.rs by the tests that need
// one), as the guests' WAN profile builds it with netem: each direction is a link of a set
// rate with a FIFO in front of it, then a one-way delay. Loss happens as a packet enters
// the link (a lost packet takes no link time): Bernoulli on every packet, or the first
// transmission of chosen request PSNs from A. A's device has its in-flight budget, and A's
// path allowance stretches it after each step, as the kernel's drive settles it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rxe_sr::proto::pool::bits_pool::BitsPool;
use rxe_sr::proto::pool::sr_pool::{self, SrPool};
use rxe_sr::proto::rc::SR_DEFAULT_WINDOW_PSNS;
use rxe_sr::proto::recovery::any::SharedIn;

/// Which packets the path loses.
#[derive(Clone, Copy, Debug)]
enum WanLoss {
    None,
    /// Every packet, either way, with this chance in a million (the net's [`Link`] rolls).
    Ppm(u32),
    /// The first transmission of A's request PSNs `p` with `p - first % every == at`.
    EveryNth { every: u32, at: u32 },
}

/// A packet on the path: (arrival, microseconds; order put; from A; bytes).
type OnPath = Reverse<(u64, u64, bool, Vec<u8>)>;

/// The path between A and B, and what it saw.
struct Wan {
    /// Link time per byte, nanoseconds (80: 100 Mbit/s).
    ns_per_byte: u64,
    /// One-way delay after the link, microseconds.
    delay_us: u64,
    loss: WanLoss,
    /// Each direction's link (0: from A) is busy until this time, nanoseconds.
    busy_until_ns: [u64; 2],
    /// Packets on the path, earliest arrival first.
    path: BinaryHeap<OnPath>,
    order: u64,
    /// A's first request PSN.
    first_psn: u32,
    /// A's path allowance as the device last settled it.
    path_held: u32,
    /// Packets the path lost.
    lost: u64,
}

impl Wan {
    /// A path of `ns_per_byte` each way and a round trip of `rtt_us` (half each way).
    fn new(ns_per_byte: u64, rtt_us: u64, loss: WanLoss, first_psn: u32) -> Wan {
        Wan {
            ns_per_byte,
            delay_us: rtt_us / 2,
            loss,
            busy_until_ns: [0; 2],
            path: BinaryHeap::new(),
            order: 0,
            first_psn,
            path_held: 0,
            lost: 0,
        }
    }

    /// Whether the path loses a packet; `first_from_a`: it is the first sending of A's
    /// request PSN.
    fn loses(&mut self, link: &mut Link, first_from_a: Option<u32>) -> bool {
        match self.loss {
            WanLoss::None => false,
            WanLoss::Ppm(ppm) => link.roll(ppm),
            WanLoss::EveryNth { every, at } => {
                first_from_a.is_some_and(|psn| psn.wrapping_sub(self.first_psn) % every == at)
            }
        }
    }

    /// Puts `bytes` on the path at `now_us`: it waits for the link, crosses it, and
    /// arrives a one-way delay later (unless lost).
    fn put(&mut self, link: &mut Link, now_us: u64, from_a: bool, bytes: Vec<u8>, first_from_a: Option<u32>) {
        if self.loses(link, first_from_a) {
            self.lost += 1;
            return;
        }
        let dir = usize::from(!from_a);
        let now_ns = now_us * 1000;
        let start = self.busy_until_ns[dir].max(now_ns);
        let end = start + bytes.len() as u64 * self.ns_per_byte;
        self.busy_until_ns[dir] = end;
        let arrive = end.div_ceil(1000) + self.delay_us;
        self.order += 1;
        self.path.push(Reverse((arrive, self.order, from_a, bytes)));
    }
}

impl Net {
    /// The PSN of `bytes` if it is a request packet reaching the link for the first time
    /// (noted in `on_wire`, as [`Net::run`] notes it).
    fn first_sending(&mut self, from_a: bool, bytes: &[u8]) -> Option<u32> {
        let p = PacketRepr::parse(bytes).ok().filter(|_| !is_repair(bytes))?;
        let psn = p.bth.psn.get();
        (p.bth.opcode.info().is_some_and(|i| is_request(i.kind)) && self.on_wire.insert((from_a, psn))).then_some(psn)
    }

    /// Runs over `wan` until simulated time `until_us`, or until both sides are idle and
    /// nothing is on the path (false then). After each event `app` may post more work
    /// requests; it returns whether it did, and A's requester runs then.
    fn run_wan(&mut self, wan: &mut Wan, until_us: u64, mut app: impl FnMut(&mut Net) -> bool) -> bool {
        let mut out: VecDeque<(bool, Vec<u8>)> = VecDeque::new();
        for a_side in [true, false] {
            out.extend(self.send(a_side).into_iter().map(|p| (a_side, p)));
        }
        loop {
            if app(self) {
                out.extend(self.send(true).into_iter().map(|p| (true, p)));
            }
            for (from_a, p) in out.drain(..) {
                let first = if from_a { self.first_sending(true, &p) } else { None };
                wan.put(&mut self.link, self.now, from_a, p, first);
            }
            if let Some(d) = self.a.inflight.as_ref() {
                d.settle_path(&mut wan.path_held, self.a.req.path_allowance());
            }
            let arrival = wan.path.peek().map(|Reverse(e)| e.0);
            let Some(t) = arrival.into_iter().chain(self.next_deadline()).min() else {
                return false;
            };
            if t > until_us {
                self.now = until_us;
                return true;
            }
            self.now = self.now.max(t);
            if arrival == Some(t) {
                let Some(Reverse((_, _, from_a, bytes))) = wan.path.pop() else {
                    unreachable!("peeked");
                };
                self.delivered += 1;
                out.extend(self.deliver(from_a, &bytes).into_iter().map(|p| (!from_a, p)));
            } else {
                self.fire_timers(&mut out);
            }
        }
    }
}

/// The FaSR pool's bitmap blocks per device at the module's default (`sr_pool_blocks`):
/// the paper's and a chain across a whole SR window.
const MODULE_SR_POOL_BLOCKS: usize =
    sr_pool::DEFAULT_BLOCKS + (SR_DEFAULT_WINDOW_PSNS / sr_pool::DEFAULT_BLOCK_BITS) as usize;

impl Net {
    /// Gives both devices the pools at the module's default sizes (the net's other tests
    /// keep the papers').
    fn with_module_pools(mut self) -> Self {
        for s in [&mut self.a, &mut self.b] {
            s.shared = Box::new(SharedIn {
                sr_pool: SrPool::<{ sr_pool::DEFAULT_UNITS }, MODULE_SR_POOL_BLOCKS>::new(),
                bits_pool: <BitsPool>::new(),
            });
        }
        self
    }
}
