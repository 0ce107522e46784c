// SPDX-License-Identifier: GPL-2.0
//! Sending RoCEv2 datagrams: the C glue routes and builds the IP/UDP headers (as rdma_rxe's
//! prepare4/prepare6 do), rxe_sr fills the ICRC over the finished datagram with
//! `proto::wire::icrc`, and the IP layer sends it.

use kernel::error::{from_err_ptr, to_result};
use kernel::prelude::*;

use super::bindings as b;
use super::device::RxeSrDev;
use super::netdev::NetDev;
use crate::verbs::ah::{Av, Network};
use crate::verbs::counters::Counter;
use crate::proto::wire::{icrc, ip::RoceDatagram};

/// Sends `ib` (BTH .. ICRC, the ICRC's four bytes to be filled) to `av` from `dev`'s
/// netdev `nd`, over IPv4 or IPv6 as the AV's GIDs say; a packet to our own address goes
/// straight to `dev`'s receive work (loopback).
pub(crate) fn send(dev: &RxeSrDev, nd: &NetDev<'_>, av: &Av, sport: u16, ib: &[u8]) -> Result {
    let local = av.is_loopback();
    let ttl = if av.hop_limit == 0 { 64 } else { av.hop_limit };
    let skb = match (av.network, av.ipv4()) {
        (Network::V4, Some((saddr, daddr))) => {
            // SAFETY: `nd` is live; the helper copies `ib` into a new skb and returns it or
            // an ERR_PTR. Addresses go in network order (the bytes as they are).
            from_err_ptr(unsafe {
                b::rxe_sr_glue_build_v4(
                    nd.as_ptr(),
                    u32::from_ne_bytes(saddr),
                    u32::from_ne_bytes(daddr),
                    sport,
                    av.traffic_class,
                    ttl,
                    ib.as_ptr().cast(),
                    ib.len(),
                    local,
                )
            })?
        }
        // SAFETY: as above; the addresses are the AV's 16-byte GIDs.
        _ => from_err_ptr(unsafe {
            b::rxe_sr_glue_build_v6(
                nd.as_ptr(),
                av.sgid.as_ptr().cast(),
                av.dgid.as_ptr().cast(),
                sport,
                av.traffic_class,
                ttl,
                av.flow_label,
                ib.as_ptr().cast(),
                ib.len(),
                local,
            )
        })?,
    };
    let mut len = 0usize;
    // SAFETY: the skb is ours and linear (built in one buffer); its data is `len` bytes.
    let data = unsafe { core::slice::from_raw_parts_mut(b::rxe_sr_glue_skb_data(skb, &mut len).cast::<u8>(), len) };
    // Split the datagram into its IP header, UDP header and IB bytes, then fill the ICRC.
    let split = RoceDatagram::parse(data)
        .ok()
        .map(|d| (d.ip_header.len(), d.udp_header.len()));
    let filled = split.and_then(|(ip_len, udp_len)| {
        let (hdrs, ib_bytes) = data.split_at_mut(ip_len + udp_len);
        let (ip, udp) = hdrs.split_at(ip_len);
        icrc::fill(ip, udp, ib_bytes).ok()
    });
    if filled.is_none() {
        // SAFETY: not sent: ours to free.
        unsafe { b::rxe_sr_glue_skb_drop(skb) };
        return Err(EINVAL);
    }
    if local {
        dev.counters().inc(Counter::RcvdPkts);
        dev.queue_rx(skb);
        return Ok(());
    }
    // SAFETY: hands the finished skb to the IP layer, which consumes it.
    to_result(unsafe { b::rxe_sr_glue_xmit(skb) })
}
