// SPDX-License-Identifier: GPL-2.0
//! The RoCEv2 UDP side: the sockets on port 4791 and what arrives on them.
//!
//! Datagrams are counted here and processed by the device's receive work (transport/rx.rs);
//! [`namespaces`] keeps one pair of sockets per network namespace with rxe_sr links; [`tx`]
//! builds and sends datagrams.

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

use crate::kx::net_namespace::NetNs;
use crate::kx::skbuff::SkBuff;
use crate::kx::udp_tunnel::{UdpTunnel, UdpTunnelHandler};
use crate::objects::counters::{Counter, Counters};
use crate::objects::device::{RoceDevice, RoceDeviceRef};

pub(crate) mod namespaces;
pub(crate) mod tx;

/// The IANA port for RoCEv2 (IBTA Annex A17).
pub(crate) const ROCE_V2_UDP_DPORT: u16 = 4791;

/// A namespace's two receive sockets, IPv4 and IPv6 (v6only), as rdma_rxe opens them.
pub(crate) struct RoceSockets {
    _v4: UdpTunnel<RoceSockets>,
    _v6: Option<UdpTunnel<RoceSockets>>,
}

/// Why a namespace's sockets could not be opened.
pub(crate) struct OpenError {
    /// The errno.
    pub(crate) err: Error,
    /// Which of the two failed.
    pub(crate) ipv6: bool,
}

impl RoceSockets {
    /// Binds UDP port 4791 in `net` on IPv4 and, where the kernel has it, IPv6.
    pub(crate) fn open(net: &NetNs<'_>) -> core::result::Result<Self, OpenError> {
        let v4 = UdpTunnel::open(net, false, ROCE_V2_UDP_DPORT)
            .map_err(|err| OpenError { err, ipv6: false })?;
        let v6 = match UdpTunnel::open(net, true, ROCE_V2_UDP_DPORT) {
            Ok(s) => Some(s),
            Err(e) if e == crate::kx::error::eafnosupport() => None,
            Err(err) => return Err(OpenError { err, ipv6: true }),
        };
        Ok(RoceSockets { _v4: v4, _v6: v6 })
    }
}

impl UdpTunnelHandler for RoceSockets {
    /// A datagram on port 4791: queued for the receive work of the device on the netdev it
    /// arrived by (or the device below it), else counted and freed.
    fn encap_recv(skb: SkBuff) {
        let dev = skb.dev().and_then(RoceDeviceRef::get_for_rx);
        match (
            on_datagram(dev.as_ref().map(|d| d.counters())),
            dev.as_ref(),
        ) {
            (Verdict::Queue, Some(d)) => queue_rx(d, skb),
            _ => drop(skb),
        }
    }
}

/// Queues a datagram for `dev`'s receive work; a full queue frees it, counted in
/// `rcvd_dropped` and `rcvd_queue_full`.
pub(crate) fn queue_rx(dev: &RoceDevice, skb: SkBuff) {
    // Counted before the work can take it; one refused counts as taken.
    dev.rx_marks().note_queued();
    if !dev.queue_rx(skb) {
        dev.rx_marks().note_taken();
        dev.counters().inc(Counter::RcvdDropped);
        dev.counters().inc(Counter::RcvdQueueFull);
    }
}

/// Datagrams that arrived on the RoCEv2 port for a netdev with no rxe_sr device (counted
/// module-wide: there is no device to show them on; reported at unload).
pub(crate) static RCVD_NO_DEVICE: AtomicU64 = AtomicU64::new(0);

/// What to do with a datagram that arrived on the RoCEv2 port.
pub(crate) enum Verdict {
    /// Free it (counted).
    Drop,
    /// Hand it to the device's receive work.
    Queue,
}

/// Decides the fate of a datagram for the device whose counters are `dev` (none: it
/// arrived on a netdev without an rxe_sr device).
pub(crate) fn on_datagram(dev: Option<&Counters>) -> Verdict {
    match dev {
        Some(c) => {
            c.inc(Counter::RcvdPkts);
            Verdict::Queue
        }
        None => {
            RCVD_NO_DEVICE.fetch_add(1, Ordering::Relaxed);
            Verdict::Drop
        }
    }
}
