// SPDX-License-Identifier: GPL-2.0
//! Address vectors: where a UD work request (or a connected QP) sends, in the form the
//! transport needs: the IP version and addresses behind the RoCEv2 GIDs and the GRH fields
//! that become IP header fields (the IP layer resolves the next hop).

/// The IP version a RoCEv2 GID pair maps to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Network {
    /// IPv4-mapped GIDs (`::ffff:a.b.c.d`).
    V4,
    /// Any other GID is an IPv6 address.
    V6,
}

/// A resolved address vector.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Av {
    /// IP version.
    pub(crate) network: Network,
    /// Source GID (an IPv4-mapped or IPv6 address).
    pub(crate) sgid: [u8; 16],
    /// Destination GID.
    pub(crate) dgid: [u8; 16],
    /// GRH flow label (the IPv6 flow label).
    pub(crate) flow_label: u32,
    /// GRH hop limit (IP TTL / hop limit).
    pub(crate) hop_limit: u8,
    /// GRH traffic class (IP DSCP/ECN).
    pub(crate) traffic_class: u8,
}

/// Largest AH number (as rdma_rxe: 2^15 - 1); the device reports `max_ah` from it.
pub(crate) const MAX_AH_NUM: u32 = (1 << 15) - 1;

use crate::uabi::send_wqe::is_v4_mapped;

impl Av {
    /// An AV from a source and destination GID; both must be of the same IP version.
    pub(crate) fn new(
        sgid: [u8; 16],
        dgid: [u8; 16],
        flow_label: u32,
        hop_limit: u8,
        traffic_class: u8,
    ) -> Option<Av> {
        let network = match (is_v4_mapped(&sgid), is_v4_mapped(&dgid)) {
            (true, true) => Network::V4,
            (false, false) => Network::V6,
            _ => return None,
        };
        Some(Av {
            network,
            sgid,
            dgid,
            flow_label: flow_label & 0xf_ffff,
            hop_limit,
            traffic_class,
        })
    }
}

impl Av {
    /// True when source and destination are the same address: the packet loops back to
    /// this device without touching the network (as rdma_rxe's loopback).
    pub(crate) fn is_loopback(&self) -> bool {
        self.sgid == self.dgid
    }

    /// The IPv4 source and destination addresses, for an IPv4 AV.
    pub(crate) fn ipv4(&self) -> Option<([u8; 4], [u8; 4])> {
        let last4 = |g: &[u8; 16]| [g[12], g[13], g[14], g[15]];
        (self.network == Network::V4).then(|| (last4(&self.sgid), last4(&self.dgid)))
    }
}
