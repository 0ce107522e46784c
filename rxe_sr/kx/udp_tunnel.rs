// SPDX-License-Identifier: GPL-2.0
//! UDP tunnel sockets (include/net/udp_tunnel.h): a kernel UDP socket whose datagrams are
//! handed, as owned [`SkBuff`]s, to a [`UdpTunnelHandler`] in the UDP receive path.

use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::error::from_err_ptr;
use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::skbuff::SkBuff;

/// Receives a tunnel socket's datagrams.
pub(crate) trait UdpTunnelHandler {
    /// A datagram arrived (softirq, under RCU): the skb's data begins at its UDP payload
    /// and its network header is set. The handler owns it.
    fn encap_recv(skb: SkBuff);
}

/// A kernel UDP socket bound to a port in init_net, whose datagrams go to `T`; closed on
/// drop.
///
/// # Invariants
/// `sock` is the open socket `rxe_sr_glue_udp_tunnel_open` returned, released only by drop.
pub(crate) struct UdpTunnel<T: UdpTunnelHandler> {
    sock: NonNull<bindings::socket>,
    _handler: PhantomData<fn(T)>,
}

// SAFETY: the socket is a kernel object usable from any thread; only `drop` touches it.
unsafe impl<T: UdpTunnelHandler> Send for UdpTunnel<T> {}
// SAFETY: `UdpTunnel` has no `&self` methods that touch the socket.
unsafe impl<T: UdpTunnelHandler> Sync for UdpTunnel<T> {}

impl<T: UdpTunnelHandler> UdpTunnel<T> {
    /// Opens and binds the socket (IPv6 sockets are v6-only).
    pub(crate) fn open(ipv6: bool, port: u16) -> Result<Self> {
        let recv = Some(encap_recv::<T> as unsafe extern "C" fn(_, _) -> _);
        // SAFETY: the helper takes plain values and a receive callback sound for any
        // datagram the UDP stack passes; it returns a socket or an ERR_PTR.
        let raw = unsafe { bindings::rxe_sr_glue_udp_tunnel_open(ipv6, port, recv) };
        let sock = from_err_ptr(raw)?;
        // INVARIANT: an open socket, ours.
        NonNull::new(sock)
            .map(|sock| UdpTunnel {
                sock,
                _handler: PhantomData,
            })
            .ok_or(ENOMEM)
    }
}

impl<T: UdpTunnelHandler> Drop for UdpTunnel<T> {
    fn drop(&mut self) {
        // SAFETY: `sock` came from `rxe_sr_glue_udp_tunnel_open` and is released once, here;
        // releasing it waits for receivers running in the encap callback.
        unsafe { bindings::rxe_sr_glue_udp_tunnel_close(self.sock.as_ptr()) };
    }
}

/// The socket's `encap_rcv`.
///
/// # Safety
/// Called by the UDP stack with a valid `skb` whose ownership passes to us when we return 0.
unsafe extern "C" fn encap_recv<T: UdpTunnelHandler>(
    _sk: *mut bindings::sock,
    skb: *mut bindings::sk_buff,
) -> c_int {
    // SAFETY: per this function's contract, the skb is ours (we return 0).
    if let Some(skb) = unsafe { SkBuff::from_raw(skb) } {
        T::encap_recv(skb);
    }
    0
}
