// SPDX-License-Identifier: GPL-2.0
//! Receive dispatch: a datagram from the device's receive queue is checked (IP/UDP framing,
//! ICRC, IBTA headers) and handed to its QP: a UD SEND (or one to a multicast group) is
//! delivered at once, an RC/UC packet runs its QP's responder or completer, or waits while
//! that QP's READ responses are still going out.

use crate::kx::rxe::icrc::KernelCrc32;
use crate::kx::skbuff::SkBuff;
use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::objects::mcast::MULTICAST_QPN;
use crate::proto::fec::{RepairHeader, RhKind};
use crate::proto::wire::icrc;
use crate::proto::wire::ip::RoceDatagram;
use crate::proto::wire::repair::RH_OPCODE;
use crate::proto::wire::{Opcode, PacketRepr, Transport, ICRC_LEN};
use crate::transport::rc_fec_resp;
use crate::transport::rc_qp::{self, Delivery};
use crate::transport::ud_qp;

/// Takes one datagram of `dev`'s receive queue; a dropped one is counted.
pub(crate) fn receive(dev: &RoceDevice, skb: SkBuff) {
    if !deliver(dev, skb) {
        dev.counters().inc(Counter::RcvdDropped);
    }
}

/// Checks one datagram and delivers it (or hands it to its QP to run later). False when
/// it was dropped.
fn deliver(dev: &RoceDevice, mut skb: SkBuff) -> bool {
    let later = {
        let Some(bytes) = skb.ip_bytes() else {
            return false;
        };
        // Bound by reference where they were built: a datagram's headers are not moved
        // (a few hundred bytes per packet).
        let Ok(d) = RoceDatagram::parse(bytes) else {
            dev.counters().inc(Counter::RcvdMalformed);
            return false;
        };
        dev.counters().add(Counter::RcvdBytes, d.ib.len() as u64);
        if d.ib.first() == Some(&RH_OPCODE) {
            return repair(dev, &d);
        }
        let parsed = PacketRepr::parse_checked_with::<KernelCrc32>(d.ip_header, d.udp_header, d.ib);
        let Ok(p) = &parsed else {
            dev.counters().inc(Counter::RcvdMalformed);
            return false;
        };
        match p.bth.opcode {
            Opcode::UD_SEND_ONLY | Opcode::UD_SEND_ONLY_WITH_IMMEDIATE
                if p.bth.dest_qpn == MULTICAST_QPN =>
            {
                dev.counters().inc(Counter::RcvdMcastPkts);
                return ud_qp::ud_deliver_mcast(dev, p, d.ip_header, &d.dest_gid());
            }
            Opcode::UD_SEND_ONLY | Opcode::UD_SEND_ONLY_WITH_IMMEDIATE => {
                return ud_qp::ud_deliver(dev, p, d.ip_header)
            }
            op if matches!(op.transport(), Transport::Rc | Transport::Uc) => {
                match rc_qp::connected_deliver(dev, &d, p) {
                    Delivery::Done => return true,
                    Delivery::Dropped => return false,
                    Delivery::Later(h) => h,
                    Delivery::Fec(f) => {
                        return f.pass(skb);
                    }
                }
            }
            _ => return false,
        }
    };
    later.hold(skb)
}

/// A repair packet of the FEC shim (RC opcode 0x1F, reserved by the IBTA): its ICRC and
/// header checked, it goes to its QP, and the packet it rebuilds through [`deliver`] like
/// any received datagram. False when it was dropped (malformed, or for no QP that takes
/// repairs from its sender).
fn repair(dev: &RoceDevice, d: &RoceDatagram<'_>) -> bool {
    let body = d.ib.len().checked_sub(ICRC_LEN).and_then(|n| d.ib.get(..n));
    let checked = icrc::verify_with::<KernelCrc32>(d.ip_header, d.udp_header, d.ib).is_ok();
    let Some(Ok((rh, payload))) = body.filter(|_| checked).map(RepairHeader::parse) else {
        dev.counters().inc(Counter::RcvdMalformed);
        return false;
    };
    let delivered = match rh.kind {
        RhKind::Repair => rc_qp::repair_deliver(dev, d, &rh, payload),
        RhKind::RespRepair => rc_fec_resp::repair_deliver(dev, d, &rh, payload),
        RhKind::RespAsk => return rc_fec_resp::take_ask(dev, d, &rh),
        RhKind::Ask | RhKind::Take => return rc_qp::fec_negotiate(dev, d, &rh),
    };
    let Some((qp, rebuilt)) = delivered else {
        return false;
    };
    if let Some(skb) = rebuilt {
        receive(dev, skb);
    }
    rc_qp::fec_settle(&qp);
    true
}
