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
use crate::proto::rc::{
    PayloadSrc, RcConfig, RcEnv, Service, TxError, ACK_COALESCE_PKTS, MAX_PKT_PER_ACK,
};
use crate::proto::wire::caps::CapAnswer;
use crate::proto::wire::ext_headers::{AtomicEth, Feth, Ieth, ImmDt, Reth};
use crate::proto::wire::sr_ext::{MsnEth, BTH_TVER_SR};
use crate::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr};
use crate::uabi::cqe::WcStatus;
use crate::uabi::send_wqe::{Payload, SendFlags, SendOp};

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

impl<S: DerefMut<Target = [SqEntry]>, E: DerefMut<Target = ReqSr>> Requester<S, E> {
    /// Builds and transmits packet `k` of entry `e` with BTH TVer and Resv7 `marks`.
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
        let PacketAt {
            k,
            next_follows,
            stops_after,
        } = at;
        let uc = cfg.service == Service::Uc;
        let marks = if uc {
            CapAnswer { tver: 0, resv7: 0 }
        } else {
            marks
        };
        let sr = marks.tver == BTH_TVER_SR;
        let msn_eth = sr.then_some(MsnEth {
            msn: e.msn,
            offset: k,
        });
        let psn = e.first_psn.add(k);
        let n = e.npsn;
        let first = k == 0;
        let last = k + 1 >= n;
        let off = k.saturating_mul(pmtu);
        let mut ext = ExtHeaders::default();
        let mut se = false;
        // The last packet asks for an acknowledgment unless the next message follows at
        // once and its packets (or a later one) will ask within ACK_COALESCE_PKTS.
        let mut ack_req = stops_after
            || last && !(next_follows && noack_pkts.saturating_add(1) < ACK_COALESCE_PKTS);
        let (opcode, plen, used) = match e.wqe.op {
            SendOp::RdmaRead { .. } => {
                // A (re)sent READ asks for what has not arrived yet: `k` whole packets did.
                *noack_pkts = 0;
                let len = e.wqe.length.saturating_sub(off);
                Self::send_read_request(env, cfg, pmtu, e, k, len, marks)?;
                return Ok((true, n - k));
            }
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
                ack_req = true;
                (Opcode::RC_COMPARE_SWAP, 0, 1)
            }
            SendOp::AtomicWrite { remote, value } => {
                // IBTA 1.5 ATOMIC WRITE: 8 bytes placed as one unit, acknowledged like a WRITE.
                ext.reth = Some(Reth {
                    va: remote.addr,
                    rkey: remote.rkey,
                    dma_len: 8,
                });
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
                    ext,
                    payload: &[],
                };
                request_sent(env.transmit(&hdr, PayloadSrc::Bytes(&value), 8))?;
                *noack_pkts = 0;
                return Ok((true, 1));
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
                ack_req = true;
                (Opcode::RC_FLUSH, 0, 1)
            }
            SendOp::AtomicFetchAndAdd { remote, add } => {
                ext.atomic_eth = Some(AtomicEth {
                    va: remote.addr,
                    rkey: remote.rkey,
                    swap_add: add,
                    compare: 0,
                });
                ack_req = true;
                (Opcode::RC_FETCH_ADD, 0, 1)
            }
            op => {
                let plen = e.wqe.length.saturating_sub(off).min(pmtu);
                let write = matches!(
                    op,
                    SendOp::RdmaWrite { .. } | SendOp::RdmaWriteWithImm { .. }
                );
                if let SendOp::RdmaWrite { remote } | SendOp::RdmaWriteWithImm { remote, .. } = op {
                    // SR: every packet names its own bytes.
                    if first || sr {
                        ext.reth = Some(Reth {
                            va: remote.addr.wrapping_add(u64::from(off)),
                            rkey: remote.rkey,
                            dma_len: e.wqe.length,
                        });
                    }
                }
                if !write {
                    ext.msn_eth = msn_eth;
                }
                let imm = match op {
                    SendOp::SendWithImm { imm } | SendOp::RdmaWriteWithImm { imm, .. } if last => {
                        Some(imm)
                    }
                    _ => None,
                };
                if let Some(imm) = imm {
                    ext.imm_dt = Some(ImmDt {
                        data: u32::from_be_bytes(imm),
                    });
                    ext.msn_eth = msn_eth;
                }
                let inv = match op {
                    SendOp::SendWithInv { invalidate_rkey } if last => Some(invalidate_rkey),
                    _ => None,
                };
                if let Some(rkey) = inv {
                    ext.ieth = Some(Ieth { rkey });
                }
                if last && (!write || imm.is_some()) {
                    se = e.wqe.flags.contains(SendFlags::SOLICITED);
                }
                let base = match (write, first, last) {
                    (false, true, true) => 0x04,
                    (false, true, false) => 0x00,
                    (false, false, false) => 0x01,
                    (false, false, true) => 0x02,
                    (true, true, true) => 0x0a,
                    (true, true, false) => 0x06,
                    (true, false, false) => 0x07,
                    (true, false, true) => 0x08,
                };
                // Immediate / invalidate variants of LAST (+1 / 0x16) and ONLY (+1 / 0x17).
                let code = match (imm.is_some(), inv.is_some(), last) {
                    (true, _, true) => base + 1,
                    (_, true, true) if first => 0x17,
                    (_, true, true) => 0x16,
                    _ => base,
                };
                let code = if uc { code | 0x20 } else { code };
                (Opcode(code), plen, 1)
            }
        };
        // The count moves only once the packet is out: a refused packet asks again.
        ack_req |= noack_pkts.saturating_add(1) >= MAX_PKT_PER_ACK;
        let hdr = PacketRepr {
            bth: BthRepr {
                opcode,
                se,
                pad_cnt: BthRepr::pad_for(plen as usize),
                dest_qpn: cfg.dest_qpn,
                ack_req: ack_req && !uc,
                psn,
                tver: marks.tver,
                resv7: marks.resv7,
                ..Default::default()
            },
            ext,
            payload: &[],
        };
        let src = match &e.wqe.payload {
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
        };
        request_sent(env.transmit(&hdr, src, plen))?;
        *noack_pkts = if ack_req { 0 } else { *noack_pkts + 1 };
        let done = last || matches!(e.wqe.op, SendOp::RdmaRead { .. });
        Ok((done, used))
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
