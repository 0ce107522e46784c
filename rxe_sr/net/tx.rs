// SPDX-License-Identifier: GPL-2.0
//! Sending RoCEv2 datagrams: `kx::skbuff` routes and builds the IP/UDP headers, the caller
//! writes the IB bytes straight into the skb, rxe_sr fills the ICRC over the finished
//! datagram with `proto::wire::icrc` (over the kernel's `crc32_le`), and the IP layer sends
//! it. A packet to our own address goes to the device's receive work instead (loopback, as
//! rdma_rxe's).

use kernel::prelude::*;

use crate::kx::netdevice::NetDev;
use crate::kx::rxe::icrc::KernelCrc32;
use crate::kx::skbuff::{IpAddrs, PayloadSink, RoceRoute, TxSkb};
use crate::objects::ah::{Av, Network};
use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::proto::wire::icrc;

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
    send_with(
        dev,
        nd,
        av,
        sport,
        ib.len(),
        0..0,
        |_| Ok(()),
        copy,
        |_, _| {},
    )
    .map_err(Error::from)
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

/// As [`send`], for a packet of `len` IB bytes written straight into the skb, with no
/// intermediate copy: first `fill_payload` appends the payload (the IB bytes in `payload`)
/// through a [`PayloadSink`], then `fill` writes the other IB bytes (the ICRC is filled
/// afterwards), and `tap` sees the finished datagram (its IP header and IB bytes) before
/// it goes. The payload is not zeroed before it is written: a copy of the payload is the
/// only pass over its bytes before the ICRC's.
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_with<E>(
    dev: &RoceDevice,
    nd: &NetDev,
    av: &Av,
    sport: u16,
    len: usize,
    payload: core::ops::Range<usize>,
    fill_payload: impl FnOnce(&mut PayloadSink<'_>) -> core::result::Result<(), E>,
    fill: impl FnOnce(&mut [u8]) -> core::result::Result<(), E>,
    tap: impl FnOnce(&[u8], &[u8]),
) -> core::result::Result<(), SendError<E>> {
    let route = route(av, sport);
    let hdrs = route.header_len();
    let mut skb = TxSkb::new(nd, &route, len, payload).map_err(SendError::Net)?;
    let left = skb
        .fill_payload(|sink| fill_payload(sink).map(|()| sink.remaining()))
        .map_err(SendError::Fill)?;
    if left != 0 {
        // A writer that stopped short (never sent: its rest would go as zeros).
        return Err(SendError::Net(EINVAL));
    }
    // The datagram: the IP and UDP headers the builder wrote, then the IB bytes.
    let data = skb.data_mut();
    let filled = match data.get_mut(hdrs..) {
        Some(ib) if ib.len() == len => fill(ib).map_err(SendError::Fill),
        _ => Err(SendError::Net(EINVAL)),
    };
    // Split the datagram into its IP header, UDP header and IB bytes, then fill the ICRC.
    filled.and_then(|()| {
        let (head, ib_bytes) = data.split_at_mut(hdrs);
        let (ip, udp) = head.split_at(hdrs - 8);
        icrc::fill_with::<KernelCrc32>(ip, udp, ib_bytes)
            .map(|_| tap(ip, ib_bytes))
            .map_err(|_| SendError::Net(EINVAL))
    })?;
    let mcast = av.is_multicast();
    if route.local {
        sent(dev, len, mcast);
        dev.counters().inc(Counter::RcvdPkts);
        super::queue_rx(dev, skb.into_received());
        return Ok(());
    }
    skb.xmit().map_err(SendError::Net)?;
    sent(dev, len, mcast);
    Ok(())
}

/// Counts a packet of `len` IB bytes handed to the IP layer (or looped back).
fn sent(dev: &RoceDevice, len: usize, mcast: bool) {
    let c = dev.counters();
    c.inc(Counter::SentPkts);
    c.add(Counter::SentBytes, len as u64);
    if mcast {
        c.inc(Counter::SentMcastPkts);
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
