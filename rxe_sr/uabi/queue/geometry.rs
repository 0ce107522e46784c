// SPDX-License-Identifier: GPL-2.0
//! Queue sizing as rdma_rxe does it: `rxe_queue_init` ([`QueueGeometry`]) and the per-queue
//! rules of `rxe_init_sq`, `rxe_init_rq`, `rxe_srq_from_init` and `rxe_cq_from_init`, with the
//! capabilities written back to user space.

use crate::uabi::layout::{RECV_WQE_SIZE, RXE_CQE_SIZE, SEND_WQE_SIZE, SGE_SIZE};
use crate::uabi::limits::{
    RXE_MAX_INLINE_DATA, RXE_MAX_SGE, RXE_MAX_SRQ_SGE, RXE_MIN_SRQ_SGE, RXE_MIN_SRQ_WR,
};

use super::ring::Ring;

/// x86_64's usual `cache_line_size()`; rdma_rxe pads every slot to at least one cache line.
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const DEFAULT_CACHE_LINE_SIZE: u32 = 64;

/// A queue sized as `rxe_queue_init(rxe, &num_elem, elem_size, type)` sizes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueGeometry {
    /// The ring: `roundup_pow_of_two(num_elem + 1)` slots of
    /// `roundup_pow_of_two(max(elem_size, cache line))` bytes.
    pub ring: Ring,
    /// Usable entries, `num_slots - 1`: what rdma_rxe writes back as the actual queue depth.
    pub num_elem: u32,
    /// The unpadded element size asked for (rdma_rxe's `q->elem_size`, copied on resize).
    pub elem_size: u32,
}

impl QueueGeometry {
    /// Sizes a queue for `num_elem` entries of `elem_size` bytes, with slots padded to at
    /// least `cache_line_size` (the kernel's `cache_line_size()`, a power of two).
    /// `None` when the sizes overflow or the buffer would not fit in a `u32`.
    pub fn new(num_elem: u32, elem_size: u32, cache_line_size: u32) -> Option<QueueGeometry> {
        let slot = elem_size.max(cache_line_size).checked_next_power_of_two()?;
        let num_slots = num_elem.checked_add(1)?.checked_next_power_of_two()?;
        let ring = Ring::new(num_slots.trailing_zeros(), slot.trailing_zeros())?;
        Some(QueueGeometry {
            ring,
            num_elem: ring.capacity(),
            elem_size,
        })
    }
}

/// Send queue sizing as `rxe_init_sq`, with the capabilities written back to user space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqGeometry {
    /// The queue.
    pub queue: QueueGeometry,
    /// Actual `max_send_wr` (`num_slots - 1`).
    pub max_wr: u32,
    /// Actual `max_send_sge`: `max(max_send_sge * 16, max_inline_data) / 16`.
    pub max_sge: u32,
    /// Actual `max_inline_data`: `max(max_send_sge * 16, max_inline_data)`.
    pub max_inline: u32,
}

/// Sizes a send queue for `max_send_wr` WRs with `max_send_sge` SGEs or `max_inline_data`
/// inline bytes, as `rxe_init_sq` does: slot = `sizeof(struct rxe_send_wqe)` +
/// `max(max_send_sge * sizeof(struct ib_sge), max_inline_data)`. `None` when a request exceeds
/// `RXE_MAX_SGE` / `RXE_MAX_INLINE_DATA` (rdma_rxe's `rxe_qp_chk_cap` refuses those) or the
/// queue does not fit.
pub fn sq_geometry(
    max_send_wr: u32,
    max_send_sge: u32,
    max_inline_data: u32,
    cache_line_size: u32,
) -> Option<SqGeometry> {
    if max_send_sge > RXE_MAX_SGE || max_inline_data > RXE_MAX_INLINE_DATA {
        return None;
    }
    let sge_size = u32::try_from(SGE_SIZE).ok()?;
    let payload = max_send_sge.checked_mul(sge_size)?.max(max_inline_data);
    let elem = payload.checked_add(u32::try_from(SEND_WQE_SIZE).ok()?)?;
    let queue = QueueGeometry::new(max_send_wr, elem, cache_line_size)?;
    Some(SqGeometry {
        queue,
        max_wr: queue.num_elem,
        max_sge: payload / sge_size,
        max_inline: payload,
    })
}

/// Receive queue (or SRQ) sizing, with the capabilities written back to user space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RqGeometry {
    /// The queue.
    pub queue: QueueGeometry,
    /// Actual `max_recv_wr` / SRQ `max_wr` (`num_slots - 1`).
    pub max_wr: u32,
    /// Actual `max_recv_sge` / SRQ `max_sge`.
    pub max_sge: u32,
}

fn recv_geometry(max_wr: u32, max_sge: u32, cache_line_size: u32) -> Option<RqGeometry> {
    let sge_size = u32::try_from(SGE_SIZE).ok()?;
    let elem = max_sge
        .checked_mul(sge_size)?
        .checked_add(u32::try_from(RECV_WQE_SIZE).ok()?)?;
    let queue = QueueGeometry::new(max_wr, elem, cache_line_size)?;
    Some(RqGeometry {
        queue,
        max_wr: queue.num_elem,
        max_sge,
    })
}

/// Sizes a QP's receive queue as `rxe_init_rq`: slot = `sizeof(struct rxe_recv_wqe)` +
/// `max_recv_sge * sizeof(struct ib_sge)`. `None` above `RXE_MAX_SGE` or when too large.
pub fn rq_geometry(
    max_recv_wr: u32,
    max_recv_sge: u32,
    cache_line_size: u32,
) -> Option<RqGeometry> {
    if max_recv_sge > RXE_MAX_SGE {
        return None;
    }
    recv_geometry(max_recv_wr, max_recv_sge, cache_line_size)
}

/// Sizes an SRQ as `rxe_srq_chk_attr` + `rxe_srq_from_init`: `max_wr` must be non-zero and is
/// raised to `RXE_MIN_SRQ_WR`, `max_sge` is raised to `RXE_MIN_SRQ_SGE` and must not exceed
/// `RXE_MAX_SRQ_SGE`. (The device's `max_srq_wr` bound is the caller's to check.)
pub fn srq_geometry(max_wr: u32, max_sge: u32, cache_line_size: u32) -> Option<RqGeometry> {
    if max_wr == 0 || max_sge > RXE_MAX_SRQ_SGE {
        return None;
    }
    recv_geometry(
        max_wr.max(RXE_MIN_SRQ_WR),
        max_sge.max(RXE_MIN_SRQ_SGE),
        cache_line_size,
    )
}

/// Sizes a completion queue for `cqe` entries as `rxe_cq_from_init`: slot =
/// `sizeof(struct rxe_cqe)` (72 bytes, padded to 128). `None` for `cqe == 0` (rdma_rxe's
/// `rxe_cq_chk_attr` refuses it; the device's `max_cqe` bound is the caller's to check).
/// The `num_elem` of the result is the `cqe` value reported back to user space.
pub fn cq_geometry(cqe: u32, cache_line_size: u32) -> Option<QueueGeometry> {
    if cqe == 0 {
        return None;
    }
    QueueGeometry::new(cqe, u32::try_from(RXE_CQE_SIZE).ok()?, cache_line_size)
}
