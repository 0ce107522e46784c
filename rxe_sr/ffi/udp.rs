// SPDX-License-Identifier: GPL-2.0
//! The RoCEv2 UDP tunnel socket and its receive entry point.

use core::ptr::NonNull;
use kernel::error::from_err_ptr;
use kernel::ffi::c_int;
use kernel::prelude::*;

use super::device::DeviceRef;
use super::netdev::NetDev;
use crate::kx::bindings;
use crate::net::{self, Verdict};

/// A kernel UDP socket bound to a port in init_net, whose datagrams go to
/// [`rxe_sr_rs_udp_encap_recv`]. Closed on drop.
pub(crate) struct UdpTunnel {
    sock: NonNull<bindings::socket>,
}

// SAFETY: the socket is a kernel object usable from any thread; only `drop` touches it.
unsafe impl Send for UdpTunnel {}
// SAFETY: `UdpTunnel` has no `&self` methods that touch the socket.
unsafe impl Sync for UdpTunnel {}

impl UdpTunnel {
    /// Opens and binds the socket (IPv6 sockets are v6-only).
    pub(crate) fn open(ipv6: bool, port: u16) -> Result<Self> {
        // SAFETY: the helper takes plain values and returns a socket or an ERR_PTR.
        let raw = unsafe { bindings::rxe_sr_glue_udp_tunnel_open(ipv6, port) };
        let sock = from_err_ptr(raw)?;
        NonNull::new(sock)
            .map(|sock| UdpTunnel { sock })
            .ok_or(ENOMEM)
    }
}

impl Drop for UdpTunnel {
    fn drop(&mut self) {
        // SAFETY: `sock` came from `rxe_sr_glue_udp_tunnel_open` and is released once, here;
        // releasing it waits for receivers running in the encap callback.
        unsafe { bindings::rxe_sr_glue_udp_tunnel_close(self.sock.as_ptr()) };
    }
}

/// The netdev an skb arrived on.
///
/// # Safety
/// `skb` is a live skb.
unsafe fn b_netdev<'a>(skb: *mut bindings::sk_buff) -> Option<NetDev<'a>> {
    // SAFETY: per this function's contract; the netdev outlives the skb's processing.
    unsafe { NetDev::from_raw(bindings::rxe_sr_glue_skb_dev(skb)) }
}

/// Receives one RoCEv2 datagram from the UDP stack (encap_rcv).
///
/// # Safety
/// Called by the UDP stack with a valid `skb` whose ownership passes to us when we return 0.
#[no_mangle]
unsafe extern "C" fn rxe_sr_rs_udp_encap_recv(
    _sk: *mut bindings::sock,
    skb: *mut bindings::sk_buff,
) -> c_int {
    // SAFETY: `skb` is valid for the call; the netdev it arrived on is live while it is.
    let ndev = unsafe { b_netdev(skb) };
    let dev = ndev.as_ref().and_then(DeviceRef::get_for_rx);
    match (
        net::on_datagram(dev.as_ref().map(|d| d.dev().counters())),
        dev.as_ref(),
    ) {
        (Verdict::Queue, Some(d)) => d.dev().queue_rx(skb),
        _ => {
            // SAFETY: we own `skb` (we return 0) and free it exactly once.
            unsafe { bindings::rxe_sr_glue_skb_drop(skb) };
        }
    }
    0
}
