// SPDX-License-Identifier: GPL-2.0
//! Device and port attributes (include/rdma/ib_verbs.h: `struct ib_device_attr`,
//! `struct ib_port_attr`, `struct ib_port_immutable` and their enums) as Rust values. What
//! a device offers is decided in `verbs/device.rs`; this file only translates.

use crate::kx::bindings;
use crate::kx::ib_verbs::PathMtu;

/// `enum ib_port_state`, the two states an Ethernet-backed port takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum PortState {
    /// IB_PORT_DOWN.
    Down,
    /// IB_PORT_ACTIVE.
    Active,
}

impl PortState {
    /// The C value.
    pub(crate) fn to_raw(self) -> bindings::ib_port_state {
        match self {
            Self::Down => bindings::ib_port_state_IB_PORT_DOWN,
            Self::Active => bindings::ib_port_state_IB_PORT_ACTIVE,
        }
    }
}

/// `enum ib_port_phys_state`, as an Ethernet port maps onto it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum PortPhysState {
    /// The link is up.
    LinkUp,
    /// The netdev is up, without a link.
    Polling,
    /// The netdev is down.
    Disabled,
}

impl PortPhysState {
    fn to_raw(self) -> u8 {
        let raw = match self {
            Self::LinkUp => bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP,
            Self::Polling => bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING,
            Self::Disabled => bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED,
        };
        // The enum's values are 1 ..= 7.
        raw as u8
    }
}

/// `enum ib_device_cap_flags`: what a device can do.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct DeviceCaps(u64);

impl DeviceCaps {
    /// IB_DEVICE_BAD_PKEY_CNTR.
    pub(crate) const BAD_PKEY_CNTR: Self =
        Self::of(bindings::ib_device_cap_flags_IB_DEVICE_BAD_PKEY_CNTR);
    /// IB_DEVICE_BAD_QKEY_CNTR.
    pub(crate) const BAD_QKEY_CNTR: Self =
        Self::of(bindings::ib_device_cap_flags_IB_DEVICE_BAD_QKEY_CNTR);
    /// IB_DEVICE_SYS_IMAGE_GUID.
    pub(crate) const SYS_IMAGE_GUID: Self =
        Self::of(bindings::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID);
    /// IB_DEVICE_RC_RNR_NAK_GEN.
    pub(crate) const RC_RNR_NAK_GEN: Self =
        Self::of(bindings::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN);
    /// IB_DEVICE_SRQ_RESIZE.
    pub(crate) const SRQ_RESIZE: Self =
        Self::of(bindings::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE);
    /// IB_DEVICE_PORT_ACTIVE_EVENT.
    pub(crate) const PORT_ACTIVE_EVENT: Self =
        Self::of(bindings::ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT);
    /// IB_DEVICE_MEM_MGT_EXTENSIONS.
    pub(crate) const MEM_MGT_EXTENSIONS: Self =
        Self::of(bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS);
    /// IB_DEVICE_MEM_WINDOW.
    pub(crate) const MEM_WINDOW: Self =
        Self::of(bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW);
    /// IB_DEVICE_MEM_WINDOW_TYPE_2B.
    pub(crate) const MEM_WINDOW_TYPE_2B: Self =
        Self::of(bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B);
    /// IB_DEVICE_FLUSH_GLOBAL: IBTA 1.5 FLUSH to global visibility (MRs may grant
    /// IB_ACCESS_FLUSH_GLOBAL).
    pub(crate) const FLUSH_GLOBAL: Self =
        Self::of(bindings::ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL);

    const fn of(bit: bindings::ib_device_cap_flags) -> Self {
        Self(bit as u64)
    }

    /// Both sets.
    pub(crate) const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// `enum ib_atomic_cap`, the level rxe_sr offers (IB_ATOMIC_NONE and IB_ATOMIC_GLOB are
/// not offered).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum AtomicCap {
    /// Atomic with respect to this device's own operations (IB_ATOMIC_HCA).
    Hca,
}

/// `enum ib_odp_transport_cap_bits`: the operations of one transport that may use
/// on-demand paging MRs.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct OdpOps(u32);

impl OdpOps {
    /// SENDs gather from them.
    pub(crate) const SEND: Self = Self::of(bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND);
    /// Receives scatter into them.
    pub(crate) const RECV: Self = Self::of(bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_RECV);
    /// RDMA WRITEs read and land in them.
    pub(crate) const WRITE: Self =
        Self::of(bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_WRITE);
    /// RDMA READs read and land in them.
    pub(crate) const READ: Self = Self::of(bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_READ);
    /// Atomics act on them.
    pub(crate) const ATOMIC: Self =
        Self::of(bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC);
    /// Receives from an SRQ scatter into them.
    pub(crate) const SRQ_RECV: Self =
        Self::of(bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SRQ_RECV);

    const fn of(bit: bindings::ib_odp_transport_cap_bits) -> Self {
        Self(bit)
    }

    /// Both sets.
    pub(crate) const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// `struct ib_odp_caps` of a device with explicit on-demand paging (`IB_ODP_SUPPORT`; not
/// implicit, whole-address-space MRs): per transport, the operations that may use it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct OdpCaps {
    pub(crate) rc: OdpOps,
    pub(crate) uc: OdpOps,
    pub(crate) ud: OdpOps,
}

/// `struct ib_device_attr`: what `ibv_query_device` reports (fields not listed are zero).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeviceAttr {
    pub(crate) sys_image_guid: u64,
    pub(crate) max_mr_size: u64,
    pub(crate) page_size_cap: u64,
    pub(crate) vendor_id: u32,
    pub(crate) max_qp: i32,
    pub(crate) max_qp_wr: i32,
    pub(crate) device_cap_flags: DeviceCaps,
    /// IBK_ALLOW_USER_UNREG: user MRs may be deregistered while a kernel ULP uses them.
    pub(crate) allow_user_unreg: bool,
    pub(crate) max_send_sge: i32,
    pub(crate) max_recv_sge: i32,
    pub(crate) max_sge_rd: i32,
    pub(crate) max_cq: i32,
    pub(crate) max_cqe: i32,
    pub(crate) max_mr: i32,
    pub(crate) max_pd: i32,
    pub(crate) max_mw: i32,
    pub(crate) max_qp_rd_atom: i32,
    pub(crate) max_res_rd_atom: i32,
    pub(crate) max_qp_init_rd_atom: i32,
    pub(crate) atomic_cap: AtomicCap,
    pub(crate) max_ah: i32,
    pub(crate) max_srq: i32,
    pub(crate) max_srq_wr: i32,
    pub(crate) max_srq_sge: i32,
    pub(crate) max_fast_reg_page_list_len: u32,
    pub(crate) max_pkeys: u16,
    pub(crate) max_mcast_grp: i32,
    pub(crate) max_mcast_qp_attach: i32,
    pub(crate) max_total_mcast_qp_attach: i32,
    pub(crate) local_ca_ack_delay: u8,
    /// On-demand paging (`IBK_ON_DEMAND_PAGING` and the ODP caps), when offered.
    pub(crate) odp: Option<OdpCaps>,
}

impl DeviceAttr {
    /// The C block.
    pub(crate) fn to_raw(self) -> bindings::ib_device_attr {
        bindings::ib_device_attr {
            sys_image_guid: self.sys_image_guid,
            max_mr_size: self.max_mr_size,
            page_size_cap: self.page_size_cap,
            vendor_id: self.vendor_id,
            max_qp: self.max_qp,
            max_qp_wr: self.max_qp_wr,
            device_cap_flags: self.device_cap_flags.0,
            kernel_cap_flags: if self.allow_user_unreg {
                bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG as u64
            } else {
                0
            } | if self.odp.is_some() {
                bindings::ib_kernel_cap_flags_IBK_ON_DEMAND_PAGING as u64
            } else {
                0
            },
            max_send_sge: self.max_send_sge,
            max_recv_sge: self.max_recv_sge,
            max_sge_rd: self.max_sge_rd,
            max_cq: self.max_cq,
            max_cqe: self.max_cqe,
            max_mr: self.max_mr,
            max_pd: self.max_pd,
            max_mw: self.max_mw,
            max_qp_rd_atom: self.max_qp_rd_atom,
            max_res_rd_atom: self.max_res_rd_atom,
            max_qp_init_rd_atom: self.max_qp_init_rd_atom,
            atomic_cap: match self.atomic_cap {
                AtomicCap::Hca => bindings::ib_atomic_cap_IB_ATOMIC_HCA,
            },
            max_ah: self.max_ah,
            max_srq: self.max_srq,
            max_srq_wr: self.max_srq_wr,
            max_srq_sge: self.max_srq_sge,
            max_fast_reg_page_list_len: self.max_fast_reg_page_list_len,
            max_pkeys: self.max_pkeys,
            max_mcast_grp: self.max_mcast_grp,
            max_mcast_qp_attach: self.max_mcast_qp_attach,
            max_total_mcast_qp_attach: self.max_total_mcast_qp_attach,
            local_ca_ack_delay: self.local_ca_ack_delay,
            odp_caps: match self.odp {
                Some(c) => bindings::ib_odp_caps {
                    general_caps: bindings::ib_odp_general_cap_bits_IB_ODP_SUPPORT as u64,
                    per_transport_caps: bindings::ib_odp_caps__bindgen_ty_1 {
                        rc_odp_caps: c.rc.0,
                        uc_odp_caps: c.uc.0,
                        ud_odp_caps: c.ud.0,
                        xrc_odp_caps: 0,
                    },
                },
                None => Default::default(),
            },
            ..Default::default()
        }
    }
}

/// `struct ib_port_attr`: what `ibv_query_port` reports (speed and width come from the
/// netdev, filled in by the core's `ib_get_eth_speed`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PortAttr {
    pub(crate) state: PortState,
    pub(crate) max_mtu: PathMtu,
    pub(crate) active_mtu: PathMtu,
    pub(crate) phys_mtu: u32,
    pub(crate) gid_tbl_len: i32,
    /// IB_PORT_CM_SUP: the port runs the connection manager.
    pub(crate) cm_supported: bool,
    pub(crate) max_msg_sz: u32,
    pub(crate) pkey_tbl_len: u16,
    pub(crate) max_vl_num: u8,
    pub(crate) phys_state: PortPhysState,
}

impl PortAttr {
    /// The C block (1X width and the slowest speed until the core fills them in).
    pub(crate) fn to_raw(self) -> bindings::ib_port_attr {
        bindings::ib_port_attr {
            state: self.state.to_raw(),
            max_mtu: self.max_mtu.to_raw(),
            active_mtu: self.active_mtu.to_raw(),
            phys_mtu: self.phys_mtu,
            gid_tbl_len: self.gid_tbl_len,
            port_cap_flags: if self.cm_supported {
                bindings::ib_port_capability_mask_bits_IB_PORT_CM_SUP
            } else {
                0
            },
            max_msg_sz: self.max_msg_sz,
            pkey_tbl_len: self.pkey_tbl_len,
            max_vl_num: self.max_vl_num,
            active_width: bindings::ib_port_width_IB_WIDTH_1X as u8,
            active_speed: 1,
            phys_state: self.phys_state.to_raw(),
            ..Default::default()
        }
    }
}

/// `struct ib_port_immutable` of a RoCEv2 port (UDP-encapsulated RoCE, MADs of the standard
/// size).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RoceV2PortImmutable {
    pub(crate) pkey_tbl_len: i32,
    pub(crate) gid_tbl_len: i32,
}

impl RoceV2PortImmutable {
    /// The C block.
    pub(crate) fn to_raw(self) -> bindings::ib_port_immutable {
        bindings::ib_port_immutable {
            core_cap_flags: bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP,
            pkey_tbl_len: self.pkey_tbl_len,
            gid_tbl_len: self.gid_tbl_len,
            max_mad_size: bindings::IB_MGMT_MAD_SIZE,
        }
    }
}
