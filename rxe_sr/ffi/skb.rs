// SPDX-License-Identifier: GPL-2.0
//! Sending RoCEv2 datagrams: the C glue routes and builds the IP/UDP headers (as rdma_rxe's
//! prepare4/prepare6 do), rxe_sr fills the ICRC over the finished datagram with
//! `proto::wire::icrc`, and the IP layer sends it.

use kernel::error::{from_err_ptr, to_result};
use kernel::prelude::*;

use super::device::RxeSrDev;
use super::netdev::NetDev;
use crate::kx::bindings as b;
use crate::objects::counters::Counter;
use crate::proto::wire::icrc;
use crate::verbs::ah::{Av, Network};

/// Sends `ib` (BTH .. ICRC, the ICRC's four bytes to be filled) to `av` from `dev`'s
/// netdev `nd`, over IPv4 or IPv6 as the AV's GIDs say; a packet to our own address goes
/// straight to `dev`'s receive work (loopback).
pub(crate) fn send(dev: &RxeSrDev, nd: &NetDev<'_>, av: &Av, sport: u16, ib: &[u8]) -> Result {
    send_with(dev, nd, av, sport, ib.len(), |out| {
        if crate::bytes::copy(out, ib) {
            Ok(())
        } else {
            Err(EINVAL)
        }
    })
    .map_err(Error::from)
}

/// As [`send`], for a packet of `len` IB bytes that `fill` writes straight into the skb
/// (every byte; the ICRC is filled afterwards): no intermediate copy.
pub(crate) fn send_with<E>(
    dev: &RxeSrDev,
    nd: &NetDev<'_>,
    av: &Av,
    sport: u16,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> core::result::Result<(), E>,
) -> core::result::Result<(), SendError<E>> {
    let local = av.is_loopback();
    let ttl = if av.hop_limit == 0 { 64 } else { av.hop_limit };
    let skb = match (av.network, av.ipv4()) {
        (Network::V4, Some((saddr, daddr))) => {
            // Addresses go in network order (the bytes as they are).
            // SAFETY: `nd` is live; with a null source the helper allocates `len` IB bytes,
            // zeroed below before anything reads them; it returns the skb or an ERR_PTR.
            from_err_ptr(unsafe {
                b::rxe_sr_glue_build_v4(
                    nd.as_ptr(),
                    u32::from_ne_bytes(saddr),
                    u32::from_ne_bytes(daddr),
                    sport,
                    av.traffic_class,
                    ttl,
                    core::ptr::null(),
                    len,
                    local,
                )
            })
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
                core::ptr::null(),
                len,
                local,
            )
        }),
    }
    .map_err(SendError::Net)?;
    let hdrs = match av.network {
        Network::V4 => 20 + 8,
        Network::V6 => 40 + 8,
    };
    let mut total = 0usize;
    // The skb's data: the IP and UDP headers the helper wrote, then the IB bytes.
    // SAFETY: the skb is ours and linear, `total` bytes; the IB bytes, not initialised
    // yet, are zeroed before a slice covers them.
    let data = unsafe {
        let p = b::rxe_sr_glue_skb_data(skb, &mut total).cast::<u8>();
        if total >= hdrs {
            core::ptr::write_bytes(p.add(hdrs), 0, total - hdrs);
        }
        core::slice::from_raw_parts_mut(p, total)
    };
    let filled = match data.get_mut(hdrs..) {
        Some(ib) if ib.len() == len => fill(ib).map_err(SendError::Fill),
        _ => Err(SendError::Net(EINVAL)),
    };
    // Split the datagram into its IP header, UDP header and IB bytes, then fill the ICRC.
    let done = filled.and_then(|()| {
        let (head, ib_bytes) = data.split_at_mut(hdrs);
        let (ip, udp) = head.split_at(hdrs - 8);
        icrc::fill(ip, udp, ib_bytes)
            .map(|_| ())
            .map_err(|_| SendError::Net(EINVAL))
    });
    if let Err(e) = done {
        // SAFETY: not sent: ours to free.
        unsafe { b::rxe_sr_glue_skb_drop(skb) };
        return Err(e);
    }
    if local {
        dev.counters().inc(Counter::RcvdPkts);
        dev.queue_rx(skb);
        return Ok(());
    }
    // SAFETY: hands the finished skb to the IP layer, which consumes it.
    to_result(unsafe { b::rxe_sr_glue_xmit(skb) }).map_err(SendError::Net)
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

/// A received datagram the module owns (from the receive queue); freed on drop.
///
/// # Invariants
/// `self.0` is a valid skb nobody else references.
pub(crate) struct RxSkb(core::ptr::NonNull<b::sk_buff>);

// SAFETY: an skb no one else references may be used and freed from any context.
unsafe impl Send for RxSkb {}

impl RxSkb {
    /// Takes ownership of `skb` (null: none).
    ///
    /// # Safety
    /// A non-null `skb` is valid and handed over: no one else uses or frees it.
    pub(crate) unsafe fn from_raw(skb: *mut b::sk_buff) -> Option<RxSkb> {
        core::ptr::NonNull::new(skb).map(RxSkb)
    }

    /// The datagram from its IP header to its end (linearised first); `None` when the skb
    /// cannot be made linear.
    pub(crate) fn ip_bytes(&mut self) -> Option<&[u8]> {
        let mut data: *mut kernel::ffi::c_void = core::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: the skb is ours (type invariant); the helper linearises it and points at
        // its IP header.
        if unsafe { b::rxe_sr_glue_skb_ip_bytes(self.0.as_ptr(), &mut data, &mut len) } != 0
            || data.is_null()
        {
            return None;
        }
        // SAFETY: `len` bytes at `data` belong to the now linear skb, which lives and is not
        // changed while `self` is borrowed.
        Some(unsafe { core::slice::from_raw_parts(data.cast::<u8>(), len) })
    }

    /// Gives up ownership without freeing.
    fn into_raw(self) -> core::ptr::NonNull<b::sk_buff> {
        let p = self.0;
        core::mem::forget(self);
        p
    }
}

impl Drop for RxSkb {
    fn drop(&mut self) {
        // SAFETY: ours (type invariant), freed once.
        unsafe { b::rxe_sr_glue_skb_drop(self.0.as_ptr()) };
    }
}

/// A QP's held-back request packets (glue.c's skb queue, at most `RXE_SR_HELD_MAX`, with its
/// own lock): they wait while the QP's READ responses go out. Purged on drop.
///
/// # Invariants
/// `self.0` is a live queue from `rxe_sr_glue_skbq_new`, freed only by drop.
pub(crate) struct HeldQueue(core::ptr::NonNull<b::sk_buff_head>);

// SAFETY: the queue has its own IRQ-safe lock; any context may use it.
unsafe impl Send for HeldQueue {}
// SAFETY: as above.
unsafe impl Sync for HeldQueue {}

impl HeldQueue {
    /// An empty queue.
    pub(crate) fn new() -> Result<HeldQueue> {
        // SAFETY: allocates and initialises a queue.
        let q = unsafe { b::rxe_sr_glue_skbq_new() };
        core::ptr::NonNull::new(q).map(HeldQueue).ok_or(ENOMEM)
    }

    /// Appends `skb`; gives it back when the queue is full.
    pub(crate) fn push(&self, skb: RxSkb) -> core::result::Result<(), RxSkb> {
        let nn = skb.into_raw();
        // SAFETY: the queue is live (type invariant); the skb is ours to hand over.
        if unsafe { b::rxe_sr_glue_skbq_push(self.0.as_ptr(), nn.as_ptr()) } == 0 {
            return Ok(());
        }
        // Refused: still ours (the invariant holds again).
        Err(RxSkb(nn))
    }

    /// The oldest held packet.
    pub(crate) fn pop(&self) -> Option<RxSkb> {
        // SAFETY: the queue is live; a dequeued skb is ours.
        unsafe { RxSkb::from_raw(b::rxe_sr_glue_skbq_pop(self.0.as_ptr())) }
    }

    /// Packets held.
    pub(crate) fn len(&self) -> u32 {
        // SAFETY: the queue is live.
        unsafe { b::rxe_sr_glue_skbq_len(self.0.as_ptr()) }
    }

    /// Frees every held packet.
    pub(crate) fn purge(&self) {
        // SAFETY: the queue is live.
        unsafe { b::rxe_sr_glue_skbq_purge(self.0.as_ptr()) }
    }
}

impl Drop for HeldQueue {
    fn drop(&mut self) {
        // SAFETY: live (type invariant), freed once.
        unsafe { b::rxe_sr_glue_skbq_free(self.0.as_ptr()) }
    }
}
