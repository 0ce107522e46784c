// SPDX-License-Identifier: GPL-2.0
//! Small helpers shared by the engines.

use super::{Action, ActionSink, Counters, EngineEvent, Feedback, RtoConfig, Timer};
use crate::proto::psn::Psn;
use crate::proto::words::WindowWords;

/// The requester state every scheme keeps in the QPC: UNACK, the next new PSN and
/// whether the RTO is armed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReqBase {
    /// First unacknowledged PSN (UNACK / IBTA's "oldest outstanding").
    pub(crate) una: Psn,
    /// One past the highest PSN ever sent.
    pub(crate) snd_nxt: Psn,
    /// The RTO timer is pending.
    pub(crate) rto_armed: bool,
}

impl ReqBase {
    pub(crate) const fn new(ipsn: Psn) -> Self {
        ReqBase {
            una: ipsn,
            snd_nxt: ipsn,
            rto_armed: false,
        }
    }

    /// Takes over a requester mid-stream at UNACK `una` with `snd_nxt` sent: the
    /// retransmission timer that the previous engine armed for what is in flight counts
    /// as this engine's (it restarts or disarms it as UNACK moves; left to itself, that
    /// timer fired after everything was acknowledged and counted a timeout).
    pub(crate) fn start(&mut self, una: Psn, snd_nxt: Psn) {
        self.una = una;
        self.snd_nxt = snd_nxt;
        self.rto_armed = una.before(snd_nxt);
    }

    /// PSNs outstanding.
    pub(crate) fn in_flight(&self) -> u32 {
        span(self.una, self.snd_nxt)
    }

    /// True when `psn` is outstanding (in `[una, snd_nxt)`).
    pub(crate) fn outstanding(&self, psn: Psn) -> bool {
        !psn.before(self.una) && psn.before(self.snd_nxt)
    }

    /// A packet went out: track the send frontier, arm the RTO if idle.
    pub(crate) fn on_sent(
        &mut self,
        psn: Psn,
        now: u64,
        rto: &RtoConfig,
        out: &mut dyn ActionSink,
    ) {
        // Only a PSN at most a window ahead can be new; anything else is a resend.
        if !psn.before(self.snd_nxt) {
            self.snd_nxt = psn.next();
        }
        if !self.rto_armed {
            self.rto_armed = true;
            arm(out, Timer::Rto, now, rto.rto(self.in_flight()));
        }
    }

    /// A cumulative acknowledgement `rcv_nxt` arrived. Returns true when UNACK moved.
    pub(crate) fn on_cum_ack(
        &mut self,
        rcv_nxt: Psn,
        now: u64,
        rto: &RtoConfig,
        out: &mut dyn ActionSink,
    ) -> bool {
        if !rcv_nxt.after(self.una) || rcv_nxt.after(self.snd_nxt) {
            return false;
        }
        self.una = rcv_nxt;
        out.push(Action::Acked { una: rcv_nxt });
        self.restart_rto(now, rto, out);
        true
    }

    /// Re-arms the RTO from `now` when data is outstanding, else disarms it.
    pub(crate) fn restart_rto(&mut self, now: u64, rto: &RtoConfig, out: &mut dyn ActionSink) {
        if self.una == self.snd_nxt {
            if self.rto_armed {
                self.rto_armed = false;
                out.push(Action::DisarmTimer { timer: Timer::Rto });
            }
        } else {
            self.rto_armed = true;
            arm(out, Timer::Rto, now, rto.rto(self.in_flight()));
        }
    }
}

/// A per-QP bitmap of `words.len() * 64` PSNs starting at `base`, kept as a ring so
/// moving the base is O(distance moved).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingBits<B> {
    words: B,
    /// PSN of the bit at `head`.
    pub(crate) base: Psn,
    head: u32,
}

impl<B: WindowWords> RingBits<B> {
    /// A clear bitmap over the `words` (zeroed) from `base`.
    pub(crate) const fn new(words: B, base: Psn) -> Self {
        RingBits {
            words,
            base,
            head: 0,
        }
    }

    /// PSNs the bitmap covers.
    pub(crate) fn cap(&self) -> u32 {
        u32::try_from(self.words.len().saturating_mul(64)).unwrap_or(u32::MAX)
    }

    fn slot(&self, psn: Psn) -> Option<(usize, u32)> {
        let off = psn.diff(self.base);
        let cap = self.cap();
        if off < 0 || off.unsigned_abs() >= cap {
            return None;
        }
        let i = (self.head + off.unsigned_abs()) % cap;
        Some(((i / 64) as usize, i % 64))
    }

    /// True when `psn` lies in the window.
    pub(crate) fn covers(&self, psn: Psn) -> bool {
        self.slot(psn).is_some()
    }

    /// Sets the bit of `psn`; false when outside the window.
    pub(crate) fn set(&mut self, psn: Psn) -> bool {
        match self.slot(psn) {
            Some((w, b)) => match self.words.get_mut(w) {
                Some(x) => {
                    *x |= 1u64 << b;
                    true
                }
                None => false,
            },
            None => false,
        }
    }

    /// The bit of `psn` (false outside the window).
    pub(crate) fn get(&self, psn: Psn) -> bool {
        self.slot(psn)
            .and_then(|(w, b)| self.words.get(w).map(|x| x & (1u64 << b) != 0))
            .unwrap_or(false)
    }

    /// Moves the base forward to `to`, clearing the bits passed.
    pub(crate) fn advance_to(&mut self, to: Psn) {
        let n = span(self.base, to);
        let cap = self.cap();
        if n >= cap {
            self.words.fill(0);
            self.head = 0;
        } else {
            for _ in 0..n {
                if let Some((w, b)) = self.slot(self.base) {
                    if let Some(x) = self.words.get_mut(w) {
                        *x &= !(1u64 << b);
                    }
                }
                self.head = (self.head + 1) % cap;
                self.base = self.base.next();
            }
        }
        self.base = to;
    }

    /// Clears every bit.
    pub(crate) fn clear(&mut self, base: Psn) {
        self.words.fill(0);
        self.head = 0;
        self.base = base;
    }

    /// Calls `f(first, count)` for each run of clear bits in `[from, to)` (clipped to
    /// the window).
    pub(crate) fn zeros(&self, from: Psn, to: Psn, f: &mut dyn FnMut(Psn, u32)) {
        let mut p = from;
        let mut start = from;
        let mut len = 0u32;
        let mut n = span(from, to).min(self.cap());
        while n > 0 {
            if self.get(p) {
                if len > 0 {
                    f(start, len);
                    len = 0;
                }
            } else {
                if len == 0 {
                    start = p;
                }
                len += 1;
            }
            p = p.next();
            n -= 1;
        }
        if len > 0 {
            f(start, len);
        }
    }
}

/// Number of PSNs in `[from, to)` when `to` is not before `from`, else 0.
pub(crate) fn span(from: Psn, to: Psn) -> u32 {
    let d = to.diff(from);
    if d > 0 {
        d.unsigned_abs()
    } else {
        0
    }
}

/// Adds `n` of `ev` to the engine's counters `c` (a peak: raises it to `n`) and tells
/// `out` what they took, in one place so the two never differ.
pub(crate) fn count(out: &mut dyn ActionSink, c: &mut Counters, ev: EngineEvent, n: u64) {
    let field = match ev {
        EngineEvent::FastPath => &mut c.fast_path,
        EngineEvent::SlowPath => &mut c.slow_path,
        EngineEvent::GbnFallback => &mut c.gbn_fallbacks,
        EngineEvent::LostCntOverflow => &mut c.lost_cnt_overflows,
        EngineEvent::OnloadServed => &mut c.onload_served,
        EngineEvent::OnloadDelay => &mut c.onload_delay_total,
        EngineEvent::OnloadQueuePeak => &mut c.onload_queue_peak,
    };
    let old = *field;
    if ev == EngineEvent::OnloadQueuePeak {
        if n > old {
            *field = n;
            out.counted(ev, n);
        }
        return;
    }
    *field = old.saturating_add(n);
    if *field > old {
        out.counted(ev, *field - old);
    }
}

/// Pushes `Send(fb)` and counts it.
pub(crate) fn send(out: &mut dyn ActionSink, c: &mut Counters, fb: Feedback) {
    match fb {
        Feedback::Sack { .. } | Feedback::SackGap { .. } | Feedback::Holes { .. } => {
            c.sacks_sent = c.sacks_sent.saturating_add(1)
        }
        Feedback::Nak { .. } => c.naks_sent = c.naks_sent.saturating_add(1),
        Feedback::Fnack { .. } => c.fnacks_sent = c.fnacks_sent.saturating_add(1),
        Feedback::Ack { .. } => {}
    }
    out.push(Action::Send(fb));
}

/// Sends and counts an ACK of everything before `rcv_nxt`.
pub(crate) fn send_ack(out: &mut dyn ActionSink, c: &mut Counters, rcv_nxt: Psn) {
    send(out, c, Feedback::Ack { rcv_nxt });
}

/// Sends and counts a sequence-error NAK for `rcv_nxt`, unless one went since the
/// responder last advanced (`nak_sent`, which the caller clears then).
pub(crate) fn send_nak_once(
    out: &mut dyn ActionSink,
    c: &mut Counters,
    nak_sent: &mut bool,
    rcv_nxt: Psn,
) {
    if !*nak_sent {
        *nak_sent = true;
        send(out, c, Feedback::Nak { rcv_nxt });
    }
}

/// Pushes a `Retransmit` of `count` PSNs from `first` (nothing when `count == 0`).
pub(crate) fn retransmit(out: &mut dyn ActionSink, c: &mut Counters, first: Psn, count: u32) {
    if count > 0 {
        c.retransmit_psns = c.retransmit_psns.saturating_add(u64::from(count));
        out.push(Action::Retransmit { first, count });
    }
}

/// Pushes a `GoBack` from `from`.
pub(crate) fn go_back(out: &mut dyn ActionSink, c: &mut Counters, from: Psn) {
    c.go_backs = c.go_backs.saturating_add(1);
    out.push(Action::GoBack { from });
}

/// Pushes a drop of `psn`.
pub(crate) fn drop_pkt(out: &mut dyn ActionSink, c: &mut Counters, psn: Psn) {
    c.drops = c.drops.saturating_add(1);
    out.push(Action::Drop { psn });
}

/// Arms `timer` at `now + after`.
pub(crate) fn arm(out: &mut dyn ActionSink, timer: Timer, now: u64, after: u64) {
    out.push(Action::ArmTimer {
        timer,
        deadline: now.saturating_add(after),
    });
}
