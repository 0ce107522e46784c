// SPDX-License-Identifier: GPL-2.0
//! What a send WQE asks for: the QP types (`enum ib_qp_type`), the opcodes user space may
//! post (`IB_UVERBS_WR_*`, with rdma_rxe's per-QP-type `rxe_wr_opcode_info` rules), and
//! `wr.send_flags` (`IB_SEND_*`).

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

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
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
pub struct SendFlags(pub(super) u32);

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
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
