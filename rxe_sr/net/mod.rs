// SPDX-License-Identifier: GPL-2.0
//! The RoCEv2 UDP side: the sockets on port 4791 and what arrives on them.
//!
//! Datagrams are counted here and processed by the device's receive work (ffi/rx.rs).

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

use crate::ffi::udp::UdpTunnel;
use crate::objects::counters::{Counter, Counters};

/// The IANA port for RoCEv2 (IBTA Annex A17).
pub(crate) const ROCE_V2_UDP_DPORT: u16 = 4791;

/// The module's two receive sockets, IPv4 and IPv6 (v6only), as rdma_rxe opens them.
pub(crate) struct RoceSockets {
    _v4: UdpTunnel,
    _v6: Option<UdpTunnel>,
}

impl RoceSockets {
    /// Binds UDP port 4791 on IPv4 and, where the kernel has it, IPv6.
    pub(crate) fn open() -> Result<Self> {
        let v4 = UdpTunnel::open(false, ROCE_V2_UDP_DPORT)?;
        let v6 = match UdpTunnel::open(true, ROCE_V2_UDP_DPORT) {
            Ok(s) => Some(s),
            Err(e) if e == crate::kx::error::eafnosupport() => None,
            Err(e) => return Err(e),
        };
        Ok(RoceSockets { _v4: v4, _v6: v6 })
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
