// SPDX-License-Identifier: GPL-2.0
//! Socket buffers (include/linux/skbuff.h): an owned [`SkBuff`], freed on drop; RoCEv2
//! datagrams built around it and sent by the IP layer (kx/c/roce_tx.c's builders route them and
//! write the IP and UDP headers, as rdma_rxe's prepare4/prepare6 do); and [`SkbQueue`], a
//! bounded queue of them with its own lock.

use core::ffi::c_void;
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
/// A datagram built by reference ([`TxSkb::new`] with `by_ref`) holds only the IB bytes
/// before the payload in its linear part: the sink attaches the payload as page fragments
/// (the memory's own pages, referenced until the skb is freed, or chunks it copies into)
/// and keeps the ICRC's CRC-32 state over what it attached; [`TxSkb::append_trailer`] adds
/// the pad and ICRC.
///
/// # Invariants
/// The skb's linear part is `total` data bytes at `data` (from its IP header), all
/// initialised except `[hole + written, hole + hole_len)`; `hole + hole_len <= total`.
/// Linear, `written <= hole_len`. By reference (`ref_payload > 0`), `hole_len` is 0, so
/// the linear part is all initialised, and the fragments hold the `written` payload bytes
/// attached so far.
pub(crate) struct TxSkb {
    skb: SkBuff,
    data: NonNull<u8>,
    total: usize,
    hole: usize,
    hole_len: usize,
    written: usize,
    /// By reference: the payload's length (0 for a linear datagram).
    ref_payload: usize,
    /// By reference: the CRC-32 state over the ICRC's bytes so far.
    crc: u32,
    /// By reference: the fragment slots ran out (the datagram must be built linear).
    out_of_frags: bool,
}

impl TxSkb {
    /// A RoCEv2 datagram out of `nd` along `route`, with `len` IB bytes after its IP and UDP
    /// headers. `payload` (a range of the IB bytes) is left for [`Self::fill_payload`]; the
    /// other IB bytes are zeroed. With `by_ref`, the skb holds only the IB bytes before the
    /// payload: the payload and what follows it are attached as fragments. (Routing and the
    /// IP/UDP headers are kx/c/roce_tx.c's.)
    pub(crate) fn new(
        nd: &NetDev,
        route: &RoceRoute,
        len: usize,
        payload: core::ops::Range<usize>,
        by_ref: bool,
    ) -> Result<TxSkb> {
        if payload.start > payload.end || payload.end > len {
            return Err(EINVAL);
        }
        let linear = if by_ref { payload.start } else { len };
        let raw = match &route.addrs {
            IpAddrs::V4 { saddr, daddr } => {
                // SAFETY: `nd` is live; with a null source the helper allocates `linear` IB
                // bytes (zeroed below before read) and returns the skb or an ERR_PTR.
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
                        linear,
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
                        linear,
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
        if total != hdrs + linear {
            return Err(EINVAL);
        }
        let (hole, hole_len) = if by_ref {
            (total, 0)
        } else {
            (hdrs + payload.start, payload.end - payload.start)
        };
        // SAFETY: both ranges lie in the skb's `total` data bytes at `p` (`payload.end <= len`;
        // by reference the hole is empty), ours and read by nothing before they are zeroed.
        unsafe {
            core::ptr::write_bytes(p.add(hdrs), 0, hole - hdrs);
            core::ptr::write_bytes(p.add(hole + hole_len), 0, total - hole - hole_len);
        }
        // INVARIANT: the helper built the linear part with its headers written; every IB
        // byte in it but the payload's was zeroed above, and nothing of the payload is
        // written yet.
        Ok(TxSkb {
            skb,
            data,
            total,
            hole,
            hole_len,
            written: 0,
            ref_payload: if by_ref {
                payload.end - payload.start
            } else {
                0
            },
            crc: 0,
            out_of_frags: false,
        })
    }

    /// Writes the payload with `f`, front to back through a [`PayloadSink`] (what `f` does not
    /// write stays unwritten until [`Self::data_mut`] zeroes it). By reference, `crc` is
    /// the ICRC's CRC-32 state before the payload: the sink carries it on.
    pub(crate) fn fill_payload<R>(
        &mut self,
        crc: u32,
        f: impl FnOnce(&mut PayloadSink<'_>) -> R,
    ) -> R {
        let target = if self.ref_payload > 0 {
            self.crc = crc;
            Target::Frags {
                skb: self.skb.0,
                crc: &mut self.crc,
                out_of_frags: &mut self.out_of_frags,
            }
        } else {
            // SAFETY: `hole <= total` bytes into the skb's data (type invariant): in bounds
            // of a non-null pointer, so not null.
            Target::Linear(unsafe { NonNull::new_unchecked(self.data.as_ptr().add(self.hole)) })
        };
        let mut sink = PayloadSink {
            target,
            len: self.hole_len.max(self.ref_payload),
            written: &mut self.written,
        };
        f(&mut sink)
    }

    /// Built by reference: the payload goes as fragments.
    pub(crate) fn by_ref(&self) -> bool {
        self.ref_payload > 0
    }

    /// By reference: the fragment slots ran out while the payload was attached.
    pub(crate) fn out_of_frags(&self) -> bool {
        self.out_of_frags
    }

    /// By reference: the CRC-32 state after the payload.
    pub(crate) fn crc(&self) -> u32 {
        self.crc
    }

    /// By reference: appends `tail` (the pad and ICRC) after the payload.
    pub(crate) fn append_trailer(&mut self, tail: &[u8]) -> Result {
        if self.ref_payload == 0 || tail.is_empty() {
            return Err(EINVAL);
        }
        let skb = self.skb.0.as_ptr();
        // SAFETY: the skb is ours (type invariant); the helper appends a chunk of
        // `tail.len()` bytes, or returns null.
        let p = unsafe { bindings::rxe_sr_glue_skb_add_chunk(skb, tail.len(), true) };
        if p.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: the chunk just attached: `tail.len()` writable bytes of the skb's own.
        unsafe { core::ptr::copy_nonoverlapping(tail.as_ptr(), p.cast::<u8>(), tail.len()) };
        Ok(())
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

    /// The datagram's linear part, from its IP header (the payload's unwritten rest zeroed
    /// first): the whole datagram, or by reference the bytes before the payload.
    pub(crate) fn data_mut(&mut self) -> &mut [u8] {
        self.seal();
        // SAFETY: the skb is ours, its `total` linear data bytes initialised (sealed just
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

/// Where a [`PayloadSink`] writes.
enum Target<'a> {
    /// Into the skb's linear part, at this pointer.
    Linear(NonNull<u8>),
    /// As fragments of the skb, carrying the CRC-32 state on.
    Frags {
        skb: NonNull<bindings::sk_buff>,
        crc: &'a mut u32,
        out_of_frags: &'a mut bool,
    },
}

/// The payload of a [`TxSkb`] being built: written front to back, each write appending to
/// what the ones before wrote.
///
/// # Invariants
/// Linear: the pointer is to `len` bytes of a `TxSkb`'s data, exclusively borrowed for
/// `'a`, of which the first `*written` are initialised. Fragments: the skb is the
/// `TxSkb`'s, exclusively borrowed for `'a`, and `*written` payload bytes are attached.
/// `*written <= len`.
pub(crate) struct PayloadSink<'a> {
    target: Target<'a>,
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
        if n == 0 {
            return true;
        }
        let dst = match &mut self.target {
            // SAFETY: `*written + n <= len`: in the sink's bytes (type invariant).
            Target::Linear(at) => unsafe { at.as_ptr().add(*self.written) },
            Target::Frags {
                skb, out_of_frags, ..
            } => {
                // SAFETY: the skb is the sink's (type invariant); the helper appends a chunk
                // of `n` bytes of its own, or returns null.
                let p = unsafe { bindings::rxe_sr_glue_skb_add_chunk(skb.as_ptr(), n, false) };
                if p.is_null() {
                    // No slot (or no memory): a linear datagram takes it.
                    **out_of_frags = true;
                    return false;
                }
                p.cast::<u8>()
            }
        };
        if !copy(dst) {
            return false;
        }
        if let Target::Frags { crc, .. } = &mut self.target {
            // SAFETY: `copy` wrote all `n` bytes at `dst` (its contract); they belong to the
            // skb's chunk, which nothing else references.
            **crc = unsafe { bindings::rxe_sr_glue_crc32(**crc, dst.cast(), n) };
        }
        // INVARIANT: `copy` wrote all `n` bytes after the ones written before (its contract).
        *self.written += n;
        true
    }

    /// Appends `n` bytes of memory at byte `offset` of the `npages` pages at `pages`, or,
    /// with `pages` null, at kernel address `offset`: copied into a linear datagram, lent
    /// by reference to one built so (each page referenced until the skb is freed).
    ///
    /// # Safety
    /// `pages` is null or holds `npages` pages that stay allocated for the call; a null
    /// `pages` names memory of the kernel's direct map that the caller may read.
    pub(crate) unsafe fn put_mem(
        &mut self,
        pages: *const *mut c_void,
        npages: usize,
        offset: usize,
        n: usize,
    ) -> bool {
        if let Target::Frags {
            skb,
            crc,
            out_of_frags,
        } = &mut self.target
        {
            if n > self.len - *self.written {
                return false;
            }
            // SAFETY: the skb is the sink's; the memory is as the caller promised; the
            // helper reads it and takes page references.
            let err = unsafe {
                bindings::rxe_sr_glue_skb_add_mem(skb.as_ptr(), pages, npages, offset, n, *crc)
            };
            if let Err(e) = to_result(err) {
                **out_of_frags = e == crate::kx::error::emsgsize();
                return false;
            }
            // INVARIANT: the helper attached all `n` bytes.
            *self.written += n;
            return true;
        }
        // SAFETY: the helpers write exactly the `n` bytes at the pointer, or fail; the
        // memory is as the caller promised.
        unsafe {
            self.put_with(n, |p| {
                if pages.is_null() {
                    bindings::rxe_sr_glue_kva_copy(offset as u64, p.cast(), n, false) == 0
                } else {
                    bindings::rxe_sr_glue_pages_copy(pages, npages, offset, p.cast(), n, false) == 0
                }
            })
        }
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
        while self.pop().is_some() {}
    }
}

impl Drop for SkbQueue {
    fn drop(&mut self) {
        // SAFETY: live (type invariant), freed once.
        unsafe { bindings::rxe_sr_glue_skbq_free(self.0.as_ptr()) }
    }
}
