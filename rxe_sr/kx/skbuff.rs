// SPDX-License-Identifier: GPL-2.0
//! Socket buffers (include/linux/skbuff.h): an owned [`SkBuff`], freed on drop; RoCEv2
//! datagrams built around it and sent by the IP layer (kx/c/roce_tx.c's builders route them and
//! write the IP and UDP headers, as rdma_rxe's prepare4/prepare6 do); and [`SkbQueue`], a
//! bounded queue of them with its own lock.

use core::ptr::NonNull;
use kernel::error::{from_err_ptr, to_result};
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::netdevice::NetDev;

/// An skb the module owns; freed on drop.
///
/// # Invariants
/// `self.0` is a valid skb nobody else references.
pub(crate) struct SkBuff(NonNull<bindings::sk_buff>);

// SAFETY: an skb no one else references may be used and freed from any context.
unsafe impl Send for SkBuff {}

/// Where a RoCEv2 datagram goes: its IP addresses (network order, the bytes as they are).
pub(crate) enum IpAddrs {
    /// IPv4 source and destination.
    V4 { saddr: [u8; 4], daddr: [u8; 4] },
    /// IPv6 source and destination, and the flow label.
    V6 {
        saddr: [u8; 16],
        daddr: [u8; 16],
        flow_label: u32,
    },
}

/// The IP and UDP header fields of a RoCEv2 datagram.
pub(crate) struct RoceRoute {
    /// Addresses.
    pub(crate) addrs: IpAddrs,
    /// UDP source port (the flow's entropy; the destination is 4791).
    pub(crate) sport: u16,
    /// IPv4 TOS / IPv6 traffic class.
    pub(crate) traffic_class: u8,
    /// IPv4 TTL / IPv6 hop limit.
    pub(crate) ttl: u8,
    /// To our own address: not routed (the caller hands it to its receive path).
    pub(crate) local: bool,
}

impl RoceRoute {
    /// Bytes of IP and UDP headers before the IB bytes.
    pub(crate) fn header_len(&self) -> usize {
        match self.addrs {
            IpAddrs::V4 { .. } => 20 + 8,
            IpAddrs::V6 { .. } => 40 + 8,
        }
    }
}

impl SkBuff {
    /// Takes ownership of `skb` (null: none).
    ///
    /// # Safety
    /// A non-null `skb` is valid and handed over: no one else uses or frees it.
    pub(crate) unsafe fn from_raw(skb: *mut bindings::sk_buff) -> Option<SkBuff> {
        // INVARIANT: handed over by the caller.
        NonNull::new(skb).map(SkBuff)
    }

    /// Gives up ownership without freeing (to C code that takes it over).
    pub(crate) fn into_raw(self) -> NonNull<bindings::sk_buff> {
        let p = self.0;
        core::mem::forget(self);
        p
    }

    /// The netdev the skb arrived on (live while the skb is being received).
    pub(crate) fn dev(&self) -> Option<&NetDev> {
        let skb = self.0.as_ptr();
        // SAFETY: the skb is ours (type invariant) and in no rbtree, so the union member in use
        // is the one with `next`, `prev` and `dev` (skbuff.h's `skb->dev`).
        let dev = unsafe {
            (*skb)
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev
        };
        // SAFETY: the netdev it arrived on outlives its processing, which the borrow of
        // `self` bounds.
        unsafe { NetDev::from_raw(dev) }
    }

    /// The datagram from its IP header to its end (linearised first); `None` when the skb
    /// cannot be made linear.
    pub(crate) fn ip_bytes(&mut self) -> Option<&[u8]> {
        let mut data: *mut kernel::ffi::c_void = core::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: the skb is ours (type invariant); the helper linearises it and points at
        // its IP header.
        if unsafe { bindings::rxe_sr_glue_skb_ip_bytes(self.0.as_ptr(), &mut data, &mut len) } != 0
            || data.is_null()
        {
            return None;
        }
        // SAFETY: `len` bytes at `data` belong to the now linear skb, which lives and is not
        // changed while `self` is borrowed.
        Some(unsafe { core::slice::from_raw_parts(data.cast::<u8>(), len) })
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: ours (type invariant), freed once.
        unsafe { bindings::rxe_sr_glue_skb_drop(self.0.as_ptr()) };
    }
}

/// A RoCEv2 datagram being built for sending.
///
/// Its payload is left unwritten when it is allocated (zeroing it first would cost as much
/// as the copy that fills it): [`TxSkb::fill_payload`] writes it through a
/// [`PayloadSink`], and whatever the sink did not write is zeroed before any byte of the
/// datagram is read or leaves.
///
/// # Invariants
/// The skb is linear, `total` data bytes at `data` (from its IP header), all initialised
/// except `[hole + written, hole + hole_len)`; `written <= hole_len` and
/// `hole + hole_len <= total`.
pub(crate) struct TxSkb {
    skb: SkBuff,
    data: NonNull<u8>,
    total: usize,
    hole: usize,
    hole_len: usize,
    written: usize,
}

impl TxSkb {
    /// A RoCEv2 datagram out of `nd` along `route`, with `len` IB bytes after its IP and UDP
    /// headers. `payload` (a range of the IB bytes) is left for [`Self::fill_payload`]; the
    /// other IB bytes are zeroed. (Routing and the IP/UDP headers are kx/c/roce_tx.c's.)
    pub(crate) fn new(
        nd: &NetDev,
        route: &RoceRoute,
        len: usize,
        payload: core::ops::Range<usize>,
    ) -> Result<TxSkb> {
        if payload.start > payload.end || payload.end > len {
            return Err(EINVAL);
        }
        let raw = match &route.addrs {
            IpAddrs::V4 { saddr, daddr } => {
                // SAFETY: `nd` is live; with a null source the helper allocates `len` IB bytes
                // (zeroed below before anything reads them) and returns the skb or an ERR_PTR.
                let skb = unsafe {
                    bindings::rxe_sr_glue_build_v4(
                        nd.as_raw(),
                        u32::from_ne_bytes(*saddr),
                        u32::from_ne_bytes(*daddr),
                        route.sport,
                        route.traffic_class,
                        route.ttl,
                        core::ptr::null(),
                        len,
                        route.local,
                    )
                };
                from_err_ptr(skb)?
            }
            IpAddrs::V6 {
                saddr,
                daddr,
                flow_label,
            } => {
                // SAFETY: as for IPv4; the addresses are 16 bytes each.
                let skb = unsafe {
                    bindings::rxe_sr_glue_build_v6(
                        nd.as_raw(),
                        saddr.as_ptr().cast(),
                        daddr.as_ptr().cast(),
                        route.sport,
                        route.traffic_class,
                        route.ttl,
                        *flow_label,
                        core::ptr::null(),
                        len,
                        route.local,
                    )
                };
                from_err_ptr(skb)?
            }
        };
        let hdrs = route.header_len();
        // SAFETY: the skb just built (ours, linear): its data and length.
        let (p, total) = unsafe { ((*raw).data, (*raw).len as usize) };
        // SAFETY: a new skb, handed to us.
        let skb = unsafe { SkBuff::from_raw(raw) }.ok_or(ENOMEM)?;
        let data = NonNull::new(p).ok_or(EINVAL)?;
        if total != hdrs + len {
            return Err(EINVAL);
        }
        let (hole, hole_len) = (hdrs + payload.start, payload.end - payload.start);
        // SAFETY: `total` bytes at `p` are the skb's data, ours; both ranges lie inside them
        // (`payload.end <= len` above), and nothing reads them before they are zeroed here.
        unsafe {
            core::ptr::write_bytes(p.add(hdrs), 0, payload.start);
            core::ptr::write_bytes(p.add(hole + hole_len), 0, total - hole - hole_len);
        }
        // INVARIANT: the helper built it linear with its headers written; every IB byte but
        // the payload's was zeroed above, and nothing of the payload is written yet.
        Ok(TxSkb {
            skb,
            data,
            total,
            hole,
            hole_len,
            written: 0,
        })
    }

    /// Writes the payload with `f`, front to back through a [`PayloadSink`] (what `f` does not
    /// write stays unwritten until [`Self::data_mut`] zeroes it).
    pub(crate) fn fill_payload<R>(&mut self, f: impl FnOnce(&mut PayloadSink<'_>) -> R) -> R {
        // SAFETY: `hole <= total` bytes into the skb's data (type invariant): in bounds of a
        // non-null pointer, so not null.
        let at = unsafe { NonNull::new_unchecked(self.data.as_ptr().add(self.hole)) };
        let mut sink = PayloadSink {
            at,
            len: self.hole_len,
            written: &mut self.written,
        };
        f(&mut sink)
    }

    /// Zeroes what the payload's writer left unwritten: afterwards every byte is initialised.
    fn seal(&mut self) {
        if self.written < self.hole_len {
            // SAFETY: the unwritten rest of the hole lies in the skb's data (type invariant)
            // and nothing references it.
            unsafe {
                core::ptr::write_bytes(
                    self.data.as_ptr().add(self.hole + self.written),
                    0,
                    self.hole_len - self.written,
                )
            };
            // INVARIANT: the whole hole is initialised now.
            self.written = self.hole_len;
        }
    }

    /// The whole datagram, from its IP header (the payload's unwritten rest zeroed first).
    pub(crate) fn data_mut(&mut self) -> &mut [u8] {
        self.seal();
        // SAFETY: the skb is ours and linear, its `total` data bytes initialised (sealed just
        // above), and not aliased while `self` is borrowed mutably.
        unsafe { core::slice::from_raw_parts_mut(self.data.as_ptr(), self.total) }
    }

    /// Hands the datagram to the IP layer, which consumes it. [`crate::kx::error::enobufs`]:
    /// the egress queue was full and dropped it (it never left).
    pub(crate) fn xmit(mut self) -> Result {
        // Nothing unwritten leaves the host.
        self.seal();
        let p = self.skb.into_raw();
        // SAFETY: a finished skb of ours, whose ownership passes to the IP layer.
        to_result(unsafe { bindings::rxe_sr_glue_xmit(p.as_ptr()) })
    }

    /// The datagram as a received one (loopback: to our own address).
    pub(crate) fn into_received(mut self) -> SkBuff {
        self.seal();
        self.skb
    }
}

/// The payload of a [`TxSkb`] being built: written front to back, each write appending to
/// what the ones before wrote.
///
/// # Invariants
/// `at` points to `len` bytes of a `TxSkb`'s data, exclusively borrowed for `'a`, of which
/// the first `*written` are initialised; `*written <= len`.
pub(crate) struct PayloadSink<'a> {
    at: NonNull<u8>,
    len: usize,
    written: &'a mut usize,
}

impl PayloadSink<'_> {
    /// The bytes still to write.
    pub(crate) fn remaining(&self) -> usize {
        self.len - *self.written
    }

    /// Appends `src`; false (nothing written) when it does not fit.
    pub(crate) fn put(&mut self, src: &[u8]) -> bool {
        // SAFETY: copies exactly `src.len()` bytes to the pointer it is given, from a slice
        // that cannot overlap the skb's exclusively borrowed data.
        unsafe {
            self.put_with(src.len(), |dst| {
                core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
                true
            })
        }
    }

    /// Appends `n` bytes that `copy` writes at the pointer it is given, and returns true
    /// once they are all written (then they count as written). False when `n` bytes do
    /// not fit (`copy` is not called) or `copy` failed.
    ///
    /// # Safety
    /// `copy` writes to no byte outside the `n` at the pointer, and returns true only when
    /// it wrote every one of them.
    pub(crate) unsafe fn put_with(&mut self, n: usize, copy: impl FnOnce(*mut u8) -> bool) -> bool {
        if n > self.remaining() {
            return false;
        }
        // SAFETY: `*written + n <= len`: in the sink's bytes (type invariant).
        let dst = unsafe { self.at.as_ptr().add(*self.written) };
        if !copy(dst) {
            return false;
        }
        // INVARIANT: `copy` wrote all `n` bytes after the ones written before (its contract).
        *self.written += n;
        true
    }
}

/// A bounded skb queue (helpers/skbuff.c's, at most `RXE_SR_HELD_MAX`, with its own IRQ-safe lock);
/// purged on drop.
///
/// # Invariants
/// `self.0` is a live queue from `rxe_sr_glue_skbq_new`, freed only by drop.
pub(crate) struct SkbQueue(NonNull<bindings::sk_buff_head>);

// SAFETY: the queue has its own IRQ-safe lock; any context may use it.
unsafe impl Send for SkbQueue {}
// SAFETY: as above.
unsafe impl Sync for SkbQueue {}

impl SkbQueue {
    /// An empty queue.
    pub(crate) fn new() -> Result<SkbQueue> {
        // SAFETY: allocates and initialises a queue.
        let q = unsafe { bindings::rxe_sr_glue_skbq_new() };
        // INVARIANT: a live queue, ours.
        NonNull::new(q).map(SkbQueue).ok_or(ENOMEM)
    }

    /// Appends `skb`; gives it back when the queue is full.
    pub(crate) fn push(&self, skb: SkBuff) -> core::result::Result<(), SkBuff> {
        let nn = skb.into_raw();
        // SAFETY: the queue is live (type invariant); the skb is ours to hand over.
        if unsafe { bindings::rxe_sr_glue_skbq_push(self.0.as_ptr(), nn.as_ptr()) } == 0 {
            return Ok(());
        }
        // INVARIANT: refused, so still ours alone.
        Err(SkBuff(nn))
    }

    /// The oldest packet.
    pub(crate) fn pop(&self) -> Option<SkBuff> {
        // SAFETY: the queue is live; a dequeued skb is ours.
        unsafe { SkBuff::from_raw(bindings::rxe_sr_glue_skbq_pop(self.0.as_ptr())) }
    }

    /// Packets queued.
    pub(crate) fn len(&self) -> u32 {
        let q = self.0.as_ptr();
        // SAFETY: the queue is live (type invariant); an aligned `u32` read by one volatile
        // load without the lock, as `skb_queue_len_lockless`'s READ_ONCE does.
        unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*q).qlen)) }
    }

    /// Frees every queued packet.
    pub(crate) fn purge(&self) {
        // SAFETY: the queue is live.
        unsafe { bindings::rxe_sr_glue_skbq_purge(self.0.as_ptr()) }
    }
}

impl Drop for SkbQueue {
    fn drop(&mut self) {
        // SAFETY: live (type invariant), freed once.
        unsafe { bindings::rxe_sr_glue_skbq_free(self.0.as_ptr()) }
    }
}
