// SPDX-License-Identifier: GPL-2.0
//! Typed values of the verbs interface (include/rdma/ib_verbs.h): QP types and states, path
//! MTUs, attribute masks, access flags, and Rust views of the attribute blocks the core
//! passes to `create_qp`, `modify_qp` and `query_qp`. The rules that check them live in
//! `verbs/`; this file only translates, so that nothing above kx/ names a C type.

use crate::kx::bindings;

/// `enum ib_qp_type`: the types rxe_sr offers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum QpType {
    /// `IB_QPT_GSI`: QP1, the general services QP.
    Gsi,
    /// `IB_QPT_RC`: reliable connected.
    Rc,
    /// `IB_QPT_UC`: unreliable connected.
    Uc,
    /// `IB_QPT_UD`: unreliable datagram.
    Ud,
}

impl QpType {
    /// The type `raw` names; `None` for the types rxe_sr does not offer.
    pub(crate) fn from_raw(raw: bindings::ib_qp_type) -> Option<Self> {
        match raw {
            bindings::ib_qp_type_IB_QPT_GSI => Some(QpType::Gsi),
            bindings::ib_qp_type_IB_QPT_RC => Some(QpType::Rc),
            bindings::ib_qp_type_IB_QPT_UC => Some(QpType::Uc),
            bindings::ib_qp_type_IB_QPT_UD => Some(QpType::Ud),
            _ => None,
        }
    }

    /// The C value.
    pub(crate) fn to_raw(self) -> bindings::ib_qp_type {
        match self {
            QpType::Gsi => bindings::ib_qp_type_IB_QPT_GSI,
            QpType::Rc => bindings::ib_qp_type_IB_QPT_RC,
            QpType::Uc => bindings::ib_qp_type_IB_QPT_UC,
            QpType::Ud => bindings::ib_qp_type_IB_QPT_UD,
        }
    }

    /// True for the datagram types (UD and GSI).
    pub(crate) fn is_datagram(self) -> bool {
        matches!(self, QpType::Ud | QpType::Gsi)
    }
}

/// `enum ib_qp_state` (IBTA 10.3.1).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum QpState {
    /// Reset.
    #[default]
    Reset,
    /// Initialized.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue drain.
    Sqd,
    /// Send queue error.
    Sqe,
    /// Error.
    Err,
}

impl QpState {
    /// The state `raw` names.
    pub(crate) fn from_raw(raw: bindings::ib_qp_state) -> Option<Self> {
        match raw {
            bindings::ib_qp_state_IB_QPS_RESET => Some(Self::Reset),
            bindings::ib_qp_state_IB_QPS_INIT => Some(Self::Init),
            bindings::ib_qp_state_IB_QPS_RTR => Some(Self::Rtr),
            bindings::ib_qp_state_IB_QPS_RTS => Some(Self::Rts),
            bindings::ib_qp_state_IB_QPS_SQD => Some(Self::Sqd),
            bindings::ib_qp_state_IB_QPS_SQE => Some(Self::Sqe),
            bindings::ib_qp_state_IB_QPS_ERR => Some(Self::Err),
            _ => None,
        }
    }

    /// The C value.
    pub(crate) fn to_raw(self) -> bindings::ib_qp_state {
        match self {
            Self::Reset => bindings::ib_qp_state_IB_QPS_RESET,
            Self::Init => bindings::ib_qp_state_IB_QPS_INIT,
            Self::Rtr => bindings::ib_qp_state_IB_QPS_RTR,
            Self::Rts => bindings::ib_qp_state_IB_QPS_RTS,
            Self::Sqd => bindings::ib_qp_state_IB_QPS_SQD,
            Self::Sqe => bindings::ib_qp_state_IB_QPS_SQE,
            Self::Err => bindings::ib_qp_state_IB_QPS_ERR,
        }
    }
}

/// `enum ib_sig_type`: which send WRs complete with a CQE.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SigType {
    /// Every WR.
    AllWr,
    /// Only WRs that ask (IB_SEND_SIGNALED).
    ReqWr,
}

impl SigType {
    fn from_raw(raw: bindings::ib_sig_type) -> Self {
        if raw == bindings::ib_sig_type_IB_SIGNAL_ALL_WR {
            Self::AllWr
        } else {
            Self::ReqWr
        }
    }

    fn to_raw(self) -> bindings::ib_sig_type {
        match self {
            Self::AllWr => bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
            Self::ReqWr => bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
        }
    }
}

/// `enum ib_mtu`: a path MTU (ordered by size).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Default)]
pub(crate) enum PathMtu {
    /// 256 bytes.
    #[default]
    Mtu256 = 1,
    /// 512 bytes.
    Mtu512 = 2,
    /// 1024 bytes.
    Mtu1024 = 3,
    /// 2048 bytes.
    Mtu2048 = 4,
    /// 4096 bytes.
    Mtu4096 = 5,
}

impl PathMtu {
    /// The MTU `raw` names.
    pub(crate) fn from_raw(raw: bindings::ib_mtu) -> Option<Self> {
        match raw {
            bindings::ib_mtu_IB_MTU_256 => Some(Self::Mtu256),
            bindings::ib_mtu_IB_MTU_512 => Some(Self::Mtu512),
            bindings::ib_mtu_IB_MTU_1024 => Some(Self::Mtu1024),
            bindings::ib_mtu_IB_MTU_2048 => Some(Self::Mtu2048),
            bindings::ib_mtu_IB_MTU_4096 => Some(Self::Mtu4096),
            _ => None,
        }
    }

    /// The C value (the `enum ib_mtu` number, 1 ..= 5).
    pub(crate) fn to_raw(self) -> bindings::ib_mtu {
        self as bindings::ib_mtu
    }

    /// Bytes: 256 for `IB_MTU_256` (1), doubling up to 4096 for `IB_MTU_4096` (5).
    pub(crate) fn bytes(self) -> u32 {
        128 << self.to_raw()
    }
}

/// `enum ib_qp_attr_mask`: which attributes a modify request sets.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct QpAttrMask(u32);

impl QpAttrMask {
    /// IB_QP_STATE.
    pub(crate) const STATE: Self = Self(bindings::ib_qp_attr_mask_IB_QP_STATE);
    /// IB_QP_CUR_STATE.
    pub(crate) const CUR_STATE: Self = Self(bindings::ib_qp_attr_mask_IB_QP_CUR_STATE);
    /// IB_QP_ACCESS_FLAGS.
    pub(crate) const ACCESS_FLAGS: Self = Self(bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS);
    /// IB_QP_PKEY_INDEX.
    pub(crate) const PKEY_INDEX: Self = Self(bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX);
    /// IB_QP_PORT.
    pub(crate) const PORT: Self = Self(bindings::ib_qp_attr_mask_IB_QP_PORT);
    /// IB_QP_QKEY.
    pub(crate) const QKEY: Self = Self(bindings::ib_qp_attr_mask_IB_QP_QKEY);
    /// IB_QP_AV.
    pub(crate) const AV: Self = Self(bindings::ib_qp_attr_mask_IB_QP_AV);
    /// IB_QP_PATH_MTU.
    pub(crate) const PATH_MTU: Self = Self(bindings::ib_qp_attr_mask_IB_QP_PATH_MTU);
    /// IB_QP_TIMEOUT.
    pub(crate) const TIMEOUT: Self = Self(bindings::ib_qp_attr_mask_IB_QP_TIMEOUT);
    /// IB_QP_RETRY_CNT.
    pub(crate) const RETRY_CNT: Self = Self(bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT);
    /// IB_QP_RNR_RETRY.
    pub(crate) const RNR_RETRY: Self = Self(bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY);
    /// IB_QP_RQ_PSN.
    pub(crate) const RQ_PSN: Self = Self(bindings::ib_qp_attr_mask_IB_QP_RQ_PSN);
    /// IB_QP_MAX_QP_RD_ATOMIC.
    pub(crate) const MAX_QP_RD_ATOMIC: Self =
        Self(bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC);
    /// IB_QP_ALT_PATH.
    pub(crate) const ALT_PATH: Self = Self(bindings::ib_qp_attr_mask_IB_QP_ALT_PATH);
    /// IB_QP_MIN_RNR_TIMER.
    pub(crate) const MIN_RNR_TIMER: Self = Self(bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER);
    /// IB_QP_SQ_PSN.
    pub(crate) const SQ_PSN: Self = Self(bindings::ib_qp_attr_mask_IB_QP_SQ_PSN);
    /// IB_QP_MAX_DEST_RD_ATOMIC.
    pub(crate) const MAX_DEST_RD_ATOMIC: Self =
        Self(bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC);
    /// IB_QP_PATH_MIG_STATE.
    pub(crate) const PATH_MIG_STATE: Self = Self(bindings::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE);
    /// IB_QP_DEST_QPN.
    pub(crate) const DEST_QPN: Self = Self(bindings::ib_qp_attr_mask_IB_QP_DEST_QPN);
    /// Every standard bit (`IB_QP_ATTR_STANDARD_BITS`); anything above is a driver
    /// extension rxe_sr does not have.
    pub(crate) const STANDARD: Self = Self(bindings::ib_qp_attr_mask_IB_QP_ATTR_STANDARD_BITS);

    /// The mask the core passed (`int` in the ops' signature); `None` when negative.
    pub(crate) fn from_raw(raw: i32) -> Option<Self> {
        u32::try_from(raw).ok().map(Self)
    }

    /// The bits.
    pub(crate) fn bits(self) -> u32 {
        self.0
    }

    /// Every bit of `other` is set.
    pub(crate) fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Only bits of `allowed` are set.
    pub(crate) fn within(self, allowed: Self) -> bool {
        self.0 & !allowed.0 == 0
    }
}

/// `enum ib_access_flags`: what an MR, MW or QP lets local and remote operations do.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct AccessFlags(u32);

impl AccessFlags {
    /// IB_ACCESS_LOCAL_WRITE.
    pub(crate) const LOCAL_WRITE: Self = Self(bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE);
    /// IB_ACCESS_REMOTE_WRITE.
    pub(crate) const REMOTE_WRITE: Self = Self(bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE);
    /// IB_ACCESS_REMOTE_READ.
    pub(crate) const REMOTE_READ: Self = Self(bindings::ib_access_flags_IB_ACCESS_REMOTE_READ);
    /// IB_ACCESS_REMOTE_ATOMIC.
    pub(crate) const REMOTE_ATOMIC: Self = Self(bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC);
    /// IB_ACCESS_MW_BIND.
    pub(crate) const MW_BIND: Self = Self(bindings::ib_access_flags_IB_ACCESS_MW_BIND);
    /// IB_ACCESS_HUGETLB: the memory is backed by huge pages (a hint).
    pub(crate) const HUGETLB: Self = Self(bindings::ib_access_flags_IB_ACCESS_HUGETLB);
    /// IB_ACCESS_OPTIONAL: the range of hints a provider may ignore.
    pub(crate) const OPTIONAL: Self = Self(bindings::ib_access_flags_IB_ACCESS_OPTIONAL);
    /// IB_ACCESS_ON_DEMAND: the memory is not pinned; pages are faulted in when used.
    pub(crate) const ON_DEMAND: Self = Self(bindings::ib_access_flags_IB_ACCESS_ON_DEMAND);
    /// IB_ACCESS_FLUSH_GLOBAL: IBTA 1.5 FLUSH to global visibility may name the memory.
    pub(crate) const FLUSH_GLOBAL: Self = Self(bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL);
    /// IB_ACCESS_FLUSH_PERSISTENT: FLUSH to persistence may name the memory.
    pub(crate) const FLUSH_PERSISTENT: Self =
        Self(bindings::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT);

    /// Flags as the core passes them (`int`); `None` when negative.
    pub(crate) fn from_raw(raw: i32) -> Option<Self> {
        u32::try_from(raw).ok().map(Self)
    }

    /// The bits.
    pub(crate) const fn bits(self) -> u32 {
        self.0
    }

    /// Both sets.
    pub(crate) const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Only flags of `allowed` are set.
    pub(crate) fn within(self, allowed: Self) -> bool {
        self.0 & !allowed.0 == 0
    }
}

/// `struct ib_qp_cap`: work-queue depths and sizes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct QpCap {
    /// Send WRs.
    pub(crate) max_send_wr: u32,
    /// Receive WRs.
    pub(crate) max_recv_wr: u32,
    /// Gather entries per send WR.
    pub(crate) max_send_sge: u32,
    /// Scatter entries per receive WR.
    pub(crate) max_recv_sge: u32,
    /// Inline bytes per send WR.
    pub(crate) max_inline_data: u32,
}

impl QpCap {
    fn from_raw(c: &bindings::ib_qp_cap) -> Self {
        QpCap {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }

    pub(crate) fn to_raw(self) -> bindings::ib_qp_cap {
        bindings::ib_qp_cap {
            max_send_wr: self.max_send_wr,
            max_recv_wr: self.max_recv_wr,
            max_send_sge: self.max_send_sge,
            max_recv_sge: self.max_recv_sge,
            max_inline_data: self.max_inline_data,
            ..Default::default()
        }
    }
}

/// What a create request asks for (`struct ib_qp_init_attr`), as plain values.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QpInitAttr {
    /// The type, `None` when rxe_sr does not offer it.
    pub(crate) qp_type: Option<QpType>,
    /// Port (QP1 only).
    pub(crate) port_num: u32,
    /// `create_flags` (none supported).
    pub(crate) create_flags: u32,
    /// An XRC domain was given.
    pub(crate) has_xrcd: bool,
    /// Both CQs were given.
    pub(crate) has_cqs: bool,
    /// An SRQ was given.
    pub(crate) has_srq: bool,
    /// Requested capabilities.
    pub(crate) cap: QpCap,
    /// Signalling.
    pub(crate) sq_sig_type: SigType,
}

impl QpInitAttr {
    /// Reads the core's block.
    pub(crate) fn from_raw(i: &bindings::ib_qp_init_attr) -> Self {
        QpInitAttr {
            qp_type: QpType::from_raw(i.qp_type),
            port_num: i.port_num,
            create_flags: i.create_flags,
            has_xrcd: !i.xrcd.is_null(),
            has_cqs: !i.send_cq.is_null() && !i.recv_cq.is_null(),
            has_srq: !i.srq.is_null(),
            cap: QpCap::from_raw(&i.cap),
            sq_sig_type: SigType::from_raw(i.sq_sig_type),
        }
    }
}

/// What `query_qp` reports of the create-time attributes (`struct ib_qp_init_attr`).
pub(crate) struct QpInitReply {
    /// Type.
    pub(crate) qp_type: QpType,
    /// Granted capabilities.
    pub(crate) cap: QpCap,
    /// Signalling.
    pub(crate) sq_sig_type: SigType,
}

impl QpInitReply {
    /// The C block, with the QP's CQs (the core's pointers, given back as they were).
    pub(crate) fn to_raw(
        &self,
        send_cq: *mut bindings::ib_cq,
        recv_cq: *mut bindings::ib_cq,
    ) -> bindings::ib_qp_init_attr {
        bindings::ib_qp_init_attr {
            send_cq,
            recv_cq,
            cap: self.cap.to_raw(),
            sq_sig_type: self.sq_sig_type.to_raw(),
            qp_type: self.qp_type.to_raw(),
            port_num: 1,
            ..Default::default()
        }
    }
}

/// The source GID an address names, copied from the GID attribute the core lends for the
/// call (`rdma_ah_attr.grh.sgid_attr`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct SourceGid {
    /// The GID's 16 bytes.
    pub(crate) gid: [u8; 16],
    /// A RoCEv2 GID (`IB_GID_TYPE_ROCE_UDP_ENCAP`): an IP address.
    pub(crate) roce_v2: bool,
}

/// An address attribute block (`struct rdma_ah_attr`) as `create_ah` or a modify request
/// passed it: kept to create an address vector from, and to report back from `query_qp`.
///
/// # Invariants
/// `raw.grh.sgid_attr` is null: the core lends the source GID attribute for the call only,
/// so it is never kept (and never handed out again); what the driver needs of it is copied
/// into `sgid`.
#[derive(Clone, Copy, Default)]
pub(crate) struct AhAttr {
    raw: bindings::rdma_ah_attr,
    sgid: Option<SourceGid>,
}

// SAFETY: the block's only pointer, `grh.sgid_attr`, is null (type invariant); the rest is
// plain data.
unsafe impl Send for AhAttr {}
// SAFETY: as above.
unsafe impl Sync for AhAttr {}

impl AhAttr {
    /// Reads the core's block, copying its source GID.
    ///
    /// # Safety
    /// `a.grh.sgid_attr` is null or points to a GID attribute that is live for the call
    /// (the core holds a reference on it for every verb that passes one).
    pub(crate) unsafe fn from_core(a: &bindings::rdma_ah_attr) -> Self {
        // SAFETY: per this function's contract.
        let sgid = unsafe { a.grh.sgid_attr.as_ref() }.map(|g| SourceGid {
            // SAFETY: `union ib_gid` is 16 plain bytes whichever member is read.
            gid: unsafe { g.gid.raw },
            roce_v2: g.gid_type == bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP,
        });
        let mut raw = *a;
        // INVARIANT: the borrowed pointer is dropped.
        raw.grh.sgid_attr = core::ptr::null();
        AhAttr { raw, sgid }
    }

    /// Its port.
    pub(crate) fn port_num(&self) -> u32 {
        self.raw.port_num
    }

    /// A RoCE address (`RDMA_AH_ATTR_TYPE_ROCE`).
    pub(crate) fn is_roce(&self) -> bool {
        self.raw.type_ == bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE
    }

    /// It carries a global route header (`IB_AH_GRH`): every RoCE address does.
    pub(crate) fn has_grh(&self) -> bool {
        u32::from(self.raw.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH != 0
    }

    /// The source GID, when the core passed one.
    pub(crate) fn source_gid(&self) -> Option<SourceGid> {
        self.sgid
    }

    /// The destination GID.
    pub(crate) fn dgid(&self) -> [u8; 16] {
        // SAFETY: `union ib_gid` is 16 plain bytes whichever member is read.
        unsafe { self.raw.grh.dgid.raw }
    }

    /// The GRH's flow label.
    pub(crate) fn flow_label(&self) -> u32 {
        self.raw.grh.flow_label
    }

    /// The GRH's hop limit.
    pub(crate) fn hop_limit(&self) -> u8 {
        self.raw.grh.hop_limit
    }

    /// The GRH's traffic class.
    pub(crate) fn traffic_class(&self) -> u8 {
        self.raw.grh.traffic_class
    }
}

/// The attributes of a modify request or a query reply (`struct ib_qp_attr`), as plain
/// values.
#[derive(Clone, Copy, Default)]
pub(crate) struct QpAttr {
    /// `qp_state`; `None` when the request named no state rxe_sr knows.
    pub(crate) qp_state: Option<QpState>,
    /// `cur_qp_state`, as `qp_state`.
    pub(crate) cur_qp_state: Option<QpState>,
    /// `path_mtu`; `None` when out of range.
    pub(crate) path_mtu: Option<PathMtu>,
    pub(crate) qkey: u32,
    pub(crate) rq_psn: u32,
    pub(crate) sq_psn: u32,
    pub(crate) dest_qp_num: u32,
    /// `qp_access_flags`; `None` when negative.
    pub(crate) qp_access_flags: Option<AccessFlags>,
    pub(crate) cap: QpCap,
    pub(crate) ah_attr: AhAttr,
    pub(crate) pkey_index: u16,
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) min_rnr_timer: u8,
    pub(crate) port_num: u32,
    pub(crate) timeout: u8,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
}

impl QpAttr {
    /// Reads the core's block for a modify request with attribute mask `mask`. Only the
    /// fields `mask` names hold values the caller set; the address attribute (and the
    /// source GID it points to) is read only when `mask` names it, and is empty otherwise
    /// (ib_mad, for one, passes an uninitialised block with other masks).
    ///
    /// # Safety
    /// When `mask` contains [`QpAttrMask::AV`], `a.ah_attr.grh.sgid_attr` is null or live
    /// for the call (as [`AhAttr::from_core`]).
    pub(crate) unsafe fn from_core(a: &bindings::ib_qp_attr, mask: QpAttrMask) -> Self {
        let ah_attr = if mask.contains(QpAttrMask::AV) {
            // SAFETY: per this function's contract.
            unsafe { AhAttr::from_core(&a.ah_attr) }
        } else {
            AhAttr::default()
        };
        QpAttr {
            qp_state: QpState::from_raw(a.qp_state),
            cur_qp_state: QpState::from_raw(a.cur_qp_state),
            path_mtu: PathMtu::from_raw(a.path_mtu),
            qkey: a.qkey,
            rq_psn: a.rq_psn,
            sq_psn: a.sq_psn,
            dest_qp_num: a.dest_qp_num,
            qp_access_flags: AccessFlags::from_raw(a.qp_access_flags),
            cap: QpCap::from_raw(&a.cap),
            ah_attr,
            pkey_index: a.pkey_index,
            max_rd_atomic: a.max_rd_atomic,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            min_rnr_timer: a.min_rnr_timer,
            port_num: a.port_num,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
        }
    }

    /// The C block (fields rxe_sr does not keep are zero).
    pub(crate) fn to_raw(self) -> bindings::ib_qp_attr {
        let state = |s: Option<QpState>| s.unwrap_or_default().to_raw();
        bindings::ib_qp_attr {
            qp_state: state(self.qp_state),
            cur_qp_state: state(self.cur_qp_state),
            path_mtu: self.path_mtu.unwrap_or_default().to_raw(),
            qkey: self.qkey,
            rq_psn: self.rq_psn,
            sq_psn: self.sq_psn,
            dest_qp_num: self.dest_qp_num,
            // The flags came from an `int` and fit one.
            qp_access_flags: self
                .qp_access_flags
                .map_or(0, |f| i32::try_from(f.bits()).unwrap_or(0)),
            cap: self.cap.to_raw(),
            ah_attr: self.ah_attr.raw,
            pkey_index: self.pkey_index,
            max_rd_atomic: self.max_rd_atomic,
            max_dest_rd_atomic: self.max_dest_rd_atomic,
            min_rnr_timer: self.min_rnr_timer,
            port_num: self.port_num,
            timeout: self.timeout,
            retry_cnt: self.retry_cnt,
            rnr_retry: self.rnr_retry,
            ..Default::default()
        }
    }
}

/// The RDMA core's table of legal QP state transitions and the attributes each requires
/// and allows (`ib_modify_qp_is_ok`).
pub(crate) fn modify_qp_is_ok(
    cur: QpState,
    next: QpState,
    qp_type: QpType,
    mask: QpAttrMask,
) -> bool {
    // SAFETY: a pure table lookup on plain values.
    unsafe {
        bindings::ib_modify_qp_is_ok(cur.to_raw(), next.to_raw(), qp_type.to_raw(), mask.bits())
    }
}
