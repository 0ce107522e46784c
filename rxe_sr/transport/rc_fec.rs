// SPDX-License-Identifier: GPL-2.0
//! The FEC shim's sending half in the kernel: a QP's encoder (`proto::fec` codes) and the
//! repair packets it sends to the QP's peer.

use kernel::alloc::{flags::GFP_KERNEL, KBox, KVVec};
use kernel::prelude::*;

use crate::kx::netdevice::NetDev;
use crate::objects::ah::Av;
use crate::objects::device::RoceDevice;
use crate::proto::fec::encoder::Encoder;
use crate::proto::fec::{FecParams, RepairHeader, FEC_MAX_PACKET};
use crate::proto::wire::repair::RH_LEN;
use crate::proto::wire::ICRC_LEN;

/// A QP's encoder, its accumulators on the heap.
pub(crate) type KEncoder = Encoder<KVVec<u8>>;

/// The encoder of a QP whose peer QP is `dest_qpn`.
#[inline(never)]
pub(crate) fn new_encoder(params: FecParams, dest_qpn: u32) -> Result<KBox<KEncoder>> {
    let buf = KVVec::from_elem(0u8, params.d() as usize * FEC_MAX_PACKET, GFP_KERNEL)?;
    Ok(KBox::new(Encoder::new(params, dest_qpn, buf), GFP_KERNEL)?)
}

/// Where a QP's packets go: repairs go the same way as its data packets (addresses, UDP
/// source port, traffic class), as the ICRC of a rebuilt packet covers them.
#[derive(Clone, Copy)]
pub(crate) struct RepairPath<'a> {
    pub(crate) dev: &'a RoceDevice,
    pub(crate) nd: &'a NetDev,
    pub(crate) av: &'a Av,
    pub(crate) sport: u16,
}

impl RepairPath<'_> {
    /// Sends one repair packet: its header, the XOR payload, an ICRC. A repair that
    /// cannot be sent is lost like any packet.
    pub(crate) fn send(&self, rh: &RepairHeader, payload: &[u8]) {
        let len = RH_LEN + payload.len() + ICRC_LEN;
        let fill = |ib: &mut [u8]| {
            rh.emit(ib, payload.len()).map_err(|_| ())?;
            let dst = ib.get_mut(RH_LEN..RH_LEN + payload.len()).ok_or(())?;
            if crate::bytes::copy(dst, payload) {
                Ok(())
            } else {
                Err(())
            }
        };
        let (dev, nd, av, sport) = (self.dev, self.nd, self.av, self.sport);
        let _ =
            crate::net::tx::send_with(dev, nd, av, sport, len, 0..0, |_| Ok(()), fill, |_, _| {});
    }
}

/// The IPv4 Identification of the datagram whose IP header is `ip` (0 over IPv6, which
/// has none).
pub(crate) fn ip_id(ip: &[u8]) -> u16 {
    match ip {
        [b, _, _, _, hi, lo, ..] if b >> 4 == 4 => u16::from_be_bytes([*hi, *lo]),
        _ => 0,
    }
}
