// SPDX-License-Identifier: GPL-2.0
//! One UD message (IBTA 9.8.3, 11.4.1.2), either way. Sending: a SEND work request becomes
//! one SEND_ONLY packet with a DETH (the Q_Key and our QPN) and, for SEND_WITH_IMM, an
//! ImmDt; no acknowledgement, no retransmission: a UD send completes once the packet is
//! handed to the IP layer. Receiving: the GRH area and the message are scattered into the
//! receive WQE's buffers. The QP around both (its ring or kernel queue, its state,
//! completions) is [`ud_qp`](super::ud_qp)'s.

use kernel::alloc::{flags::GFP_KERNEL, KVec};
use kernel::prelude::*;

use crate::kx::ib_pd::PdId;
use crate::kx::netdevice::NetDev;
use crate::objects::ah::Av;
use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::objects::mr_access;
use crate::objects::qp::QpAttrs;
use crate::uabi::cqe::WcStatus;
use crate::uabi::recv_wqe::RecvWqe;
use crate::uabi::send_wqe::{Payload, SendFlags, SendOp, SendWqe};

use crate::bytes;
use crate::proto::psn::Psn;
use crate::proto::wire::ext_headers::{Deth, ImmDt};
use crate::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr};

/// The IBTA default P_Key (full membership).
const DEFAULT_PKEY: u16 = 0xffff;

/// One UD SEND.
pub(crate) struct UdSend<'a> {
    /// Destination QPN.
    pub(crate) dest_qpn: u32,
    /// Q_Key for the DETH.
    pub(crate) qkey: u32,
    /// Our QPN (DETH SrcQP).
    pub(crate) src_qpn: u32,
    /// The packet's PSN.
    pub(crate) psn: Psn,
    /// Solicited event.
    pub(crate) se: bool,
    /// Immediate data (network order), for SEND_WITH_IMM.
    pub(crate) imm: Option<[u8; 4]>,
    /// The message.
    pub(crate) payload: &'a [u8],
}

/// The packet's bytes, BTH .. ICRC (the ICRC left zero for the sender to fill).
pub(crate) fn build(s: &UdSend<'_>) -> Result<KVec<u8>> {
    let opcode = if s.imm.is_some() {
        Opcode::UD_SEND_ONLY_WITH_IMMEDIATE
    } else {
        Opcode::UD_SEND_ONLY
    };
    let repr = PacketRepr {
        bth: BthRepr {
            opcode,
            se: s.se,
            pad_cnt: BthRepr::pad_for(s.payload.len()),
            pkey: DEFAULT_PKEY,
            dest_qpn: s.dest_qpn,
            psn: s.psn,
            ..Default::default()
        },
        ext: ExtHeaders {
            deth: Some(Deth {
                qkey: s.qkey,
                resv8: 0,
                src_qpn: s.src_qpn,
            }),
            imm_dt: s.imm.map(|d| ImmDt {
                data: u32::from_be_bytes(d),
            }),
            ..Default::default()
        },
        payload: s.payload,
    };
    let mut buf = KVec::from_elem(0u8, repr.buffer_len(), GFP_KERNEL)?;
    // `buffer_len` is exactly what `emit` writes.
    repr.emit(&mut buf).map_err(|_| EINVAL)?;
    Ok(buf)
}

/// Sends one UD (or GSI) work request to `av` (the caller resolved its AH, on the QP's PD):
/// the payload gathered from its MRs or taken inline, at most one path MTU.
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_one(
    dev: &RoceDevice,
    pd: PdId,
    qpn: u32,
    attrs: &mut QpAttrs,
    wqe: &SendWqe,
    av: &Av,
    mtu: u32,
    nd: &NetDev,
) -> core::result::Result<(), WcStatus> {
    let ud = wqe.ud.ok_or(WcStatus::LocQpOpErr)?;
    if wqe.length > mtu {
        return Err(WcStatus::LocLenErr);
    }
    let len = usize::try_from(wqe.length).map_err(|_| WcStatus::LocLenErr)?;
    let mut payload = KVec::from_elem(0u8, len, GFP_KERNEL).map_err(|_| WcStatus::LocQpOpErr)?;
    match &wqe.payload {
        Payload::Inline(d) => {
            let src = d.as_slice();
            if !bytes::copy(
                payload.get_mut(..src.len()).ok_or(WcStatus::LocLenErr)?,
                src,
            ) {
                return Err(WcStatus::LocLenErr);
            }
        }
        Payload::Sges(list) => {
            let mut at = 0usize;
            for sge in list.as_slice() {
                let n = usize::try_from(sge.length).map_err(|_| WcStatus::LocLenErr)?;
                let end = at.checked_add(n).ok_or(WcStatus::LocLenErr)?;
                let dst = payload.get_mut(at..end).ok_or(WcStatus::LocLenErr)?;
                mr_access::gather(dev, pd, sge.lkey, sge.addr, dst)?;
                at = end;
            }
        }
        Payload::None => {}
    }
    let imm = match wqe.op {
        SendOp::SendWithImm { imm } => Some(imm),
        _ => None,
    };
    // IBTA 10.2.5: a Q_Key with the high bit set means "use the QP's own".
    let qkey = if ud.remote_qkey & 0x8000_0000 != 0 {
        attrs.qkey
    } else {
        ud.remote_qkey
    };
    let psn = Psn::new(attrs.sq_psn);
    attrs.sq_psn = psn.next().get();
    let pkt = build(&UdSend {
        dest_qpn: ud.remote_qpn,
        qkey,
        src_qpn: qpn,
        psn,
        se: wqe.flags.contains(SendFlags::SOLICITED),
        imm,
        payload: &payload,
    })
    .map_err(|_| WcStatus::LocQpOpErr)?;
    let sport = 0xc000 | (qpn & 0x3fff) as u16;
    crate::net::tx::send(dev, nd, av, sport, &pkt).map_err(|_| WcStatus::LocQpOpErr)?;
    dev.counters().inc(Counter::RdmaSends);
    Ok(())
}

/// The 40 bytes in front of a UD message in the receive buffer (IBTA 11.4.1.2: the GRH, or
/// for RoCEv2 over IPv4 20 zero bytes then the IPv4 header, as rdma_rxe writes it).
pub(crate) fn grh_area(ip_header: &[u8]) -> [u8; 40] {
    let mut g = [0u8; 40];
    match ip_header.len() {
        40 => {
            let _ = bytes::copy(&mut g, ip_header);
        }
        n if n >= 20 => {
            if let (Some(dst), Some(src)) = (g.get_mut(20..), ip_header.get(..20)) {
                let _ = bytes::copy(dst, src);
            }
        }
        _ => {}
    }
    g
}

/// Writes `parts` one after the other across the WQE's scatter list.
pub(crate) fn scatter_all(
    dev: &RoceDevice,
    pd: PdId,
    wqe: &RecvWqe,
    parts: &[&[u8]],
) -> core::result::Result<(), WcStatus> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    if u64::try_from(total).map_err(|_| WcStatus::LocLenErr)? > u64::from(wqe.length) {
        return Err(WcStatus::LocLenErr);
    }
    let mut at = 0u64;
    for part in parts {
        wqe.sges.pieces(at, part.len(), |s, addr, r| {
            mr_access::scatter(
                dev,
                pd,
                s.lkey,
                addr,
                part.get(r).ok_or(WcStatus::LocLenErr)?,
            )
        })?;
        at += part.len() as u64;
    }
    Ok(())
}
