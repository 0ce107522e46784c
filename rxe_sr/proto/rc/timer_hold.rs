// SPDX-License-Identifier: GPL-2.0
//! A requester's deadline held behind the receive queue. A deadline (retransmission
//! timeout, loss probe, RNR wait) that passes while datagrams wait in the device's receive
//! queue waits until the receive work has taken those queued by then: one of them may be
//! the acknowledgment it waits for, held up behind the others on a busy host, and acting
//! first would resend what arrived. The hold ends once the work passed that mark, whatever
//! arrived since, so a queue that never empties holds a deadline once, not for ever.

/// How soon a held deadline is looked at again, microseconds (a kernel timer fires a jiffy
/// later at the earliest).
pub const RECHECK_US: u64 = 1000;

/// The receive queue as a hold sees it.
pub trait RxProgress {
    /// The mark past which every datagram queued so far has been taken; `None` when none
    /// waits.
    fn backlog_mark(&self) -> Option<u64>;
    /// Whether every datagram queued when `mark` was read has been taken.
    fn passed(&self, mark: u64) -> bool;
}

/// A deadline held, and the receive queue's mark it waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerHold {
    deadline: u64,
    mark: u64,
}

/// What [`TimerHold::check`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldCheck {
    /// Act on the deadline now (or none is past).
    Go,
    /// Held: look again at [`RECHECK_US`] from now.
    Held {
        /// This deadline was not held before.
        first: bool,
    },
}

impl TimerHold {
    /// Whether the requester's earliest `deadline`, at `now`, waits for the receive work
    /// `rx`. `hold` is the QP's, kept across its timer runs: each deadline is held at most
    /// until the work passes the mark read when it was first held.
    pub fn check(
        hold: &mut Option<TimerHold>,
        deadline: Option<u64>,
        now: u64,
        rx: &impl RxProgress,
    ) -> HoldCheck {
        let Some(deadline) = deadline.filter(|&d| d <= now) else {
            *hold = None;
            return HoldCheck::Go;
        };
        let (mark, first) = match *hold {
            Some(h) if h.deadline == deadline => (h.mark, false),
            _ => match rx.backlog_mark() {
                Some(m) => (m, true),
                None => return HoldCheck::Go,
            },
        };
        *hold = Some(TimerHold { deadline, mark });
        if rx.passed(mark) {
            HoldCheck::Go
        } else {
            HoldCheck::Held { first }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receive queue: datagrams queued and taken so far.
    struct Queue {
        queued: u64,
        taken: u64,
    }

    impl RxProgress for Queue {
        fn backlog_mark(&self) -> Option<u64> {
            (self.taken < self.queued).then_some(self.queued)
        }
        fn passed(&self, mark: u64) -> bool {
            self.taken >= mark
        }
    }

    #[test]
    fn a_deadline_not_past_or_an_empty_queue_is_not_held() {
        let mut h = None;
        let busy = Queue {
            queued: 5,
            taken: 2,
        };
        assert_eq!(
            TimerHold::check(&mut h, Some(100), 99, &busy),
            HoldCheck::Go
        );
        assert_eq!(TimerHold::check(&mut h, None, 99, &busy), HoldCheck::Go);
        let idle = Queue {
            queued: 5,
            taken: 5,
        };
        assert_eq!(
            TimerHold::check(&mut h, Some(100), 100, &idle),
            HoldCheck::Go
        );
        assert_eq!(h, None);
    }

    #[test]
    fn a_past_deadline_waits_for_what_was_queued_when_it_was_held() {
        let mut h = None;
        let mut q = Queue {
            queued: 5,
            taken: 2,
        };
        let held = TimerHold::check(&mut h, Some(100), 150, &q);
        assert_eq!(held, HoldCheck::Held { first: true });
        q.taken = 4;
        q.queued = 9;
        let again = TimerHold::check(&mut h, Some(100), 160, &q);
        assert_eq!(again, HoldCheck::Held { first: false });
        q.taken = 5;
        assert_eq!(TimerHold::check(&mut h, Some(100), 170, &q), HoldCheck::Go);
    }

    #[test]
    fn a_queue_that_never_empties_holds_a_deadline_once() {
        let mut h = None;
        let mut q = Queue {
            queued: 10,
            taken: 0,
        };
        let mut helds = 0;
        for now in 100..200 {
            q.queued += 3;
            q.taken += 2;
            match TimerHold::check(&mut h, Some(100), now, &q) {
                HoldCheck::Held { .. } => helds += 1,
                HoldCheck::Go => break,
            }
        }
        // Held at 13 queued (the first look); taken passes it at the seventh.
        assert_eq!(helds, 6);
        assert_eq!(TimerHold::check(&mut h, Some(100), 300, &q), HoldCheck::Go);
    }

    #[test]
    fn a_new_deadline_is_held_afresh() {
        let mut h = None;
        let mut q = Queue {
            queued: 3,
            taken: 0,
        };
        assert_eq!(
            TimerHold::check(&mut h, Some(100), 100, &q),
            HoldCheck::Held { first: true }
        );
        q.taken = 3;
        assert_eq!(TimerHold::check(&mut h, Some(100), 101, &q), HoldCheck::Go);
        q.queued = 8;
        assert_eq!(
            TimerHold::check(&mut h, Some(140), 140, &q),
            HoldCheck::Held { first: true }
        );
    }
}
