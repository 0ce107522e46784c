// SPDX-License-Identifier: GPL-2.0
//! The driver-private udata of rdma_rxe: `struct mminfo` and the create responses that carry
//! it (the provider mmap()s `mminfo.size` bytes at `mminfo.offset` on the uverbs fd), the AH
//! number, and the modify-SRQ command. Each emitter fills the whole struct (padding zeroed)
//! and writes nothing when `out` is too short.

use super::field;
use super::layout::{
    CREATE_AH_RESP_AH_NUM_OFF, CREATE_AH_RESP_SIZE, CREATE_CQ_RESP_MI_OFF, CREATE_CQ_RESP_SIZE,
    CREATE_QP_RESP_RQ_MI_OFF, CREATE_QP_RESP_SIZE, CREATE_QP_RESP_SQ_MI_OFF,
    CREATE_SRQ_RESP_MI_OFF, CREATE_SRQ_RESP_SIZE, CREATE_SRQ_RESP_SRQ_NUM_OFF, MMINFO_OFFSET_OFF,
    MMINFO_SIZE, MMINFO_SIZE_OFF, MODIFY_SRQ_CMD_MMAP_INFO_ADDR_OFF,
};

/// `struct mminfo`: where user space maps a queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmInfo {
    /// The mmap offset (a cookie identifying the queue).
    pub offset: u64,
    /// The mapping size: the queue's whole buffer, header included.
    pub size: u32,
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl MmInfo {
    fn to_bytes(self) -> [u8; MMINFO_SIZE] {
        let mut b = [0u8; MMINFO_SIZE];
        // Both fields lie inside the 16-byte array; `put` cannot fail here.
        let _ = field::put(&mut b, MMINFO_OFFSET_OFF, &self.offset.to_le_bytes());
        let _ = field::put(&mut b, MMINFO_SIZE_OFF, &self.size.to_le_bytes());
        b
    }

    /// Reads a `struct mminfo` (e.g. back from a response, in tests).
    pub fn parse(b: &[u8]) -> Option<MmInfo> {
        Some(MmInfo {
            offset: field::u64_le(b, MMINFO_OFFSET_OFF)?,
            size: field::u32_le(b, MMINFO_SIZE_OFF)?,
        })
    }
}

fn emit<const N: usize>(out: &mut [u8], parts: &[(usize, &[u8])]) -> Option<()> {
    let dst = out.get_mut(..N)?;
    let mut b = [0u8; N];
    for (off, src) in parts {
        field::put(&mut b, *off, src)?;
    }
    crate::bytes::copy(dst, &b).then_some(())
}

/// Writes a `struct mminfo`.
pub fn emit_mminfo(mi: MmInfo, out: &mut [u8]) -> Option<()> {
    emit::<MMINFO_SIZE>(out, &[(0, &mi.to_bytes())])
}

/// Writes `struct rxe_create_cq_resp` (also `struct rxe_resize_cq_resp`).
pub fn emit_create_cq_resp(mi: MmInfo, out: &mut [u8]) -> Option<()> {
    emit::<CREATE_CQ_RESP_SIZE>(out, &[(CREATE_CQ_RESP_MI_OFF, &mi.to_bytes())])
}

/// Writes `struct rxe_create_qp_resp`; `rq_mi` is all zero for a QP on an SRQ.
pub fn emit_create_qp_resp(rq_mi: MmInfo, sq_mi: MmInfo, out: &mut [u8]) -> Option<()> {
    emit::<CREATE_QP_RESP_SIZE>(
        out,
        &[
            (CREATE_QP_RESP_RQ_MI_OFF, &rq_mi.to_bytes()),
            (CREATE_QP_RESP_SQ_MI_OFF, &sq_mi.to_bytes()),
        ],
    )
}

/// Writes `struct rxe_create_srq_resp`.
pub fn emit_create_srq_resp(mi: MmInfo, srq_num: u32, out: &mut [u8]) -> Option<()> {
    emit::<CREATE_SRQ_RESP_SIZE>(
        out,
        &[
            (CREATE_SRQ_RESP_MI_OFF, &mi.to_bytes()),
            (CREATE_SRQ_RESP_SRQ_NUM_OFF, &srq_num.to_le_bytes()),
        ],
    )
}

/// Writes `struct rxe_create_ah_resp`.
pub fn emit_create_ah_resp(ah_num: u32, out: &mut [u8]) -> Option<()> {
    emit::<CREATE_AH_RESP_SIZE>(out, &[(CREATE_AH_RESP_AH_NUM_OFF, &ah_num.to_le_bytes())])
}

/// Reads `struct rxe_modify_srq_cmd`: the user address where the new SRQ's `struct mminfo`
/// is to be written after a resize (`IB_SRQ_MAX_WR`).
pub fn parse_modify_srq_cmd(b: &[u8]) -> Option<u64> {
    field::u64_le(b, MODIFY_SRQ_CMD_MMAP_INFO_ADDR_OFF)
}
