// SPDX-License-Identifier: GPL-2.0
// The FEC shim on the test net (`include!`d by rc_net.rs): a side whose device runs FEC
// codes its request packets and puts repairs on the wire after them once its peer took
// the offer, and holds and rebuilds the request packets it receives; its responder codes
// the responses of coded requests, and its requester holds and rebuilds those, as the
// module's transport does. Packets carry an ICRC over a fixed IPv4/UDP header (Identification 0),
// which a rebuilt packet must pass before the responder sees it.

use rxe_sr::proto::fec::decoder::{RepairOutcome, DEC_UNITS};
use rxe_sr::proto::fec::encoder::{Encoder, ENC_UNITS};
use rxe_sr::proto::fec::resp_rx::{RespPass, RespRx};
use rxe_sr::proto::fec::rx::{FecRx, HOLD_SLOTS};
use rxe_sr::proto::fec::{FecParams, RepairHeader, RhKind, FEC_MAX_PACKET};
use rxe_sr::proto::wire::icrc;
use rxe_sr::proto::wire::repair::{RH_LEN, RH_OPCODE};

/// The IPv4 and UDP headers the net's packets are "sent" in, for a packet of `len` bytes.
fn fec_headers(len: usize) -> ([u8; 20], [u8; 8]) {
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((28 + len) as u16).to_be_bytes());
    ip[6] = 0x40;
    ip[9] = 17;
    ip[12..20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let mut udp = [0xc0, 0x11, 0x12, 0xb7, 0, 0, 0, 0];
    udp[4..6].copy_from_slice(&((8 + len) as u16).to_be_bytes());
    (ip, udp)
}

/// Fills the ICRC of `bytes` (BTH .. ICRC) over [`fec_headers`].
fn fec_fill_icrc(bytes: &mut [u8]) {
    let (ip, udp) = fec_headers(bytes.len());
    icrc::fill(&ip, &udp, bytes).expect("a packet the net built");
}

/// The receiving side of a side's shim: packets are their bytes.
type NetFecRx = FecRx<Vec<u8>, Vec<u8>, Vec<Option<(Vec<u8>, u32)>>>;

/// The requester's receiving side of the responses.
type NetRespRx = RespRx<Vec<u8>, Vec<u8>, Vec<Option<(Vec<u8>, u32)>>>;

/// A side's FEC shim and what it counted.
struct SideFec {
    enc: Encoder<Vec<u8>>,
    rx: NetFecRx,
    /// The responder's encoder of its coded responses, and the requester's decoder of
    /// the peer's.
    resp_enc: Encoder<Vec<u8>>,
    resp_rx: NetRespRx,
    out: Vec<u8>,
    /// The peer's QPN, which asks are sent to.
    peer_qpn: u32,
    repairs_sent: u64,
    asks_sent: u64,
    /// Takes sent by a UC receiving side.
    takes_sent: u64,
    /// Asks the requester took, with the parameters asked for.
    asks_taken: Vec<FecParams>,
    rebuilt: u64,
    /// Of those, responses the requester's side rebuilt.
    resp_rebuilt: u64,
    rebuilt_bad: u64,
    unrepairable: u64,
}

impl SideFec {
    fn new(params: FecParams, dest_qpn: u32) -> Box<SideFec> {
        Box::new(SideFec {
            enc: Encoder::new(params, dest_qpn, vec![0; ENC_UNITS * FEC_MAX_PACKET]),
            rx: FecRx::new(
                params,
                rxe_sr::proto::rc::SR_DEFAULT_WINDOW_PSNS,
                vec![0; DEC_UNITS * FEC_MAX_PACKET],
                (0..HOLD_SLOTS).map(|_| None).collect(),
            ),
            resp_enc: Encoder::for_responses(params, dest_qpn, vec![0; ENC_UNITS * FEC_MAX_PACKET]),
            resp_rx: RespRx::new(
                params,
                rxe_sr::proto::rc::SR_DEFAULT_WINDOW_PSNS,
                vec![0; DEC_UNITS * FEC_MAX_PACKET],
                (0..HOLD_SLOTS).map(|_| None).collect(),
            ),
            out: vec![0; FEC_MAX_PACKET],
            peer_qpn: dest_qpn,
            repairs_sent: 0,
            asks_sent: 0,
            takes_sent: 0,
            asks_taken: vec![],
            rebuilt: 0,
            resp_rebuilt: 0,
            rebuilt_bad: 0,
            unrepairable: 0,
        })
    }

    /// Codes the request packets among `out[from..]` (this side sent them, the peer took
    /// the offer) and puts each repair right after the packet that completed its unit,
    /// then, when the requester has sent all its work (`idle`), the repairs of a flush at
    /// the end, as the kernel's drive does after a step.
    fn code_sent(&mut self, out: &mut Vec<Vec<u8>>, from: usize, idle: bool) {
        let sent: Vec<Vec<u8>> = out.drain(from..).collect();
        for bytes in sent {
            let psn = PacketRepr::parse(&bytes)
                .ok()
                .filter(|p| p.bth.opcode.info().is_some_and(|i| is_request(i.kind)))
                .map(|p| p.bth.psn);
            out.push(bytes);
            if let Some(psn) = psn {
                let mut repairs = vec![];
                let bytes = out.last().expect("just pushed");
                self.enc.on_sent(psn, 0, bytes, &mut |rh, pl| repairs.push(repair_packet(rh, pl)));
                self.repairs_sent += repairs.len() as u64;
                out.extend(repairs);
            }
        }
        if !idle {
            return;
        }
        let mut repairs = vec![];
        self.enc.flush_idle(&mut |rh, pl| repairs.push(repair_packet(rh, pl)));
        self.repairs_sent += repairs.len() as u64;
        out.extend(repairs);
    }

    /// Codes the responses among `out[from..]` this side's responder marked as coded,
    /// each repair right after the response that completed its unit, then, when the
    /// responder has no READ responses left to send (`idle`), those of a flush.
    fn code_responses(&mut self, out: &mut Vec<Vec<u8>>, from: usize, idle: bool) {
        let sent: Vec<Vec<u8>> = out.drain(from..).collect();
        let mut coded = false;
        for bytes in sent {
            let psn = PacketRepr::parse(&bytes)
                .ok()
                .filter(|p| p.bth.opcode.info().is_some_and(|i| !is_request(i.kind)))
                .filter(|p| rxe_sr::proto::fec::coded_epoch(p.bth.resv7).is_some())
                .map(|p| p.bth.psn);
            out.push(bytes);
            if let Some(psn) = psn {
                let mut repairs = vec![];
                let bytes = out.last().expect("just pushed");
                coded = true;
                self.resp_enc.on_sent(psn, 0, bytes, &mut |rh, pl| repairs.push(repair_packet(rh, pl)));
                self.repairs_sent += repairs.len() as u64;
                out.extend(repairs);
            }
        }
        if !idle || !coded {
            return;
        }
        let mut repairs = vec![];
        self.resp_enc.flush_idle(&mut |rh, pl| repairs.push(repair_packet(rh, pl)));
        self.repairs_sent += repairs.len() as u64;
        out.extend(repairs);
    }

    /// A repair of responses arrived, the requester waiting for `owed`: what it rebuilds,
    /// if that passes its ICRC.
    fn on_resp_repair(&mut self, bytes: &[u8], owed: Option<Psn>) -> Option<Vec<u8>> {
        let (rh, pl) = Self::parse(bytes).filter(|(rh, _)| rh.kind == RhKind::RespRepair)?;
        let outcome = self.resp_rx.on_repair(&rh, pl, &mut self.out, owed);
        let rebuilt = self.rebuilt_of(outcome);
        self.resp_rebuilt += u64::from(rebuilt.is_some());
        rebuilt
    }

    /// The ask of the requester's receiving side due now, if any, waiting for `owed`.
    fn resp_ask_due(&mut self, owed: Psn) -> Option<Vec<u8>> {
        let (epoch, params) = self.resp_rx.take_ask()?;
        self.asks_sent += 1;
        Some(repair_packet(&RepairHeader::resp_ask(self.peer_qpn, epoch, params, owed), &[]))
    }

    /// A repair or ask packet whose ICRC and header check.
    fn parse(bytes: &[u8]) -> Option<(RepairHeader, &[u8])> {
        let (ip, udp) = fec_headers(bytes.len());
        icrc::verify(&ip, &udp, bytes).ok()?;
        RepairHeader::parse(&bytes[..bytes.len() - 4]).ok()
    }

    /// The ask the receiving side has to send now, if one is due, its ePSN being `epsn`.
    fn ask_due(&mut self, epsn: Psn) -> Option<Vec<u8>> {
        let (epoch, params) = self.rx.take_ask()?;
        self.asks_sent += 1;
        Some(repair_packet(&RepairHeader::ask(self.peer_qpn, epoch, params, epsn), &[]))
    }

    /// A repair arrived, the responder expecting `epsn`: what it rebuilds, if that passes
    /// its ICRC.
    fn on_repair(&mut self, bytes: &[u8], epsn: Psn) -> Option<Vec<u8>> {
        let (rh, pl) = Self::parse(bytes).filter(|(rh, _)| rh.kind == RhKind::Repair)?;
        let outcome = self.rx.on_repair(&rh, pl, &mut self.out, epsn);
        self.rebuilt_of(outcome)
    }

    /// The packet a repair's `outcome` rebuilt into `out`, if it passes its ICRC.
    fn rebuilt_of(&mut self, outcome: RepairOutcome) -> Option<Vec<u8>> {
        match outcome {
            RepairOutcome::Rebuilt { len, .. } => {
                let (ip, udp) = fec_headers(len);
                if icrc::verify(&ip, &udp, &self.out[..len]).is_ok() {
                    self.rebuilt += 1;
                    return Some(self.out[..len].to_vec());
                }
                self.rebuilt_bad += 1;
                None
            }
            RepairOutcome::Unrepairable { first: true } => {
                self.unrepairable += 1;
                None
            }
            _ => None,
        }
    }
}

/// A repair packet with its ICRC.
fn repair_packet(rh: &RepairHeader, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; RH_LEN + payload.len() + 4];
    rh.emit(&mut b, payload.len()).expect("the encoder's header");
    b[RH_LEN..RH_LEN + payload.len()].copy_from_slice(payload);
    fec_fill_icrc(&mut b);
    b
}

/// True for a repair packet's bytes.
fn is_repair(bytes: &[u8]) -> bool {
    bytes.first() == Some(&RH_OPCODE)
}
