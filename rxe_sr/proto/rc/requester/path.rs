// SPDX-License-Identifier: GPL-2.0
//! What the path holds: the requester's estimate of its bandwidth-delay product in PSNs,
//! from the rate at which its PSNs are acknowledged and the least round trip seen (BBR's
//! model, without its pacing). The PSNs a requester lets be in flight past what it knows
//! received (FaSR's pipe) and the device's in-flight budget stretch to it, so that a long
//! fat path is filled while a short one keeps the small queue the fixed limits give.
//!
//! Each RTT sample (a packet sent once, Karn) measures how many PSNs UNACK moved over the
//! packet's round trip: `delivered` PSNs in `r` microseconds is a rate, and that rate over
//! the least round trip is the path's product. A requester held back by its own limit
//! delivers its whole limit each round trip, so the estimate (and the limit, a gain over
//! it) grows by about that gain per round trip until the link, not the limit, sets the
//! rate; past that point a longer queue lengthens `r` as much as it adds to `delivered`,
//! and the estimate stays at the path's product.
//!
//! As BBR's startup, the gain is twice the estimate ([`STARTUP_GAIN_QUARTERS`]) until the
//! estimate stops growing by a quarter for [`FULL_ROUNDS`] samples, then 5/4
//! ([`ALLOWANCE_GAIN_QUARTERS`]). A sample's round trip includes the time its message's
//! packets queue behind it before the acknowledgment that covers it, so a gain of 5/4
//! alone grew the estimate by less than a tenth per round trip on a long path.

use crate::proto::psn::Psn;

/// The allowance over the estimated product, in quarters: 5/4, enough headroom to grow
/// while a queue of a quarter of the product at most builds in front of the link.
pub(super) const ALLOWANCE_GAIN_QUARTERS: u32 = 5;

/// The allowance over the estimated product while the estimate still grows: twice.
const STARTUP_GAIN_QUARTERS: u32 = 8;

/// Samples in a row that did not grow the estimate by a quarter, after which the path is
/// taken as filled and the allowance keeps [`ALLOWANCE_GAIN_QUARTERS`].
const FULL_ROUNDS: u8 = 3;

/// The estimate falls by at most 1/`DECAY` of itself per sample, so a few round trips of
/// a requester with less to send (the tail of a message, a pause) do not forget the path.
const DECAY: u32 = 8;

/// The path estimate of one requester.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PathEstimate {
    /// The least round trip measured, microseconds (0: none yet).
    min_rtt_us: u64,
    /// The estimated bandwidth-delay product, PSNs (a maximum that decays per sample).
    bdp_psns: u32,
    /// Startup: the estimate a sample must pass by a quarter to count as growth, and the
    /// samples in a row that did not ([`FULL_ROUNDS`] of them end the startup).
    grown_from: u32,
    flat_rounds: u8,
}

impl PathEstimate {
    pub(super) const fn new() -> Self {
        PathEstimate {
            min_rtt_us: 0,
            bdp_psns: 0,
            grown_from: 0,
            flat_rounds: 0,
        }
    }

    /// A round trip of `r` microseconds was measured on packet `probe`, sent when UNACK
    /// was `una_then`; UNACK is `una_now` as its acknowledgment arrives.
    ///
    /// As BBR's application-limited samples: when fewer PSNs than the estimate were in
    /// flight ahead of the probe (the requester had little to send, as at the start of a
    /// message on an idle QP), the sample measures the application, not the path, and may
    /// only raise the estimate. Unless the device's in-flight budget held the requester
    /// back while the probe was out (`budget_held`): it had more to send, and the device's
    /// other QPs share the path, so the sample measures its share, and may lower it.
    ///
    /// Choice: with many QPs under one budget each has few PSNs ahead of its probe, and
    /// taken as application-limited an estimate grown while a QP sent alone never fell:
    /// the budget, which stretches to the largest allowance, stayed stretched.
    pub(super) fn sample(
        &mut self,
        r: u64,
        (una_then, probe, una_now): (Psn, Psn, Psn),
        budget_held: bool,
    ) {
        let r = r.max(1);
        if self.min_rtt_us == 0 || r < self.min_rtt_us {
            self.min_rtt_us = r;
        }
        let delivered = u64::try_from(una_now.diff(una_then).max(0)).unwrap_or(0);
        let bdp = u32::try_from(delivered.saturating_mul(self.min_rtt_us) / r).unwrap_or(u32::MAX);
        let ahead = u32::try_from(probe.diff(una_then)).unwrap_or(0);
        if ahead < self.bdp_psns && bdp <= self.bdp_psns && !budget_held {
            return;
        }
        let decayed = self.bdp_psns - self.bdp_psns / DECAY;
        self.bdp_psns = bdp.max(decayed);
        self.note_growth();
    }

    /// Startup: whether the last sample grew the estimate by a quarter.
    fn note_growth(&mut self) {
        if self.filled() {
            return;
        }
        if u64::from(self.bdp_psns) * 4 >= u64::from(self.grown_from) * 5 && self.bdp_psns != 0 {
            self.grown_from = self.bdp_psns;
            self.flat_rounds = 0;
        } else {
            self.flat_rounds += 1;
        }
    }

    /// Whether the estimate stopped growing: the startup is over.
    fn filled(&self) -> bool {
        self.flat_rounds >= FULL_ROUNDS
    }

    /// The PSNs the path holds, by the estimate (0 before a sample).
    #[cfg(test)]
    pub(super) fn bdp_psns(&self) -> u32 {
        self.bdp_psns
    }

    /// How long the path takes to deliver `psns` PSNs at the rate it was measured at (the
    /// estimate over the least round trip), microseconds; 0 before a sample.
    pub(super) fn drain_us(&self, psns: u32) -> u64 {
        u64::from(psns).saturating_mul(self.min_rtt_us) / u64::from(self.bdp_psns.max(1))
    }

    /// The PSNs this requester may let be in flight by the path: the estimate with
    /// [`ALLOWANCE_GAIN_QUARTERS`] headroom ([`STARTUP_GAIN_QUARTERS`] in the startup).
    pub(super) fn allowance(&self) -> u32 {
        let gain = if self.filled() {
            ALLOWANCE_GAIN_QUARTERS
        } else {
            STARTUP_GAIN_QUARTERS
        };
        let q = u64::from(self.bdp_psns) * u64::from(gain) / 4;
        u32::try_from(q).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample of a requester that its own limit held back: the probe went out last of
    /// the `n` PSNs in flight from `then`, and its acknowledgment moved UNACK past them.
    fn held(p: &mut PathEstimate, r: u64, then: Psn, n: u32) -> Psn {
        p.sample(r, (then, then.add(n.max(1) - 1), then.add(n)), false);
        then.add(n)
    }

    #[test]
    fn grows_by_the_gain_while_the_limit_holds_the_sender_back() {
        let mut p = PathEstimate::new();
        let mut limit = 256u32;
        let mut una = Psn::new(0);
        // A path of 40 ms carrying 12 PSNs per ms (BDP 480): each round trip delivers the
        // whole limit, and a limit past the product queues, lengthening the round trip.
        for _ in 0..20 {
            let r = 40_000 * u64::from(limit.max(480)) / 480;
            una = held(&mut p, r, una, limit);
            limit = limit.max(p.allowance());
        }
        assert!((470..=490).contains(&p.bdp_psns()), "bdp {}", p.bdp_psns());
        assert_eq!(p.allowance(), p.bdp_psns() * 5 / 4);
    }

    #[test]
    fn starts_at_twice_the_estimate_until_it_stops_growing() {
        let mut p = PathEstimate::new();
        let mut una = Psn::new(0);
        una = held(&mut p, 10_000, una, 100);
        assert_eq!(p.allowance(), 200);
        una = held(&mut p, 10_000, una, 200);
        assert_eq!(p.allowance(), 400);
        // Three samples in a row that do not grow it by a quarter end the startup (the
        // link, not the limit, sets the rate: the allowance is ahead of each probe, and
        // the queue it builds lengthens the round trip as much).
        for n in [240u32, 240, 249] {
            let ahead = p.allowance();
            p.sample(
                10_000 * u64::from(ahead) / u64::from(n),
                (una, una.add(ahead), una.add(ahead + 1)),
                false,
            );
            una = una.add(ahead + 1);
        }
        assert_eq!((p.bdp_psns(), p.allowance()), (249, 311));
        // Growth later does not start it again.
        held(&mut p, 10_000, una, 400);
        assert_eq!(p.allowance(), 500);
    }

    #[test]
    fn drains_at_the_rate_measured() {
        let mut p = PathEstimate::new();
        assert_eq!(p.drain_us(64), 0);
        // 64 PSNs acknowledged 5.6 ms after they went in one burst, on a path whose
        // empty round trip is 280 us: 3 PSNs per round trip.
        held(&mut p, 280, Psn::new(0), 1);
        held(&mut p, 5_600, Psn::new(1), 64);
        assert_eq!(p.bdp_psns(), 3);
        assert_eq!(p.drain_us(64), 64 * 280 / 3);
        // A rate under one PSN per round trip drains at one.
        let mut slow = PathEstimate::new();
        held(&mut slow, 50_000, Psn::new(0), 1);
        assert_eq!(slow.drain_us(10), 500_000);
    }

    #[test]
    fn a_sample_with_little_ahead_of_the_probe_only_raises() {
        let mut p = PathEstimate::new();
        let una = held(&mut p, 1_000, Psn::new(0), 800);
        // A message on an idle QP: its first packet is the probe, and the acknowledgment
        // that covers it covers 16 PSNs. That is the application's rate, not the path's.
        p.sample(1_000, (una, una, una.add(16)), false);
        assert_eq!(p.bdp_psns(), 800);
        // Nor does it count as a round without growth in the startup.
        assert_eq!(p.allowance(), 1600);
        // With as many ahead of it as the estimate, it lowers it (by an eighth at most).
        p.sample(1_000, (una, una.add(800), una.add(100)), false);
        assert_eq!(p.bdp_psns(), 700);
        // One with little ahead of it but more delivered raises it.
        p.sample(1_000, (una, una, una.add(900)), false);
        assert_eq!(p.bdp_psns(), 900);
    }

    #[test]
    fn a_sample_held_back_by_the_device_budget_may_lower_it() {
        let mut p = PathEstimate::new();
        let una = held(&mut p, 1_000, Psn::new(0), 800);
        // One of many QPs under the device's budget: 25 PSNs ahead of its probe, all it
        // was let have, delivered over a round trip the other QPs' packets lengthened.
        let mut una = una;
        for _ in 0..40 {
            p.sample(14_000, (una, una.add(25), una.add(26)), true);
            una = una.add(26);
        }
        assert!(p.bdp_psns() < 16, "bdp {}", p.bdp_psns());
        // The same samples, the requester not held back: its application's rate.
        let mut q = PathEstimate::new();
        let una = held(&mut q, 1_000, Psn::new(0), 800);
        q.sample(14_000, (una, una.add(25), una.add(26)), false);
        assert_eq!(q.bdp_psns(), 800);
    }

    #[test]
    fn a_queue_does_not_inflate_the_estimate() {
        let mut p = PathEstimate::new();
        let una = held(&mut p, 10_000, Psn::new(0), 100);
        // Twice the PSNs in flight over twice the round trip: the same rate.
        held(&mut p, 20_000, una, 200);
        assert_eq!(p.bdp_psns(), 100);
    }

    #[test]
    fn forgets_slowly_and_ignores_no_progress() {
        let mut p = PathEstimate::new();
        held(&mut p, 1_000, Psn::new(0), 800);
        p.sample(1_000, (Psn::new(800), Psn::new(1600), Psn::new(800)), false);
        assert_eq!(p.bdp_psns(), 700);
        // UNACK behind the probe's send (cannot be, but a wrapped difference must not be
        // taken for a huge delivery).
        p.sample(1_000, (Psn::new(900), Psn::new(1600), Psn::new(800)), false);
        assert_eq!(p.bdp_psns(), 613);
    }
}
