// SPDX-License-Identifier: GPL-2.0
//! Parsing and validation of one send-queue slot (`struct rxe_send_wqe`) as rdma-core's rxe
//! provider writes it.
//!
//! What the provider writes (`providers/rxe/rxe.c`: `post_one_send`/`init_send_wqe`, and the
//! `ibv_wr_*` extended API): `wr.wr_id`, `wr.opcode` (`IBV_WR_*`, numerically equal to
//! `IB_UVERBS_WR_*`), `wr.send_flags` (`IBV_SEND_*` = `IB_SEND_*`), `wr.ex`, the per-opcode
//! `wr.wr` union, and `dma`: `length` (sum of the SGE lengths, or the inline byte count),
//! `num_sge`, then either the SGE array or the inline bytes (`IBV_SEND_INLINE`), or for
//! `ATOMIC_WRITE` the 8-byte value in `dma.atomic_wr`. For UD it sets `wr.ud.ah_num` to the
//! kernel's AH number (or, with old kernels, leaves it 0 and copies the AV into `wr.ud.av`).
//!
//! Kernel-scratch fields (`status`, `state`, `iova`, `mask`, PSNs, `ssn`, `dma.resid`,
//! `dma.cur_sge`, `dma.sge_offset`) are ignored: the remote address comes from the `wr` union.
//! For SGE-carrying WQEs `dma.length` is ignored too and recomputed from the SGEs.

use super::field;
use super::layout::{
    AV_DGID_ADDR_OFF, AV_DMAC_OFF, AV_GRH_DGID_OFF, AV_GRH_FLOW_LABEL_OFF, AV_GRH_HOP_LIMIT_OFF,
    AV_GRH_SGID_INDEX_OFF, AV_GRH_TRAFFIC_CLASS_OFF, AV_NETWORK_TYPE_OFF, AV_PORT_NUM_OFF,
    AV_SGID_ADDR_OFF, SEND_WQE_DMA_DATA_OFF, SEND_WQE_DMA_LENGTH_OFF, SEND_WQE_DMA_NUM_SGE_OFF,
    SEND_WQE_SIZE, SEND_WQE_WR_EX_OFF, SEND_WQE_WR_ID_OFF, SEND_WQE_WR_OFF, SEND_WQE_WR_OPCODE_OFF,
    SEND_WQE_WR_SEND_FLAGS_OFF, SEND_WR_ATOMIC_COMPARE_ADD_OFF, SEND_WR_ATOMIC_REMOTE_ADDR_OFF,
    SEND_WR_ATOMIC_RKEY_OFF, SEND_WR_ATOMIC_SWAP_OFF, SEND_WR_FLUSH_LEVEL_OFF,
    SEND_WR_FLUSH_REMOTE_ADDR_OFF, SEND_WR_FLUSH_RKEY_OFF, SEND_WR_FLUSH_TYPE_OFF,
    SEND_WR_MW_ACCESS_OFF, SEND_WR_MW_ADDR_OFF, SEND_WR_MW_LENGTH_OFF, SEND_WR_MW_MR_LKEY_OFF,
    SEND_WR_MW_MW_RKEY_OFF, SEND_WR_MW_RKEY_OFF, SEND_WR_RDMA_REMOTE_ADDR_OFF,
    SEND_WR_RDMA_RKEY_OFF, SEND_WR_UD_AH_NUM_OFF, SEND_WR_UD_AV_OFF, SEND_WR_UD_PKEY_INDEX_OFF,
    SEND_WR_UD_REMOTE_QKEY_OFF, SEND_WR_UD_REMOTE_QPN_OFF, SOCKADDR_IN6_ADDR_OFF,
    SOCKADDR_IN_ADDR_OFF,
};
use super::limits::{ATOMIC_SIZE, MAX_QPN, RXE_MAX_INLINE_DATA, RXE_MAX_MSG_SIZE, RXE_NUM_PORT};
use super::sge::{Sge, SgeList};
use super::WqeError;

/// Queue pair types (`enum ib_qp_type`), as far as send WQEs care.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpType {
    /// `IB_QPT_GSI` (1): QP1; sends like UD.
    Gsi,
    /// `IB_QPT_RC` (2): reliable connected.
    Rc,
    /// `IB_QPT_UC` (3): unreliable connected.
    Uc,
    /// `IB_QPT_UD` (4): unreliable datagram.
    Ud,
}

impl QpType {
    /// From the `enum ib_qp_type` value; `None` for types rdma_rxe does not implement.
    pub const fn from_ib(v: u32) -> Option<QpType> {
        match v {
            1 => Some(QpType::Gsi),
            2 => Some(QpType::Rc),
            3 => Some(QpType::Uc),
            4 => Some(QpType::Ud),
            _ => None,
        }
    }

    /// The `enum ib_qp_type` value.
    pub const fn to_ib(self) -> u32 {
        match self {
            QpType::Gsi => 1,
            QpType::Rc => 2,
            QpType::Uc => 3,
            QpType::Ud => 4,
        }
    }

    /// True for the datagram types (UD and GSI).
    pub const fn is_datagram(self) -> bool {
        matches!(self, QpType::Ud | QpType::Gsi)
    }
}

/// The send opcodes user space may post (`enum ib_uverbs_wr_opcode`, `IB_UVERBS_WR_*`).
///
/// Not accepted from user space: `TSO` (10), 11 (`RDMA_READ_WITH_INV` in the kernel,
/// `IBV_WR_DRIVER1` in rdma-core), the masked atomics (12, 13: rdma_rxe lacks them) and
/// the kernel-only `REG_MR` (0x20) and up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SendOpcode {
    /// `IB_UVERBS_WR_RDMA_WRITE` (0).
    RdmaWrite,
    /// `IB_UVERBS_WR_RDMA_WRITE_WITH_IMM` (1).
    RdmaWriteWithImm,
    /// `IB_UVERBS_WR_SEND` (2).
    Send,
    /// `IB_UVERBS_WR_SEND_WITH_IMM` (3).
    SendWithImm,
    /// `IB_UVERBS_WR_RDMA_READ` (4).
    RdmaRead,
    /// `IB_UVERBS_WR_ATOMIC_CMP_AND_SWP` (5).
    AtomicCmpAndSwp,
    /// `IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD` (6).
    AtomicFetchAndAdd,
    /// `IB_UVERBS_WR_LOCAL_INV` (7).
    LocalInv,
    /// `IB_UVERBS_WR_BIND_MW` (8).
    BindMw,
    /// `IB_UVERBS_WR_SEND_WITH_INV` (9).
    SendWithInv,
    /// `IB_UVERBS_WR_FLUSH` (14).
    Flush,
    /// `IB_UVERBS_WR_ATOMIC_WRITE` (15).
    AtomicWrite,
    /// `IB_WR_REG_MR` (0x20): fast registration, posted by kernel consumers only.
    RegMr,
}

impl SendOpcode {
    /// From the `IB_UVERBS_WR_*` value; `None` for values user space may not post.
    pub const fn from_uapi(v: u32) -> Option<SendOpcode> {
        match v {
            0 => Some(SendOpcode::RdmaWrite),
            1 => Some(SendOpcode::RdmaWriteWithImm),
            2 => Some(SendOpcode::Send),
            3 => Some(SendOpcode::SendWithImm),
            4 => Some(SendOpcode::RdmaRead),
            5 => Some(SendOpcode::AtomicCmpAndSwp),
            6 => Some(SendOpcode::AtomicFetchAndAdd),
            7 => Some(SendOpcode::LocalInv),
            8 => Some(SendOpcode::BindMw),
            9 => Some(SendOpcode::SendWithInv),
            14 => Some(SendOpcode::Flush),
            15 => Some(SendOpcode::AtomicWrite),
            _ => None,
        }
    }

    /// From a kernel consumer's `enum ib_wr_opcode`: the user values plus REG_MR.
    pub const fn from_kernel(v: u32) -> Option<SendOpcode> {
        match v {
            0x20 => Some(SendOpcode::RegMr),
            _ => SendOpcode::from_uapi(v),
        }
    }

    /// The `IB_UVERBS_WR_*` value.
    pub const fn to_uapi(self) -> u32 {
        match self {
            SendOpcode::RdmaWrite => 0,
            SendOpcode::RdmaWriteWithImm => 1,
            SendOpcode::Send => 2,
            SendOpcode::SendWithImm => 3,
            SendOpcode::RdmaRead => 4,
            SendOpcode::AtomicCmpAndSwp => 5,
            SendOpcode::AtomicFetchAndAdd => 6,
            SendOpcode::LocalInv => 7,
            SendOpcode::BindMw => 8,
            SendOpcode::SendWithInv => 9,
            SendOpcode::Flush => 14,
            SendOpcode::AtomicWrite => 15,
            SendOpcode::RegMr => 0x20,
        }
    }

    /// Whether a QP of type `qp` may post this opcode: rdma_rxe's `rxe_wr_opcode_info` table,
    /// narrowed for UD/GSI to SEND and SEND_WITH_IMM (as `init_send_wr` does). RC allows all;
    /// UC allows WRITE, WRITE_WITH_IMM, SEND, SEND_WITH_IMM, SEND_WITH_INV and BIND_MW.
    pub const fn allowed_on(self, qp: QpType) -> bool {
        match qp {
            QpType::Rc => true,
            QpType::Uc => matches!(
                self,
                SendOpcode::RdmaWrite
                    | SendOpcode::RdmaWriteWithImm
                    | SendOpcode::Send
                    | SendOpcode::SendWithImm
                    | SendOpcode::SendWithInv
                    | SendOpcode::BindMw
            ),
            QpType::Ud | QpType::Gsi => {
                matches!(self, SendOpcode::Send | SendOpcode::SendWithImm)
            }
        }
    }

    /// Whether `IB_SEND_INLINE` is meaningful (rdma_rxe's `WR_INLINE_MASK`): the opcodes
    /// whose payload goes out from the requester (sends and writes).
    pub const fn supports_inline(self) -> bool {
        matches!(
            self,
            SendOpcode::RdmaWrite
                | SendOpcode::RdmaWriteWithImm
                | SendOpcode::Send
                | SendOpcode::SendWithImm
                | SendOpcode::SendWithInv
        )
    }

    /// True for the local operations that send no packet (`WR_LOCAL_OP_MASK`).
    pub const fn is_local(self) -> bool {
        matches!(
            self,
            SendOpcode::LocalInv | SendOpcode::BindMw | SendOpcode::RegMr
        )
    }

    /// True when the WQE carries immediate data.
    pub const fn has_imm(self) -> bool {
        matches!(self, SendOpcode::RdmaWriteWithImm | SendOpcode::SendWithImm)
    }
}

/// `wr.send_flags` (`IB_SEND_*` = `IBV_SEND_*`). Unknown bits are dropped, as rdma_rxe
/// ignores them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SendFlags(u32);

impl SendFlags {
    /// `IB_SEND_FENCE`: wait for earlier READs and atomics to complete.
    pub const FENCE: u32 = 1;
    /// `IB_SEND_SIGNALED`: generate a completion on success.
    pub const SIGNALED: u32 = 1 << 1;
    /// `IB_SEND_SOLICITED`: set the solicited-event bit.
    pub const SOLICITED: u32 = 1 << 2;
    /// `IB_SEND_INLINE`: payload bytes are in the WQE.
    pub const INLINE: u32 = 1 << 3;
    /// `IB_SEND_IP_CSUM`: offload request; rxe_sr ignores it.
    pub const IP_CSUM: u32 = 1 << 4;
    /// All the bits above.
    pub const KNOWN: u32 =
        Self::FENCE | Self::SIGNALED | Self::SOLICITED | Self::INLINE | Self::IP_CSUM;

    /// Keeps the known bits of `v`.
    pub const fn from_bits_truncate(v: u32) -> SendFlags {
        SendFlags(v & Self::KNOWN)
    }

    /// The bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// True when every bit of `flag` is set.
    pub const fn contains(self, flag: u32) -> bool {
        self.0 & flag == flag
    }

    /// True for `IB_SEND_SIGNALED`.
    pub const fn signaled(self) -> bool {
        self.contains(Self::SIGNALED)
    }

    /// True for `IB_SEND_SOLICITED`.
    pub const fn solicited(self) -> bool {
        self.contains(Self::SOLICITED)
    }

    /// True for `IB_SEND_FENCE`.
    pub const fn fence(self) -> bool {
        self.contains(Self::FENCE)
    }

    /// True for `IB_SEND_INLINE`.
    pub const fn inline(self) -> bool {
        self.contains(Self::INLINE)
    }
}

/// The per-QP limits a send WQE is checked against (from [`super::queue::SqGeometry`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendLimits {
    /// The QP's `max_send_sge` (capped at `RXE_MAX_SGE` by the parser).
    pub max_sge: u32,
    /// The QP's `max_inline_data` (capped at `RXE_MAX_INLINE_DATA` by the parser).
    pub max_inline: u32,
}

/// Immediate data (`__be32`): the four bytes in network order, as in the ImmDt header.
pub type ImmData = [u8; 4];

/// The remote side of an RDMA or atomic operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Remote {
    /// Remote virtual address (`wr.rdma.remote_addr` / `wr.atomic.remote_addr`).
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// `wr.mw`: a memory window bind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BindMw {
    /// Start of the window.
    pub addr: u64,
    /// Length of the window.
    pub length: u64,
    /// The MR the window lies in.
    pub mr_lkey: u32,
    /// The window's current rkey.
    pub mw_rkey: u32,
    /// The rkey the window gets.
    pub rkey: u32,
    /// `IB_UVERBS_ACCESS_*` flags for the window.
    pub access: u32,
}

/// The operation of a send WQE with its opcode-specific fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND.
    Send,
    /// SEND with immediate data.
    SendWithImm {
        /// Immediate data.
        imm: ImmData,
    },
    /// SEND with invalidate.
    SendWithInv {
        /// The rkey the responder invalidates (`ex.invalidate_rkey`).
        invalidate_rkey: u32,
    },
    /// RDMA WRITE.
    RdmaWrite {
        /// Target.
        remote: Remote,
    },
    /// RDMA WRITE with immediate data.
    RdmaWriteWithImm {
        /// Target.
        remote: Remote,
        /// Immediate data.
        imm: ImmData,
    },
    /// RDMA READ into the WQE's SGEs.
    RdmaRead {
        /// Source.
        remote: Remote,
    },
    /// Atomic compare-and-swap; the original value lands in the SGEs.
    AtomicCmpAndSwp {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Compare operand (`wr.atomic.compare_add`).
        compare: u64,
        /// Swap operand (`wr.atomic.swap`).
        swap: u64,
    },
    /// Atomic fetch-and-add; the original value lands in the SGEs.
    AtomicFetchAndAdd {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Addend (`wr.atomic.compare_add`).
        add: u64,
    },
    /// Atomic write of 8 bytes (`dma.atomic_wr`).
    AtomicWrite {
        /// Target (`wr.rdma`, 8-byte aligned).
        remote: Remote,
        /// The bytes written, as user space stored them.
        value: [u8; 8],
    },
    /// FLUSH of `length` bytes (taken from `dma.length`).
    Flush {
        /// Target (`wr.flush.remote_addr`, `wr.flush.rkey`).
        remote: Remote,
        /// Placement type (`wr.flush.type`).
        placement_type: u8,
        /// Selectivity level (`wr.flush.level`).
        level: u8,
    },
    /// Local invalidate of `invalidate_rkey`.
    LocalInv {
        /// The key to invalidate (`ex.invalidate_rkey`).
        invalidate_rkey: u32,
    },
    /// Memory window bind.
    BindMw(BindMw),
    /// Fast registration of a kernel MR: the MR named by `key`'s index takes `key` (its new
    /// L_Key and R_Key), `access`, and the pages mapped into it.
    RegMr {
        /// The new key.
        key: u32,
        /// `IB_ACCESS_*`.
        access: u32,
    },
}

/// A work request's fields as decoded, before [`SendWqe::build`] validates them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrFields {
    /// `wr_id`.
    pub wr_id: u64,
    /// The opcode.
    pub opcode: SendOpcode,
    /// `IB_SEND_*` flags.
    pub flags: SendFlags,
    /// The operation and its fields.
    pub op: SendOp,
    /// The UD/GSI destination (datagram QPs only).
    pub ud: Option<UdDest>,
    /// `dma.length`: the inline length, or FLUSH's length.
    pub dma_length: u32,
}

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

/// The inline payload of a send WQE, copied by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineData {
    len: usize,
    data: [u8; INLINE_CAP],
}

/// Capacity of [`InlineData`] (`RXE_MAX_INLINE_DATA`).
pub const INLINE_CAP: usize = 512;

// RXE_MAX_INLINE_DATA and the array capacity must agree.
const _: () = assert!(RXE_MAX_INLINE_DATA == 512);

impl InlineData {
    /// No bytes.
    pub const EMPTY: InlineData = InlineData {
        len: 0,
        data: [0; INLINE_CAP],
    };

    /// Copies `src`, or `None` when longer than [`INLINE_CAP`].
    pub fn new(src: &[u8]) -> Option<InlineData> {
        let mut d = InlineData::EMPTY;
        d.fill(src.len())?.copy_from_slice(src);
        Some(d)
    }

    /// Makes the data `len` bytes long (the bytes are left for the caller to write) and
    /// returns them, or `None` (unchanged) when `len` exceeds [`INLINE_CAP`].
    pub fn fill(&mut self, len: usize) -> Option<&mut [u8]> {
        let bytes = self.data.get_mut(..len)?;
        self.len = len;
        Some(bytes)
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.data.get(..self.len).unwrap_or(&[])
    }

    /// Number of bytes.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Where a send WQE's local data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// No local buffer (FLUSH, ATOMIC_WRITE, LOCAL_INV, BIND_MW).
    None,
    /// Gather list (SEND/WRITE) or scatter list (READ, atomics' result).
    Sges(SgeList),
    /// Inline bytes (`IB_SEND_INLINE`).
    Inline(InlineData),
}

/// A validated send WQE, held by value: nothing points back into the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe {
    /// `wr.wr_id`, returned in the completion.
    pub wr_id: u64,
    /// The opcode.
    pub opcode: SendOpcode,
    /// The known `IB_SEND_*` flags. INLINE is cleared for the opcodes without a local buffer
    /// (LOCAL_INV, BIND_MW, ATOMIC_WRITE, FLUSH); on READ and the fetching atomics it is an
    /// error, since their SGEs receive data.
    pub flags: SendFlags,
    /// The operation and its fields.
    pub op: SendOp,
    /// The UD/GSI destination (present exactly for datagram QPs).
    pub ud: Option<UdDest>,
    /// Local data.
    pub payload: Payload,
    /// Message length in bytes: sum of SGE lengths, inline length, 8 for ATOMIC_WRITE,
    /// the FLUSH length, 0 for local operations. At most `RXE_MAX_MSG_SIZE` (2^31).
    pub length: u32,
}

fn need<T>(v: Option<T>) -> Result<T, WqeError> {
    v.ok_or(WqeError::SlotTooSmall)
}

fn remote(b: &[u8], addr_off: usize, rkey_off: usize) -> Result<Remote, WqeError> {
    Ok(Remote {
        addr: need(field::u64_le(b, SEND_WQE_WR_OFF + addr_off))?,
        rkey: need(field::u32_le(b, SEND_WQE_WR_OFF + rkey_off))?,
    })
}

impl SendWqe {
    /// A placeholder (a SEND of nothing): the value of a slot no request has filled yet.
    pub const EMPTY: SendWqe = SendWqe {
        wr_id: 0,
        opcode: SendOpcode::Send,
        flags: SendFlags(0),
        op: SendOp::Send,
        ud: None,
        payload: Payload::None,
        length: 0,
    };

    /// Parses and validates a copy of one SQ slot (`bytes` is the whole slot, at least
    /// `SEND_WQE_SIZE` long) for a QP of type `qp_type` with the given limits.
    ///
    /// Checks, in order: slot size; opcode known and allowed for `qp_type`; for datagram
    /// QPs the destination (QPN within 24 bits; the embedded AV when `ah_num == 0`); then the
    /// payload: INLINE refused on READ and fetching atomics, `dma.length <= max_inline`
    /// and inside the slot; otherwise `dma.num_sge <= max_sge`, the SGE array inside the slot,
    /// no SGE address overflow, total length `<= 2^31`; atomics need at least 8 bytes of SGE
    /// and an 8-byte aligned remote address; FLUSH length `<= 2^31`.
    pub fn parse(bytes: &[u8], qp_type: QpType, limits: SendLimits) -> Result<SendWqe, WqeError> {
        let mut wqe = SendWqe::EMPTY;
        SendWqe::parse_into(bytes, qp_type, limits, &mut wqe)?;
        Ok(wqe)
    }

    /// [`SendWqe::parse`] into `out` (a WQE is 0.6 KiB: the kernel builds it where it will
    /// stay rather than return it through the stack). On an error `out` holds no valid WQE.
    pub fn parse_into(
        bytes: &[u8],
        qp_type: QpType,
        limits: SendLimits,
        out: &mut SendWqe,
    ) -> Result<(), WqeError> {
        let b = bytes;
        if b.len() < SEND_WQE_SIZE {
            return Err(WqeError::SlotTooSmall);
        }
        let wr_id = need(field::u64_le(b, SEND_WQE_WR_ID_OFF))?;
        let raw_opcode = need(field::u32_le(b, SEND_WQE_WR_OPCODE_OFF))?;
        let opcode = SendOpcode::from_uapi(raw_opcode).ok_or(WqeError::UnknownOpcode)?;
        if !opcode.allowed_on(qp_type) {
            return Err(WqeError::OpcodeNotAllowed);
        }
        let flags =
            SendFlags::from_bits_truncate(need(field::u32_le(b, SEND_WQE_WR_SEND_FLAGS_OFF))?);
        let ex_bytes: [u8; 4] = need(field::array(b, SEND_WQE_WR_EX_OFF))?;
        let ex_u32 = u32::from_le_bytes(ex_bytes);
        let dma_length = need(field::u32_le(b, SEND_WQE_DMA_LENGTH_OFF))?;
        let num_sge = need(field::u32_le(b, SEND_WQE_DMA_NUM_SGE_OFF))?;

        let ud = if qp_type.is_datagram() {
            Some(parse_ud(b)?)
        } else {
            None
        };

        let op = match opcode {
            SendOpcode::Send => SendOp::Send,
            SendOpcode::SendWithImm => SendOp::SendWithImm { imm: ex_bytes },
            SendOpcode::SendWithInv => SendOp::SendWithInv {
                invalidate_rkey: ex_u32,
            },
            SendOpcode::RdmaWrite => SendOp::RdmaWrite {
                remote: remote(b, SEND_WR_RDMA_REMOTE_ADDR_OFF, SEND_WR_RDMA_RKEY_OFF)?,
            },
            SendOpcode::RdmaWriteWithImm => SendOp::RdmaWriteWithImm {
                remote: remote(b, SEND_WR_RDMA_REMOTE_ADDR_OFF, SEND_WR_RDMA_RKEY_OFF)?,
                imm: ex_bytes,
            },
            SendOpcode::RdmaRead => SendOp::RdmaRead {
                remote: remote(b, SEND_WR_RDMA_REMOTE_ADDR_OFF, SEND_WR_RDMA_RKEY_OFF)?,
            },
            SendOpcode::AtomicCmpAndSwp => SendOp::AtomicCmpAndSwp {
                remote: remote(b, SEND_WR_ATOMIC_REMOTE_ADDR_OFF, SEND_WR_ATOMIC_RKEY_OFF)?,
                compare: need(field::u64_le(b, SEND_WR_ATOMIC_COMPARE_ADD_OFF))?,
                swap: need(field::u64_le(b, SEND_WR_ATOMIC_SWAP_OFF))?,
            },
            SendOpcode::AtomicFetchAndAdd => SendOp::AtomicFetchAndAdd {
                remote: remote(b, SEND_WR_ATOMIC_REMOTE_ADDR_OFF, SEND_WR_ATOMIC_RKEY_OFF)?,
                add: need(field::u64_le(b, SEND_WR_ATOMIC_COMPARE_ADD_OFF))?,
            },
            SendOpcode::AtomicWrite => SendOp::AtomicWrite {
                remote: remote(b, SEND_WR_RDMA_REMOTE_ADDR_OFF, SEND_WR_RDMA_RKEY_OFF)?,
                value: need(field::array(b, SEND_WQE_DMA_DATA_OFF))?,
            },
            SendOpcode::Flush => SendOp::Flush {
                remote: remote(b, SEND_WR_FLUSH_REMOTE_ADDR_OFF, SEND_WR_FLUSH_RKEY_OFF)?,
                placement_type: need(field::u8_at(b, SEND_WR_FLUSH_TYPE_OFF))?,
                level: need(field::u8_at(b, SEND_WR_FLUSH_LEVEL_OFF))?,
            },
            SendOpcode::LocalInv => SendOp::LocalInv {
                invalidate_rkey: ex_u32,
            },
            SendOpcode::BindMw => SendOp::BindMw(BindMw {
                addr: need(field::u64_le(b, SEND_WR_MW_ADDR_OFF))?,
                length: need(field::u64_le(b, SEND_WR_MW_LENGTH_OFF))?,
                mr_lkey: need(field::u32_le(b, SEND_WR_MW_MR_LKEY_OFF))?,
                mw_rkey: need(field::u32_le(b, SEND_WR_MW_MW_RKEY_OFF))?,
                rkey: need(field::u32_le(b, SEND_WR_MW_RKEY_OFF))?,
                access: need(field::u32_le(b, SEND_WR_MW_ACCESS_OFF))?,
            }),
            // Not a user opcode (from_uapi never gives it).
            SendOpcode::RegMr => return Err(WqeError::UnknownOpcode),
        };

        let inline = |len: u32, d: &mut InlineData| {
            let n = field::usize_from(len).ok_or(WqeError::InlineTooLong)?;
            let end = SEND_WQE_DMA_DATA_OFF
                .checked_add(n)
                .ok_or(WqeError::InlineOutsideSlot)?;
            let src = b
                .get(SEND_WQE_DMA_DATA_OFF..end)
                .ok_or(WqeError::InlineOutsideSlot)?;
            d.fill(n)
                .ok_or(WqeError::InlineTooLong)?
                .copy_from_slice(src);
            Ok(())
        };
        let sges =
            |l: &mut SgeList| l.parse_into(b, SEND_WQE_DMA_DATA_OFF, num_sge, limits.max_sge);
        let fields = WrFields {
            wr_id,
            opcode,
            flags,
            op,
            ud,
            dma_length,
        };
        SendWqe::build_into(fields, qp_type, limits, inline, sges, out)
    }

    /// Validates a work request given as decoded fields (a ring slot's, or a kernel
    /// consumer's `ib_send_wr`), with the checks listed at [`SendWqe::parse`] after the
    /// decoding. `inline(len)` supplies `len` inline bytes, `sges()` the gather/scatter list
    /// and its total; each is called only if the opcode and flags need it.
    pub fn build(
        f: WrFields,
        qp_type: QpType,
        limits: SendLimits,
        inline: impl FnOnce(u32) -> Result<InlineData, WqeError>,
        sges: impl FnOnce() -> Result<(SgeList, u32), WqeError>,
    ) -> Result<SendWqe, WqeError> {
        let mut wqe = SendWqe::EMPTY;
        SendWqe::build_into(
            f,
            qp_type,
            limits,
            |len, d| {
                *d = inline(len)?;
                Ok(())
            },
            |l| {
                let (list, total) = sges()?;
                *l = list;
                Ok(total)
            },
            &mut wqe,
        )?;
        Ok(wqe)
    }

    /// [`SendWqe::build`] into `out`: `inline(len, data)` writes the `len` inline bytes into
    /// `data`, `sges(list)` the gather/scatter list into `list` and returns its total. On
    /// an error `out` holds no valid WQE.
    pub fn build_into(
        f: WrFields,
        qp_type: QpType,
        limits: SendLimits,
        inline: impl FnOnce(u32, &mut InlineData) -> Result<(), WqeError>,
        sges: impl FnOnce(&mut SgeList) -> Result<u32, WqeError>,
        out: &mut SendWqe,
    ) -> Result<(), WqeError> {
        let WrFields {
            wr_id,
            opcode,
            mut flags,
            op,
            ud,
            dma_length,
        } = f;
        if !opcode.allowed_on(qp_type) {
            return Err(WqeError::OpcodeNotAllowed);
        }
        if qp_type.is_datagram() != ud.is_some() {
            return Err(WqeError::OpcodeNotAllowed);
        }
        if ud.is_some_and(|u| u.remote_qpn > MAX_QPN) {
            return Err(WqeError::BadRemoteQpn);
        }
        // The payload is written straight into `out`.
        let length = match opcode {
            // No local buffer: IB_SEND_INLINE cannot change their meaning; drop it.
            SendOpcode::LocalInv | SendOpcode::BindMw | SendOpcode::RegMr => {
                flags = SendFlags(flags.bits() & !SendFlags::INLINE);
                out.payload = Payload::None;
                0
            }
            SendOpcode::AtomicWrite => {
                flags = SendFlags(flags.bits() & !SendFlags::INLINE);
                out.payload = Payload::None;
                ATOMIC_SIZE
            }
            SendOpcode::Flush => {
                flags = SendFlags(flags.bits() & !SendFlags::INLINE);
                if u64::from(dma_length) > RXE_MAX_MSG_SIZE {
                    return Err(WqeError::LengthTooLong);
                }
                out.payload = Payload::None;
                dma_length
            }
            _ if flags.inline() => {
                if !opcode.supports_inline() {
                    return Err(WqeError::InlineNotAllowed);
                }
                if dma_length > limits.max_inline.min(RXE_MAX_INLINE_DATA) {
                    return Err(WqeError::InlineTooLong);
                }
                out.payload = Payload::Inline(InlineData::EMPTY);
                let Payload::Inline(data) = &mut out.payload else {
                    return Err(WqeError::InlineTooLong);
                };
                inline(dma_length, data)?;
                if data.len() != field::usize_from(dma_length).unwrap_or(usize::MAX) {
                    return Err(WqeError::InlineTooLong);
                }
                dma_length
            }
            _ => {
                out.payload = Payload::Sges(SgeList::EMPTY);
                let Payload::Sges(list) = &mut out.payload else {
                    return Err(WqeError::TooManySge);
                };
                sges(list)?
            }
        };

        if let SendOp::AtomicCmpAndSwp { remote, .. } | SendOp::AtomicFetchAndAdd { remote, .. } =
            op
        {
            if length < ATOMIC_SIZE {
                return Err(WqeError::AtomicLength);
            }
            if remote.addr & 7 != 0 {
                return Err(WqeError::MisalignedAtomic);
            }
        }
        if let SendOp::AtomicWrite { remote, .. } = op {
            if remote.addr & 7 != 0 {
                return Err(WqeError::MisalignedAtomic);
            }
        }

        out.wr_id = wr_id;
        out.opcode = opcode;
        out.flags = flags;
        out.op = op;
        out.ud = ud;
        out.length = length;
        Ok(())
    }

    /// The SGEs (empty unless the payload is a gather/scatter list).
    pub fn sges(&self) -> &[Sge] {
        match &self.payload {
            Payload::Sges(list) => list.as_slice(),
            _ => &[],
        }
    }

    /// The inline bytes (empty unless the payload is inline).
    pub fn inline_data(&self) -> &[u8] {
        match &self.payload {
            Payload::Inline(data) => data.as_slice(),
            _ => &[],
        }
    }

    /// The immediate data, for the `*_WITH_IMM` opcodes.
    pub const fn imm_data(&self) -> Option<ImmData> {
        match self.op {
            SendOp::SendWithImm { imm } | SendOp::RdmaWriteWithImm { imm, .. } => Some(imm),
            _ => None,
        }
    }

    /// The rkey to invalidate, for SEND_WITH_INV and LOCAL_INV.
    pub const fn invalidate_rkey(&self) -> Option<u32> {
        match self.op {
            SendOp::SendWithInv { invalidate_rkey } | SendOp::LocalInv { invalidate_rkey } => {
                Some(invalidate_rkey)
            }
            _ => None,
        }
    }

    /// The remote address and rkey, for RDMA, atomic and FLUSH operations.
    pub const fn remote(&self) -> Option<Remote> {
        match self.op {
            SendOp::RdmaWrite { remote }
            | SendOp::RdmaWriteWithImm { remote, .. }
            | SendOp::RdmaRead { remote }
            | SendOp::AtomicCmpAndSwp { remote, .. }
            | SendOp::AtomicFetchAndAdd { remote, .. }
            | SendOp::AtomicWrite { remote, .. }
            | SendOp::Flush { remote, .. } => Some(remote),
            _ => None,
        }
    }
}

fn parse_ud(b: &[u8]) -> Result<UdDest, WqeError> {
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
