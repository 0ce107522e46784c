// SPDX-License-Identifier: GPL-2.0
//! The device's in-flight budget: a bound on the PSNs in flight across all of a device's RC
//! requesters (messages admitted to be sent, sent and not yet acknowledged).
//!
//! Each QP's own window bounds what one QP has out, but nothing bounded their sum: a
//! thousand QPs each with a window's worth out queue that many packets in front of the
//! peer. That overran the queue in front of the receiver (many packets lost with no loss
//! set), and with a queue long enough it stretched every round trip instead, so that each
//! loss stayed in recovery longer and more recoveries overlapped: FaSR's shared pool, which
//! the paper sizes for the losses in one network BDP of traffic (the NIC's congestion
//! control keeps what is in flight near that), ran out.
//! The budget keeps the device's in-flight PSNs near a BDP, as congestion control would in
//! front of a real NIC; it does not react to loss (random loss is not congestion).
//!
//! A requester asks for a message's PSNs a chunk at a time ([`ADMIT_CHUNK_PSNS`]; a READ or
//! atomic whole, as one request asks for all its responses), before the chunk's first
//! packet (and before the packet ahead of it, which goes without AckReq only if more
//! follows: [`crate::proto::rc::RcEnv::admit`]); resends take nothing. What it holds is its
//! PSNs not known received, from UNACK (or from past what a SACK reported) to the end of
//! the last chunk admitted ([`crate::proto::rc::requester::Requester::admitted_psns`]): the
//! caller settles that after each step ([`Inflight::settle`]), which gives back what was
//! acknowledged.
//! A chunk is admitted while fewer than the budget are in flight, so the sum passes the
//! budget by less than a chunk per QP admitted at the same instant, and one long message
//! (a 2 GiB WRITE is 2M PSNs at a 1 KiB MTU) shares the budget with the device's other QPs
//! instead of holding it all until it is acknowledged.
//!
//! The budget stretches to the paths: each requester's path allowance (its estimate of
//! what its path holds, with headroom: `requester/path.rs`) is kept by the device, settled
//! after each step as its in-flight PSNs are ([`Inflight::settle_path`]), and the device
//! admits up to the larger of the budget and the largest allowance. The largest, not the
//! sum: the device's QPs share its link, and each QP, sending alone for a while, measures
//! the whole link's rate, so a sum counts the same link once per QP. A path longer than
//! the budget so fills, while on short paths the largest stays below the budget and
//! changes nothing.

use core::ops::DerefMut;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::uabi::queue::Fifo;

/// The most PSNs of a SEND or WRITE the budget admits at once: a message longer than this
/// asks again as it goes on.
pub const ADMIT_CHUNK_PSNS: u32 = 64;

/// The path allowances are counted per bucket (a bucket covers the allowances above the
/// one before it, up to its own top), so that the largest is found without a list of the
/// requesters. Up to [`LINEAR_PATH_PSNS`] the buckets are this many PSNs apart.
const PATH_BUCKET_PSNS: u32 = 64;

/// Where the buckets stop being [`PATH_BUCKET_PSNS`] apart: past it each top is about 19%
/// above the one before (four steps per doubling), so that a long fat path is not counted
/// in thousands of buckets, nor rounded up by more than a fifth.
const LINEAR_PATH_PSNS: u32 = 4096;

/// The linear buckets, bucket 0 (requesters with no allowance) included.
const LINEAR_BUCKETS: usize = (LINEAR_PATH_PSNS / PATH_BUCKET_PSNS) as usize + 1;

/// The most the path allowances stretch the budget to: the largest SR window.
const MAX_PATH_PSNS: u32 = 1 << super::SR_MAX_WINDOW_LOG2;

/// Buckets of path allowances: the linear ones, then four per doubling up to
/// [`MAX_PATH_PSNS`]; the last holds every allowance of that or more.
const PATH_BUCKETS: usize =
    LINEAR_BUCKETS + 4 * (super::SR_MAX_WINDOW_LOG2 as usize - LINEAR_PATH_PSNS.ilog2() as usize);

const _: () =
    assert!(LINEAR_PATH_PSNS.is_power_of_two() && path_top(PATH_BUCKETS - 1) == MAX_PATH_PSNS);

/// The in-flight PSNs of one device and its budget.
#[derive(Debug)]
pub struct Inflight {
    /// Most PSNs in flight before admission stops (0: no bound; the sum is still kept).
    budget: u32,
    /// PSNs admitted and not yet given back, across the device's requesters.
    psns: AtomicU32,
    /// PSNs the requesters woken for room are expected to ask for, until they run
    /// ([`Self::woken`], [`Self::woken_ran`]): room promised, not yet taken.
    promised: AtomicU32,
    /// Requesters per bucket of path allowance ([`Self::settle_path`]).
    paths: [AtomicU32; PATH_BUCKETS],
    /// The largest path allowance, as its bucket's top, when last settled.
    path_max: AtomicU32,
    /// The most `path_max` has been: with the budget, the largest the budget stood at.
    path_peak: AtomicU32,
}

impl Inflight {
    /// An empty device with a budget of `budget` PSNs (0: unbounded).
    pub const fn new(budget: u32) -> Self {
        Inflight {
            budget,
            psns: AtomicU32::new(0),
            promised: AtomicU32::new(0),
            paths: [const { AtomicU32::new(0) }; PATH_BUCKETS],
            path_max: AtomicU32::new(0),
            path_peak: AtomicU32::new(0),
        }
    }

    /// The budget as it stands (0: unbounded): the configured one, or the largest of the
    /// requesters' path allowances (rounded up to its bucket) when that is larger.
    pub fn budget(&self) -> u32 {
        if self.budget == 0 {
            return 0;
        }
        self.budget.max(self.path_max.load(Ordering::Relaxed))
    }

    /// A requester whose path allowance was `held` (as last settled) now has `now` (0 when
    /// it stops or is gone): it moves to `now`'s bucket, and the largest is found again.
    /// Two requesters settling at once may leave the largest stale until the next settle.
    pub fn settle_path(&self, held: &mut u32, now: u32) {
        let old = core::mem::replace(held, now);
        let (from, to) = (path_bucket(old), path_bucket(now));
        if from == to {
            return;
        }
        if from != 0 {
            let _ = self.paths[from].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(1))
            });
        }
        if to != 0 {
            self.paths[to].fetch_add(1, Ordering::Relaxed);
        }
        let top = (1..PATH_BUCKETS)
            .rev()
            .find(|&b| self.paths[b].load(Ordering::Relaxed) != 0)
            .unwrap_or(0);
        let top = path_top(top);
        self.path_max.store(top, Ordering::Relaxed);
        self.path_peak.fetch_max(top, Ordering::Relaxed);
    }

    /// The largest the budget has stood at ([`Self::budget`]; 0: unbounded): what bounds
    /// the PSNs in flight at any one time, less a message.
    pub fn budget_peak(&self) -> u32 {
        if self.budget == 0 {
            return 0;
        }
        self.budget.max(self.path_peak.load(Ordering::Relaxed))
    }

    /// PSNs in flight now.
    pub fn psns(&self) -> u32 {
        self.psns.load(Ordering::Relaxed)
    }

    /// Admits a message of `psns` PSNs if fewer than the budget are in flight (it is taken
    /// whole); false leaves nothing changed.
    pub fn admit(&self, psns: u32) -> bool {
        let budget = self.budget();
        self.psns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                (budget == 0 || v < budget).then(|| v.saturating_add(psns))
            })
            .is_ok()
    }

    /// Admits `psns` whatever the budget (a requester that could not be queued to wait).
    pub fn add(&self, psns: u32) {
        self.psns.fetch_add(psns, Ordering::Relaxed);
    }

    /// A requester's step ended: it held `held` PSNs before the step (as last settled),
    /// was admitted `taken` during it, and holds `now` after it. The difference goes back
    /// to the device (or, were `now` larger, is added: it cannot be, as the requester only
    /// grows what it holds through [`Self::admit`]); `held` becomes `now`. Returns the
    /// PSNs given back.
    pub fn settle(&self, held: &mut u32, taken: u32, now: u32) -> u32 {
        let before = held.saturating_add(taken);
        *held = now;
        if now > before {
            self.psns.fetch_add(now - before, Ordering::Relaxed);
            return 0;
        }
        let back = before - now;
        if back != 0 {
            // Never below zero (a bookkeeping error would otherwise wrap into "full").
            let _ = self
                .psns
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                    Some(v.saturating_sub(back))
                });
        }
        back
    }

    /// Room for requesters waiting to be woken: the budget less what is in flight and what
    /// woken requesters were promised (0 without a budget: nobody waits then).
    pub fn room(&self) -> u32 {
        let budget = self.budget();
        if budget == 0 {
            return 0;
        }
        budget
            .saturating_sub(self.psns())
            .saturating_sub(self.promised.load(Ordering::Relaxed))
    }

    /// A requester waiting for `psns` was woken: that much room is promised to it.
    pub fn woken(&self, psns: u32) {
        self.promised.fetch_add(psns, Ordering::Relaxed);
    }

    /// A requester woken with `psns` promised ran (or is gone): the promise ends.
    pub fn woken_ran(&self, psns: u32) {
        if psns != 0 {
            let _ = self
                .promised
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                    Some(v.saturating_sub(psns))
                });
        }
    }
}

/// A requester waiting for room: its QP and the PSNs of the message it waits to start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waiter {
    /// The QP number.
    pub qpn: u32,
    /// The PSNs it asked for.
    pub psns: u32,
}

/// Takes from `waiters`, oldest first, at most `max` that the budget's room lets start
/// ([`Inflight::room`]; with nothing in flight, the whole budget: no acknowledgment is
/// coming then to wake the rest), promises each the PSNs it asked for ([`Inflight::woken`])
/// and hands it to `wake`, which runs its QP (or, were the QP gone, ends the promise with
/// [`Inflight::woken_ran`]). One acknowledgment's room so wakes about as many as can start,
/// not every waiter. Returns how many were taken.
pub fn wake_for_room<S: DerefMut<Target = [Waiter]>>(
    d: &Inflight,
    waiters: &mut Fifo<Waiter, S>,
    max: usize,
    mut wake: impl FnMut(Waiter),
) -> usize {
    let mut room = if d.psns() == 0 {
        d.budget().max(1)
    } else {
        d.room()
    };
    let mut woken = 0;
    while room > 0 && woken < max {
        let Some(w) = waiters.pop() else {
            break;
        };
        d.woken(w.psns);
        room = room.saturating_sub(w.psns.max(1));
        wake(w);
        woken += 1;
    }
    woken
}

/// The bucket of a path allowance of `psns`: 0 for none, else the one whose top is the
/// first at or above it, the last for anything past [`MAX_PATH_PSNS`].
fn path_bucket(psns: u32) -> usize {
    let psns = psns.min(MAX_PATH_PSNS);
    if psns <= LINEAR_PATH_PSNS {
        return psns.div_ceil(PATH_BUCKET_PSNS) as usize;
    }
    (LINEAR_BUCKETS..PATH_BUCKETS)
        .find(|&b| path_top(b) >= psns)
        .unwrap_or(PATH_BUCKETS - 1)
}

/// The largest path allowance bucket `b` holds.
const fn path_top(b: usize) -> u32 {
    if b < LINEAR_BUCKETS {
        return b as u32 * PATH_BUCKET_PSNS;
    }
    // Tops 2^(k/4) apart past the linear part, with 2^(1/4), 2^(2/4) and 2^(3/4) taken
    // as 19/16, 23/16 and 27/16: exact at each doubling.
    let k = (b - LINEAR_BUCKETS + 1) as u32;
    let step = [16, 19, 23, 27][(k % 4) as usize];
    (LINEAR_PATH_PSNS << (k / 4)) / 16 * step
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_whole_messages_while_below_the_budget() {
        let d = Inflight::new(10);
        assert!(d.admit(4));
        assert!(d.admit(4));
        // 8 < 10: the third message goes whole, past the budget.
        assert!(d.admit(4));
        assert_eq!(d.psns(), 12);
        assert!(!d.admit(1));
        assert_eq!(d.psns(), 12);
    }

    #[test]
    fn settling_gives_back_what_was_acknowledged() {
        let d = Inflight::new(8);
        let mut held = 0;
        assert!(d.admit(4) && d.admit(4));
        // The step took 8; its requester holds 8 after it (nothing acknowledged yet).
        assert_eq!(d.settle(&mut held, 8, 8), 0);
        assert_eq!((held, d.psns()), (8, 8));
        assert!(!d.admit(4));
        // Half acknowledged.
        assert_eq!(d.settle(&mut held, 0, 4), 4);
        assert_eq!((held, d.psns()), (4, 4));
        assert!(d.admit(4));
        // The QP leaves RTS: all of it goes back.
        assert_eq!(d.settle(&mut held, 4, 0), 8);
        assert_eq!((held, d.psns()), (0, 0));
    }

    #[test]
    fn the_budget_stretches_to_the_largest_path_and_back() {
        let d = Inflight::new(100);
        let (mut a, mut b, mut c) = (0, 0, 0);
        assert!(d.admit(100));
        assert!(!d.admit(1));
        // Three requesters whose paths hold 150, 180 and 20: the budget is the largest,
        // rounded up to its bucket, not the sum (they share the device's link).
        d.settle_path(&mut a, 150);
        d.settle_path(&mut b, 180);
        d.settle_path(&mut c, 20);
        assert_eq!((d.budget(), d.room()), (192, 92));
        assert!(d.admit(1));
        // The largest shrinks: the next one sets the budget.
        d.settle_path(&mut b, 10);
        assert_eq!(d.budget(), 192);
        d.settle_path(&mut a, 0);
        assert_eq!((a, d.budget()), (0, 100));
        // Two at the same bucket: one leaving keeps the other's.
        d.settle_path(&mut a, 300);
        d.settle_path(&mut c, 280);
        d.settle_path(&mut a, 0);
        assert_eq!(d.budget(), 320);
        // A path past the last bucket stretches to the most, no further.
        d.settle_path(&mut b, u32::MAX);
        assert_eq!(d.budget(), MAX_PATH_PSNS);
        d.settle_path(&mut b, 0);
        d.settle_path(&mut c, 0);
        assert_eq!((b, c, d.budget()), (0, 0, 100));
        assert!(!d.admit(1));
        // The peak keeps the most the budget stood at.
        assert_eq!(d.budget_peak(), MAX_PATH_PSNS);
        // Without a budget the paths change nothing.
        let u = Inflight::new(0);
        let mut e = 0;
        u.settle_path(&mut e, 100);
        assert_eq!((u.budget(), u.room(), u.budget_peak()), (0, 0, 0));
    }

    #[test]
    fn a_long_fat_path_stretches_the_budget_to_within_a_fifth_of_it() {
        // Past the linear buckets the tops climb four steps per doubling, up to the largest
        // SR window, each at or above the path and less than a fifth over it.
        let d = Inflight::new(100);
        let mut a = 0;
        for want in [4097, 5000, 10_000, 16_384, 100_000, 3_000_000, 1 << 22] {
            d.settle_path(&mut a, want);
            let got = d.budget();
            assert!(
                got >= want && u64::from(got) * 5 < u64::from(want) * 6,
                "{want}: {got}"
            );
        }
        assert!((1..PATH_BUCKETS).all(|b| path_top(b) > path_top(b - 1)));
        assert_eq!(path_bucket(path_top(70)), 70);
        assert_eq!(path_bucket(path_top(70) + 1), 71);
    }

    #[test]
    fn room_counts_promises_to_woken_requesters() {
        let d = Inflight::new(8);
        assert!(d.admit(6));
        assert_eq!(d.room(), 2);
        d.woken(2);
        assert_eq!(d.room(), 0);
        d.woken_ran(2);
        assert_eq!(d.room(), 2);
        // A promise larger than the room leaves none, not a wrapped count.
        d.woken(5);
        assert_eq!(d.room(), 0);
        d.woken_ran(9);
        assert_eq!(d.room(), 2);
    }

    #[test]
    fn an_acknowledgment_wakes_as_many_waiters_as_its_room_lets_start() {
        let d = Inflight::new(8);
        let mut held = 0;
        assert!(d.admit(8));
        d.settle(&mut held, 8, 8);
        let mut slots = [Waiter::default(); 8];
        let mut q = Fifo::new(&mut slots[..]);
        for qpn in 1..=8 {
            q.push(Waiter { qpn, psns: 2 }).unwrap();
        }
        let mut woken = [0u32; 8];
        let mut n = 0;
        let mut note = |w: Waiter| {
            woken[n] = w.qpn;
            n += 1;
        };
        // Full: nobody wakes.
        assert_eq!(wake_for_room(&d, &mut q, 8, &mut note), 0);
        // Four PSNs acknowledged: room for two messages of two.
        d.settle(&mut held, 0, 4);
        assert_eq!(wake_for_room(&d, &mut q, 8, &mut note), 2);
        // Until those two run, their room stays promised.
        assert_eq!(wake_for_room(&d, &mut q, 8, &mut note), 0);
        d.woken_ran(2);
        d.woken_ran(2);
        // At most `max` at a time.
        assert_eq!(wake_for_room(&d, &mut q, 1, &mut note), 1);
        d.woken_ran(2);
        // Nothing in flight: the whole budget's worth wakes, whatever was promised.
        d.woken(6);
        d.settle(&mut held, 0, 0);
        assert_eq!(wake_for_room(&d, &mut q, 8, &mut note), 4);
        assert_eq!(woken, [1, 2, 3, 4, 5, 6, 7, 0]);
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn no_budget_admits_everything_and_still_counts() {
        let d = Inflight::new(0);
        assert!(d.admit(1000) && d.admit(1000));
        assert_eq!(d.psns(), 2000);
        assert_eq!(d.room(), 0);
        let mut held = 2000;
        assert_eq!(d.settle(&mut held, 0, 0), 2000);
        assert_eq!(d.psns(), 0);
    }
}
