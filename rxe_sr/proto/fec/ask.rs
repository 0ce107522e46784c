// SPDX-License-Identifier: GPL-2.0
//! The receiving side's choice of coding parameters: when to ask the requester for others.
//!
//! LoWAR lets the receiver ask for other parameters as loss changes. Here the receiving
//! side judges the units of the parameter epoch in use by what their repairs found:
//!
//! - Repairs coded with other parameters than the receiving side's (the two devices were
//!   set differently): ask for the receiving side's.
//! - Two units that could not be rebuilt among the last [`ASK_WINDOW`] repairs: ask for
//!   more redundancy, half the packets per unit (down to [`FecParams::MIN_N`]), then twice
//!   the depth (up to [`FecParams::MAX_D`]).
//! - [`ASK_WINDOW`] repairs in a row that found nothing missing, with fewer packets per
//!   unit than the device's setting: ask for twice as many (back towards the setting,
//!   never past it).
//!
//! An ask names the epoch after the one in use; the requester takes only that one, and
//! marks the packets it codes from then on with it, which moves the decoder on
//! ([`super::decoder::Decoder::expect`]). Until then the same ask goes again every
//! [`ASK_AGAIN`] repairs, as an ask may be lost. A repair of the epoch before the one in
//! use is late and judges nothing; one of an epoch the receiving side did not ask for (a
//! forged or stale ask was taken) makes it ask for the epoch after that one, with its
//! parameters in use, so the two sides meet again.

use super::decoder::RepairOutcome;
use super::{FecParams, RepairHeader, FEC_EPOCHS};

/// Repairs judged before parameters with less redundancy are asked for; two units given
/// up among them ask for more.
pub const ASK_WINDOW: u32 = 32;

/// Repairs of the epoch in use between two sendings of an ask not yet taken.
pub const ASK_AGAIN: u32 = 8;

/// Units given up among [`ASK_WINDOW`] repairs that ask for more redundancy.
const GIVEN_UP_MAX: u32 = 2;

/// The receiving side's choice of parameters, one per QP.
#[derive(Clone, Copy, Debug)]
pub struct Asker {
    /// The device's setting: the least redundancy asked for.
    base: FecParams,
    /// The ask made and not yet taken: the epoch and the parameters asked for.
    pending: Option<(u8, FecParams)>,
    /// The pending ask is to be sent.
    due: bool,
    /// Repairs since the pending ask was last sent.
    since_sent: u32,
    /// Repairs judged in the epoch in use since the last decision.
    judged: u32,
    /// Of those, how many found a packet missing (rebuilt, or not).
    lossy: u32,
    /// Units given up among them.
    given_up: u32,
}

impl Asker {
    /// The choice of a receiving side whose device is set to `base`.
    pub const fn new(base: FecParams) -> Self {
        Asker {
            base,
            pending: None,
            due: false,
            since_sent: 0,
            judged: 0,
            lossy: 0,
            given_up: 0,
        }
    }

    /// The ask made and not yet taken.
    pub const fn pending(&self) -> Option<(u8, FecParams)> {
        self.pending
    }

    /// The ask to send now, if one is due: the epoch and the parameters asked for.
    pub fn take_due(&mut self) -> Option<(u8, FecParams)> {
        if !core::mem::take(&mut self.due) {
            return None;
        }
        self.since_sent = 0;
        self.pending
    }

    /// A packet of the pending ask's epoch arrived: the requester took it.
    pub fn taken(&mut self) {
        if self.pending.take().is_some() {
            self.forget();
        }
    }

    /// What the repair `rh` found ([`super::decoder::Decoder::on_repair`]'s `outcome`),
    /// the decoder being in parameter epoch `epoch` with `params`.
    pub fn on_repair(
        &mut self,
        rh: &RepairHeader,
        outcome: RepairOutcome,
        (epoch, params): (u8, FecParams),
    ) {
        if self.pending.is_some() {
            self.since_sent += 1;
            self.due |= self.since_sent >= ASK_AGAIN;
            return;
        }
        if rh.epoch == (epoch + FEC_EPOCHS - 1) % FEC_EPOCHS {
            // The epoch before: a repair sent before our ask was taken.
            return;
        }
        if rh.epoch != epoch {
            // An epoch not asked for: meet again in the one after it.
            self.ask(rh.epoch, params);
            return;
        }
        if rh.params != params {
            self.ask(epoch, params);
            return;
        }
        self.judge(outcome, epoch, params);
    }

    /// Counts a repair of the epoch in use, `epoch` with `params`, and decides once enough
    /// were seen.
    fn judge(&mut self, outcome: RepairOutcome, epoch: u8, params: FecParams) {
        match outcome {
            RepairOutcome::Rebuilt { .. } | RepairOutcome::Late { .. } => self.lossy += 1,
            RepairOutcome::Unrepairable { first } => {
                self.lossy += 1;
                self.given_up += u32::from(first);
            }
            RepairOutcome::Complete => {}
            RepairOutcome::Unusable => return,
        }
        self.judged += 1;
        if self.given_up >= GIVEN_UP_MAX {
            match more_redundancy(params) {
                Some(p) => self.ask(epoch, p),
                None => self.forget(),
            }
        } else if self.judged >= ASK_WINDOW {
            let less = less_redundancy(params).filter(|p| p.n() <= self.base.n());
            match less.filter(|_| self.lossy == 0) {
                Some(p) => self.ask(epoch, p),
                None => self.forget(),
            }
        }
    }

    /// Asks for `params` as the epoch after `after`.
    fn ask(&mut self, after: u8, params: FecParams) {
        self.pending = Some(((after + 1) % FEC_EPOCHS, params));
        self.due = true;
        self.forget();
    }

    /// The counts start over.
    fn forget(&mut self) {
        (self.judged, self.lossy, self.given_up) = (0, 0, 0);
    }
}

/// Half the packets per unit of `p`, or else twice the depth.
fn more_redundancy(p: FecParams) -> Option<FecParams> {
    let (n, d) = (p.n(), p.d());
    FecParams::new(n / 2, d).or_else(|| FecParams::new(n, d * 2))
}

/// Twice the packets per unit of `p`.
fn less_redundancy(p: FecParams) -> Option<FecParams> {
    FecParams::new(p.n() * 2, p.d())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::fec::RhKind;
    use crate::proto::psn::Psn;

    /// An asker with the decoder's epoch and parameters beside it, moved as `FecRx`
    /// moves them when the pending ask is taken.
    struct Asker {
        a: super::Asker,
        cur: (u8, FecParams),
    }

    impl Asker {
        fn new(base: FecParams) -> Self {
            Asker {
                a: super::Asker::new(base),
                cur: (0, base),
            }
        }
        fn on_repair(&mut self, rh: &RepairHeader, o: RepairOutcome) {
            self.a.on_repair(rh, o, self.cur);
        }
        fn take_due(&mut self) -> Option<(u8, FecParams)> {
            self.a.take_due()
        }
        fn pending(&self) -> Option<(u8, FecParams)> {
            self.a.pending()
        }
        fn taken(&mut self) {
            if let Some(next) = self.a.pending() {
                self.cur = next;
            }
            self.a.taken();
        }
    }

    fn p(n: u32, d: u32) -> FecParams {
        FecParams::new(n, d).unwrap()
    }

    fn repair(epoch: u8, params: FecParams) -> RepairHeader {
        RepairHeader {
            dest_qpn: 1,
            kind: RhKind::Repair,
            params,
            epoch,
            first_psn: Psn::new(0),
            covered: 1,
            len_xor: 0,
            ip_id_xor: 0,
        }
    }

    const LOST: RepairOutcome = RepairOutcome::Unrepairable { first: true };
    const REBUILT: RepairOutcome = RepairOutcome::Rebuilt {
        psn: Psn::new(0),
        ip_id: 0,
        len: 0,
    };

    #[test]
    fn units_given_up_ask_for_fewer_packets_per_unit_then_deeper() {
        let mut a = Asker::new(p(8, 1));
        let want = [(1, p(4, 1)), (2, p(4, 2)), (3, p(4, 4)), (0, p(4, 8))];
        let mut epoch = 0;
        let mut params = p(8, 1);
        for next in want {
            a.on_repair(&repair(epoch, params), LOST);
            assert_eq!(a.take_due(), None, "one unit given up is not enough");
            a.on_repair(&repair(epoch, params), LOST);
            assert_eq!(a.take_due(), Some(next));
            assert_eq!(a.take_due(), None);
            a.taken();
            (epoch, params) = next;
        }
        // The most redundancy there is: nothing more to ask.
        a.on_repair(&repair(0, p(4, 8)), LOST);
        a.on_repair(&repair(0, p(4, 8)), LOST);
        assert_eq!((a.take_due(), a.pending()), (None, None));
    }

    #[test]
    fn a_clean_window_asks_back_up_to_the_setting_and_no_further() {
        let mut a = Asker::new(p(16, 4));
        a.on_repair(&repair(0, p(16, 4)), LOST);
        a.on_repair(&repair(0, p(16, 4)), LOST);
        assert_eq!(a.take_due(), Some((1, p(8, 4))));
        a.taken();
        // One loss in the window keeps the parameters.
        for i in 0..ASK_WINDOW {
            let o = if i == 5 {
                REBUILT
            } else {
                RepairOutcome::Complete
            };
            a.on_repair(&repair(1, p(8, 4)), o);
        }
        assert_eq!(a.take_due(), None);
        for _ in 0..ASK_WINDOW - 1 {
            a.on_repair(&repair(1, p(8, 4)), RepairOutcome::Complete);
            assert_eq!(a.take_due(), None);
        }
        a.on_repair(&repair(1, p(8, 4)), RepairOutcome::Complete);
        assert_eq!(a.take_due(), Some((2, p(16, 4))));
        a.taken();
        for _ in 0..3 * ASK_WINDOW {
            a.on_repair(&repair(2, p(16, 4)), RepairOutcome::Complete);
        }
        assert_eq!((a.take_due(), a.pending()), (None, None));
    }

    #[test]
    fn an_ask_goes_again_until_taken_and_unusable_repairs_judge_nothing() {
        let mut a = Asker::new(p(32, 4));
        for _ in 0..100 {
            a.on_repair(&repair(0, p(32, 4)), RepairOutcome::Unusable);
        }
        assert_eq!(a.pending(), None);
        a.on_repair(&repair(0, p(32, 4)), LOST);
        a.on_repair(&repair(0, p(32, 4)), LOST);
        let ask = Some((1, p(16, 4)));
        assert_eq!(a.take_due(), ask);
        for round in 0..3 {
            for _ in 0..ASK_AGAIN - 1 {
                a.on_repair(&repair(0, p(32, 4)), LOST);
                assert_eq!(a.take_due(), None, "round {round}");
            }
            a.on_repair(&repair(0, p(32, 4)), LOST);
            assert_eq!(a.take_due(), ask, "the same ask, round {round}");
        }
    }

    #[test]
    fn other_parameters_or_an_epoch_not_asked_for_are_met_with_an_ask() {
        // The peer's device is set to 32:4, ours to 8:2.
        let mut a = Asker::new(p(8, 2));
        a.on_repair(&repair(0, p(32, 4)), RepairOutcome::Unusable);
        assert_eq!(a.take_due(), Some((1, p(8, 2))));
        a.taken();
        // A late repair of epoch 0 judges nothing.
        a.on_repair(&repair(0, p(32, 4)), LOST);
        a.on_repair(&repair(0, p(32, 4)), LOST);
        assert_eq!((a.take_due(), a.pending()), (None, None));
        // A forged ask moved the requester on to epoch 2 with other parameters.
        a.on_repair(&repair(2, p(4, 1)), RepairOutcome::Unusable);
        assert_eq!(a.take_due(), Some((3, p(8, 2))));
        a.taken();
        // Epoch 3 wraps to 0.
        a.on_repair(&repair(3, p(8, 2)), LOST);
        a.on_repair(&repair(3, p(8, 2)), LOST);
        assert_eq!(a.take_due(), Some((0, p(4, 2))));
    }
}
