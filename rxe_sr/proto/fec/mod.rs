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
//! Only the packets marked as coded (BTH Resv7 [`FEC_CODED`]: the first transmission of
//! each PSN) are coded, on both sides. A resend's bytes need not equal the first
//! transmission's (its IPv4 Identification never does), and the ICRC cannot tell a wrong
//! rebuild: the XOR of an odd number of valid packets of one length passes it.

pub mod decoder;
pub mod encoder;
pub mod hold;
pub mod rx;

pub use crate::proto::wire::fec_caps::FEC_CODED;
pub use crate::proto::wire::repair::{FecParams, RepairHeader, RhKind, FEC_MAX_PACKET};

/// XORs `src` into the start of `dst` (as far as both go).
fn xor_into(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= *s;
    }
}

/// True when the request packet `pkt` (BTH first) is marked as coded (BTH Resv7).
fn is_coded(pkt: &[u8]) -> bool {
    pkt.get(8).is_some_and(|b| b & 0x7f == FEC_CODED)
}

/// The bit of index `i` in a covered or received mask.
const fn bit(i: u32) -> u32 {
    1 << (i & 31)
}
