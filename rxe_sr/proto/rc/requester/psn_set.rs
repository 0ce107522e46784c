// SPDX-License-Identifier: GPL-2.0
//! A set of PSNs over a requester's unacknowledged window (from UNACK), as a bitmap. In the
//! SR format the requester keeps five: the PSNs to resend (so no `Retransmit` an engine asks
//! for is dropped however many ranges one event produces), the READ response PSNs placed
//! out of order, the PSNs resent, and two generations of READ repairs watched. Most of the
//! time little or nothing is marked, so the work of each step is bounded by the words up
//! to the highest mark, not by the window.

use crate::proto::psn::Psn;
use crate::proto::words::WindowWords;

/// PSNs as a bitmap over `[base, base + span)`, `span` the bits of its words (the largest
/// SR window the requester keeps); a PSN past it (only an RDMA READ's response range
/// reaches that far) is kept as `far`, the earliest one.
#[derive(Clone, Copy, Debug)]
pub(super) struct PsnSet<B> {
    base: Psn,
    bits: B,
    /// One past the last word that may hold a mark: every word from here on is 0.
    top: usize,
    far: Option<Psn>,
}

impl<B: WindowWords> PsnSet<B> {
    /// An empty set from `base` over the words `bits` (zeroed).
    pub(super) const fn new(bits: B, base: Psn) -> Self {
        PsnSet {
            base,
            bits,
            top: 0,
            far: None,
        }
    }

    /// PSNs the bitmap spans from its base.
    fn span(&self) -> u32 {
        u32::try_from(self.bits.len().saturating_mul(64)).unwrap_or(u32::MAX)
    }

    /// Empties the set and moves its base to `base`, in place.
    pub(super) fn restart(&mut self, base: Psn) {
        self.base = base;
        self.used_mut().fill(0);
        self.top = 0;
        self.far = None;
    }

    /// The words that may hold a mark.
    fn used(&self) -> &[u64] {
        self.bits.get(..self.top).unwrap_or(&[])
    }

    fn used_mut(&mut self) -> &mut [u64] {
        let top = self.top;
        self.bits.get_mut(..top).unwrap_or(&mut [])
    }

    fn set(&mut self, off: u32) {
        let i = (off / 64) as usize;
        if let Some(w) = self.bits.get_mut(i) {
            *w |= 1u64 << (off % 64);
            self.top = self.top.max(i + 1);
        }
    }

    fn clear(&mut self, off: u32) {
        if let Some(w) = self.bits.get_mut((off / 64) as usize) {
            *w &= !(1u64 << (off % 64));
        }
    }

    /// Clears every bit at offset `from` and above.
    fn clear_above(&mut self, from: u32) {
        for (i, w) in self.used_mut().iter_mut().enumerate() {
            let lo = i as u32 * 64;
            if from <= lo {
                *w = 0;
            } else if from < lo + 64 {
                *w &= (1u64 << (from - lo)) - 1;
            }
        }
    }

    /// Marks `count` PSNs from `first` (those before the base are acknowledged: skipped).
    pub(super) fn mark(&mut self, first: Psn, count: u32) {
        let skip = if first.before(self.base) {
            self.base.distance_from(first)
        } else {
            0
        };
        if skip >= count {
            return;
        }
        let start = first.add(skip);
        let off = start.distance_from(self.base);
        let n = count - skip;
        let in_span = self.span().saturating_sub(off).min(n);
        for i in off..off + in_span {
            self.set(i);
        }
        if in_span < n {
            let p = start.add(in_span);
            let earliest = match self.far {
                Some(f) => p.before(f),
                None => true,
            };
            if earliest {
                self.far = Some(p);
            }
        }
    }

    /// UNACK moved to `una`: the bitmap shifts down by the distance.
    pub(super) fn advance(&mut self, una: Psn) {
        let d = una.diff(self.base);
        if d <= 0 {
            return;
        }
        let d = d.unsigned_abs();
        if d >= self.span() {
            self.used_mut().fill(0);
            self.top = 0;
        } else {
            let (words, bits) = ((d / 64) as usize, d % 64);
            let top = self.top;
            for i in 0..top {
                let lo = self.bits.get(i + words).copied().unwrap_or(0);
                let hi = self.bits.get(i + words + 1).copied().unwrap_or(0);
                self.bits[i] = if bits == 0 {
                    lo
                } else {
                    (lo >> bits) | (hi << (64 - bits))
                };
            }
            self.top = top.saturating_sub(words);
        }
        self.base = una;
        if self.far.is_some_and(|f| f.before(una)) {
            self.far = None;
        }
    }

    /// Forgets the marks at and after `from` (a go-back resends all of them anyway).
    pub(super) fn clear_from(&mut self, from: Psn) {
        let d = from.diff(self.base);
        self.clear_above(d.max(0).unsigned_abs());
        if self.far.is_some_and(|f| !f.before(from)) {
            self.far = None;
        }
    }

    /// Forgets the marks in `[first, end)`.
    pub(super) fn clear_range(&mut self, first: Psn, end: Psn) {
        let mut p = if first.before(self.base) {
            self.base
        } else {
            first
        };
        while p.before(end) {
            let off = p.distance_from(self.base);
            if off >= self.span() {
                break;
            }
            self.clear(off);
            p = p.next();
        }
        if self.far.is_some_and(|f| !f.before(first) && f.before(end)) {
            self.far = None;
        }
    }

    /// Marks each PSN of `[first, end)` that `other` holds.
    pub(super) fn mark_held(&mut self, other: &PsnSet<B>, first: Psn, end: Psn) {
        let mut p = first;
        while p.before(end) && other.spans(p) {
            if other.contains(p) {
                self.mark(p, 1);
            }
            p = p.next();
        }
    }

    /// Takes the oldest marked PSN.
    pub(super) fn take_first(&mut self) -> Option<Psn> {
        let base = self.base;
        for (i, w) in self.used_mut().iter_mut().enumerate() {
            if *w != 0 {
                let b = w.trailing_zeros();
                *w &= !(1u64 << b);
                return Some(base.add(i as u32 * 64 + b));
            }
        }
        self.top = 0;
        self.far.take()
    }

    /// True if `psn` is in the set (never for a PSN before the base or as far as `far`).
    pub(super) fn contains(&self, psn: Psn) -> bool {
        if psn.before(self.base) {
            return false;
        }
        let off = psn.distance_from(self.base);
        off < self.span()
            && self
                .bits
                .get((off / 64) as usize)
                .is_some_and(|w| w & (1u64 << (off % 64)) != 0)
    }

    /// The first PSN the bitmap spans.
    pub(super) const fn base(&self) -> Psn {
        self.base
    }

    /// True if `psn` falls inside the bitmap's span.
    pub(super) fn spans(&self, psn: Psn) -> bool {
        !psn.before(self.base) && psn.distance_from(self.base) < self.span()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.used().iter().all(|&w| w == 0) && self.far.is_none()
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::proto::words::InlineWords;
    use std::collections::BTreeSet;

    /// The span of the sets under test.
    const SPAN: u32 = 4096;
    type Set = PsnSet<InlineWords<{ (SPAN / 64) as usize }>>;

    /// Takes every marked PSN and checks them against `want`, in order.
    fn expect(r: &mut Set, want: impl IntoIterator<Item = u32>) {
        for (i, w) in want.into_iter().enumerate() {
            assert_eq!(r.take_first().map(Psn::get), Some(w), "mark {i}");
        }
        assert_eq!(r.take_first(), None);
        assert!(r.is_empty());
    }

    #[test]
    fn the_psn_set_keeps_every_marked_psn_in_order() {
        let mut r = Set::new(InlineWords::ZERO, Psn::new(0xfffff0));
        r.mark(Psn::new(0xffffe0), 0x12); // Only 0xfffff0, 0xfffff1 are unacknowledged.
        r.mark(Psn::new(5), 2);
        r.mark(Psn::new(0xfffff0 + SPAN + 72), 3); // Past the span: the earliest is kept.
        r.mark(Psn::new(0xfffff0 + 150), 1);
        r.mark(Psn::new(0xfffff0 + SPAN - 1), 1); // The last bit of the span.
        let m = |x: u32| x & 0xffffff;
        expect(
            &mut r,
            [
                0xfffff0,
                0xfffff1,
                5,
                6,
                m(0xfffff0 + 150),
                m(0xfffff0 + SPAN - 1),
                m(0xfffff0 + SPAN + 72),
            ],
        );
    }

    #[test]
    fn advancing_and_clearing_forget_marks() {
        let mut r = Set::new(InlineWords::ZERO, Psn::new(10));
        r.mark(Psn::new(10), 20);
        r.advance(Psn::new(15));
        r.clear_range(Psn::new(16), Psn::new(18));
        r.clear_from(Psn::new(25));
        expect(&mut r, [15, 18, 19, 20, 21, 22, 23, 24]);
    }

    #[test]
    fn advancing_shifts_across_words() {
        // Marks spread over every word, then UNACK moves by amounts that are and are not
        // multiples of the word size: every mark at or past UNACK survives, in order.
        for step in [1u32, 63, 64, 65, 130, SPAN - 1] {
            let mut r = Set::new(InlineWords::ZERO, Psn::new(1000));
            for o in (0..SPAN).step_by(7) {
                r.mark(Psn::new(1000 + o), 1);
            }
            r.advance(Psn::new(1000 + step));
            expect(
                &mut r,
                (0..SPAN)
                    .step_by(7)
                    .filter(|&o| o >= step)
                    .map(|o| 1000 + o),
            );
        }
        let mut r = Set::new(InlineWords::ZERO, Psn::new(0));
        r.mark(Psn::new(3), 1);
        r.advance(Psn::new(SPAN + 5));
        expect(&mut r, []);
    }

    #[test]
    fn membership_follows_marks_the_base_and_the_span() {
        let mut r = Set::new(InlineWords::ZERO, Psn::new(0xfffffe));
        r.mark(Psn::new(0xfffffe), 1);
        r.mark(Psn::new(3), 1);
        r.mark(Psn::new(0xfffffe + SPAN + 2), 1); // kept as `far`, not a member
        let has = |r: &Set, x: u32| r.contains(Psn::new(x & 0xffffff));
        assert!(has(&r, 0xfffffe) && has(&r, 3));
        assert!(!has(&r, 0xffffff) && !has(&r, 2) && !has(&r, 4));
        assert!(!has(&r, 0xfffffe + SPAN + 2));
        assert!(r.spans(Psn::new((0xfffffe + SPAN - 1) & 0xffffff)));
        assert!(!r.spans(Psn::new((0xfffffe + SPAN) & 0xffffff)));
        assert!(!r.spans(Psn::new(0xfffffd)));
        r.advance(Psn::new(0));
        assert!(
            !has(&r, 0xfffffe) && has(&r, 3),
            "the base moved past 0xfffffe"
        );
        assert!(!r.spans(Psn::new(0xffffff)));
    }

    #[test]
    fn the_set_follows_a_model_under_random_steps() {
        // Marks, advances, cuts and takes at random on a set whose base wraps the PSN
        // space, against the set of PSNs (unwrapped) it should hold.
        let mut r = Set::new(InlineWords::ZERO, Psn::new(0xffff00));
        let mut base: u64 = 0xffff00;
        let mut model = BTreeSet::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let psn = |v: u64| Psn::new((v & 0xff_ffff) as u32);
        for step in 0..20_000 {
            let span = u64::from(SPAN);
            match next(6) {
                0 | 1 => {
                    let first = (base + next(span)).saturating_sub(8);
                    let count = 1 + next(64).min(base + span - first - 1);
                    r.mark(psn(first), count as u32);
                    model.extend((first..first + count).filter(|&v| v >= base));
                }
                2 => {
                    base += next(200);
                    r.advance(psn(base));
                    model.retain(|&v| v >= base);
                }
                3 => {
                    let from = base + next(span);
                    r.clear_from(psn(from));
                    model.retain(|&v| v < from);
                }
                4 => {
                    let (a, b) = (base + next(span), base + next(span));
                    let (a, b) = (a.min(b), a.max(b));
                    r.clear_range(psn(a), psn(b));
                    model.retain(|&v| v < a || v >= b);
                }
                _ => {
                    let want = model.iter().next().copied();
                    if let Some(v) = want {
                        model.remove(&v);
                    }
                    assert_eq!(r.take_first(), want.map(psn), "step {step}");
                }
            }
            let probe = base + next(span);
            assert_eq!(
                r.contains(psn(probe)),
                model.contains(&probe),
                "step {step}"
            );
            assert_eq!(r.is_empty(), model.is_empty(), "step {step}");
        }
    }

    #[test]
    fn clear_from_cuts_inside_a_word() {
        let mut r = Set::new(InlineWords::ZERO, Psn::new(0));
        r.mark(Psn::new(60), 10); // 60..70 straddles words 0 and 1.
        r.clear_from(Psn::new(66));
        expect(&mut r, [60, 61, 62, 63, 64, 65]);
    }
}
