// SPDX-License-Identifier: GPL-2.0
//! Selective retransmission (SR) in the connected transport: what the requester and the
//! responder share about it.
//!
//! A QP of a device running an SR scheme (`recovery=fasr|srnic|irn|melo`) starts every
//! direction as standard RoCEv2 and probes its peer with the capability in BTH Resv7
//! ([`caps`](crate::proto::wire::caps)). Only after the peer echoed it does the requester
//! switch that direction to the SR format ([`sr_ext`](crate::proto::wire::sr_ext)) and to
//! the scheme's engine ([`recovery`](crate::proto::recovery)); a responder takes the SR
//! format from the first TVer = 1 request after it echoed the offer, and only inside its
//! window (Documentation/sr-wire-format.md). Either switch happens mid-stream: the engine
//! starts where the standard go-back-N left off (UNACK and the send frontier, or ePSN).
//!
//! The feedback an engine asks for travels as an SR-format ACKNOWLEDGE:
//!
//! | [`Feedback`]                  | SR-ACK-ETH kind | AETH                | BTH PSN        |
//! |-------------------------------|-----------------|---------------------|----------------|
//! | `Ack { rcv_nxt }`             | ACK             | ACK                 | `rcv_nxt - 1`  |
//! | `Sack { rcv_nxt, sack_psn, run_from, lost_cnt, overflow }` | SACK (SackHigh `sack_psn`, TriggerPSN `run_from`) | NAK PSN seq error | `rcv_nxt` |
//! | `Fnack { rcv_nxt, psn }`      | FNACK           | NAK PSN seq error   | `rcv_nxt`      |
//! | `Nak { rcv_nxt }`             | ACK             | NAK PSN seq error   | `rcv_nxt`      |
//! | `Holes { rcv_nxt, holes }`    | HOLE, one per hole, oldest first | NAK PSN seq error | `rcv_nxt` |
//!
//! Engines that share memory among the QPs of a device (FaSR's SR pool, MELO's bits pool)
//! get it through [`RcEnv::with_shared`](super::RcEnv::with_shared), which the kernel
//! implements with the device's pool lock (taken inside the QP's lock, never the other
//! way round).

use crate::proto::psn::Psn;
use crate::proto::rc::SR_DEFAULT_WINDOW_LOG2;
use crate::proto::recovery::any::{AnyEngine, EngineSide};
use crate::proto::recovery::scheme::Scheme;
use crate::proto::recovery::{Feedback, Hole, RtoConfig};
use crate::proto::wire::caps::{SrCap, SrScheme};
use crate::proto::wire::ext_headers::{Aeth, AETH_NAK_PSN_SEQ_ERROR};
use crate::proto::wire::sr_ext::{SrAckEth, SrAckKind, LOST_CNT_MAX};
use crate::proto::words::{words_for, WindowWords};

/// The longest run of PSNs one SACK reports, less one: a SACK whose TriggerPSN lies
/// further before its SackHigh (or after it) reports SackHigh alone. FaSR's responder
/// coalesces at most `SACK_EVERY` (64) SACKs into one.
pub const SACK_RUN_MAX: i32 = 1023;

/// What a QP's SR sides are built from: the scheme its device ran when the QP moved to RTR.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SrSetup {
    /// The scheme and wire version advertised and required of the peer.
    pub cap: SrCap,
    /// The engines' retransmission timeouts, microseconds.
    pub rto: RtoConfig,
    /// SRNIC: delay of its slow path (bitmap onloading), microseconds.
    pub srnic_delay_us: u64,
    /// FaSR: PSNs a requester sends past the highest PSN known received (0: the SR window
    /// alone); [`SR_PIPE_PSNS`](crate::proto::rc::SR_PIPE_PSNS) unless set.
    pub pipe_psns: u32,
    /// The SR window, as log2 of PSNs: what the responder tracks past RCV-NXT and
    /// advertises, and the most the requester keeps outstanding.
    pub window_log2: u8,
}

impl SrSetup {
    /// The setup for `scheme`; `None` for go-back-N (standard RoCEv2, nothing to set up).
    pub const fn new(scheme: Scheme, rto: RtoConfig, srnic_delay_us: u64) -> Option<SrSetup> {
        let s = match scheme {
            Scheme::Gbn => return None,
            Scheme::Fasr => SrScheme::Fasr,
            Scheme::Srnic => SrScheme::Srnic,
            Scheme::Irn => SrScheme::Irn,
            Scheme::Melo => SrScheme::Melo,
        };
        Some(SrSetup {
            cap: SrCap::new(s),
            rto,
            srnic_delay_us,
            pipe_psns: crate::proto::rc::SR_PIPE_PSNS,
            window_log2: SR_DEFAULT_WINDOW_LOG2,
        })
    }

    /// The scheme whose engine runs once the peer agreed.
    pub const fn scheme(&self) -> Scheme {
        match self.cap.scheme {
            SrScheme::Fasr => Scheme::Fasr,
            SrScheme::Srnic => Scheme::Srnic,
            SrScheme::Irn => Scheme::Irn,
            SrScheme::Melo => Scheme::Melo,
        }
    }

    /// The SR window in PSNs.
    pub const fn window_psns(&self) -> u32 {
        1 << self.window_log2
    }

    /// The 64-bit words of a bitmap over the SR window.
    pub const fn window_words(&self) -> usize {
        words_for(self.window_psns())
    }

    /// A fresh engine of the scheme for `side` of a QP, starting at `psn`: `words(n)` makes
    /// `n` zeroed words, a window's worth for each bitmap of that side and none for the
    /// other side's, which it never uses.
    pub fn engine<B: WindowWords>(
        &self,
        side: EngineSide,
        psn: Psn,
        words: &mut dyn FnMut(usize) -> B,
    ) -> AnyEngine<B> {
        let n = self.window_words();
        let mut words_of = |s: EngineSide| words(if s == side { n } else { 0 });
        AnyEngine::new(
            self.scheme(),
            (psn, psn),
            self.rto,
            self.srnic_delay_us,
            &mut words_of,
        )
    }
}

/// One SR-format ACKNOWLEDGE: its BTH PSN and headers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SrAckPacket {
    /// BTH PSN.
    pub psn: Psn,
    /// SR-ACK-ETH.
    pub sr: SrAckEth,
    /// AETH.
    pub aeth: Aeth,
}

/// The SR-format acknowledgments that carry `fb` (one, or one per hole), oldest first,
/// each advertising this responder's SR window of 2^`window_log2` PSNs.
pub fn encode_feedback(fb: &Feedback, msn: u32, window_log2: u8, mut out: impl FnMut(SrAckPacket)) {
    let nak = Aeth::nak(0, msn);
    let sr = |kind, sack_high, trigger_psn, lost_cnt: u8, overflow| SrAckEth {
        kind,
        lost_cnt: lost_cnt.min(LOST_CNT_MAX),
        lost_cnt_overflow: overflow,
        sack_high,
        trigger_psn,
        window_log2,
    };
    match *fb {
        Feedback::Ack { rcv_nxt } => out(SrAckPacket {
            psn: rcv_nxt.sub(1),
            sr: sr(SrAckKind::Ack, rcv_nxt.sub(1), rcv_nxt.sub(1), 0, false),
            aeth: Aeth::ack(msn),
        }),
        Feedback::Sack {
            rcv_nxt,
            sack_psn,
            run_from,
            lost_cnt,
            overflow,
        } => out(SrAckPacket {
            psn: rcv_nxt,
            sr: sr(SrAckKind::Sack, sack_psn, run_from, lost_cnt, overflow),
            aeth: nak,
        }),
        Feedback::Fnack { rcv_nxt, psn } => out(SrAckPacket {
            psn: rcv_nxt,
            sr: sr(SrAckKind::Fnack, psn, psn, 0, false),
            aeth: nak,
        }),
        Feedback::SackGap {
            rcv_nxt,
            sack_psn,
            gap_from,
            lost_cnt,
            overflow,
        } => out(SrAckPacket {
            psn: rcv_nxt,
            sr: sr(SrAckKind::Gap, sack_psn, gap_from, lost_cnt, overflow),
            aeth: nak,
        }),
        Feedback::Nak { rcv_nxt } => out(SrAckPacket {
            psn: rcv_nxt,
            sr: sr(SrAckKind::Ack, rcv_nxt, rcv_nxt, 0, false),
            aeth: nak,
        }),
        Feedback::Holes { rcv_nxt, holes } => {
            for h in holes.iter().rev().filter(|h| h.count > 0) {
                out(SrAckPacket {
                    psn: rcv_nxt,
                    sr: sr(SrAckKind::Hole, h.first.add(h.count - 1), h.first, 0, false),
                    aeth: nak,
                });
            }
        }
    }
}

/// What an SR-format ACKNOWLEDGE tells the requester.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SrAckMeaning {
    /// Feedback for the engine.
    Feedback(Feedback),
    /// An IBTA acknowledgment (ACK, RNR NAK, NAKs) to be handled as one.
    Ibta,
    /// A READ-ACK: the READ request arrived (nothing to do: its responses complete it).
    ReadAck,
}

/// Decodes an SR-format ACKNOWLEDGE with BTH PSN `psn`.
pub fn decode_feedback(psn: Psn, sr: &SrAckEth, aeth: &Aeth) -> SrAckMeaning {
    let seq_nak = aeth.syndrome == AETH_NAK_PSN_SEQ_ERROR;
    match sr.kind {
        SrAckKind::Ack => SrAckMeaning::Ibta,
        SrAckKind::ReadAck => SrAckMeaning::ReadAck,
        // (The parser already refused a kind that disagrees with its syndrome.)
        _ if !seq_nak => SrAckMeaning::Ibta,
        SrAckKind::Sack => SrAckMeaning::Feedback(Feedback::Sack {
            rcv_nxt: psn,
            sack_psn: sr.sack_high,
            // A run longer than [`SACK_RUN_MAX`] or ending before it starts is taken as
            // the one packet at SackHigh.
            run_from: match sr.sack_high.diff(sr.trigger_psn) {
                0..=SACK_RUN_MAX => sr.trigger_psn,
                _ => sr.sack_high,
            },
            lost_cnt: sr.lost_cnt,
            overflow: sr.lost_cnt_overflow,
        }),
        // A gap that does not end before SackHigh is taken as a SACK of SackHigh alone.
        SrAckKind::Gap if !sr.trigger_psn.before(sr.sack_high) => {
            SrAckMeaning::Feedback(Feedback::Sack {
                rcv_nxt: psn,
                sack_psn: sr.sack_high,
                run_from: sr.sack_high,
                lost_cnt: sr.lost_cnt,
                overflow: sr.lost_cnt_overflow,
            })
        }
        SrAckKind::Gap => SrAckMeaning::Feedback(Feedback::SackGap {
            rcv_nxt: psn,
            sack_psn: sr.sack_high,
            gap_from: sr.trigger_psn,
            lost_cnt: sr.lost_cnt,
            overflow: sr.lost_cnt_overflow,
        }),
        SrAckKind::Fnack => SrAckMeaning::Feedback(Feedback::Fnack {
            rcv_nxt: psn,
            psn: sr.trigger_psn,
        }),
        SrAckKind::Hole => {
            let count = sr.sack_high.diff(sr.trigger_psn);
            if count < 0 {
                return SrAckMeaning::Ibta;
            }
            let hole = Hole {
                first: sr.trigger_psn,
                count: count.unsigned_abs() + 1,
            };
            let none = Hole {
                first: psn,
                count: 0,
            };
            SrAckMeaning::Feedback(Feedback::Holes {
                rcv_nxt: psn,
                holes: [hole, none, none],
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes `fb`, checks each packet's headers agree, decodes; at most 3 packets.
    fn round_trip(fb: Feedback) -> ([Option<Feedback>; 3], usize) {
        let mut v = [None; 3];
        let mut n = 0;
        encode_feedback(&fb, 7, SR_DEFAULT_WINDOW_LOG2, |p| {
            assert_eq!(p.sr.check_aeth(&p.aeth), Ok(()));
            assert_eq!(p.sr.window_log2, SR_DEFAULT_WINDOW_LOG2);
            let got = match decode_feedback(p.psn, &p.sr, &p.aeth) {
                SrAckMeaning::Feedback(f) => f,
                SrAckMeaning::Ibta => {
                    assert!(matches!(fb, Feedback::Ack { .. } | Feedback::Nak { .. }));
                    fb
                }
                SrAckMeaning::ReadAck => panic!("no READ-ACK here"),
            };
            v[n] = Some(got);
            n += 1;
        });
        (v, n)
    }

    #[test]
    fn feedback_survives_the_wire() {
        let r = Psn::new(0xfffffe);
        let sack = Feedback::Sack {
            rcv_nxt: r,
            sack_psn: Psn::new(3),
            run_from: Psn::new(0xfffff0),
            lost_cnt: 5,
            overflow: true,
        };
        assert_eq!(round_trip(sack), ([Some(sack), None, None], 1));
        // A run that ends before it starts, or longer than a SACK reports, is one packet.
        let with_run = |from| Feedback::Sack {
            rcv_nxt: r,
            sack_psn: Psn::new(3),
            run_from: Psn::new(from),
            lost_cnt: 5,
            overflow: true,
        };
        for from in [4, 0x7fff00] {
            assert_eq!(
                round_trip(with_run(from)),
                ([Some(with_run(3)), None, None], 1)
            );
        }
        let fnack = Feedback::Fnack {
            rcv_nxt: r,
            psn: Psn::new(1),
        };
        assert_eq!(round_trip(fnack), ([Some(fnack), None, None], 1));
        let h = |first: u32, count| Hole {
            first: Psn::new(first),
            count,
        };
        let holes = Feedback::Holes {
            rcv_nxt: r,
            holes: [h(20, 2), h(0, 0), h(0xffffff, 3)],
        };
        // Oldest first, one per hole; each decodes to a one-hole list.
        let none = Hole { first: r, count: 0 };
        let one = |x| Feedback::Holes {
            rcv_nxt: r,
            holes: [x, none, none],
        };
        assert_eq!(
            round_trip(holes),
            ([Some(one(h(0xffffff, 3))), Some(one(h(20, 2))), None], 2)
        );
    }

    #[test]
    fn a_plain_ack_names_the_last_psn_received() {
        let mut seen = None;
        encode_feedback(
            &Feedback::Ack {
                rcv_nxt: Psn::new(0),
            },
            1,
            SR_DEFAULT_WINDOW_LOG2,
            |p| seen = Some(p),
        );
        let p = seen.unwrap();
        assert_eq!(p.psn, Psn::new(0xffffff));
        assert_eq!(p.aeth, Aeth::ack(1));
        assert_eq!(decode_feedback(p.psn, &p.sr, &p.aeth), SrAckMeaning::Ibta);
    }
}
