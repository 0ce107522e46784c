// SPDX-License-Identifier: GPL-2.0
//! The receive work: datagrams queued by the UDP socket (softirq) are checked and delivered
//! here, in process context, one device at a time.

use core::mem::offset_of;

use super::device::RxeSrDev;
use super::qp::{self, Delivery};
use crate::kx::bindings as b;
use crate::kx::skbuff::SkBuff;
use crate::objects::counters::Counter;
use crate::proto::wire::ip::RoceDatagram;
use crate::proto::wire::{Opcode, PacketRepr, Transport};
use crate::verbs::mcast::MULTICAST_QPN;

/// The work item's entry point (glue.c's work function).
///
/// # Safety
/// `rx` is the `rx` field of a live device's RxeSrDev (the work is cancelled before the
/// device is freed).
#[no_mangle]
unsafe extern "C" fn rxe_sr_rs_rx_work(rx: *mut b::rxe_sr_rx) {
    // SAFETY: `rx` sits at this offset inside a live RxeSrDev (Opaque is transparent).
    let dev = unsafe {
        &*rx.cast::<u8>()
            .sub(offset_of!(RxeSrDev, rx))
            .cast::<RxeSrDev>()
    };
    loop {
        // SAFETY: the queue is initialised and alive (this function's contract); a dequeued
        // skb is ours.
        let Some(skb) = (unsafe { SkBuff::from_raw(b::rxe_sr_glue_rx_dequeue(rx)) }) else {
            break;
        };
        if !receive(dev, skb) {
            dev.counters().inc(Counter::RcvdDropped);
        }
        // A backlog can take long to drain (each datagram may answer with many packets):
        // let the rest of the system run between datagrams.
        // SAFETY: a work item, process context, no lock held here.
        unsafe { b::rxe_sr_glue_cond_resched() };
    }
}

/// Splits a datagram (from its IP header) and checks its IP/UDP framing, ICRC and IBTA
/// headers. Extended (selective-repeat) packets are not taken yet.
pub(crate) fn parse(bytes: &[u8]) -> Option<(RoceDatagram<'_>, PacketRepr<'_>)> {
    let d = RoceDatagram::parse(bytes).ok()?;
    let p = PacketRepr::parse_checked(d.ip_header, d.udp_header, d.ib).ok()?;
    (!p.is_sr()).then_some((d, p))
}

/// Checks one datagram and delivers it (or hands it to its QP to run later). False when
/// it was dropped.
fn receive(dev: &RxeSrDev, mut skb: SkBuff) -> bool {
    let later = {
        let Some(bytes) = skb.ip_bytes() else {
            return false;
        };
        let Some((d, p)) = parse(bytes) else {
            return false;
        };
        match p.bth.opcode {
            Opcode::UD_SEND_ONLY | Opcode::UD_SEND_ONLY_WITH_IMMEDIATE
                if p.bth.dest_qpn == MULTICAST_QPN =>
            {
                return qp::ud_deliver_mcast(dev, &p, d.ip_header, &d.dest_gid());
            }
            Opcode::UD_SEND_ONLY | Opcode::UD_SEND_ONLY_WITH_IMMEDIATE => {
                return qp::ud_deliver(dev, &p, d.ip_header)
            }
            op if matches!(op.transport(), Transport::Rc | Transport::Uc) => {
                match qp::connected_deliver(dev, &d, &p) {
                    Delivery::Done => return true,
                    Delivery::Dropped => return false,
                    Delivery::Later(h) => h,
                }
            }
            _ => return false,
        }
    };
    later.hold(skb)
}
