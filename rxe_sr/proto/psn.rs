// SPDX-License-Identifier: GPL-2.0
//! Packet sequence numbers: 24-bit values compared modulo 2^24 (IBTA 9.7.1).
//!
//! A PSN `a` is "before" `b` when `b - a` (mod 2^24) lies in the first half of the space,
//! the same window rule rdma_rxe's `psn_compare()` uses.

/// Number of distinct PSNs.
pub const PSN_SPACE: u32 = 1 << 24;
/// Mask of the 24 PSN bits.
pub const PSN_MASK: u32 = PSN_SPACE - 1;

/// A 24-bit packet sequence number.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Psn(u32);

impl Psn {
    /// Makes a PSN from the low 24 bits of `v`.
    pub const fn new(v: u32) -> Self {
        Psn(v & PSN_MASK)
    }

    /// The 24-bit value.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// `self + n` modulo 2^24.
    pub const fn add(self, n: u32) -> Self {
        Psn(self.0.wrapping_add(n) & PSN_MASK)
    }

    /// `self - n` modulo 2^24.
    pub const fn sub(self, n: u32) -> Self {
        Psn(self.0.wrapping_sub(n) & PSN_MASK)
    }

    /// The next PSN.
    pub const fn next(self) -> Self {
        self.add(1)
    }

    /// Forward distance from `from` to `self` modulo 2^24 (0 ..= 2^24 - 1).
    pub const fn distance_from(self, from: Psn) -> u32 {
        self.0.wrapping_sub(from.0) & PSN_MASK
    }

    /// Signed difference `self - other` in the window of ±2^23, as rdma_rxe compares PSNs.
    pub const fn diff(self, other: Psn) -> i32 {
        // Shift the 24-bit difference into the top of an i32 and back to sign-extend it.
        ((self.0.wrapping_sub(other.0) << 8) as i32) >> 8
    }

    /// True when `self` comes strictly before `other`.
    pub const fn before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }

    /// True when `self` comes strictly after `other`.
    pub const fn after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_24_bits() {
        let p = Psn::new(PSN_MASK);
        assert_eq!(p.next().get(), 0);
        assert_eq!(Psn::new(0).sub(1).get(), PSN_MASK);
        assert_eq!(Psn::new(0x1_000_005).get(), 5);
    }

    #[test]
    fn compares_across_the_wrap() {
        let a = Psn::new(PSN_MASK - 2);
        let b = Psn::new(3);
        assert!(a.before(b));
        assert!(b.after(a));
        assert_eq!(b.diff(a), 6);
        assert_eq!(a.diff(b), -6);
        assert_eq!(b.distance_from(a), 6);
        assert!(!a.before(a));
    }

    #[test]
    fn half_window_is_the_limit() {
        let a = Psn::new(0);
        assert!(a.before(Psn::new((1 << 23) - 1)));
        // Exactly half-way is "before" for the negative side: diff saturates to -2^23.
        assert_eq!(Psn::new(1 << 23).diff(a), -(1 << 23));
    }
}
