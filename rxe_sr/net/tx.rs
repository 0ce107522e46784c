// SPDX-License-Identifier: GPL-2.0
//! Sending RoCEv2 datagrams: `kx::skbuff` routes and builds the IP/UDP headers, the caller
//! writes the IB bytes straight into the skb (or has the payload's pages attached to it,
//! by reference), rxe_sr fills the ICRC with `proto::wire::icrc` (over the kernel's
//! `crc32_le`), and the IP layer sends it. A packet to our own address goes to the
//! device's receive work instead (loopback, as rdma_rxe's).

use kernel::prelude::*;

use crate::kx::netdevice::NetDev;
use crate::kx::rxe::icrc::KernelCrc32;
use crate::kx::rxe::moduleparam;
use crate::kx::skbuff::{IpAddrs, PayloadSink, RoceRoute, TxSkb};
use crate::objects::ah::{Av, Network};
use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::proto::wire::icrc::{self, Crc32, ICRC_LEN};

/// Sends `ib` (BTH .. ICRC, the ICRC's four bytes to be filled) to `av` from `dev`'s
/// netdev `nd`, over IPv4 or IPv6 as the AV's GIDs say. A packet sent is counted here
/// (`sent_pkts`, `sent_bytes`, `sent_mcast_pkts`).
pub(crate) fn send(dev: &RoceDevice, nd: &NetDev, av: &Av, sport: u16, ib: &[u8]) -> Result {
    let copy = |out: &mut [u8]| {
        if crate::bytes::copy(out, ib) {
            Ok(())
        } else {
            Err(EINVAL)
        }
    };
    send_with(dev, nd, av, sport, ib.len(), 0..0, |_| Ok(()), copy, NO_TAP).map_err(Error::from)
}

/// The IP and UDP fields of a datagram to `av`.
fn route(av: &Av, sport: u16) -> RoceRoute {
    let addrs = match (av.network, av.ipv4()) {
        (Network::V4, Some((saddr, daddr))) => IpAddrs::V4 { saddr, daddr },
        _ => IpAddrs::V6 {
            saddr: av.sgid,
            daddr: av.dgid,
            flow_label: av.flow_label,
        },
    };
    RoceRoute {
        addrs,
        sport,
        traffic_class: av.traffic_class,
        ttl: if av.hop_limit == 0 { 64 } else { av.hop_limit },
        local: av.is_loopback(),
    }
}

/// A tap of [`send_with`] that is a plain function (the type of [`NO_TAP`]).
type TapFn = fn(&[u8], &[u8]);

/// No tap, for [`send_with`]'s callers that need none.
pub(crate) const NO_TAP: Option<TapFn> = None;

/// The least payload sent by reference: below it, attaching pages costs more than the copy.
const BY_REF_MIN: usize = 512;

/// As [`send`], for a packet of `len` IB bytes written straight into the skb, with no
/// intermediate copy: `fill_payload` appends the payload (the IB bytes in `payload`)
/// through a [`PayloadSink`], `fill` writes the IB bytes before the payload (the headers;
/// it is given all the IB bytes of a linear datagram, zeroed but for the payload, or only
/// those before the payload), and the ICRC is filled last. With a `tap`, the datagram is
/// linear and the tap sees it finished (its IP header and IB bytes) before it goes; without
/// one, a payload of at least [`BY_REF_MIN`] bytes goes by reference when `tx_zero_copy`
/// is on (the memory's pages attached, see [`TxSkb`]), and linear when the skb's fragment
/// slots run out. `fill_payload` and `fill` may thus run twice.
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_with<E>(
    dev: &RoceDevice,
    nd: &NetDev,
    av: &Av,
    sport: u16,
    len: usize,
    payload: core::ops::Range<usize>,
    mut fill_payload: impl FnMut(&mut PayloadSink<'_>) -> core::result::Result<(), E>,
    mut fill: impl FnMut(&mut [u8]) -> core::result::Result<(), E>,
    tap: Option<impl FnOnce(&[u8], &[u8])>,
) -> core::result::Result<(), SendError<E>> {
    let route = route(av, sport);
    let by_ref = tap.is_none() && payload.len() >= BY_REF_MIN && moduleparam::tx_zero_copy();
    let skb = if by_ref {
        build_by_ref(
            nd,
            &route,
            len,
            payload.clone(),
            &mut fill_payload,
            &mut fill,
        )?
    } else {
        None
    };
    let skb = match skb {
        Some(skb) => skb,
        None => build_linear(nd, &route, len, payload, fill_payload, fill, tap)?,
    };
    let mcast = av.is_multicast();
    let sent_by_ref = skb.by_ref();
    if route.local {
        sent(dev, len, mcast, sent_by_ref);
        dev.counters().inc(Counter::RcvdPkts);
        super::queue_rx(dev, skb.into_received());
        return Ok(());
    }
    skb.xmit().map_err(SendError::Net)?;
    sent(dev, len, mcast, sent_by_ref);
    Ok(())
}

/// The datagram of [`send_with`], linear: the payload copied in, the tap run.
fn build_linear<E>(
    nd: &NetDev,
    route: &RoceRoute,
    len: usize,
    payload: core::ops::Range<usize>,
    fill_payload: impl FnOnce(&mut PayloadSink<'_>) -> core::result::Result<(), E>,
    fill: impl FnOnce(&mut [u8]) -> core::result::Result<(), E>,
    tap: Option<impl FnOnce(&[u8], &[u8])>,
) -> core::result::Result<TxSkb, SendError<E>> {
    let hdrs = route.header_len();
    let mut skb = TxSkb::new(nd, route, len, payload, false).map_err(SendError::Net)?;
    let left = skb
        .fill_payload(0, |sink| fill_payload(sink).map(|()| sink.remaining()))
        .map_err(SendError::Fill)?;
    if left != 0 {
        // A writer that stopped short (never sent: its rest would go as zeros).
        return Err(SendError::Net(EINVAL));
    }
    // The datagram: the IP and UDP headers the builder wrote, then the IB bytes.
    let data = skb.data_mut();
    match data.get_mut(hdrs..) {
        Some(ib) if ib.len() == len => fill(ib).map_err(SendError::Fill)?,
        _ => return Err(SendError::Net(EINVAL)),
    }
    // Split the datagram into its IP header, UDP header and IB bytes, then fill the ICRC.
    let (head, ib_bytes) = data.split_at_mut(hdrs);
    let (ip, udp) = head.split_at(hdrs - 8);
    icrc::fill_with::<KernelCrc32>(ip, udp, ib_bytes).map_err(|_| SendError::Net(EINVAL))?;
    if let Some(tap) = tap {
        tap(ip, ib_bytes);
    }
    Ok(skb)
}

/// The datagram of [`send_with`] by reference: the headers written, the payload attached
/// with the ICRC's CRC carried over it, then the pad and ICRC. `None`: the fragment slots
/// ran out (the caller builds it linear).
fn build_by_ref<E>(
    nd: &NetDev,
    route: &RoceRoute,
    len: usize,
    payload: core::ops::Range<usize>,
    fill_payload: &mut impl FnMut(&mut PayloadSink<'_>) -> core::result::Result<(), E>,
    fill: &mut impl FnMut(&mut [u8]) -> core::result::Result<(), E>,
) -> core::result::Result<Option<TxSkb>, SendError<E>> {
    let hdrs = route.header_len();
    let tail_len = len.saturating_sub(payload.end);
    let mut skb = TxSkb::new(nd, route, len, payload, true).map_err(SendError::Net)?;
    let data = skb.data_mut();
    let (head, ib_head) = data.split_at_mut(hdrs);
    fill(ib_head).map_err(SendError::Fill)?;
    let (ip, udp) = head.split_at(hdrs - 8);
    let crc =
        icrc::state_with::<KernelCrc32>(ip, udp, ib_head).map_err(|_| SendError::Net(EINVAL))?;
    let left = match skb.fill_payload(crc, |sink| fill_payload(sink).map(|()| sink.remaining())) {
        Err(_) if skb.out_of_frags() => return Ok(None),
        r => r.map_err(SendError::Fill)?,
    };
    if left != 0 {
        return Err(SendError::Net(EINVAL));
    }
    // The pad (zeros) and the ICRC, after the payload.
    let mut tail = [0u8; 8];
    let t = match tail.get_mut(..tail_len) {
        Some(t) if tail_len >= ICRC_LEN => t,
        _ => return Err(SendError::Net(EINVAL)),
    };
    let (pad, icrc_bytes) = t.split_at_mut(tail_len - ICRC_LEN);
    let value = icrc::finish(KernelCrc32::crc32_le(skb.crc(), pad));
    if !crate::bytes::copy(icrc_bytes, &value.to_le_bytes()) {
        return Err(SendError::Net(EINVAL));
    }
    skb.append_trailer(t).map_err(SendError::Net)?;
    Ok(Some(skb))
}

/// Counts a packet of `len` IB bytes handed to the IP layer (or looped back).
fn sent(dev: &RoceDevice, len: usize, mcast: bool, by_ref: bool) {
    let c = dev.counters();
    c.inc(Counter::SentPkts);
    c.add(Counter::SentBytes, len as u64);
    if mcast {
        c.inc(Counter::SentMcastPkts);
    }
    if by_ref {
        c.inc(Counter::SentByRefPkts);
    }
}

/// Why [`send_with`] did not send.
pub(crate) enum SendError<E> {
    /// The filler failed.
    Fill(E),
    /// Routing, allocation or the IP layer failed.
    Net(Error),
}

impl<E> From<SendError<E>> for Error {
    fn from(e: SendError<E>) -> Error {
        match e {
            SendError::Fill(_) => EINVAL,
            SendError::Net(e) => e,
        }
    }
}
