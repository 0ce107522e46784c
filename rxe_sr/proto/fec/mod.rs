// SPDX-License-Identifier: GPL-2.0
//! The FEC shim (LoWAR): XOR repair packets over coding units of a QP's request packets.
//!
//! The requester's [`encoder::Encoder`] sees each request packet as it is first sent
//! (BTH to ICRC, and its IPv4 Identification, which the ICRC covers) and XORs it into the
//! accumulator of its coding unit; when a unit's last packet is sent (or the requester has
//! nothing more to send) it hands out a repair: the XOR and the header that says which
//! packets it covers ([`crate::proto::wire::repair`]). The responder's
//! [`decoder::Decoder`] XORs each request packet it receives into the same unit; a repair
//! that finds exactly one of its packets missing rebuilds that packet, which the caller
//! then delivers as if received, through the same ICRC and transport checks.
//!
//! Units follow the PSNs: a block of `n * d` PSNs (aligned on multiples of `n * d`) holds
//! `d` units, unit `j` the PSNs `j, j + d, j + 2d, ...` of the block, so that a burst of up
//! to `d` losses costs each unit one packet. Only the accumulators are kept (one packet's
//! bytes per unit), never the packets themselves.
//!
//! Packets after a loss are held back ([`hold`]) until the loss is rebuilt, so that the
//! transport sees the packets in order; [`rx::FecRx`] puts decoder and holder together.
//!
//! The other direction is coded the same way: the responder's READ responses and atomic
//! ACKs, sent for the first time, go through an encoder of their own (repairs of kind
//! [`RhKind::RespRepair`]), and the requester's [`resp_rx::RespRx`] decodes them and holds
//! the responses after one it waits for.
//!
//! Only the packets marked as coded (BTH Resv7 [`fec_coded`]: the first transmission of
//! each PSN) are coded, on both sides, each with the parameters of the epoch its mark
//! names: the receiving side may ask for other parameters ([`ask`]), and the requester
//! that takes an ask codes its next packets in the next epoch. A resend's bytes need not
//! equal the first transmission's (its IPv4 Identification never does), and the ICRC
//! cannot tell a wrong rebuild: the XOR of an odd number of valid packets of one length
//! passes it.

pub mod ask;
pub mod decoder;
pub mod encoder;
pub mod hold;
pub mod resp_rx;
pub mod rx;
pub mod rx_side;

pub use crate::proto::wire::fec_caps::{coded_epoch, fec_coded, FEC_EPOCHS};
pub use crate::proto::wire::repair::{FecParams, RepairHeader, RhKind, FEC_MAX_PACKET};

/// XORs `src` into the start of `dst` (as far as both go), a 64-bit word at a time: the
/// kernel is built without vector registers, so a byte loop would stay a byte loop.
fn xor_into(dst: &mut [u8], src: &[u8]) {
    let mut dst_words = dst.chunks_exact_mut(8);
    let mut src_words = src.chunks_exact(8);
    for (d, s) in (&mut dst_words).zip(&mut src_words) {
        let (Ok(dw), Ok(sw)) = (<[u8; 8]>::try_from(&*d), <[u8; 8]>::try_from(s)) else {
            return;
        };
        d.copy_from_slice(&(u64::from_ne_bytes(dw) ^ u64::from_ne_bytes(sw)).to_ne_bytes());
    }
    let tail = dst.len().min(src.len()) & !7;
    let (Some(dst), Some(src)) = (dst.get_mut(tail..), src.get(tail..)) else {
        return;
    };
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= *s;
    }
}

/// The parameter epoch of the request packet `pkt` (BTH first), if it is marked as coded
/// (BTH Resv7).
fn packet_epoch(pkt: &[u8]) -> Option<u8> {
    pkt.get(8).and_then(|&b| coded_epoch(b))
}

/// The bit of index `i` in a covered or received mask.
const fn bit(i: u32) -> u32 {
    1 << (i & 31)
}
