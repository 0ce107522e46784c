// SPDX-License-Identifier: GPL-2.0
//! Validating a send work request given as decoded fields ([`WrFields`]: from a ring slot,
//! or a kernel consumer's `ib_send_wr`) into a [`SendWqe`]: opcode against the QP type, the
//! UD destination, and the payload against the QP's [`SendLimits`] and rdma_rxe's limits.

use crate::uabi::field;
use crate::uabi::limits::{ATOMIC_SIZE, MAX_QPN, RXE_MAX_INLINE_DATA, RXE_MAX_MSG_SIZE};
use crate::uabi::sge::SgeList;
use crate::uabi::WqeError;

use super::opcode::{QpType, SendFlags, SendOpcode};
use super::payload::{InlineData, Payload};
use super::wr::{SendOp, WrFields};
use super::SendWqe;

/// The per-QP limits a send WQE is checked against (from
/// [`SqGeometry`](crate::uabi::queue::SqGeometry)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendLimits {
    /// The QP's `max_send_sge` (capped at `RXE_MAX_SGE` by the parser).
    pub max_sge: u32,
    /// The QP's `max_inline_data` (capped at `RXE_MAX_INLINE_DATA` by the parser).
    pub max_inline: u32,
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl SendWqe {
    /// Validates a work request given as decoded fields.
    ///
    /// The fields are a ring slot's, or a kernel consumer's `ib_send_wr`; it gets the checks listed
    /// at [`SendWqe::parse`] after the decoding. `inline(len)` supplies `len` inline bytes,
    /// `sges()` the gather/scatter list and its total; each is called only if the opcode and flags
    /// need it.
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
        check_op_valid(opcode, qp_type, ud.map(|u| u.remote_qpn))?;
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
                build_inline(opcode, dma_length, limits, inline, &mut out.payload)?
            }
            _ => {
                out.payload = Payload::Sges(SgeList::EMPTY);
                let Payload::Sges(list) = &mut out.payload else {
                    return Err(WqeError::TooManySge);
                };
                sges(list)?
            }
        };
        check_atomic(&op, length)?;

        out.wr_id = wr_id;
        out.opcode = opcode;
        out.flags = flags;
        out.op = op;
        out.ud = ud;
        out.length = length;
        Ok(())
    }
}

/// The opcode against the QP type, and the UD destination: present exactly on a datagram
/// QP, its QPN (`remote_qpn`) within 24 bits.
fn check_op_valid(
    opcode: SendOpcode,
    qp_type: QpType,
    remote_qpn: Option<u32>,
) -> Result<(), WqeError> {
    if !opcode.allowed_on(qp_type) {
        return Err(WqeError::OpcodeNotAllowed);
    }
    if qp_type.is_datagram() != remote_qpn.is_some() {
        return Err(WqeError::OpcodeNotAllowed);
    }
    if remote_qpn.is_some_and(|qpn| qpn > MAX_QPN) {
        return Err(WqeError::BadRemoteQpn);
    }
    Ok(())
}

/// An IB_SEND_INLINE payload: allowed for the opcode, at most the QP's and rdma_rxe's
/// inline limit, and exactly `dma_length` bytes from `inline`, written into `payload`.
fn build_inline(
    opcode: SendOpcode,
    dma_length: u32,
    limits: SendLimits,
    inline: impl FnOnce(u32, &mut InlineData) -> Result<(), WqeError>,
    payload: &mut Payload,
) -> Result<u32, WqeError> {
    if !opcode.supports_inline() {
        return Err(WqeError::InlineNotAllowed);
    }
    if dma_length > limits.max_inline.min(RXE_MAX_INLINE_DATA) {
        return Err(WqeError::InlineTooLong);
    }
    *payload = Payload::Inline(InlineData::EMPTY);
    let Payload::Inline(data) = payload else {
        return Err(WqeError::InlineTooLong);
    };
    inline(dma_length, data)?;
    if data.len() != field::usize_from(dma_length).unwrap_or(usize::MAX) {
        return Err(WqeError::InlineTooLong);
    }
    Ok(dma_length)
}

/// The atomics' own limits: compare-and-swap and fetch-and-add need at least 8 bytes of
/// local buffer, and every atomic an 8-byte aligned remote address.
fn check_atomic(op: &SendOp, length: u32) -> Result<(), WqeError> {
    if let SendOp::AtomicCmpAndSwp { remote, .. } | SendOp::AtomicFetchAndAdd { remote, .. } = op {
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
    Ok(())
}
