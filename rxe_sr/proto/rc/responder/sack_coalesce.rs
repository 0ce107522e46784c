// SPDX-License-Identifier: GPL-2.0
//! FaSR's SACKs, coalesced. The engine SACKs every out-of-order arrival; during a recovery
//! that is one acknowledgment per data packet, which doubles the packets both ends handle.
//! A SACK that only moves sack-high by one, with RCV-NXT, lost-cnt and the overflow flag
//! unchanged, tells the requester nothing it cannot infer from the next one: FaSR's
//! requester treats a SACK that is not contiguous with its sack-high, without lost-cnt
//! growing, as following lost SACKs, and takes what lies between as received. Such a SACK
//! is held back, unless the packet asked for an acknowledgment (AckReq: the end of a
//! message, or every [`MAX_PKT_PER_ACK`](crate::proto::rc::MAX_PKT_PER_ACK) packets) or
//! [`SACK_EVERY`] of them have been held in a row. A SACK that reports a new gap, a moved
//! RCV-NXT or an overflowed lost-cnt always goes out at once.
//!
//! A SACK reporting a new gap after some were held goes out behind the last one held
//! ([`SackCoalescer::flush`]): the requester retransmits every PSN between its sack-high
//! and a SACK whose lost-cnt grew, so it must know the sack-high the gap starts from, or
//! it resends the held run with the gap. A SACK of a packet received before (a duplicate
//! resend) is never held and leaves the run as it was.
//!
//! Only FaSR's requester reads SACKs this way; IRN's marks exactly the SACKed PSNs, so its
//! SACKs are never held.

use crate::proto::psn::Psn;
use crate::proto::recovery::Feedback;

/// At most this many SACKs in a row are held back (one in `SACK_EVERY` goes out).
pub(super) const SACK_EVERY: u32 = 16;

/// The last SACK sent, and how many were held since.
#[derive(Clone, Copy, Debug)]
pub(super) struct SackCoalescer {
    enabled: bool,
    /// RCV-NXT, sack-high (the last SACKed PSN, sent or held), lost-cnt of the last SACK.
    last: Option<(Psn, Psn, u8)>,
    held: u32,
}

impl SackCoalescer {
    /// A coalescer; `enabled` for FaSR.
    pub(super) const fn new(enabled: bool) -> Self {
        SackCoalescer {
            enabled,
            last: None,
            held: 0,
        }
    }

    /// The SACK to send before `fb`, if `fb` reports a new gap after SACKs were held: the
    /// last held one, with the current RCV-NXT and the lost-cnt before the gap, so the
    /// requester's sack-high is the responder's when the gap's SACK arrives. None when the
    /// lost-cnt before the gap is not known (the gap overflowed it after RCV-NXT moved).
    pub(super) fn flush(&mut self, fb: &Feedback) -> Option<Feedback> {
        let Feedback::Sack {
            rcv_nxt,
            sack_psn,
            lost_cnt,
            overflow,
        } = *fb
        else {
            return None;
        };
        let (r, high, lc) = self.last?;
        // Something held, still in this recovery, and `fb` jumps past it.
        if !self.enabled || self.held == 0 || !high.after(rcv_nxt) || !sack_psn.after(high.next()) {
            return None;
        }
        // The gap raised lost-cnt by its size; held SACKs had the last SACK's lost-cnt.
        let gap = sack_psn.distance_from(high.next());
        let before = if !overflow {
            lost_cnt.checked_sub(u8::try_from(gap).ok()?)?
        } else if r == rcv_nxt {
            lc
        } else {
            return None;
        };
        self.held = 0;
        Some(Feedback::Sack {
            rcv_nxt,
            sack_psn: high,
            lost_cnt: before,
            overflow: false,
        })
    }

    /// True if `fb` (feedback to the packet that triggered it, which asked for an
    /// acknowledgment if `ack_req`) is a SACK that is held back instead of sent.
    pub(super) fn hold(&mut self, fb: &Feedback, ack_req: bool) -> bool {
        let Feedback::Sack {
            rcv_nxt,
            sack_psn,
            lost_cnt,
            overflow,
        } = *fb
        else {
            return false;
        };
        if self.last.is_some_and(|(_, high, _)| !sack_psn.after(high)) {
            // A packet received before, SACKed again: sent, and the run goes on.
            return false;
        }
        let contiguous = self
            .last
            .is_some_and(|(r, high, lc)| r == rcv_nxt && sack_psn == high.next() && lc == lost_cnt);
        if self.enabled && contiguous && !overflow && !ack_req && self.held + 1 < SACK_EVERY {
            self.held += 1;
            self.last = Some((rcv_nxt, sack_psn, lost_cnt));
            return true;
        }
        self.held = 0;
        self.last = Some((rcv_nxt, sack_psn, lost_cnt));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sack(rcv_nxt: u32, sack_psn: u32, lost_cnt: u8, overflow: bool) -> Feedback {
        Feedback::Sack {
            rcv_nxt: Psn::new(rcv_nxt),
            sack_psn: Psn::new(sack_psn),
            lost_cnt,
            overflow,
        }
    }

    #[test]
    fn contiguous_sacks_are_held_and_one_in_sack_every_goes_out() {
        let mut c = SackCoalescer::new(true);
        assert!(!c.hold(&sack(10, 12, 1, false), false)); // The gap: at once.
        let mut sent = 0;
        for p in 13..13 + 2 * SACK_EVERY {
            if !c.hold(&sack(10, p, 1, false), false) {
                sent += 1;
            }
        }
        assert_eq!(sent, 2);
    }

    #[test]
    fn news_always_goes_out() {
        let mut c = SackCoalescer::new(true);
        assert!(!c.hold(&sack(10, 12, 1, false), false));
        assert!(c.hold(&sack(10, 13, 1, false), false));
        // AckReq.
        assert!(!c.hold(&sack(10, 14, 1, false), true));
        // A new gap (lost-cnt grew, sack-high jumps).
        assert!(!c.hold(&sack(10, 17, 3, false), false));
        assert!(c.hold(&sack(10, 18, 3, false), false));
        // RCV-NXT moved.
        assert!(!c.hold(&sack(11, 19, 2, false), false));
        // Overflow.
        assert!(!c.hold(&sack(11, 20, 2, true), false));
        assert!(!c.hold(&sack(11, 21, 2, true), false));
        // Not a SACK: never held, and the next contiguous SACK still is.
        assert!(!c.hold(
            &Feedback::Ack {
                rcv_nxt: Psn::new(11)
            },
            false
        ));
        assert!(c.hold(&sack(11, 22, 2, false), false) || c.hold(&sack(11, 23, 2, false), false));
    }

    #[test]
    fn a_new_gap_after_held_sacks_goes_out_behind_the_last_held() {
        let mut c = SackCoalescer::new(true);
        assert!(!c.hold(&sack(10, 12, 1, false), false));
        assert_eq!(c.flush(&sack(10, 13, 1, false)), None);
        assert!(c.hold(&sack(10, 13, 1, false), false));
        assert!(c.hold(&sack(10, 14, 1, false), false));
        // 15 and 16 lost: lost-cnt 3; 14 (lost-cnt 1) goes out first.
        let gap = sack(10, 17, 3, false);
        assert_eq!(c.flush(&gap), Some(sack(10, 14, 1, false)));
        assert!(!c.hold(&gap, false));
        // Nothing held since: no flush before the next gap.
        assert_eq!(c.flush(&sack(10, 19, 4, false)), None);
        assert!(!c.hold(&sack(10, 19, 4, false), false));
        // RCV-NXT moved (a fill: lost-cnt 3), more held, then a gap that overflows it.
        assert!(!c.hold(&sack(11, 20, 3, false), false));
        assert!(c.hold(&sack(11, 21, 3, false), false));
        assert_eq!(
            c.flush(&sack(11, 30, 7, true)),
            Some(sack(11, 21, 3, false))
        );
        // Without SACKs held before it, or with the lost-cnt before the gap unknown: none.
        let mut c = SackCoalescer::new(true);
        assert!(!c.hold(&sack(10, 12, 2, false), false));
        assert!(c.hold(&sack(10, 13, 2, false), false));
        assert_eq!(c.flush(&sack(12, 20, 7, true)), None);
        assert_eq!(
            SackCoalescer::new(false).flush(&sack(10, 20, 3, false)),
            None
        );
    }

    #[test]
    fn a_sack_of_a_duplicate_is_sent_and_the_run_goes_on() {
        let mut c = SackCoalescer::new(true);
        assert!(!c.hold(&sack(10, 12, 2, false), false));
        assert!(c.hold(&sack(10, 13, 2, false), false));
        // A resend of 12, received before.
        assert!(!c.hold(&sack(10, 12, 2, false), false));
        assert_eq!(c.flush(&sack(10, 12, 2, false)), None);
        // 14 still only moves sack-high by one.
        assert!(c.hold(&sack(10, 14, 2, false), false));
    }

    #[test]
    fn disabled_holds_nothing() {
        let mut c = SackCoalescer::new(false);
        for p in 12..40 {
            assert!(!c.hold(&sack(10, p, 1, false), false));
        }
    }
}
