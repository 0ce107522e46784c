// SPDX-License-Identifier: GPL-2.0
//! Decoding a copied SQ slot (`struct rxe_send_wqe` as rdma-core's rxe provider writes it)
//! into a [`SendWqe`]: [`SendWqe::parse`] reads the fields and hands them to
//! [`SendWqe::build_into`] for validation.

use crate::uabi::field;
use crate::uabi::layout::{
    SEND_WQE_DMA_DATA_OFF, SEND_WQE_DMA_LENGTH_OFF, SEND_WQE_DMA_NUM_SGE_OFF, SEND_WQE_SIZE,
    SEND_WQE_WR_EX_OFF, SEND_WQE_WR_ID_OFF, SEND_WQE_WR_OFF, SEND_WQE_WR_OPCODE_OFF,
    SEND_WQE_WR_SEND_FLAGS_OFF, SEND_WR_ATOMIC_COMPARE_ADD_OFF, SEND_WR_ATOMIC_REMOTE_ADDR_OFF,
    SEND_WR_ATOMIC_RKEY_OFF, SEND_WR_ATOMIC_SWAP_OFF, SEND_WR_FLUSH_LEVEL_OFF,
    SEND_WR_FLUSH_REMOTE_ADDR_OFF, SEND_WR_FLUSH_RKEY_OFF, SEND_WR_FLUSH_TYPE_OFF,
    SEND_WR_MW_ACCESS_OFF, SEND_WR_MW_ADDR_OFF, SEND_WR_MW_LENGTH_OFF, SEND_WR_MW_MR_LKEY_OFF,
    SEND_WR_MW_MW_RKEY_OFF, SEND_WR_MW_RKEY_OFF, SEND_WR_RDMA_REMOTE_ADDR_OFF,
    SEND_WR_RDMA_RKEY_OFF,
};
use crate::uabi::sge::SgeList;
use crate::uabi::WqeError;

use super::av::parse_ud;
use super::build::SendLimits;
use super::opcode::{QpType, SendFlags, SendOpcode};
use super::payload::InlineData;
use super::wr::{BindMw, Remote, SendOp, WrFields};
use super::{need, SendWqe};

fn remote(b: &[u8], addr_off: usize, rkey_off: usize) -> Result<Remote, WqeError> {
    Ok(Remote {
        addr: need(field::u64_le(b, SEND_WQE_WR_OFF + addr_off))?,
        rkey: need(field::u32_le(b, SEND_WQE_WR_OFF + rkey_off))?,
    })
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl SendWqe {
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
        let dma_length = need(field::u32_le(b, SEND_WQE_DMA_LENGTH_OFF))?;
        let num_sge = need(field::u32_le(b, SEND_WQE_DMA_NUM_SGE_OFF))?;

        let ud = if qp_type.is_datagram() {
            Some(parse_ud(b)?)
        } else {
            None
        };
        let op = parse_op(b, opcode, ex_bytes)?;

        let inline = |len: u32, d: &mut InlineData| copy_inline(b, len, d);
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
}

/// The opcode's own fields of the slot's `wr` union (`ex` is the `ex` word: immediate data
/// or the rkey to invalidate), one arm per opcode.
fn parse_op(b: &[u8], opcode: SendOpcode, ex: [u8; 4]) -> Result<SendOp, WqeError> {
    let ex_u32 = u32::from_le_bytes(ex);
    let rdma = || remote(b, SEND_WR_RDMA_REMOTE_ADDR_OFF, SEND_WR_RDMA_RKEY_OFF);
    let atomic = || remote(b, SEND_WR_ATOMIC_REMOTE_ADDR_OFF, SEND_WR_ATOMIC_RKEY_OFF);
    Ok(match opcode {
        SendOpcode::Send => SendOp::Send,
        SendOpcode::SendWithImm => SendOp::SendWithImm { imm: ex },
        SendOpcode::SendWithInv => SendOp::SendWithInv {
            invalidate_rkey: ex_u32,
        },
        SendOpcode::RdmaWrite => SendOp::RdmaWrite { remote: rdma()? },
        SendOpcode::RdmaWriteWithImm => SendOp::RdmaWriteWithImm {
            remote: rdma()?,
            imm: ex,
        },
        SendOpcode::RdmaRead => SendOp::RdmaRead { remote: rdma()? },
        SendOpcode::AtomicCmpAndSwp => SendOp::AtomicCmpAndSwp {
            remote: atomic()?,
            compare: need(field::u64_le(b, SEND_WR_ATOMIC_COMPARE_ADD_OFF))?,
            swap: need(field::u64_le(b, SEND_WR_ATOMIC_SWAP_OFF))?,
        },
        SendOpcode::AtomicFetchAndAdd => SendOp::AtomicFetchAndAdd {
            remote: atomic()?,
            add: need(field::u64_le(b, SEND_WR_ATOMIC_COMPARE_ADD_OFF))?,
        },
        SendOpcode::AtomicWrite => SendOp::AtomicWrite {
            remote: rdma()?,
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
        SendOpcode::BindMw => SendOp::BindMw(parse_bind_mw(b)?),
        // Not a user opcode (from_uapi never gives it).
        SendOpcode::RegMr => return Err(WqeError::UnknownOpcode),
    })
}

/// The memory window bind fields of the slot's `wr.mw`.
fn parse_bind_mw(b: &[u8]) -> Result<BindMw, WqeError> {
    Ok(BindMw {
        addr: need(field::u64_le(b, SEND_WR_MW_ADDR_OFF))?,
        length: need(field::u64_le(b, SEND_WR_MW_LENGTH_OFF))?,
        mr_lkey: need(field::u32_le(b, SEND_WR_MW_MR_LKEY_OFF))?,
        mw_rkey: need(field::u32_le(b, SEND_WR_MW_MW_RKEY_OFF))?,
        rkey: need(field::u32_le(b, SEND_WR_MW_RKEY_OFF))?,
        access: need(field::u32_le(b, SEND_WR_MW_ACCESS_OFF))?,
    })
}

/// Copies the `len` inline bytes stored at the slot's `dma.inline_data` into `d`: they
/// must lie inside the slot.
fn copy_inline(b: &[u8], len: u32, d: &mut InlineData) -> Result<(), WqeError> {
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
}
