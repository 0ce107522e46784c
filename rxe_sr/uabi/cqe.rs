// SPDX-License-Identifier: GPL-2.0
//! Completions, written into a user CQ slot as `struct ib_uverbs_wc` bytes.
//!
//! rdma-core's `rxe_poll_cq` copies the first `sizeof(struct ibv_wc)` (48) bytes of the slot
//! at `consumer_index` straight into the caller's `struct ibv_wc`, whose layout is
//! `struct ib_uverbs_wc`. What rdma_rxe puts there for user CQs: `make_send_cqe` (rxe_comp.c)
//! and `do_complete` (rxe_resp.c); [`Completion::send`] and [`Completion::recv`] do the same.

use super::field;
use super::layout::{
    UVERBS_WC_BYTE_LEN_OFF, UVERBS_WC_DLID_PATH_BITS_OFF, UVERBS_WC_EX_OFF, UVERBS_WC_OPCODE_OFF,
    UVERBS_WC_PKEY_INDEX_OFF, UVERBS_WC_PORT_NUM_OFF, UVERBS_WC_QP_NUM_OFF, UVERBS_WC_RESERVED_OFF,
    UVERBS_WC_SIZE, UVERBS_WC_SLID_OFF, UVERBS_WC_SL_OFF, UVERBS_WC_SRC_QP_OFF,
    UVERBS_WC_STATUS_OFF, UVERBS_WC_VENDOR_ERR_OFF, UVERBS_WC_WC_FLAGS_OFF, UVERBS_WC_WR_ID_OFF,
};
use super::send_wqe::{ImmData, NetworkType, SendOpcode, SendWqe};

/// `enum ib_wc_status` (= `enum ibv_wc_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WcStatus {
    /// `IB_WC_SUCCESS` (0).
    Success,
    /// `IB_WC_LOC_LEN_ERR` (1).
    LocLenErr,
    /// `IB_WC_LOC_QP_OP_ERR` (2).
    LocQpOpErr,
    /// `IB_WC_LOC_EEC_OP_ERR` (3).
    LocEecOpErr,
    /// `IB_WC_LOC_PROT_ERR` (4).
    LocProtErr,
    /// `IB_WC_WR_FLUSH_ERR` (5).
    WrFlushErr,
    /// `IB_WC_MW_BIND_ERR` (6).
    MwBindErr,
    /// `IB_WC_BAD_RESP_ERR` (7).
    BadRespErr,
    /// `IB_WC_LOC_ACCESS_ERR` (8).
    LocAccessErr,
    /// `IB_WC_REM_INV_REQ_ERR` (9).
    RemInvReqErr,
    /// `IB_WC_REM_ACCESS_ERR` (10).
    RemAccessErr,
    /// `IB_WC_REM_OP_ERR` (11).
    RemOpErr,
    /// `IB_WC_RETRY_EXC_ERR` (12).
    RetryExcErr,
    /// `IB_WC_RNR_RETRY_EXC_ERR` (13).
    RnrRetryExcErr,
    /// `IB_WC_LOC_RDD_VIOL_ERR` (14).
    LocRddViolErr,
    /// `IB_WC_REM_INV_RD_REQ_ERR` (15).
    RemInvRdReqErr,
    /// `IB_WC_REM_ABORT_ERR` (16).
    RemAbortErr,
    /// `IB_WC_INV_EECN_ERR` (17).
    InvEecnErr,
    /// `IB_WC_INV_EEC_STATE_ERR` (18).
    InvEecStateErr,
    /// `IB_WC_FATAL_ERR` (19).
    FatalErr,
    /// `IB_WC_RESP_TIMEOUT_ERR` (20).
    RespTimeoutErr,
    /// `IB_WC_GENERAL_ERR` (21).
    GeneralErr,
}

impl WcStatus {
    const ALL: [WcStatus; 22] = [
        WcStatus::Success,
        WcStatus::LocLenErr,
        WcStatus::LocQpOpErr,
        WcStatus::LocEecOpErr,
        WcStatus::LocProtErr,
        WcStatus::WrFlushErr,
        WcStatus::MwBindErr,
        WcStatus::BadRespErr,
        WcStatus::LocAccessErr,
        WcStatus::RemInvReqErr,
        WcStatus::RemAccessErr,
        WcStatus::RemOpErr,
        WcStatus::RetryExcErr,
        WcStatus::RnrRetryExcErr,
        WcStatus::LocRddViolErr,
        WcStatus::RemInvRdReqErr,
        WcStatus::RemAbortErr,
        WcStatus::InvEecnErr,
        WcStatus::InvEecStateErr,
        WcStatus::FatalErr,
        WcStatus::RespTimeoutErr,
        WcStatus::GeneralErr,
    ];

    /// From the `IB_WC_*` status value.
    pub fn from_uapi(v: u32) -> Option<WcStatus> {
        Self::ALL.get(field::usize_from(v)?).copied()
    }

    /// The `IB_WC_*` status value.
    pub const fn to_uapi(self) -> u32 {
        match self {
            WcStatus::Success => 0,
            WcStatus::LocLenErr => 1,
            WcStatus::LocQpOpErr => 2,
            WcStatus::LocEecOpErr => 3,
            WcStatus::LocProtErr => 4,
            WcStatus::WrFlushErr => 5,
            WcStatus::MwBindErr => 6,
            WcStatus::BadRespErr => 7,
            WcStatus::LocAccessErr => 8,
            WcStatus::RemInvReqErr => 9,
            WcStatus::RemAccessErr => 10,
            WcStatus::RemOpErr => 11,
            WcStatus::RetryExcErr => 12,
            WcStatus::RnrRetryExcErr => 13,
            WcStatus::LocRddViolErr => 14,
            WcStatus::RemInvRdReqErr => 15,
            WcStatus::RemAbortErr => 16,
            WcStatus::InvEecnErr => 17,
            WcStatus::InvEecStateErr => 18,
            WcStatus::FatalErr => 19,
            WcStatus::RespTimeoutErr => 20,
            WcStatus::GeneralErr => 21,
        }
    }
}

/// `enum ib_wc_opcode` (`IB_UVERBS_WC_*` for the values below 128; = `enum ibv_wc_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WcOpcode {
    /// `IB_WC_SEND` (0).
    Send,
    /// `IB_WC_RDMA_WRITE` (1).
    RdmaWrite,
    /// `IB_WC_RDMA_READ` (2).
    RdmaRead,
    /// `IB_WC_COMP_SWAP` (3).
    CompSwap,
    /// `IB_WC_FETCH_ADD` (4).
    FetchAdd,
    /// `IB_WC_BIND_MW` (5).
    BindMw,
    /// `IB_WC_LOCAL_INV` (6).
    LocalInv,
    /// `IB_WC_LSO` / `IB_UVERBS_WC_TSO` (7).
    Tso,
    /// `IB_WC_FLUSH` (8).
    Flush,
    /// `IB_WC_ATOMIC_WRITE` (9).
    AtomicWrite,
    /// `IB_WC_REG_MR` (10, kernel only).
    RegMr,
    /// `IB_WC_MASKED_COMP_SWAP` (11).
    MaskedCompSwap,
    /// `IB_WC_MASKED_FETCH_ADD` (12).
    MaskedFetchAdd,
    /// `IB_WC_RECV` (128).
    Recv,
    /// `IB_WC_RECV_RDMA_WITH_IMM` (129).
    RecvRdmaWithImm,
}

impl WcOpcode {
    /// From the `IB_WC_*` opcode value.
    pub const fn from_uapi(v: u32) -> Option<WcOpcode> {
        match v {
            0 => Some(WcOpcode::Send),
            1 => Some(WcOpcode::RdmaWrite),
            2 => Some(WcOpcode::RdmaRead),
            3 => Some(WcOpcode::CompSwap),
            4 => Some(WcOpcode::FetchAdd),
            5 => Some(WcOpcode::BindMw),
            6 => Some(WcOpcode::LocalInv),
            7 => Some(WcOpcode::Tso),
            8 => Some(WcOpcode::Flush),
            9 => Some(WcOpcode::AtomicWrite),
            10 => Some(WcOpcode::RegMr),
            11 => Some(WcOpcode::MaskedCompSwap),
            12 => Some(WcOpcode::MaskedFetchAdd),
            128 => Some(WcOpcode::Recv),
            129 => Some(WcOpcode::RecvRdmaWithImm),
            _ => None,
        }
    }

    /// The `IB_WC_*` opcode value.
    pub const fn to_uapi(self) -> u32 {
        match self {
            WcOpcode::Send => 0,
            WcOpcode::RdmaWrite => 1,
            WcOpcode::RdmaRead => 2,
            WcOpcode::CompSwap => 3,
            WcOpcode::FetchAdd => 4,
            WcOpcode::BindMw => 5,
            WcOpcode::LocalInv => 6,
            WcOpcode::Tso => 7,
            WcOpcode::Flush => 8,
            WcOpcode::AtomicWrite => 9,
            WcOpcode::RegMr => 10,
            WcOpcode::MaskedCompSwap => 11,
            WcOpcode::MaskedFetchAdd => 12,
            WcOpcode::Recv => 128,
            WcOpcode::RecvRdmaWithImm => 129,
        }
    }

    /// The completion opcode of a send WQE (rdma_rxe's `wr_to_wc_opcode`).
    pub const fn from_send(op: SendOpcode) -> WcOpcode {
        match op {
            SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
            SendOpcode::Send | SendOpcode::SendWithImm | SendOpcode::SendWithInv => WcOpcode::Send,
            SendOpcode::RdmaRead => WcOpcode::RdmaRead,
            SendOpcode::AtomicCmpAndSwp => WcOpcode::CompSwap,
            SendOpcode::AtomicFetchAndAdd => WcOpcode::FetchAdd,
            SendOpcode::LocalInv => WcOpcode::LocalInv,
            SendOpcode::BindMw => WcOpcode::BindMw,
            SendOpcode::Flush => WcOpcode::Flush,
            SendOpcode::AtomicWrite => WcOpcode::AtomicWrite,
            SendOpcode::RegMr => WcOpcode::RegMr,
        }
    }
}

/// `wc_flags` (`enum ib_wc_flags` = `enum ibv_wc_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WcFlags(pub u32);

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl WcFlags {
    /// `IB_WC_GRH`: a GRH precedes the data (always set by rdma_rxe on receives).
    pub const GRH: u32 = 1;
    /// `IB_WC_WITH_IMM`: `ex` holds immediate data.
    pub const WITH_IMM: u32 = 1 << 1;
    /// `IB_WC_WITH_INVALIDATE`: `ex` holds the invalidated rkey.
    pub const WITH_INVALIDATE: u32 = 1 << 2;
    /// `IB_WC_IP_CSUM_OK`.
    pub const IP_CSUM_OK: u32 = 1 << 3;
    /// `IB_WC_WITH_SMAC`.
    pub const WITH_SMAC: u32 = 1 << 4;
    /// `IB_WC_WITH_VLAN`.
    pub const WITH_VLAN: u32 = 1 << 5;
    /// `IB_WC_WITH_NETWORK_HDR_TYPE`.
    pub const WITH_NETWORK_HDR_TYPE: u32 = 1 << 6;

    /// True when every bit of `flag` is set.
    pub const fn contains(self, flag: u32) -> bool {
        self.0 & flag == flag
    }
}

/// The `ex` union of a completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WcEx {
    /// Nothing (written as zero).
    #[default]
    None,
    /// `imm_data` (`__be32`): the four bytes in network order, written as they are.
    Imm(ImmData),
    /// `invalidate_rkey` (`__u32`, host order).
    InvalidateRkey(u32),
}

impl WcEx {
    /// The four bytes stored in `ib_uverbs_wc.ex`.
    pub const fn to_bytes(self) -> [u8; 4] {
        match self {
            WcEx::None => [0; 4],
            WcEx::Imm(imm) => imm,
            WcEx::InvalidateRkey(rkey) => rkey.to_le_bytes(),
        }
    }
}

/// A work completion, as plain values; [`emit_uverbs_wc`] writes it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The WQE's `wr_id`.
    pub wr_id: u64,
    /// Status.
    pub status: WcStatus,
    /// Opcode (rdma_rxe leaves it 0, [`WcOpcode::Send`], on errors).
    pub opcode: WcOpcode,
    /// Vendor error code (0 in rdma_rxe).
    pub vendor_err: u32,
    /// Bytes transferred.
    pub byte_len: u32,
    /// Immediate data or invalidated rkey (flag it in `wc_flags` too).
    pub ex: WcEx,
    /// The local QP number.
    pub qp_num: u32,
    /// Source QP (UD receives).
    pub src_qp: u32,
    /// `IB_WC_*` flags.
    pub wc_flags: WcFlags,
    /// P_Key index (UD/GSI receives).
    pub pkey_index: u16,
    /// Source LID (0 on RoCE).
    pub slid: u16,
    /// Service level.
    pub sl: u8,
    /// DLID path bits (0 on RoCE).
    pub dlid_path_bits: u8,
    /// Port number (receives: the QP's port).
    pub port_num: u8,
    /// UD/GSI receives: the IP version of the packet, whose header sits in the GRH area.
    /// Kernel CQs report it (`IB_WC_WITH_NETWORK_HDR_TYPE`); `struct ib_uverbs_wc` has no
    /// room for it.
    pub network: Option<NetworkType>,
}

/// What a successful receive completion reports beyond its WQE and QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecvInfo {
    /// Bytes received (for RDMA WRITE with immediate: the write's length).
    pub byte_len: u32,
    /// True for an RDMA WRITE with immediate (opcode `RECV_RDMA_WITH_IMM`).
    pub rdma_with_imm: bool,
    /// Immediate data from the ImmDt header, network order.
    pub imm: Option<ImmData>,
    /// The rkey invalidated by a SEND with invalidate (IETH).
    pub invalidated_rkey: Option<u32>,
    /// Source QP from the DETH (UD).
    pub src_qp: Option<u32>,
    /// The QP's port number.
    pub port_num: u8,
    /// UD/GSI: the IP version of the packet.
    pub network: Option<NetworkType>,
}

impl RecvInfo {
    /// A connected QP's receive: `byte_len` bytes (the WRITE's length for RDMA WRITE with
    /// immediate), the immediate data and invalidated R_Key if any, on port `port_num`.
    pub const fn connected(
        byte_len: u32,
        rdma_with_imm: bool,
        imm: Option<u32>,
        invalidated_rkey: Option<u32>,
        port_num: u8,
    ) -> RecvInfo {
        RecvInfo {
            byte_len,
            rdma_with_imm,
            imm: match imm {
                Some(v) => Some(v.to_be_bytes()),
                None => None,
            },
            invalidated_rkey,
            src_qp: None,
            port_num,
            network: None,
        }
    }
}

impl Completion {
    /// An all-zero completion (what rdma_rxe's `memset` leaves) for `wr_id` on `qp_num`.
    pub const fn zeroed(wr_id: u64, qp_num: u32, status: WcStatus) -> Completion {
        Completion {
            wr_id,
            status,
            opcode: WcOpcode::Send,
            vendor_err: 0,
            byte_len: 0,
            ex: WcEx::None,
            qp_num,
            src_qp: 0,
            wc_flags: WcFlags(0),
            pkey_index: 0,
            slid: 0,
            sl: 0,
            dlid_path_bits: 0,
            port_num: 0,
            network: None,
        }
    }

    /// A send-queue completion as rdma_rxe's `make_send_cqe` builds it for a user CQ: on
    /// success the opcode from the WR, `byte_len` = the WQE length and `WITH_IMM` flagged for
    /// the `*_WITH_IMM` opcodes (without the immediate value); on error only `wr_id`,
    /// `status` and `qp_num`.
    pub const fn send(
        wr_id: u64,
        qp_num: u32,
        opcode: SendOpcode,
        byte_len: u32,
        status: WcStatus,
    ) -> Completion {
        let mut c = Completion::zeroed(wr_id, qp_num, status);
        if let WcStatus::Success = status {
            c.opcode = WcOpcode::from_send(opcode);
            c.byte_len = byte_len;
            if opcode.has_imm() {
                c.wc_flags = WcFlags(WcFlags::WITH_IMM);
            }
        }
        c
    }

    /// [`Completion::send`] for a parsed WQE.
    pub const fn for_send_wqe(wqe: &SendWqe, qp_num: u32, status: WcStatus) -> Completion {
        Completion::send(wqe.wr_id, qp_num, wqe.opcode, wqe.length, status)
    }

    /// A receive completion as rdma_rxe's `do_complete` builds it for a user CQ: on success
    /// opcode `RECV` or `RECV_RDMA_WITH_IMM`, `GRH` always flagged, `WITH_IMM` /
    /// `WITH_INVALIDATE` with the value in `ex` (invalidate wins if both are given), `src_qp`
    /// and `port_num`; on error only `wr_id`, `status` and `qp_num`.
    pub const fn recv(wr_id: u64, qp_num: u32, status: WcStatus, info: RecvInfo) -> Completion {
        let mut c = Completion::zeroed(wr_id, qp_num, status);
        if let WcStatus::Success = status {
            c.opcode = if info.rdma_with_imm {
                WcOpcode::RecvRdmaWithImm
            } else {
                WcOpcode::Recv
            };
            c.byte_len = info.byte_len;
            let mut flags = WcFlags::GRH;
            if let Some(imm) = info.imm {
                flags |= WcFlags::WITH_IMM;
                c.ex = WcEx::Imm(imm);
            }
            if let Some(rkey) = info.invalidated_rkey {
                flags |= WcFlags::WITH_INVALIDATE;
                c.ex = WcEx::InvalidateRkey(rkey);
            }
            c.wc_flags = WcFlags(flags);
            if let Some(src_qp) = info.src_qp {
                c.src_qp = src_qp;
            }
            c.port_num = info.port_num;
            c.network = info.network;
        }
        c
    }
}

/// Why a CQ slot could not be written or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqeError {
    /// The buffer is shorter than `sizeof(struct ib_uverbs_wc)` (48).
    BufferTooSmall,
    /// A status value outside `enum ib_wc_status`.
    UnknownStatus,
    /// An opcode value outside `enum ib_wc_opcode`.
    UnknownOpcode,
}

/// Writes `c` as a `struct ib_uverbs_wc` into the first 48 bytes of `out` (a CQ slot or a
/// staging copy of one), `reserved` included (0). Bytes after the 48th are left untouched.
/// Nothing is written when `out` is too short.
pub fn emit_uverbs_wc(c: &Completion, out: &mut [u8]) -> Result<(), CqeError> {
    let wc = out
        .get_mut(..UVERBS_WC_SIZE)
        .ok_or(CqeError::BufferTooSmall)?;
    let mut b = [0u8; UVERBS_WC_SIZE];
    let fields: [(usize, &[u8]); 15] = [
        (UVERBS_WC_WR_ID_OFF, &c.wr_id.to_le_bytes()),
        (UVERBS_WC_STATUS_OFF, &c.status.to_uapi().to_le_bytes()),
        (UVERBS_WC_OPCODE_OFF, &c.opcode.to_uapi().to_le_bytes()),
        (UVERBS_WC_VENDOR_ERR_OFF, &c.vendor_err.to_le_bytes()),
        (UVERBS_WC_BYTE_LEN_OFF, &c.byte_len.to_le_bytes()),
        (UVERBS_WC_EX_OFF, &c.ex.to_bytes()),
        (UVERBS_WC_QP_NUM_OFF, &c.qp_num.to_le_bytes()),
        (UVERBS_WC_SRC_QP_OFF, &c.src_qp.to_le_bytes()),
        (UVERBS_WC_WC_FLAGS_OFF, &c.wc_flags.0.to_le_bytes()),
        (UVERBS_WC_PKEY_INDEX_OFF, &c.pkey_index.to_le_bytes()),
        (UVERBS_WC_SLID_OFF, &c.slid.to_le_bytes()),
        (UVERBS_WC_SL_OFF, &[c.sl]),
        (UVERBS_WC_DLID_PATH_BITS_OFF, &[c.dlid_path_bits]),
        (UVERBS_WC_PORT_NUM_OFF, &[c.port_num]),
        (UVERBS_WC_RESERVED_OFF, &[0]),
    ];
    for (off, src) in fields {
        field::put(&mut b, off, src).ok_or(CqeError::BufferTooSmall)?;
    }
    if crate::bytes::copy(wc, &b) {
        Ok(())
    } else {
        Err(CqeError::BufferTooSmall)
    }
}

/// Reads a `struct ib_uverbs_wc` back (tests, debugging). `ex` is decoded from `wc_flags`:
/// `WITH_INVALIDATE` gives the rkey, else `WITH_IMM` the raw bytes, else [`WcEx::None`].
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub fn parse_uverbs_wc(b: &[u8]) -> Result<Completion, CqeError> {
    let b = b.get(..UVERBS_WC_SIZE).ok_or(CqeError::BufferTooSmall)?;
    let u32_at = |off| field::u32_le(b, off).ok_or(CqeError::BufferTooSmall);
    let u16_at = |off| field::u16_le(b, off).ok_or(CqeError::BufferTooSmall);
    let u8_at = |off| field::u8_at(b, off).ok_or(CqeError::BufferTooSmall);
    let wc_flags = WcFlags(u32_at(UVERBS_WC_WC_FLAGS_OFF)?);
    let ex_bytes: [u8; 4] = field::array(b, UVERBS_WC_EX_OFF).ok_or(CqeError::BufferTooSmall)?;
    let ex = if wc_flags.contains(WcFlags::WITH_INVALIDATE) {
        WcEx::InvalidateRkey(u32::from_le_bytes(ex_bytes))
    } else if wc_flags.contains(WcFlags::WITH_IMM) {
        WcEx::Imm(ex_bytes)
    } else {
        WcEx::None
    };
    Ok(Completion {
        wr_id: field::u64_le(b, UVERBS_WC_WR_ID_OFF).ok_or(CqeError::BufferTooSmall)?,
        status: WcStatus::from_uapi(u32_at(UVERBS_WC_STATUS_OFF)?)
            .ok_or(CqeError::UnknownStatus)?,
        opcode: WcOpcode::from_uapi(u32_at(UVERBS_WC_OPCODE_OFF)?)
            .ok_or(CqeError::UnknownOpcode)?,
        vendor_err: u32_at(UVERBS_WC_VENDOR_ERR_OFF)?,
        byte_len: u32_at(UVERBS_WC_BYTE_LEN_OFF)?,
        ex,
        qp_num: u32_at(UVERBS_WC_QP_NUM_OFF)?,
        src_qp: u32_at(UVERBS_WC_SRC_QP_OFF)?,
        wc_flags,
        pkey_index: u16_at(UVERBS_WC_PKEY_INDEX_OFF)?,
        slid: u16_at(UVERBS_WC_SLID_OFF)?,
        sl: u8_at(UVERBS_WC_SL_OFF)?,
        dlid_path_bits: u8_at(UVERBS_WC_DLID_PATH_BITS_OFF)?,
        port_num: u8_at(UVERBS_WC_PORT_NUM_OFF)?,
        network: None,
    })
}
