// SPDX-License-Identifier: GPL-2.0
//! Address vectors: where a UD work request (or a connected QP) sends, in the form the
//! transport needs: the IP version and addresses behind the RoCEv2 GIDs and the GRH fields
//! that become IP header fields (the IP layer resolves the next hop); and the address
//! handles that hold them.

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

/// Largest AH number (as rdma_rxe: 2^15 - 1), and the most AHs, user and kernel, a device
/// lets exist at once: the `max_ah` it reports.
pub(crate) const MAX_AH_NUM: u32 = (1 << 15) - 1;

use kernel::alloc::KBox;

use crate::kx::ib_ah::Ah;
use crate::kx::ib_device::Device;
use crate::kx::ib_driver::Driver;
use crate::kx::ib_pd::PdId;
use crate::kx::xarray::XArray;
use crate::uabi::send_wqe;
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

    /// True when the destination is a multicast group: an IPv4 address in 224.0.0.0/4, or
    /// an IPv6 one in ff00::/8.
    pub(crate) fn is_multicast(&self) -> bool {
        match self.network {
            Network::V4 => self.dgid[12] & 0xf0 == 0xe0,
            Network::V6 => self.dgid[0] == 0xff,
        }
    }

    /// The IPv4 source and destination addresses, for an IPv4 AV.
    pub(crate) fn ipv4(&self) -> Option<([u8; 4], [u8; 4])> {
        let last4 = |g: &[u8; 16]| [g[12], g[13], g[14], g[15]];
        (self.network == Network::V4).then(|| (last4(&self.sgid), last4(&self.dgid)))
    }
}

/// What an address handle names: its PD and its address vector. A user AH's entry in the
/// device's AH table is a copy (a UD send WQE names the AH by number).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AhEntry {
    /// The PD it was created in.
    pub(crate) pd: PdId,
    /// Where it points.
    pub(crate) av: Av,
}

/// The entries of a device's AH table, by AH number.
pub(crate) type AhTableEntry = KBox<AhEntry>;

/// The driver's data in an address handle.
pub(crate) struct AhState {
    /// Where it points.
    pub(crate) av: Av,
    /// Its number in the device's AH table (user AHs; 0 for a kernel consumer's AH, whose
    /// work requests carry the AH itself).
    pub(crate) ah_num: u32,
}

/// The AV of a kernel consumer's AH, if it belongs to `pd`. Generic over the driver, whose
/// state (`objects::device`) holds this file's types.
pub(crate) fn kernel_av<T: Driver<Ah = AhState>>(ah: &Ah<T>, pd: PdId) -> Option<Av> {
    (ah.pd() == pd).then_some(ah.av)
}

/// The AV of AH number `ah_num` in a device's AH table `ahs`, if it exists and belongs to
/// `pd`.
pub(crate) fn lookup(ahs: &XArray<AhTableEntry>, pd: PdId, ah_num: u32) -> Option<Av> {
    ahs.with(ah_num, |e| (e.pd == pd).then_some(e.av)).flatten()
}

/// The AV a UD send WQE embeds (`ah_num` 0: rxe providers from before AH numbers), checked
/// against the device's GID table: its `sgid_index` must name a RoCEv2 GID of the same IP
/// version as the destination. `None` for anything else.
pub(crate) fn embedded<T: Driver>(dev: &Device<T>, e: &send_wqe::Av) -> Option<Av> {
    let sgid = dev.roce_v2_gid(u32::from(e.sgid_index))?;
    if !e.agrees_with(&sgid) {
        return None;
    }
    Av::new(sgid, e.dgid, e.flow_label, e.hop_limit, e.traffic_class)
}
