// SPDX-License-Identifier: GPL-2.0
//! Parsing and validation of one receive-queue or SRQ slot (`struct rxe_recv_wqe`).
//!
//! rdma-core's provider (`rxe_post_one_recv`) writes `wr_id`, the SGE array in `dma.sge[]`,
//! `dma.num_sge`, and `dma.length`/`dma.resid` (the SGE total). Only `wr_id`, `dma.num_sge`
//! and the SGEs are read here; the length is recomputed from the SGEs.

use super::field;
use super::layout::{
    RECV_WQE_DMA_NUM_SGE_OFF, RECV_WQE_DMA_SGE_OFF, RECV_WQE_SIZE, RECV_WQE_WR_ID_OFF,
};
use super::sge::{Sge, SgeList};
use super::WqeError;

/// The per-queue limit a receive WQE is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvLimits {
    /// The RQ's `max_recv_sge` or the SRQ's `max_sge` (capped at `RXE_MAX_SGE`).
    pub max_sge: u32,
}

/// A validated receive WQE, held by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWqe {
    /// `wr_id`, returned in the completion.
    pub wr_id: u64,
    /// The scatter list.
    pub sges: SgeList,
    /// Sum of the SGE lengths (at most `RXE_MAX_MSG_SIZE`, 2^31).
    pub length: u32,
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl RecvWqe {
    /// Parses and validates a copy of one RQ/SRQ slot (`bytes` is the whole slot, at least
    /// `RECV_WQE_SIZE` long): `dma.num_sge <= max_sge`, the SGE array inside the slot, no SGE
    /// address overflow, total length `<= 2^31`.
    pub fn parse(bytes: &[u8], limits: RecvLimits) -> Result<RecvWqe, WqeError> {
        if bytes.len() < RECV_WQE_SIZE {
            return Err(WqeError::SlotTooSmall);
        }
        let wr_id = field::u64_le(bytes, RECV_WQE_WR_ID_OFF).ok_or(WqeError::SlotTooSmall)?;
        let num_sge =
            field::u32_le(bytes, RECV_WQE_DMA_NUM_SGE_OFF).ok_or(WqeError::SlotTooSmall)?;
        let (sges, length) = SgeList::parse(bytes, RECV_WQE_DMA_SGE_OFF, num_sge, limits.max_sge)?;
        Ok(RecvWqe {
            wr_id,
            sges,
            length,
        })
    }

    /// The SGEs.
    pub fn sge_slice(&self) -> &[Sge] {
        self.sges.as_slice()
    }
}
