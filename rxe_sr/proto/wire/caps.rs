// SPDX-License-Identifier: GPL-2.0
//! The per-QP capability exchange that decides whether a QP direction uses the SR format
//! of [`sr_ext`](super::sr_ext) or stays standard RoCEv2 (GBN).
//!
//! # Carrier: BTH Resv7 of standard packets
//!
//! Unmodified userspace (perftest, rdma-core, RDMA CM) exchanges QPNs and PSNs, not
//! transport options, so the exchange has to happen in band, on the QP itself, before the
//! first SR-format packet. The carrier is BTH Resv7 (byte 8, bits 6..0) of ordinary
//! TVer = 0 packets:
//!
//! ```text
//! Resv7 = | CAP (1) | scheme (3) | version (3) |     0 = no capability (every IBTA peer)
//! ```
//!
//! Why Resv7: a standard receiver ignores it (rdma_rxe never reads it; IBTA reserved fields
//! are ignored on receipt) and a standard responder builds its responses with Resv7 = 0,
//! so its answer is predictable: "no echo". Resv7, unlike the F/B/Resv6a byte, is covered
//! by the ICRC, so a corrupted capability is a dropped packet, not a wrong decision.
//!
//! # Protocol
//!
//! - Requester side ([`RequesterCaps`]), SR scheme configured: starts `Probing` and marks
//!   every request with its [`SrCap`] in Resv7 (TVer stays 0: the packets are standard).
//!   The first response (ACK, NAK, READ response, ATOMIC ACK) decides, once and for all:
//!   Resv7 equal to its own capability (same scheme, same version) → `Sr`: later requests
//!   use TVer = 1 and the SR headers; anything else → `Standard` (GBN, Resv7 = 0). A peer
//!   that answers nothing at all (it may drop packets with reserved bits set) is sent plain
//!   requests after [`RequesterCaps::MAX_UNANSWERED_PROBES`] probe timeouts, and the first
//!   response still decides: the echo of a marked request from a peer that was only slow
//!   (under loss or behind the in-flight budget), or the plain answer of a peer that
//!   dropped the marked ones. Timeouts alone never decide (when they did, a slow peer
//!   running the same scheme often ended standard). A peer whose own requests carry our
//!   capability (or are already in the SR format) runs our scheme: the requests to it stay
//!   marked.
//! - Responder side ([`ResponderCaps`]), stateless: every response is sent in the format of
//!   the request it answers. A TVer = 0 request carrying exactly our capability is answered
//!   with our capability echoed in Resv7; a TVer = 1 request gets TVer = 1 responses; any
//!   other request gets plain IBTA responses.
//! - `recovery=gbn` (local capability `None`) never marks, never echoes, never accepts
//!   TVer = 1: byte-for-byte RoCEv2.
//!
//! Each direction of the RC QP is decided by its requester, so the two ends cannot
//! disagree about the format of any one packet: the responder mirrors what it receives.
//! A requester switches to the SR format only after the echo, i.e. only toward a peer that
//! has just shown it parses it. An IBTA peer therefore never receives a TVer = 1 packet and
//! only ever sees a nonzero reserved field in the few requests sent while probing.

/// Version of rxe_sr's SR wire format (the layouts of [`sr_ext`](super::sr_ext) and what
/// their fields mean). 4: SR-ACK-ETH kind 5, GAP, a SACK that names the first PSN of the
/// gap before it. 3: SR-ACK-ETH byte 4, reserved before, carries the SR window of the
/// end that sends the acknowledgment ([`SrAckEth::window_log2`](super::sr_ext::SrAckEth)).
/// 2: a SACK's TriggerPSN is the first PSN of the run of out-of-order PSNs it reports
/// (SACKs held back are reported by the next one); in version 1 it was the one packet
/// that drew the SACK.
pub const SR_WIRE_VERSION: u8 = 4;

/// Resv7 carries a capability.
pub const CAP_BIT: u8 = 0x40;

/// The loss-recovery scheme an SR capability names; both ends must run the same one.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum SrScheme {
    /// FaSR: fast path on sack-high / lost-cnt, shared SR pool.
    Fasr,
    /// SRNIC: header extensions and bitmap onloading.
    Srnic,
    /// IRN: per-QP BDP bitmaps.
    Irn,
    /// MELO: shared bits pool.
    Melo,
}

impl SrScheme {
    /// The 3-bit wire value (0 is never used, so Resv7 = CAP alone is malformed).
    pub const fn to_wire(self) -> u8 {
        match self {
            SrScheme::Fasr => 1,
            SrScheme::Srnic => 2,
            SrScheme::Irn => 3,
            SrScheme::Melo => 4,
        }
    }

    /// Decodes a 3-bit wire value.
    pub const fn from_wire(v: u8) -> Option<Self> {
        match v {
            1 => Some(SrScheme::Fasr),
            2 => Some(SrScheme::Srnic),
            3 => Some(SrScheme::Irn),
            4 => Some(SrScheme::Melo),
            _ => None,
        }
    }
}

/// An SR capability: scheme and wire version, carried in BTH Resv7.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct SrCap {
    /// The loss-recovery scheme.
    pub scheme: SrScheme,
    /// The SR wire-format version (1..=7).
    pub version: u8,
}

impl SrCap {
    /// This implementation's capability for `scheme`.
    pub const fn new(scheme: SrScheme) -> Self {
        SrCap {
            scheme,
            version: SR_WIRE_VERSION,
        }
    }

    /// The Resv7 value advertising this capability.
    pub const fn to_resv7(self) -> u8 {
        CAP_BIT | (self.scheme.to_wire() << 3) | (self.version & 0x7)
    }

    /// Decodes Resv7: `None` when it advertises nothing this implementation knows (CAP
    /// clear, unknown scheme, version 0) — including the 0 of every IBTA packet.
    pub const fn from_resv7(v: u8) -> Option<Self> {
        if v & CAP_BIT == 0 || v & 0x80 != 0 {
            return None;
        }
        let version = v & 0x7;
        if version == 0 {
            return None;
        }
        match SrScheme::from_wire((v >> 3) & 0x7) {
            Some(scheme) => Some(SrCap { scheme, version }),
            None => None,
        }
    }
}

/// Where a requester stands in the exchange.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum RequesterState {
    /// Advertising until the first response; `unanswered` probe timeouts so far (from
    /// [`RequesterCaps::MAX_UNANSWERED_PROBES`] on, the requests go out plain).
    Probing {
        /// Probe timeouts without any response.
        unanswered: u8,
    },
    /// The peer echoed: SR format from now on.
    Sr(SrCap),
    /// Standard RoCEv2 (GBN) for the life of the QP.
    Standard,
}

/// The requester half of the exchange, one per QP.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct RequesterCaps {
    local: Option<SrCap>,
    state: RequesterState,
    /// The peer's requests carried our capability, or the SR format: it is no silent one.
    peer_marked: bool,
}

impl RequesterCaps {
    /// Probe timeouts after which the requests to a silent peer go out plain (it may drop
    /// packets with reserved bits set); the first response still decides.
    pub const MAX_UNANSWERED_PROBES: u8 = 3;

    /// A requester with capability `local` (`None`: `recovery=gbn`, standard at once).
    pub const fn new(local: Option<SrCap>) -> Self {
        let state = match local {
            Some(_) => RequesterState::Probing { unanswered: 0 },
            None => RequesterState::Standard,
        };
        RequesterCaps {
            local,
            state,
            peer_marked: false,
        }
    }

    /// The current state.
    pub const fn state(&self) -> RequesterState {
        self.state
    }

    #[cfg_attr(
        MODULE,
        expect(
            dead_code,
            reason = "the host tests; the transport asks ReqSr / the parser"
        )
    )]
    /// True once the SR format is in use.
    pub const fn is_sr(&self) -> bool {
        matches!(self.state, RequesterState::Sr(_))
    }

    /// BTH (TVer, Resv7) for the next request packet.
    pub const fn request_marks(&self) -> CapAnswer {
        match (self.state, self.local) {
            (RequesterState::Probing { unanswered }, Some(c))
                if unanswered < Self::MAX_UNANSWERED_PROBES =>
            {
                CapAnswer {
                    tver: 0,
                    resv7: c.to_resv7(),
                }
            }
            (RequesterState::Sr(_), _) => CapAnswer {
                tver: super::sr_ext::BTH_TVER_SR,
                resv7: 0,
            },
            _ => CapAnswer { tver: 0, resv7: 0 },
        }
    }

    /// A response (ACKNOWLEDGE, ATOMIC ACKNOWLEDGE, READ response) arrived with BTH
    /// `tver` and `resv7`. While probing, a TVer = 0 response decides; afterwards nothing
    /// changes the decision.
    pub fn on_response(&mut self, tver: u8, resv7: u8) -> RequesterState {
        if let RequesterState::Probing { .. } = self.state {
            if tver == super::sr_ext::BTH_TVER_STD {
                self.state = match (SrCap::from_resv7(resv7), self.local) {
                    (Some(peer), Some(local)) if peer == local => RequesterState::Sr(local),
                    _ => RequesterState::Standard,
                };
            }
        }
        self.state
    }

    /// A request from the peer arrived with BTH `tver` and `resv7` (the QP's responder
    /// side): while probing, one that carries our capability, or is in the SR format, shows
    /// a peer that runs our scheme, so the requests to it stay marked after probe timeouts.
    pub fn on_peer_request(&mut self, tver: u8, resv7: u8) {
        if let (RequesterState::Probing { .. }, Some(local)) = (self.state, self.local) {
            let marked = match tver {
                super::sr_ext::BTH_TVER_STD => SrCap::from_resv7(resv7) == Some(local),
                t => t == super::sr_ext::BTH_TVER_SR,
            };
            self.peer_marked |= marked;
        }
    }

    /// A probe-marked request timed out with no response at all.
    pub fn on_probe_timeout(&mut self) -> RequesterState {
        if self.peer_marked {
            return self.state;
        }
        if let RequesterState::Probing { unanswered } = self.state {
            self.state = RequesterState::Probing {
                unanswered: unanswered.saturating_add(1),
            };
        }
        self.state
    }
}

/// BTH marks (TVer, Resv7) for an outgoing packet.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct CapAnswer {
    /// BTH TVer.
    pub tver: u8,
    /// BTH Resv7.
    pub resv7: u8,
}

/// The responder half of the exchange: a stateless mirror of each request.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct ResponderCaps {
    local: Option<SrCap>,
}

impl ResponderCaps {
    /// A responder with capability `local` (`None`: `recovery=gbn`).
    pub const fn new(local: Option<SrCap>) -> Self {
        ResponderCaps { local }
    }

    #[cfg_attr(
        MODULE,
        expect(
            dead_code,
            reason = "the host tests; the transport asks ReqSr / the parser"
        )
    )]
    /// Whether a request with BTH `tver` may be processed: TVer = 1 only with SR enabled.
    /// (Packets with other TVer values never parse.)
    pub const fn accepts(&self, tver: u8) -> bool {
        tver == super::sr_ext::BTH_TVER_STD || self.local.is_some()
    }

    /// BTH marks for the responses to a request with BTH `tver` and `resv7`.
    pub const fn answer(&self, tver: u8, resv7: u8) -> CapAnswer {
        let Some(local) = self.local else {
            return CapAnswer { tver: 0, resv7: 0 };
        };
        if tver == super::sr_ext::BTH_TVER_SR {
            return CapAnswer { tver, resv7: 0 };
        }
        let echo = match SrCap::from_resv7(resv7) {
            Some(peer) => {
                peer.version == local.version && peer.scheme.to_wire() == local.scheme.to_wire()
            }
            None => false,
        };
        CapAnswer {
            tver: 0,
            resv7: if echo { local.to_resv7() } else { 0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FASR: SrCap = SrCap::new(SrScheme::Fasr);

    #[test]
    fn resv7_encoding() {
        assert_eq!(FASR.to_resv7(), 0x4c);
        assert_eq!(SrCap::from_resv7(0x4c), Some(FASR));
        // Versions 1 and 2 (another TriggerPSN meaning, no window in SR-ACK-ETH) are not
        // ours: no echo, standard RoCEv2.
        assert_ne!(SrCap::from_resv7(0x49), Some(FASR));
        assert_ne!(SrCap::from_resv7(0x4a), Some(FASR));
        assert_eq!(SrCap::from_resv7(0), None);
        assert_eq!(SrCap::from_resv7(0x40), None); // no scheme, no version
        assert_eq!(SrCap::from_resv7(0x48), None); // version 0
        assert_eq!(SrCap::from_resv7(0x79), None); // scheme 7 unknown
        for s in [
            SrScheme::Fasr,
            SrScheme::Srnic,
            SrScheme::Irn,
            SrScheme::Melo,
        ] {
            let c = SrCap::new(s);
            assert!(c.to_resv7() <= 0x7f);
            assert_eq!(SrCap::from_resv7(c.to_resv7()), Some(c));
        }
    }

    /// Two rxe_sr ends with the same scheme: the requester probes, the responder echoes,
    /// the requester switches and the responder mirrors TVer = 1.
    #[test]
    fn two_sr_ends_agree() {
        let mut req = RequesterCaps::new(Some(FASR));
        let resp = ResponderCaps::new(Some(FASR));
        let m = req.request_marks();
        assert_eq!(
            m,
            CapAnswer {
                tver: 0,
                resv7: 0x4c
            }
        );
        let a = resp.answer(m.tver, m.resv7);
        assert_eq!(
            a,
            CapAnswer {
                tver: 0,
                resv7: 0x4c
            }
        );
        assert_eq!(req.on_response(a.tver, a.resv7), RequesterState::Sr(FASR));
        let m = req.request_marks();
        assert_eq!(m, CapAnswer { tver: 1, resv7: 0 });
        assert!(resp.accepts(m.tver));
        assert_eq!(
            resp.answer(m.tver, m.resv7),
            CapAnswer { tver: 1, resv7: 0 }
        );
    }

    /// A standard responder (rdma_rxe, hardware, rxe_sr gbn) answers with Resv7 = 0.
    #[test]
    fn standard_peer_is_detected() {
        let mut req = RequesterCaps::new(Some(FASR));
        let gbn = ResponderCaps::new(None);
        let m = req.request_marks();
        let a = gbn.answer(m.tver, m.resv7);
        assert_eq!(a, CapAnswer { tver: 0, resv7: 0 });
        assert_eq!(req.on_response(a.tver, a.resv7), RequesterState::Standard);
        assert_eq!(req.request_marks(), CapAnswer { tver: 0, resv7: 0 });
        // Final: a late echo does not revive SR.
        assert_eq!(
            req.on_response(0, FASR.to_resv7()),
            RequesterState::Standard
        );
        assert!(!gbn.accepts(1));
    }

    #[test]
    fn different_schemes_fall_back() {
        let mut req = RequesterCaps::new(Some(FASR));
        let resp = ResponderCaps::new(Some(SrCap::new(SrScheme::Srnic)));
        let m = req.request_marks();
        let a = resp.answer(m.tver, m.resv7);
        assert_eq!(a.resv7, 0);
        assert_eq!(req.on_response(a.tver, a.resv7), RequesterState::Standard);
    }

    /// A peer of an older SR wire version, 1 to 3 (the same scheme): neither end takes the other's
    /// capability, so the QP stays standard RoCEv2 both ways.
    #[test]
    fn an_older_wire_version_falls_back() {
        for version in [1, 2, 3] {
            let old = SrCap {
                scheme: SrScheme::Fasr,
                version,
            };
            let resp = ResponderCaps::new(Some(FASR));
            assert_eq!(
                resp.answer(0, old.to_resv7()),
                CapAnswer { tver: 0, resv7: 0 }
            );
            let mut req = RequesterCaps::new(Some(FASR));
            assert_eq!(req.on_response(0, old.to_resv7()), RequesterState::Standard);
            // Nor does an old peer take ours.
            let old_resp = ResponderCaps::new(Some(old));
            assert_eq!(
                old_resp.answer(0, FASR.to_resv7()),
                CapAnswer { tver: 0, resv7: 0 }
            );
        }
    }

    /// A silent peer gets plain requests after three probe timeouts; its first answer,
    /// plain, then makes the QP direction standard.
    #[test]
    fn silent_peer_gets_plain_requests() {
        let mut req = RequesterCaps::new(Some(FASR));
        assert_eq!(
            req.on_probe_timeout(),
            RequesterState::Probing { unanswered: 1 }
        );
        assert_eq!(
            req.on_probe_timeout(),
            RequesterState::Probing { unanswered: 2 }
        );
        assert_eq!(req.request_marks().resv7, FASR.to_resv7());
        assert_eq!(
            req.on_probe_timeout(),
            RequesterState::Probing { unanswered: 3 }
        );
        assert_eq!(req.request_marks(), CapAnswer { tver: 0, resv7: 0 });
        assert_eq!(req.on_response(0, 0), RequesterState::Standard);
    }

    /// `recovery=gbn` on both sides: nothing is ever marked.
    #[test]
    fn gbn_is_plain() {
        let mut req = RequesterCaps::new(None);
        assert_eq!(req.state(), RequesterState::Standard);
        assert_eq!(req.request_marks(), CapAnswer { tver: 0, resv7: 0 });
        assert_eq!(
            req.on_response(0, FASR.to_resv7()),
            RequesterState::Standard
        );
        let resp = ResponderCaps::new(None);
        assert_eq!(
            resp.answer(0, FASR.to_resv7()),
            CapAnswer { tver: 0, resv7: 0 }
        );
        // An SR responder facing a plain requester stays plain.
        let sr = ResponderCaps::new(Some(FASR));
        assert_eq!(sr.answer(0, 0), CapAnswer { tver: 0, resv7: 0 });
    }

    #[test]
    fn tver1_response_while_probing_is_not_an_answer() {
        let mut req = RequesterCaps::new(Some(FASR));
        assert_eq!(
            req.on_response(1, 0),
            RequesterState::Probing { unanswered: 0 }
        );
    }
}
