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
//! A resend is not coded: its bytes need not equal the first transmission's (its IPv4
//! Identification never does). A receiver that takes a resend into a unit only makes that
//! unit's rebuild fail its ICRC, which drops it like any corrupt packet.

pub mod decoder;
pub mod encoder;
pub mod hold;
pub mod rx;

pub use crate::proto::wire::repair::{FecParams, RepairHeader, RhKind, FEC_MAX_PACKET};

/// XORs `src` into the start of `dst` (as far as both go).
fn xor_into(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= *s;
    }
}

/// The bit of index `i` in a covered or received mask.
const fn bit(i: u32) -> u32 {
    1 << (i & 31)
}
