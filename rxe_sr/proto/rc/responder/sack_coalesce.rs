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
    fn disabled_holds_nothing() {
        let mut c = SackCoalescer::new(false);
        for p in 12..40 {
            assert!(!c.hold(&sack(10, p, 1, false), false));
        }
    }
}
