// SPDX-License-Identifier: GPL-2.0
//! The receive work: datagrams queued by the UDP socket (softirq) are checked and delivered
//! here, in process context, one device at a time.

use core::mem::offset_of;
use kernel::ffi::c_void;

use super::bindings as b;
use super::device::RxeSrDev;
use super::qp;
use crate::proto::wire::ip::RoceDatagram;
use crate::proto::wire::{Opcode, PacketRepr, Transport};
use crate::verbs::counters::Counter;
use crate::verbs::mcast::MULTICAST_QPN;

/// The work item's entry point (glue.c's work function).
///
/// # Safety
/// `rx` is the `rx` field of a live device's RxeSrDev (the work is cancelled before the
/// device is freed).
#[no_mangle]
unsafe extern "C" fn rxe_sr_rs_rx_work(rx: *mut b::rxe_sr_rx) {
    // SAFETY: `rx` sits at this offset inside a live RxeSrDev (Opaque is transparent).
    let dev = unsafe { &*rx.cast::<u8>().sub(offset_of!(RxeSrDev, rx)).cast::<RxeSrDev>() };
    loop {
        // SAFETY: the queue is initialised and alive (this function's contract).
        let skb = unsafe { b::rxe_sr_glue_rx_dequeue(rx) };
        if skb.is_null() {
            break;
        }
        if !receive(dev, skb) {
            dev.counters().inc(Counter::RcvdDropped);
        }
        // SAFETY: dequeued, so ours; freed once.
        unsafe { b::rxe_sr_glue_skb_drop(skb) };
        // A backlog can take long to drain (each datagram may answer with many packets):
        // let the rest of the system run between datagrams.
        // SAFETY: a work item, process context, no lock held here.
        unsafe { b::rxe_sr_glue_cond_resched() };
    }
}

/// Checks one datagram (IP/UDP framing, ICRC, IBTA headers) and delivers it. False when it
/// was dropped.
fn receive(dev: &RxeSrDev, skb: *mut b::sk_buff) -> bool {
    let mut data: *mut c_void = core::ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: `skb` is ours; the helper linearises it and points at its IP header.
    if unsafe { b::rxe_sr_glue_skb_ip_bytes(skb, &mut data, &mut len) } != 0 || data.is_null() {
        return false;
    }
    // SAFETY: `len` bytes at `data` belong to the (now linear) skb, which we own.
    let bytes = unsafe { core::slice::from_raw_parts(data.cast::<u8>(), len) };
    let Ok(d) = RoceDatagram::parse(bytes) else {
        return false;
    };
    let Ok(p) = PacketRepr::parse_checked(d.ip_header, d.udp_header, d.ib) else {
        return false;
    };
    if p.is_sr() {
        return false;
    }
    match p.bth.opcode {
        Opcode::UD_SEND_ONLY | Opcode::UD_SEND_ONLY_WITH_IMMEDIATE if p.bth.dest_qpn == MULTICAST_QPN => {
            qp::ud_deliver_mcast(dev, &p, d.ip_header, &d.dest_gid())
        }
        Opcode::UD_SEND_ONLY | Opcode::UD_SEND_ONLY_WITH_IMMEDIATE => qp::ud_deliver(dev, &p, d.ip_header),
        op if matches!(op.transport(), Transport::Rc | Transport::Uc) => qp::connected_deliver(dev, &p),
        _ => false,
    }
}
