// SPDX-License-Identifier: GPL-2.0
//! The FEC offer: how a requester learns that its peer decodes repair packets.
//!
//! A repair packet starts with a reserved RC opcode, which a standard receiver must never
//! see (rdma_rxe's completer warns on an opcode it does not know), so a QP sends repairs
//! only after the peer's responder said, in band, that it takes them. The carrier is the
//! same as the SR offer's ([`caps`](super::caps)): BTH Resv7, with the scheme field set
//! to 7, which names no recovery scheme:
//!
//! ```text
//! Resv7 = | CAP 1 | 7 (3 bits) | FEC version (3 bits) |   FEC_OFFER = 0x79
//! Resv7 = | CAP 1 | 7 (3 bits) | 2 + epoch (3 bits)   |   fec_coded(epoch) = 0x7a..0x7d
//! ```
//!
//! - The requester marks its requests with [`FEC_OFFER`] once the SR exchange is decided
//!   (Resv7 carries the SR offer until then, and any answer would decide that), in either
//!   format: a standard request or an SR-format one (TVer = 1).
//! - A responder that takes repairs answers a request carrying exactly [`FEC_OFFER`] with
//!   [`FEC_OFFER`] in its response's Resv7; any other responder answers with Resv7 = 0
//!   (rdma_rxe, hardware) or its SR echo, which is not the offer.
//! - Once repairs are on, each request packet sent for the first time carries
//!   [`fec_coded`] of the parameter epoch in Resv7 (0x7a to 0x7d) and is coded; the peer
//!   codes exactly the packets so marked, with the parameters of that epoch.
//! - A responder that runs FEC marks the first READ responses and atomic ACK of a coded
//!   request the same way, with the epoch of its own coding of responses
//!   ([`FecResponderCaps`]), and the requester decodes them.
//! - The first response to a marked request decides, once: the echo turns repairs on,
//!   anything else leaves them off for the QP's life. A response to a request sent before
//!   the marking began decides nothing. After [`FecRequesterCaps::MAX_UNANSWERED_PROBES`]
//!   probe timeouts with no response the requests go out plain, and the first response
//!   then decides (off).

use super::caps::CAP_BIT;
use crate::proto::psn::Psn;

/// Version of the FEC shim's wire format ([`repair`](super::repair)).
pub const FEC_WIRE_VERSION: u8 = 1;

/// BTH Resv7 of a request offering to send repairs, and of a response taking them.
pub const FEC_OFFER: u8 = CAP_BIT | (7 << 3) | FEC_WIRE_VERSION;

/// Parameter epochs a QP's coding goes through, counted modulo this: each ask the
/// requester takes starts the next one ([`super::repair`]).
pub const FEC_EPOCHS: u8 = 4;

/// BTH Resv7 of a packet in a coding unit of parameter epoch `epoch` (modulo
/// [`FEC_EPOCHS`]), once the peer takes repairs: the first transmission of a request's PSN,
/// or of a coded request's response.
/// Resends and packets sent before carry 0 and are not coded, on either side: a repair is
/// decoded only from exactly the packets it was coded from, as the XOR of valid packets
/// can pass the ICRC.
pub const fn fec_coded(epoch: u8) -> u8 {
    CAP_BIT | (7 << 3) | (2 + epoch % FEC_EPOCHS)
}

/// The parameter epoch of a request packet whose BTH Resv7 is `resv7` (the AckReq bit
/// aside), if it is marked as coded.
pub const fn coded_epoch(resv7: u8) -> Option<u8> {
    let v = resv7 & 0x7f;
    if v >= fec_coded(0) && v <= fec_coded(FEC_EPOCHS - 1) {
        Some(v - fec_coded(0))
    } else {
        None
    }
}

/// Where a requester stands in the FEC exchange.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FecState {
    /// FEC is off on this device: never offered.
    Off,
    /// Waiting for the SR exchange to be decided (Resv7 is the SR offer's until then).
    Waiting,
    /// Marking requests with the offer from PSN `from` on.
    Probing {
        /// The first PSN marked.
        from: Psn,
        /// Probe timeouts with no response.
        unanswered: u8,
    },
    /// The peer takes repairs; request packets are coded with the parameters of `epoch`
    /// (modulo [`FEC_EPOCHS`]: each ask taken starts the next).
    On {
        /// The parameter epoch in use.
        epoch: u8,
    },
    /// The peer does not: no repair for the QP's life.
    Refused,
}

/// The requester half of the FEC exchange, one per QP.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FecRequesterCaps {
    state: FecState,
}

impl FecRequesterCaps {
    /// Probe timeouts after which the requests go out unmarked.
    pub const MAX_UNANSWERED_PROBES: u8 = 3;

    /// A requester on a device with FEC `enabled` or not.
    pub const fn new(enabled: bool) -> Self {
        FecRequesterCaps {
            state: if enabled {
                FecState::Waiting
            } else {
                FecState::Off
            },
        }
    }

    /// The current state.
    #[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
    pub const fn state(&self) -> FecState {
        self.state
    }

    /// True once repairs may be sent.
    pub const fn is_on(&self) -> bool {
        matches!(self.state, FecState::On { .. })
    }

    /// Resv7 of a request packet sent for the first time while repairs are on.
    pub const fn coded_marks(&self) -> Option<u8> {
        match self.state {
            FecState::On { epoch } => Some(fec_coded(epoch)),
            _ => None,
        }
    }

    /// The peer asked for other parameters as parameter epoch `epoch`: taken (true) when
    /// repairs are on and it is the epoch after the one in use, so that a repeated or
    /// stale ask changes nothing. From then on requests are marked with that epoch.
    pub fn take_ask(&mut self, epoch: u8) -> bool {
        match &mut self.state {
            FecState::On { epoch: e } if (*e + 1) % FEC_EPOCHS == epoch => {
                *e = epoch;
                true
            }
            _ => false,
        }
    }

    /// The SR exchange is decided (or there is none): requests from PSN `from` on carry
    /// the offer.
    pub fn start(&mut self, from: Psn) {
        if self.state == FecState::Waiting {
            self.state = FecState::Probing {
                from,
                unanswered: 0,
            };
        }
    }

    /// Resv7 for the next request: the offer while probing, else `None` (the caller's own
    /// value stands).
    pub const fn marks(&self) -> Option<u8> {
        match self.state {
            FecState::Probing { unanswered, .. } if unanswered < Self::MAX_UNANSWERED_PROBES => {
                Some(FEC_OFFER)
            }
            _ => None,
        }
    }

    /// A response for PSN `psn` (the PSN it acknowledges or answers) arrived with BTH
    /// Resv7 `resv7`: while probing, the first answer to a marked request decides.
    pub fn on_response(&mut self, psn: Psn, resv7: u8) -> FecState {
        if let FecState::Probing { from: f, .. } = self.state {
            if !psn.before(f) {
                self.state = if resv7 == FEC_OFFER {
                    FecState::On { epoch: 0 }
                } else {
                    FecState::Refused
                };
            }
        }
        self.state
    }

    /// A marked request timed out with no response at all.
    pub fn on_probe_timeout(&mut self) {
        if let FecState::Probing { unanswered, .. } = &mut self.state {
            *unanswered = unanswered.saturating_add(1);
        }
    }
}

/// The responder's coding of its own responses. A request marked as coded shows that its
/// requester took the echo, and so decodes responses too: the READ responses and the
/// atomic ACK of such a request, sent for the first time, are marked [`fec_coded`] of the
/// responses' own parameter epoch and coded; a replay for a duplicate is not.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FecResponderCaps {
    /// The device takes and sends repairs.
    enabled: bool,
    /// The parameter epoch of the responses coded (each response ask taken starts the
    /// next).
    epoch: u8,
}

impl FecResponderCaps {
    /// The responder of a device with FEC `enabled` or not.
    pub const fn new(enabled: bool) -> Self {
        FecResponderCaps { enabled, epoch: 0 }
    }

    /// True when the device runs FEC.
    pub const fn enabled(&self) -> bool {
        self.enabled
    }

    /// Resv7 of the first transmission of a response (READ response, atomic ACK) to a
    /// request whose Resv7 is `request_resv7`: the coded mark of the responses' epoch when
    /// the request was itself coded, else `None`.
    pub const fn coded_marks(&self, request_resv7: u8) -> Option<u8> {
        if self.enabled && coded_epoch(request_resv7).is_some() {
            Some(fec_coded(self.epoch))
        } else {
            None
        }
    }

    /// The requester asked for other parameters for the responses as parameter epoch
    /// `epoch`: taken (true) when it is the epoch after the one in use.
    pub fn take_ask(&mut self, epoch: u8) -> bool {
        let next = self.enabled && (self.epoch + 1) % FEC_EPOCHS == epoch;
        if next {
            self.epoch = epoch;
        }
        next
    }
}

/// The responder half: Resv7 for a response to a request that carried `resv7`, when the
/// device takes repairs (`enabled`): the echo of an exact offer, else `None` (the SR
/// exchange's answer stands).
pub const fn fec_answer(enabled: bool, resv7: u8) -> Option<u8> {
    if enabled && resv7 == FEC_OFFER {
        Some(FEC_OFFER)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::caps::{SrCap, SrScheme};
    use super::*;

    fn probing(from: u32) -> FecRequesterCaps {
        let mut c = FecRequesterCaps::new(true);
        assert_eq!((c.state(), c.marks()), (FecState::Waiting, None));
        c.start(Psn::new(from));
        c
    }

    #[test]
    fn the_offer_is_no_sr_capability_and_no_sr_offer_is_it() {
        assert_eq!(FEC_OFFER, 0x79);
        assert_eq!(SrCap::from_resv7(FEC_OFFER), None);
        for s in [
            SrScheme::Fasr,
            SrScheme::Srnic,
            SrScheme::Irn,
            SrScheme::Melo,
        ] {
            assert_eq!(fec_answer(true, SrCap::new(s).to_resv7()), None);
        }
        assert_eq!(fec_answer(true, FEC_OFFER), Some(FEC_OFFER));
        assert_eq!(fec_answer(false, FEC_OFFER), None);
        assert_eq!(fec_answer(true, 0), None);
        assert_eq!(fec_answer(true, FEC_OFFER - 1), None); // another version
    }

    #[test]
    fn the_echo_of_a_marked_request_turns_repairs_on() {
        let mut c = probing(10);
        // A response to a request sent before marking began decides nothing.
        assert_eq!(c.marks(), Some(FEC_OFFER));
        assert!(matches!(
            c.on_response(Psn::new(9), 0),
            FecState::Probing { .. }
        ));
        let on = FecState::On { epoch: 0 };
        assert_eq!(c.on_response(Psn::new(10), FEC_OFFER), on);
        assert!(c.is_on());
        assert_eq!(c.marks(), None);
        assert_eq!(c.coded_marks(), Some(0x7a));
        // Nothing changes it afterwards.
        assert_eq!(c.on_response(Psn::new(12), 0), on);
    }

    #[test]
    fn each_epoch_has_its_mark_and_no_other_value_is_one() {
        assert_eq!(
            [
                fec_coded(0),
                fec_coded(1),
                fec_coded(2),
                fec_coded(3),
                fec_coded(4)
            ],
            [0x7a, 0x7b, 0x7c, 0x7d, 0x7a]
        );
        for v in 0..=255u8 {
            let want = match v & 0x7f {
                0x7a..=0x7d => Some((v & 0x7f) - 0x7a),
                _ => None,
            };
            assert_eq!(coded_epoch(v), want, "{v:#x}");
        }
        assert_eq!(coded_epoch(FEC_OFFER), None);
    }

    #[test]
    fn only_the_ask_for_the_next_epoch_is_taken() {
        let mut c = probing(0);
        assert!(!c.take_ask(1), "not on yet");
        c.on_response(Psn::new(0), FEC_OFFER);
        for (ask, taken, epoch) in [
            (0, false, 0),
            (2, false, 0),
            (1, true, 1),
            (1, false, 1),
            (0, false, 1),
            (2, true, 2),
            (3, true, 3),
            (0, true, 0),
            (7, false, 0),
        ] {
            assert_eq!(c.take_ask(ask), taken, "ask {ask}");
            assert_eq!(c.state(), FecState::On { epoch });
            assert_eq!(c.coded_marks(), Some(fec_coded(epoch)));
        }
        let mut refused = probing(0);
        refused.on_response(Psn::new(0), 0);
        assert!(!refused.take_ask(1));
        assert_eq!(refused.coded_marks(), None);
    }

    #[test]
    fn any_other_answer_to_a_marked_request_refuses_for_good() {
        for answer in [0u8, 0x4c, FEC_OFFER ^ 1] {
            let mut c = probing(0xff_ffff);
            // PSN 0 comes after 0xffffff: an answer to a marked request.
            assert_eq!(c.on_response(Psn::new(0), answer), FecState::Refused);
            assert_eq!(c.on_response(Psn::new(1), FEC_OFFER), FecState::Refused);
            assert_eq!(c.marks(), None);
        }
    }

    #[test]
    fn a_silent_peer_gets_plain_requests_and_the_first_answer_decides() {
        let mut c = FecRequesterCaps::new(true);
        // No timeout counts before the marking began.
        c.on_probe_timeout();
        c.start(Psn::new(0));
        for _ in 0..FecRequesterCaps::MAX_UNANSWERED_PROBES {
            assert_eq!(c.marks(), Some(FEC_OFFER));
            c.on_probe_timeout();
        }
        assert_eq!(c.marks(), None);
        assert_eq!(c.on_response(Psn::new(5), 0), FecState::Refused);
        // Off never marks, whatever comes back.
        let mut off = FecRequesterCaps::new(false);
        off.start(Psn::new(0));
        assert_eq!(off.marks(), None);
        assert_eq!(off.on_response(Psn::new(0), FEC_OFFER), FecState::Off);
    }
}
