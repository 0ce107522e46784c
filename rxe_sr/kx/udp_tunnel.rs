// SPDX-License-Identifier: GPL-2.0
//! UDP tunnel sockets (include/net/udp_tunnel.h): a kernel UDP socket whose datagrams are
//! handed, as owned [`SkBuff`]s, to a [`UdpTunnelHandler`] in the UDP receive path.

use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::error::from_err_ptr;
use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::net_namespace::NetNs;
use crate::kx::skbuff::SkBuff;

/// Receives a tunnel socket's datagrams.
pub(crate) trait UdpTunnelHandler {
    /// A datagram arrived (softirq, under RCU): the skb's data begins at its UDP payload
    /// and its network header is set. The handler owns it.
    fn encap_recv(skb: SkBuff);
}

/// A kernel UDP socket bound to a port in a network namespace, whose datagrams go to `T`;
/// closed on drop. It does not keep its namespace alive: its owner closes it when the
/// namespace is dismantled at the latest ([`crate::kx::net_namespace::PernetExit`]).
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
    /// Opens and binds the socket in `net` (IPv6 sockets are v6-only).
    pub(crate) fn open(net: &NetNs<'_>, ipv6: bool, port: u16) -> Result<Self> {
        let recv = Some(encap_recv::<T> as unsafe extern "C" fn(_, _) -> _);
        // SAFETY: `net` is live for the call; the other arguments are plain values and a
        // receive callback sound for any datagram; the result is a socket or an ERR_PTR.
        let raw = unsafe { bindings::rxe_sr_glue_udp_tunnel_open(net.as_raw(), ipv6, port, recv) };
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

/// Who holds a UDP port, for an error message: a kernel tunnel socket's receive function
/// and its module (`rxe_udp_encap_recv [rdma_rxe]`), or a user or kernel socket's uid.
pub(crate) struct PortOwner {
    buf: [u8; 128],
}

impl PortOwner {
    /// Looks up the socket bound to UDP `port` (on any address, IPv6 or IPv4) in `net`;
    /// `None` when there is none (any longer).
    pub(crate) fn find(net: &NetNs<'_>, ipv6: bool, port: u16) -> Option<Self> {
        let mut buf = [0u8; 128];
        // SAFETY: `net` is live for the call; the helper writes at most `buf.len()` bytes,
        // NUL-terminated, into `buf`.
        let found = unsafe {
            bindings::rxe_sr_glue_udp_port_owner(
                net.as_raw(),
                ipv6,
                port,
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        found.then_some(PortOwner { buf })
    }
}

impl core::fmt::Display for PortOwner {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let len = self
            .buf
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(self.buf.len());
        match core::str::from_utf8(&self.buf[..len]) {
            Ok(s) => f.write_str(s),
            Err(_) => f.write_str("?"),
        }
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
