// SPDX-License-Identifier: GPL-2.0
//! The FEC shim in the kernel (`proto::fec` codes and decodes): a QP's encoders (of its
//! requests, and of its responder's coded responses) and the repair packets they send to
//! its peer; its receiving halves (of the peer's requests, and of the peer's responses),
//! whose held packets are skbs, and the datagram of a packet a repair rebuilt.

use kernel::alloc::{flags::GFP_KERNEL, KBox, KVVec};
use kernel::prelude::*;

use crate::kx::netdevice::NetDev;
use crate::kx::skbuff::{IpAddrs, RoceRoute, SkBuff, TxSkb};
use crate::objects::ah::Av;
use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::proto::fec::decoder::{RepairOutcome, DEC_UNITS};
use crate::proto::fec::encoder::{Encoder, ENC_UNITS};
use crate::proto::fec::resp_rx::RespRx;
use crate::proto::fec::rx::{FecRx, HOLD_SLOTS};
use crate::proto::fec::{FecParams, RepairHeader, RhKind, FEC_MAX_PACKET};
use crate::proto::psn::Psn;
use crate::proto::wire::ip::{ipv4_checksum, RoceDatagram};
use crate::proto::wire::opcode::OpKind;
use crate::proto::wire::repair::RH_LEN;
use crate::proto::wire::{PacketRepr, ICRC_LEN};

/// A QP's encoder, its accumulators on the heap.
pub(crate) type KEncoder = Encoder<KVVec<u8>>;

/// The encoder of a QP whose peer QP is `dest_qpn`: of its requests, or of its
/// responder's coded responses (`responses`).
#[inline(never)]
pub(crate) fn new_encoder(
    params: FecParams,
    dest_qpn: u32,
    responses: bool,
) -> Result<KBox<KEncoder>> {
    let buf = KVVec::from_elem(0u8, ENC_UNITS * FEC_MAX_PACKET, GFP_KERNEL)?;
    let enc = if responses {
        Encoder::for_responses(params, dest_qpn, buf)
    } else {
        Encoder::new(params, dest_qpn, buf)
    };
    Ok(KBox::new(enc, GFP_KERNEL)?)
}

/// Where a QP's packets go: repairs go the same way as its data packets (addresses, UDP
/// source port, traffic class), as the ICRC of a rebuilt packet covers them.
#[derive(Clone, Copy)]
pub(crate) struct RepairPath<'a> {
    pub(crate) dev: &'a RoceDevice,
    pub(crate) nd: &'a NetDev,
    pub(crate) av: &'a Av,
    pub(crate) sport: u16,
}

impl RepairPath<'_> {
    /// Sends one repair or ask packet: its header, the XOR payload (none in an ask), an
    /// ICRC. One that cannot be sent is lost like any packet.
    pub(crate) fn send(&self, rh: &RepairHeader, payload: &[u8]) {
        let len = RH_LEN + payload.len() + ICRC_LEN;
        let fill = |ib: &mut [u8]| {
            rh.emit(ib, payload.len()).map_err(|_| ())?;
            let dst = ib.get_mut(RH_LEN..RH_LEN + payload.len()).ok_or(())?;
            if crate::bytes::copy(dst, payload) {
                Ok(())
            } else {
                Err(())
            }
        };
        let (dev, nd, av, sport) = (self.dev, self.nd, self.av, self.sport);
        let sent = crate::net::tx::send_with(
            dev,
            nd,
            av,
            sport,
            len,
            0..0,
            |_| Ok(()),
            fill,
            crate::net::tx::NO_TAP,
        );
        if sent.is_ok() {
            dev.counters().inc(match rh.kind {
                RhKind::Repair | RhKind::RespRepair => Counter::FecRepairsSent,
                RhKind::Ask | RhKind::RespAsk => Counter::FecAsksSent,
                RhKind::Take => Counter::FecTakesSent,
            });
        }
    }
}

/// The IPv4 Identification of the datagram whose IP header is `ip` (0 over IPv6, which
/// has none).
pub(crate) fn ip_id(ip: &[u8]) -> u16 {
    match ip {
        [b, _, _, _, hi, lo, ..] if b >> 4 == 4 => u16::from_be_bytes([*hi, *lo]),
        _ => 0,
    }
}

/// A QP's receiving side: decoder and held packets, in skbs.
pub(crate) type KFecRx = FecRx<SkBuff, KVVec<u8>, KVVec<Option<(SkBuff, u32)>>>;

/// The FEC shim's receiving half of a QP, and room for the packet a repair rebuilds.
pub(crate) struct FecRxState {
    pub(crate) rx: KFecRx,
    out: KVVec<u8>,
}

/// What a receiving half keeps: the decoder's accumulators, slots for the packets of two
/// of the largest blocks (an ask may move it to any parameters), and room for a rebuilt
/// packet.
type RxStorage = (KVVec<u8>, KVVec<Option<(SkBuff, u32)>>, KVVec<u8>);

fn rx_storage() -> Result<RxStorage> {
    let buf = KVVec::from_elem(0u8, DEC_UNITS * FEC_MAX_PACKET, GFP_KERNEL)?;
    let mut slots = KVVec::with_capacity(HOLD_SLOTS, GFP_KERNEL)?;
    for _ in 0..HOLD_SLOTS {
        slots.push(None, GFP_KERNEL)?;
    }
    let out = KVVec::from_elem(0u8, FEC_MAX_PACKET, GFP_KERNEL)?;
    Ok((buf, slots, out))
}

/// The receiving half of a device set to `params`, for requests in the `window` PSNs
/// from ePSN.
#[inline(never)]
pub(crate) fn new_fec_rx(params: FecParams, window: u32) -> Result<KBox<FecRxState>> {
    let (buf, slots, out) = rx_storage()?;
    Ok(KBox::new(
        FecRxState {
            rx: FecRx::new(params, window, buf, slots),
            out,
        },
        GFP_KERNEL,
    )?)
}

impl FecRxState {
    /// A repair (its datagram `d`, its ICRC checked) for this QP, whose responder expects
    /// `epsn`: the packet it rebuilds, as a received datagram from the same peer, to go
    /// through the receive checks.
    pub(crate) fn repair(
        &mut self,
        (dev, nd): (&RoceDevice, &NetDev),
        d: &RoceDatagram<'_>,
        (rh, payload): (&RepairHeader, &[u8]),
        epsn: Psn,
    ) -> Option<SkBuff> {
        let outcome = self.rx.on_repair(rh, payload, &mut self.out, epsn);
        rebuilt_datagram((dev, nd), d, outcome, &self.out)
    }

    /// Sends the peer QP `dest_qpn` the ask the receiving side has due, if any, its ePSN
    /// being `epsn`.
    pub(crate) fn send_ask(&mut self, path: &RepairPath<'_>, dest_qpn: u32, epsn: Psn) {
        if let Some((epoch, params)) = self.rx.take_ask() {
            path.send(&RepairHeader::ask(dest_qpn, epoch, params, epsn), &[]);
        }
    }
}

/// A requester's receiving side of the responses: decoder and held responses, in skbs.
pub(crate) type KRespRx = RespRx<SkBuff, KVVec<u8>, KVVec<Option<(SkBuff, u32)>>>;

/// The requester's receiving half of the FEC shim, and room for the response a repair
/// rebuilt.
pub(crate) struct RespRxState {
    pub(crate) rx: KRespRx,
    out: KVVec<u8>,
}

/// The requester's receiving half of a device set to `params`, for responses in the
/// `window` PSNs from UNACK.
#[inline(never)]
pub(crate) fn new_resp_rx(params: FecParams, window: u32) -> Result<KBox<RespRxState>> {
    let (buf, slots, out) = rx_storage()?;
    Ok(KBox::new(
        RespRxState {
            rx: RespRx::new(params, window, buf, slots),
            out,
        },
        GFP_KERNEL,
    )?)
}

impl RespRxState {
    /// A repair of responses (its datagram `d`, its ICRC checked) for this QP, whose
    /// requester waits for the response of PSN `owed`: the response it rebuilds, as a
    /// received datagram, to go through the receive checks.
    pub(crate) fn repair(
        &mut self,
        (dev, nd): (&RoceDevice, &NetDev),
        d: &RoceDatagram<'_>,
        (rh, payload): (&RepairHeader, &[u8]),
        owed: Option<Psn>,
    ) -> Option<SkBuff> {
        let outcome = self.rx.on_repair(rh, payload, &mut self.out, owed);
        rebuilt_datagram((dev, nd), d, outcome, &self.out)
    }

    /// Sends the peer QP `dest_qpn` the ask for its responses that is due, if any, the
    /// requester waiting for the response of PSN `owed`.
    pub(crate) fn send_ask(&mut self, path: &RepairPath<'_>, dest_qpn: u32, owed: Psn) {
        if let Some((epoch, params)) = self.rx.take_ask() {
            path.send(&RepairHeader::resp_ask(dest_qpn, epoch, params, owed), &[]);
        }
    }
}

/// Counts a repair that reached its QP and what it did (`outcome`): the packet it
/// rebuilt into `out`, as a datagram received from the sender of `d`.
fn rebuilt_datagram(
    (dev, nd): (&RoceDevice, &NetDev),
    d: &RoceDatagram<'_>,
    outcome: RepairOutcome,
    out: &[u8],
) -> Option<SkBuff> {
    let c = dev.counters();
    c.inc(Counter::FecRepairsRcvd);
    match outcome {
        RepairOutcome::Rebuilt { ip_id, len, .. } => {
            c.inc(Counter::FecRebuilt);
            received_datagram(nd, d, out.get(..len)?, ip_id)
        }
        RepairOutcome::Unrepairable { first: true } => {
            c.inc(Counter::FecUnrepairable);
            None
        }
        _ => None,
    }
}

/// A datagram as if received from the sender of `d` (its addresses and UDP source port),
/// carrying `ib` (BTH to ICRC) with IPv4 Identification `ip_id`: what the peer sent.
fn received_datagram(nd: &NetDev, d: &RoceDatagram<'_>, ib: &[u8], ip_id: u16) -> Option<SkBuff> {
    let ip = d.ip_header;
    let addrs = match ip.first().map(|b| b >> 4) {
        Some(4) => IpAddrs::V4 {
            saddr: crate::bytes::array(ip.get(12..16)?)?,
            daddr: crate::bytes::array(ip.get(16..20)?)?,
        },
        _ => IpAddrs::V6 {
            saddr: crate::bytes::array(ip.get(8..24)?)?,
            daddr: crate::bytes::array(ip.get(24..40)?)?,
            flow_label: 0,
        },
    };
    let udp = d.udp_header;
    let route = RoceRoute {
        addrs,
        sport: u16::from_be_bytes([*udp.first()?, *udp.get(1)?]),
        traffic_class: 0,
        ttl: 64,
        local: true,
    };
    let hdrs = route.header_len();
    let mut skb = TxSkb::new(nd, &route, ib.len(), 0..0, false).ok()?;
    let data = skb.data_mut();
    if !crate::bytes::copy(data.get_mut(hdrs..)?, ib) {
        return None;
    }
    if let IpAddrs::V4 { .. } = route.addrs {
        let h = data.get_mut(..20)?;
        h.get_mut(4..6)?.copy_from_slice(&ip_id.to_be_bytes());
        h.get_mut(10..12)?.copy_from_slice(&[0, 0]);
        let sum = ipv4_checksum(h);
        h.get_mut(10..12)?.copy_from_slice(&sum.to_be_bytes());
    }
    Some(skb.into_received())
}

/// The PSNs a request packet stands for: a READ request its responses', any other one.
pub(crate) fn span(p: &PacketRepr<'_>, pmtu: u32) -> u32 {
    match (p.bth.opcode.info().map(|i| i.kind), p.ext.reth) {
        (Some(OpKind::RdmaReadRequest), Some(r)) => r.dma_len.div_ceil(pmtu.max(1)).max(1),
        _ => 1,
    }
}
