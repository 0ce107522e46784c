// SPDX-License-Identifier: GPL-2.0
//! Building and transmitting one request packet of a send queue entry (IBTA 9.7.4.1;
//! rdma_rxe's init_req_packet): the opcode for its place in the message, the RETH,
//! AtomicETH, ImmDt and IETH, the payload source, and the AckReq bit (set at least every
//! [`MAX_PKT_PER_ACK`] packets, and on a message's last packet unless the next message
//! follows within [`ACK_COALESCE_PKTS`]). In the SR format (BTH TVer = 1) a SEND packet also carries
//! its MSN-ETH (the receive WQE's number and the packet's offset), every RDMA WRITE packet
//! the RETH of its own bytes, a WRITE's last packet with immediate its MSN-ETH, and a READ
//! request its READ number; while probing, BTH Resv7 carries the SR capability.

use core::ops::DerefMut;

use super::ReqSr;
use super::Requester;
use super::SqEntry;
use crate::proto::psn::Psn;
use crate::proto::rc::{
    PayloadSrc, RcConfig, RcEnv, Service, TxError, ACK_COALESCE_PKTS, MAX_PKT_PER_ACK,
};
use crate::proto::wire::caps::CapAnswer;
use crate::proto::wire::ext_headers::{AtomicEth, Feth, Ieth, ImmDt, Reth};
use crate::proto::wire::opcode::Position;
use crate::proto::wire::sr_ext::{MsnEth, BTH_TVER_SR};
use crate::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr};
use crate::proto::words::WindowWords;
use crate::uabi::cqe::WcStatus;
use crate::uabi::send_wqe::{ImmData, Payload, Remote, SendFlags, SendOp};

/// Why a request packet was not sent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum PacketError {
    /// The work request fails with this status.
    Failed(WcStatus),
    /// The egress queue was full ([`TxError::Busy`]): the same packet goes again later.
    Busy,
}

impl From<WcStatus> for PacketError {
    fn from(s: WcStatus) -> Self {
        PacketError::Failed(s)
    }
}

/// What `transmit` said, for a request packet: lost packets are the peer's to detect, a
/// refused one is offered again.
fn request_sent(r: Result<(), TxError>) -> Result<(), PacketError> {
    match r {
        Ok(()) | Err(TxError::Dropped) => Ok(()),
        Err(TxError::Busy) => Err(PacketError::Busy),
        Err(TxError::Local(s)) => Err(PacketError::Failed(s)),
    }
}

/// Which packet of a send queue entry to send: its index `k` in the message, whether the
/// next message follows it at once (then its last packet may go without AckReq), and
/// whether the stream stops after it inside its message (the device's in-flight budget
/// refused the next PSNs: it asks for an acknowledgment).
pub(super) struct PacketAt {
    pub(super) k: u32,
    pub(super) next_follows: bool,
    pub(super) stops_after: bool,
}

/// What the last packet of a SEND or RDMA WRITE carries besides its payload.
#[derive(Clone, Copy)]
enum Tail {
    /// Nothing (every packet but the last, and the last of a plain SEND or WRITE).
    Plain,
    /// Immediate data (ImmDt): SEND or WRITE with immediate.
    Imm(ImmData),
    /// The R_Key to invalidate (IETH): SEND with invalidate.
    Inv(u32),
}

/// One request packet's BTH opcode and SE bit, extension headers and payload length, as
/// its work request and its place in the message make them.
struct ReqHeaders {
    opcode: Opcode,
    se: bool,
    ext: ExtHeaders,
    /// Payload bytes.
    plen: u32,
    /// The operation asks for an acknowledgment on every packet (atomics, FLUSH).
    ack_req: bool,
}

/// The packet's place in its message.
fn position(first: bool, last: bool) -> Position {
    match (first, last) {
        (true, true) => Position::Only,
        (true, false) => Position::First,
        (false, false) => Position::Middle,
        (false, true) => Position::Last,
    }
}

/// The opcode of a SEND (`write` false) or RDMA WRITE packet at `pos` whose message ends
/// with `tail`, on RC or (`uc`) UC (IBTA 9.2, rdma_rxe's next_opcode). UC has no SEND
/// with invalidate ([`Requester::post_vacant`] refuses it): that row has no UC column.
fn send_write_opcode(write: bool, pos: Position, tail: Tail, uc: bool) -> Opcode {
    use Opcode as O;
    use Position::*;
    let (rc_op, uc_op) = match (write, pos, tail) {
        (false, First, _) => (O::RC_SEND_FIRST, Some(O::UC_SEND_FIRST)),
        (false, Middle, _) => (O::RC_SEND_MIDDLE, Some(O::UC_SEND_MIDDLE)),
        (false, Last, Tail::Plain) => (O::RC_SEND_LAST, Some(O::UC_SEND_LAST)),
        (false, Last, Tail::Imm(_)) => (
            O::RC_SEND_LAST_WITH_IMMEDIATE,
            Some(O::UC_SEND_LAST_WITH_IMMEDIATE),
        ),
        (false, Last, Tail::Inv(_)) => (O::RC_SEND_LAST_WITH_INVALIDATE, None),
        (false, Only, Tail::Plain) => (O::RC_SEND_ONLY, Some(O::UC_SEND_ONLY)),
        (false, Only, Tail::Imm(_)) => (
            O::RC_SEND_ONLY_WITH_IMMEDIATE,
            Some(O::UC_SEND_ONLY_WITH_IMMEDIATE),
        ),
        (false, Only, Tail::Inv(_)) => (O::RC_SEND_ONLY_WITH_INVALIDATE, None),
        (true, First, _) => (O::RC_RDMA_WRITE_FIRST, Some(O::UC_RDMA_WRITE_FIRST)),
        (true, Middle, _) => (O::RC_RDMA_WRITE_MIDDLE, Some(O::UC_RDMA_WRITE_MIDDLE)),
        (true, Last, Tail::Imm(_)) => (
            O::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
            Some(O::UC_RDMA_WRITE_LAST_WITH_IMMEDIATE),
        ),
        (true, Last, _) => (O::RC_RDMA_WRITE_LAST, Some(O::UC_RDMA_WRITE_LAST)),
        (true, Only, Tail::Imm(_)) => (
            O::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
            Some(O::UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE),
        ),
        (true, Only, _) => (O::RC_RDMA_WRITE_ONLY, Some(O::UC_RDMA_WRITE_ONLY)),
    };
    match uc_op {
        Some(u) if uc => u,
        _ => rc_op,
    }
}

/// The headers of packet `k` of a SEND or RDMA WRITE entry `e` (rdma_rxe's
/// init_req_packet): a WRITE's RETH on its first packet (in the SR format on every one,
/// naming its own bytes), a SEND's MSN-ETH, and on the last packet the ImmDt (with the
/// MSN-ETH), the IETH and the SE bit.
fn send_write_headers(e: &SqEntry, k: u32, pmtu: u32, sr: bool, uc: bool) -> ReqHeaders {
    let (first, last) = (k == 0, k + 1 >= e.npsn);
    let off = k.saturating_mul(pmtu);
    let msn_eth = sr.then_some(MsnEth {
        msn: e.msn,
        offset: k,
    });
    let (remote, tail) = match e.wqe.op {
        SendOp::RdmaWrite { remote } => (Some(remote), Tail::Plain),
        SendOp::RdmaWriteWithImm { remote, imm } => (Some(remote), Tail::Imm(imm)),
        SendOp::SendWithImm { imm } => (None, Tail::Imm(imm)),
        SendOp::SendWithInv { invalidate_rkey } => (None, Tail::Inv(invalidate_rkey)),
        _ => (None, Tail::Plain),
    };
    let tail = if last { tail } else { Tail::Plain };
    let mut ext = ExtHeaders::default();
    match remote {
        // SR: every packet names its own bytes.
        Some(remote) if first || sr => {
            ext.reth = Some(Reth {
                va: remote.addr.wrapping_add(u64::from(off)),
                rkey: remote.rkey,
                dma_len: e.wqe.length,
            });
        }
        Some(_) => {}
        None => ext.msn_eth = msn_eth,
    }
    match tail {
        Tail::Imm(imm) => {
            ext.imm_dt = Some(ImmDt {
                data: u32::from_be_bytes(imm),
            });
            ext.msn_eth = msn_eth;
        }
        Tail::Inv(rkey) => ext.ieth = Some(Ieth { rkey }),
        Tail::Plain => {}
    }
    let write = remote.is_some();
    let se = last
        && (!write || matches!(tail, Tail::Imm(_)))
        && e.wqe.flags.contains(SendFlags::SOLICITED);
    ReqHeaders {
        opcode: send_write_opcode(write, position(first, last), tail, uc),
        se,
        ext,
        plen: e.wqe.length.saturating_sub(off).min(pmtu),
        ack_req: false,
    }
}

/// The headers of packet `k` of entry `e` but a READ's or an ATOMIC WRITE's (sent by
/// their own steps): an atomic's AtomicETH, a FLUSH's FETH and RETH (one packet each,
/// no payload, always acknowledged), or a SEND's or WRITE's.
fn request_headers(e: &SqEntry, k: u32, pmtu: u32, sr: bool, uc: bool) -> ReqHeaders {
    let mut ext = ExtHeaders::default();
    let opcode = match e.wqe.op {
        SendOp::AtomicCmpAndSwp {
            remote,
            compare,
            swap,
        } => {
            ext.atomic_eth = Some(AtomicEth {
                va: remote.addr,
                rkey: remote.rkey,
                swap_add: swap,
                compare,
            });
            Opcode::RC_COMPARE_SWAP
        }
        SendOp::Flush {
            remote,
            placement_type,
            level,
        } => {
            // IBTA 1.5 FLUSH: a FETH and a RETH (the range, unused for a whole-region
            // FLUSH), no payload; acknowledged like a WRITE.
            ext.feth = Some(Feth::new(level, placement_type));
            ext.reth = Some(Reth {
                va: remote.addr,
                rkey: remote.rkey,
                dma_len: e.wqe.length,
            });
            Opcode::RC_FLUSH
        }
        SendOp::AtomicFetchAndAdd { remote, add } => {
            ext.atomic_eth = Some(AtomicEth {
                va: remote.addr,
                rkey: remote.rkey,
                swap_add: add,
                compare: 0,
            });
            Opcode::RC_FETCH_ADD
        }
        _ => return send_write_headers(e, k, pmtu, sr, uc),
    };
    ReqHeaders {
        opcode,
        se: false,
        ext,
        plen: 0,
        ack_req: true,
    }
}

/// Whether a packet asks for an acknowledgment (AckReq), `noack_pkts` packets having gone
/// without: where the stream stops inside a message; on a message's last packet unless
/// the next message follows at once and its packets (or a later one) will ask within
/// [`ACK_COALESCE_PKTS`]; and at least every [`MAX_PKT_PER_ACK`] packets.
fn wants_ack(at: &PacketAt, last: bool, noack_pkts: u32) -> bool {
    let count = noack_pkts.saturating_add(1);
    at.stops_after
        || last && !(at.next_follows && count < ACK_COALESCE_PKTS)
        || count >= MAX_PKT_PER_ACK
}

/// The payload of a request packet: `plen` bytes from byte `off` of entry `e`'s inline
/// data or SGEs (inline data too short fails the request with LOC_LEN_ERR).
fn payload_src(e: &SqEntry, off: u32, plen: u32) -> Result<PayloadSrc<'_>, PacketError> {
    Ok(match &e.wqe.payload {
        _ if plen == 0 => PayloadSrc::None,
        Payload::Inline(d) => {
            let s = d.as_slice();
            let a = off as usize;
            let b = a.saturating_add(plen as usize);
            PayloadSrc::Bytes(s.get(a..b).ok_or(WcStatus::LocLenErr)?)
        }
        Payload::Sges(list) => PayloadSrc::Local {
            sges: list,
            offset: off,
        },
        Payload::None => PayloadSrc::None,
    })
}

/// Sends an IBTA 1.5 ATOMIC WRITE at `psn`: 8 bytes placed as one unit, its RETH naming
/// them, acknowledged like a WRITE.
fn send_atomic_write(
    env: &mut dyn RcEnv,
    cfg: &RcConfig,
    psn: Psn,
    marks: CapAnswer,
    remote: Remote,
    value: &[u8; 8],
) -> Result<(), PacketError> {
    let hdr = PacketRepr {
        bth: BthRepr {
            opcode: Opcode::RC_ATOMIC_WRITE,
            dest_qpn: cfg.dest_qpn,
            ack_req: true,
            psn,
            tver: marks.tver,
            resv7: marks.resv7,
            ..Default::default()
        },
        ext: ExtHeaders {
            reth: Some(Reth {
                va: remote.addr,
                rkey: remote.rkey,
                dma_len: 8,
            }),
            ..Default::default()
        },
        payload: &[],
    };
    request_sent(env.transmit(&hdr, PayloadSrc::Bytes(value), 8))
}

impl<S: DerefMut<Target = [SqEntry]>, B: WindowWords, E: DerefMut<Target = ReqSr<B>>>
    Requester<S, E>
{
    /// Builds and transmits packet `k` of entry `e` with BTH TVer and Resv7 `marks` (UC:
    /// the FEC shim's alone, `uc_marks`), and counts the packets sent without AckReq. A
    /// READ goes as one request for the rest of its responses, an ATOMIC WRITE by its own step.
    /// Returns (the entry is fully sent, PSNs this packet accounts for).
    pub(super) fn send_packet(
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        pmtu: u32,
        noack_pkts: &mut u32,
        e: &SqEntry,
        at: PacketAt,
        marks: CapAnswer,
    ) -> Result<(bool, u32), PacketError> {
        let uc = cfg.service == Service::Uc;
        let (k, psn) = (at.k, e.first_psn.add(at.k));
        match e.wqe.op {
            SendOp::RdmaRead { .. } => {
                // A (re)sent READ asks for what has not arrived yet: `k` whole packets did.
                *noack_pkts = 0;
                let len = e.wqe.length.saturating_sub(k.saturating_mul(pmtu));
                Self::send_read_request(env, cfg, pmtu, e, k, len, marks)?;
                return Ok((true, e.npsn - k));
            }
            SendOp::AtomicWrite { remote, value } => {
                send_atomic_write(env, cfg, psn, marks, remote, &value)?;
                *noack_pkts = 0;
                return Ok((true, 1));
            }
            _ => {}
        }
        let last = k + 1 >= e.npsn;
        let h = request_headers(e, k, pmtu, marks.tver == BTH_TVER_SR, uc);
        // The count moves only once the packet is out: a refused packet asks again.
        let ack_req = h.ack_req || wants_ack(&at, last, *noack_pkts);
        let hdr = PacketRepr {
            bth: BthRepr {
                opcode: h.opcode,
                se: h.se,
                pad_cnt: BthRepr::pad_for(h.plen as usize),
                dest_qpn: cfg.dest_qpn,
                ack_req: ack_req && !uc,
                psn,
                tver: marks.tver,
                resv7: marks.resv7,
                ..Default::default()
            },
            ext: h.ext,
            payload: &[],
        };
        let src = payload_src(e, k.saturating_mul(pmtu), h.plen)?;
        request_sent(env.transmit(&hdr, src, h.plen))?;
        *noack_pkts = if ack_req { 0 } else { *noack_pkts + 1 };
        Ok((last, 1))
    }

    /// Sends the READ request of entry `e` for `len` bytes from its response packet `k`
    /// (the whole READ, its rest, or in the SR format one hole).
    pub(super) fn send_read_request(
        env: &mut dyn RcEnv,
        cfg: &RcConfig,
        pmtu: u32,
        e: &SqEntry,
        k: u32,
        len: u32,
        marks: CapAnswer,
    ) -> Result<(), PacketError> {
        let SendOp::RdmaRead { remote } = e.wqe.op else {
            return Ok(());
        };
        let off = k.saturating_mul(pmtu);
        let hdr = PacketRepr {
            bth: BthRepr {
                opcode: Opcode::RC_RDMA_READ_REQUEST,
                dest_qpn: cfg.dest_qpn,
                ack_req: true,
                psn: e.first_psn.add(k),
                tver: marks.tver,
                resv7: marks.resv7,
                ..Default::default()
            },
            ext: ExtHeaders {
                reth: Some(Reth {
                    va: remote.addr.wrapping_add(u64::from(off)),
                    rkey: remote.rkey,
                    dma_len: len,
                }),
                msn_eth: (marks.tver == BTH_TVER_SR).then_some(MsnEth {
                    msn: e.msn,
                    offset: k,
                }),
                ..Default::default()
            },
            payload: &[],
        };
        request_sent(env.transmit(&hdr, PayloadSrc::None, 0))
    }
}
