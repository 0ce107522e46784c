// SPDX-License-Identifier: GPL-2.0
//! FaSR's SACKs, coalesced. The engine SACKs every out-of-order arrival; during a recovery
//! that is one acknowledgment per data packet, which doubles the packets both ends handle.
//! A SACK that only moves sack-high by one, with RCV-NXT, lost-cnt and the overflow flag
//! unchanged, is held back, unless the packet asked for an acknowledgment (AckReq: the end
//! of a message, or every [`MAX_PKT_PER_ACK`](crate::proto::rc::MAX_PKT_PER_ACK) packets)
//! or [`SACK_EVERY`] of them have been held in a row. A SACK that reports a new gap or a
//! changed overflow flag is never held. One whose RCV-NXT moved (a retransmission filled
//! it) is: the requester learns the new RCV-NXT from the AACK, and takes lost-cnt to
//! have fallen by one for it; a new gap's GAP (below) carries lost-cnt with the gap, from
//! which the requester takes the lost-cnt before it, back in step.
//!
//! Every SACK sent reports the whole run of contiguous PSNs it ends (from the last gap,
//! at most 1024 back): its TriggerPSN is the run's first PSN. The requester thus sets
//! what was held, and what an earlier SACK of the run reported if that SACK was lost; it
//! sees a gap only where PSNs are missing (or where the gap's own SACK was lost, and then
//! exactly the gap), also while lost-cnt is overflowed, where it resends any gap it sees.
//!
//! A SACK reporting a new gap in the same recovery goes out as a GAP: it names the gap's
//! first PSN, the sack-high before it plus one. The requester retransmits every PSN
//! between its sack-high and a SACK whose lost-cnt grew (or overflowed), so it must know
//! where the gap starts, or it resends the SACKs held before the gap with the gap: the GAP
//! tells it in the one acknowledgment the gap costs. A SACK of a packet received before (a
//! duplicate resend) is never held and leaves the run as it was.
//!
//! Only FaSR's requester reads SACKs this way; IRN's marks exactly the SACKed PSNs, so its
//! SACKs are never held.

use crate::proto::psn::Psn;
use crate::proto::rc::sr::SACK_RUN_MAX;
use crate::proto::rc::MAX_PKT_PER_ACK;
use crate::proto::recovery::Feedback;

/// At most this many SACKs in a row are held back (one in `SACK_EVERY` goes out): as
/// often as an in-order stream is acknowledged. Under loss a QP is in recovery for most
/// of its packets, and holding only 16 in a row cost it goodput.
pub(super) const SACK_EVERY: u32 = MAX_PKT_PER_ACK;

/// The state the last SACK (sent or held) reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Last {
    /// The last SACKed PSN: the responder's sack-high.
    high: Psn,
    overflow: bool,
}

/// The last SACK, and the run held since the last one sent.
#[derive(Clone, Copy, Debug)]
pub(super) struct SackCoalescer {
    enabled: bool,
    last: Option<Last>,
    /// SACKs held since the last one sent.
    held: u32,
    /// The first PSN of the run of contiguous SACKed PSNs that ends at the last one.
    run_start: Psn,
}

impl SackCoalescer {
    /// A coalescer; `enabled` for FaSR.
    pub(super) const fn new(enabled: bool) -> Self {
        SackCoalescer {
            enabled,
            last: None,
            held: 0,
            run_start: Psn::new(0),
        }
    }

    /// Forgets the last SACK and the run held (the engine started again).
    pub(super) fn reset(&mut self) {
        self.last = None;
        self.held = 0;
    }

    /// The first PSN a SACK of the run ending at `high` reports: where the run started,
    /// at most [`SACK_RUN_MAX`] + 1 PSNs back.
    fn run_from(&self, high: Psn) -> Psn {
        if high.distance_from(self.run_start) > SACK_RUN_MAX as u32 {
            high.sub(SACK_RUN_MAX as u32)
        } else {
            self.run_start
        }
    }

    /// What to send for `fb` (feedback to the packet that triggered it, which asked for an
    /// acknowledgment if `ack_req`): `fb` itself, `fb` reporting the held run with it, a
    /// GAP for a new gap in the same recovery, or nothing (held back).
    pub(super) fn coalesce(&mut self, fb: &Feedback, ack_req: bool) -> Option<Feedback> {
        let Feedback::Sack {
            rcv_nxt,
            sack_psn,
            lost_cnt,
            overflow,
            ..
        } = *fb
        else {
            return Some(*fb);
        };
        if self.last.is_some_and(|l| !sack_psn.after(l.high)) {
            // A packet received before, SACKed again: sent, and the run goes on.
            return Some(*fb);
        }
        let now = Last {
            high: sack_psn,
            overflow,
        };
        let contiguous = self.last.is_some_and(|l| sack_psn == l.high.next());
        // RCV-NXT and lost-cnt may have moved by fills since (the requester sees each in its
        // AACK and expects lost-cnt one lower for it).
        let same = self.last.is_some_and(|l| l.overflow == overflow);
        // A new gap in this recovery: past the last SACKed PSN, which is past RCV-NXT.
        let gap_from = self
            .last
            .filter(|l| l.high.after(rcv_nxt) && sack_psn.after(l.high.next()))
            .map(|l| l.high.next());
        self.last = Some(now);
        if !self.enabled {
            return Some(*fb);
        }
        if !contiguous {
            // A new gap (or the first SACK): a new run.
            self.run_start = sack_psn;
        }
        if contiguous && same && !ack_req && self.held + 1 < SACK_EVERY {
            self.held += 1;
            return None;
        }
        self.held = 0;
        if let Some(gap_from) = gap_from {
            return Some(Feedback::SackGap {
                rcv_nxt,
                sack_psn,
                gap_from,
                lost_cnt,
                overflow,
            });
        }
        // The SACK reports its whole run: what was held, and what earlier SACKs of the run
        // reported (one of them may have been lost).
        Some(Feedback::Sack {
            rcv_nxt,
            sack_psn,
            run_from: self.run_from(sack_psn),
            lost_cnt,
            overflow,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rcv_nxt: u32, from: u32, to: u32, lost_cnt: u8, overflow: bool) -> Feedback {
        Feedback::Sack {
            rcv_nxt: Psn::new(rcv_nxt),
            sack_psn: Psn::new(to),
            run_from: Psn::new(from),
            lost_cnt,
            overflow,
        }
    }

    fn sack(rcv_nxt: u32, sack_psn: u32, lost_cnt: u8, overflow: bool) -> Feedback {
        run(rcv_nxt, sack_psn, sack_psn, lost_cnt, overflow)
    }

    /// Whether `fb` is held.
    fn held(c: &mut SackCoalescer, fb: Feedback, ack_req: bool) -> bool {
        c.coalesce(&fb, ack_req).is_none()
    }

    #[test]
    fn contiguous_sacks_are_held_and_one_in_sack_every_reports_the_run() {
        let mut c = SackCoalescer::new(true);
        assert_eq!(
            c.coalesce(&sack(10, 12, 1, false), false),
            Some(sack(10, 12, 1, false))
        );
        let mut sent = [None; 3];
        let mut n = 0;
        for p in 13..13 + 2 * SACK_EVERY {
            if let Some(f) = c.coalesce(&sack(10, p, 1, false), false) {
                sent[n.min(2)] = Some(f);
                n += 1;
            }
        }
        // SACK_EVERY - 1 held, the next reports the run from 12; then again, and the second
        // reports the whole run too (the first may have been lost).
        let (a, b) = (12 + SACK_EVERY, 12 + 2 * SACK_EVERY);
        assert_eq!(n, 2);
        assert_eq!(sent[0], Some(run(10, 12, a, 1, false)));
        assert_eq!(sent[1], Some(run(10, 12, b, 1, false)));
    }

    #[test]
    fn news_always_goes_out() {
        let mut c = SackCoalescer::new(true);
        assert!(!held(&mut c, sack(10, 12, 1, false), false));
        assert!(held(&mut c, sack(10, 13, 1, false), false));
        // AckReq: sent, with the run.
        assert_eq!(
            c.coalesce(&sack(10, 14, 1, false), true),
            Some(run(10, 12, 14, 1, false))
        );
        // A new gap (lost-cnt grew, sack-high jumps).
        assert!(!held(&mut c, sack(10, 17, 3, false), false));
        assert!(held(&mut c, sack(10, 18, 3, false), false));
        // RCV-NXT moved (a fill, lost-cnt one lower): held too; the next one sent
        // reports the run from 17.
        assert!(held(&mut c, sack(11, 19, 2, false), false));
        assert_eq!(
            c.coalesce(&sack(11, 20, 2, false), true),
            Some(run(11, 17, 20, 2, false))
        );
        // Overflowed (a new gap): sent.
        assert!(!held(&mut c, sack(11, 29, 7, true), false));
        // Overflow ended (a fill): sent.
        assert!(held(&mut c, sack(11, 30, 7, true), false));
        assert!(!held(&mut c, sack(12, 31, 5, false), false));
        assert!(!held(&mut c, sack(12, 39, 7, true), false));
        // Overflowed and contiguous, nothing else changed: held like any other, and the
        // next SACK sent reports the run (the requester resends a gap while overflowed).
        assert!(held(&mut c, sack(12, 40, 7, true), false));
        assert!(held(&mut c, sack(12, 41, 7, true), false));
        assert_eq!(
            c.coalesce(&sack(12, 42, 7, true), true),
            Some(run(12, 39, 42, 7, true))
        );
        // Not a SACK: never held, and the next contiguous SACK still is.
        let ack = Feedback::Ack {
            rcv_nxt: Psn::new(12),
        };
        assert_eq!(c.coalesce(&ack, false), Some(ack));
        assert!(held(&mut c, sack(12, 43, 7, true), false));
    }

    fn gap(rcv_nxt: u32, from: u32, sack_psn: u32, lost_cnt: u8, overflow: bool) -> Feedback {
        Feedback::SackGap {
            rcv_nxt: Psn::new(rcv_nxt),
            sack_psn: Psn::new(sack_psn),
            gap_from: Psn::new(from),
            lost_cnt,
            overflow,
        }
    }

    #[test]
    fn a_new_gap_goes_out_as_a_gap_naming_where_it_starts() {
        let mut c = SackCoalescer::new(true);
        // The first SACK of a recovery: a plain SACK.
        assert_eq!(
            c.coalesce(&sack(10, 12, 1, false), false),
            Some(sack(10, 12, 1, false))
        );
        assert!(held(&mut c, sack(10, 13, 1, false), false));
        assert!(held(&mut c, sack(10, 14, 1, false), false));
        // 15 and 16 lost: lost-cnt 3; the GAP starts after the held run's 14.
        assert_eq!(
            c.coalesce(&sack(10, 17, 3, false), false),
            Some(gap(10, 15, 17, 3, false))
        );
        // Nothing held since, a gap all the same.
        assert_eq!(
            c.coalesce(&sack(10, 19, 4, false), false),
            Some(gap(10, 18, 19, 4, false))
        );
        // RCV-NXT moved (a fill: lost-cnt 3), held, then a gap of two.
        assert!(held(&mut c, sack(11, 20, 3, false), false));
        assert_eq!(
            c.coalesce(&sack(11, 23, 5, false), false),
            Some(gap(11, 21, 23, 5, false))
        );
        // A gap that overflows lost-cnt, and one while overflowed.
        assert!(held(&mut c, sack(12, 24, 4, false), false));
        assert_eq!(
            c.coalesce(&sack(12, 30, 7, true), false),
            Some(gap(12, 25, 30, 7, true))
        );
        assert!(held(&mut c, sack(12, 31, 7, true), false));
        assert_eq!(
            c.coalesce(&sack(12, 40, 7, true), false),
            Some(gap(12, 32, 40, 7, true))
        );
        // Recovery over (RCV-NXT past the last SACKed PSN): a new gap starts a new one,
        // with a plain SACK.
        assert_eq!(
            c.coalesce(&sack(50, 52, 1, false), false),
            Some(sack(50, 52, 1, false))
        );
        // Disabled: plain SACKs only.
        let mut d = SackCoalescer::new(false);
        assert_eq!(
            d.coalesce(&sack(10, 12, 1, false), false),
            Some(sack(10, 12, 1, false))
        );
        assert_eq!(
            d.coalesce(&sack(10, 20, 3, false), false),
            Some(sack(10, 20, 3, false))
        );
    }

    #[test]
    fn a_sack_of_a_duplicate_is_sent_and_the_run_goes_on() {
        let mut c = SackCoalescer::new(true);
        assert!(!held(&mut c, sack(10, 12, 2, false), false));
        assert!(held(&mut c, sack(10, 13, 2, false), false));
        // A resend of 12, received before.
        assert_eq!(
            c.coalesce(&sack(10, 12, 2, false), false),
            Some(sack(10, 12, 2, false))
        );
        // 14 still only moves sack-high by one, and the run still starts at 12.
        assert!(held(&mut c, sack(10, 14, 2, false), false));
        assert_eq!(
            c.coalesce(&sack(10, 15, 2, false), true),
            Some(run(10, 12, 15, 2, false))
        );
    }

    #[test]
    fn a_run_is_reported_at_most_sack_run_max_back() {
        let mut c = SackCoalescer::new(true);
        assert!(!held(&mut c, sack(10, 12, 1, false), false));
        let mut last = None;
        for p in 13..13 + 2000 {
            last = c.coalesce(&sack(10, p, 1, false), false).or(last);
        }
        let Some(Feedback::Sack {
            sack_psn, run_from, ..
        }) = last
        else {
            panic!("no SACK sent");
        };
        assert!(sack_psn.get() > 2000 - SACK_EVERY, "{last:?}");
        assert_eq!(run_from, sack_psn.sub(SACK_RUN_MAX as u32));
    }

    #[test]
    fn disabled_holds_nothing() {
        let mut c = SackCoalescer::new(false);
        for p in 12..40 {
            assert_eq!(
                c.coalesce(&sack(10, p, 1, false), false),
                Some(sack(10, p, 1, false))
            );
        }
    }
}
