// SPDX-License-Identifier: GPL-2.0
//! The destination of a UD/GSI send: `wr.ud` ([`UdDest`]) with either the kernel AH number
//! or, from old providers, an embedded address vector (`struct rxe_av`, [`Av`]).

use crate::uabi::field;
use crate::uabi::layout::{
    AV_DGID_ADDR_OFF, AV_DMAC_OFF, AV_GRH_DGID_OFF, AV_GRH_FLOW_LABEL_OFF, AV_GRH_HOP_LIMIT_OFF,
    AV_GRH_SGID_INDEX_OFF, AV_GRH_TRAFFIC_CLASS_OFF, AV_NETWORK_TYPE_OFF, AV_PORT_NUM_OFF,
    AV_SGID_ADDR_OFF, SEND_WQE_WR_OFF, SEND_WR_UD_AH_NUM_OFF, SEND_WR_UD_AV_OFF,
    SEND_WR_UD_PKEY_INDEX_OFF, SEND_WR_UD_REMOTE_QKEY_OFF, SEND_WR_UD_REMOTE_QPN_OFF,
    SOCKADDR_IN6_ADDR_OFF, SOCKADDR_IN_ADDR_OFF,
};
use crate::uabi::limits::{MAX_QPN, RXE_NUM_PORT};
use crate::uabi::WqeError;

use super::need;

/// `RXE_NETWORK_TYPE_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NetworkType {
    /// `RXE_NETWORK_TYPE_IPV4` (1).
    Ipv4,
    /// `RXE_NETWORK_TYPE_IPV6` (2).
    Ipv6,
}

/// An IP address taken from an AV's sockaddr union.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpAddr {
    /// `sockaddr_in.sin_addr`, network order.
    V4([u8; 4]),
    /// `sockaddr_in6.sin6_addr`, network order.
    V6([u8; 16]),
}

/// An address vector embedded in a UD WQE (`struct rxe_av`; old providers only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Av {
    /// Port (always 1).
    pub port_num: u8,
    /// IPv4 or IPv6 (selects how the sockaddrs are read).
    pub network_type: NetworkType,
    /// Destination MAC.
    pub dmac: [u8; 6],
    /// Destination GID.
    pub dgid: [u8; 16],
    /// GRH flow label.
    pub flow_label: u32,
    /// Source GID index.
    pub sgid_index: u8,
    /// GRH hop limit.
    pub hop_limit: u8,
    /// GRH traffic class.
    pub traffic_class: u8,
    /// Source IP address (`sgid_addr`).
    pub saddr: IpAddr,
    /// Destination IP address (`dgid_addr`).
    pub daddr: IpAddr,
}

impl Av {
    /// Parses and checks a `struct rxe_av` at `off` in `b`: `port_num` must be 1 and
    /// `network_type` IPv4 or IPv6.
    pub fn parse(b: &[u8], off: usize) -> Result<Av, WqeError> {
        let at = |rel: usize| off.checked_add(rel).ok_or(WqeError::SlotTooSmall);
        let port_num = field::u8_at(b, at(AV_PORT_NUM_OFF)?).ok_or(WqeError::SlotTooSmall)?;
        if port_num != RXE_NUM_PORT {
            return Err(WqeError::BadAv);
        }
        let network_type = match field::u8_at(b, at(AV_NETWORK_TYPE_OFF)?) {
            Some(1) => NetworkType::Ipv4,
            Some(2) => NetworkType::Ipv6,
            Some(_) => return Err(WqeError::BadAv),
            None => return Err(WqeError::SlotTooSmall),
        };
        let ip = |base: usize| -> Result<IpAddr, WqeError> {
            let addr = match network_type {
                NetworkType::Ipv4 => {
                    field::array::<4>(b, at(base)?.saturating_add(SOCKADDR_IN_ADDR_OFF))
                        .map(IpAddr::V4)
                }
                NetworkType::Ipv6 => {
                    field::array::<16>(b, at(base)?.saturating_add(SOCKADDR_IN6_ADDR_OFF))
                        .map(IpAddr::V6)
                }
            };
            addr.ok_or(WqeError::SlotTooSmall)
        };
        Ok(Av {
            port_num,
            network_type,
            dmac: field::array(b, at(AV_DMAC_OFF)?).ok_or(WqeError::SlotTooSmall)?,
            dgid: field::array(b, at(AV_GRH_DGID_OFF)?).ok_or(WqeError::SlotTooSmall)?,
            flow_label: field::u32_le(b, at(AV_GRH_FLOW_LABEL_OFF)?)
                .ok_or(WqeError::SlotTooSmall)?,
            sgid_index: field::u8_at(b, at(AV_GRH_SGID_INDEX_OFF)?)
                .ok_or(WqeError::SlotTooSmall)?,
            hop_limit: field::u8_at(b, at(AV_GRH_HOP_LIMIT_OFF)?).ok_or(WqeError::SlotTooSmall)?,
            traffic_class: field::u8_at(b, at(AV_GRH_TRAFFIC_CLASS_OFF)?)
                .ok_or(WqeError::SlotTooSmall)?,
            saddr: ip(AV_SGID_ADDR_OFF)?,
            daddr: ip(AV_DGID_ADDR_OFF)?,
        })
    }
}

/// True for an IPv4-mapped GID (`::ffff:a.b.c.d`), which RoCEv2 sends over IPv4; any other
/// GID is an IPv6 address.
pub fn is_v4_mapped(gid: &[u8; 16]) -> bool {
    gid[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
}

impl Av {
    /// True when this embedded AV agrees with `sgid`, the GID its `sgid_index` names: for
    /// IPv4 both GIDs are IPv4-mapped and `dgid_addr` is the destination GID's address, for
    /// IPv6 neither is mapped and `dgid_addr` is the destination GID itself. (rdma_rxe routes
    /// by `dgid_addr` and trusts the provider; rxe_sr sends to the GID and checks they agree.)
    pub fn agrees_with(&self, sgid: &[u8; 16]) -> bool {
        let v4 = is_v4_mapped;
        match (self.network_type, self.daddr) {
            (NetworkType::Ipv4, IpAddr::V4(a)) => {
                v4(sgid) && v4(&self.dgid) && self.dgid[12..] == a
            }
            (NetworkType::Ipv6, IpAddr::V6(a)) => !v4(sgid) && !v4(&self.dgid) && self.dgid == a,
            _ => false,
        }
    }
}

/// The destination of a UD/GSI send (`wr.ud`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdDest {
    /// Destination QP number (24 bits).
    pub remote_qpn: u32,
    /// Q_Key.
    pub remote_qkey: u32,
    /// P_Key index (meaningful for GSI only).
    pub pkey_index: u16,
    /// The kernel AH number (`rxe_create_ah_resp.ah_num`); 0 when the AV is embedded. The
    /// caller must look it up and check it belongs to the QP's PD.
    pub ah_num: u32,
    /// The embedded AV, present exactly when `ah_num == 0`.
    pub av: Option<Av>,
}

pub(super) fn parse_ud(b: &[u8]) -> Result<UdDest, WqeError> {
    let remote_qpn = need(field::u32_le(
        b,
        SEND_WQE_WR_OFF + SEND_WR_UD_REMOTE_QPN_OFF,
    ))?;
    if remote_qpn > MAX_QPN {
        return Err(WqeError::BadRemoteQpn);
    }
    let ah_num = need(field::u32_le(b, SEND_WQE_WR_OFF + SEND_WR_UD_AH_NUM_OFF))?;
    let av = if ah_num == 0 {
        Some(Av::parse(b, SEND_WQE_WR_OFF + SEND_WR_UD_AV_OFF)?)
    } else {
        None
    };
    Ok(UdDest {
        remote_qpn,
        remote_qkey: need(field::u32_le(
            b,
            SEND_WQE_WR_OFF + SEND_WR_UD_REMOTE_QKEY_OFF,
        ))?,
        pkey_index: need(field::u16_le(
            b,
            SEND_WQE_WR_OFF + SEND_WR_UD_PKEY_INDEX_OFF,
        ))?,
        ah_num,
        av,
    })
}
