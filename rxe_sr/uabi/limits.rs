// SPDX-License-Identifier: GPL-2.0
//! The rdma_rxe device limits (`drivers/infiniband/sw/rxe/rxe_param.h`) that bound what a user
//! WQE may contain, the page sizes a fast-registration MR may use, and the device-wide object
//! counts. rxe_sr reports the same values in `ib_device_attr`, so the stock provider sizes its
//! requests within them; the parsers rely on them to keep every value fixed-size.

/// `RXE_MAX_SGE`: most SGEs in a send or receive WQE (`max_send_sge`, `max_recv_sge`).
pub const RXE_MAX_SGE: u32 = 32;
/// `RXE_MAX_SRQ_SGE`: most SGEs in an SRQ WQE.
pub const RXE_MAX_SRQ_SGE: u32 = 27;
/// `RXE_MIN_SRQ_SGE`: an SRQ asking for fewer SGEs gets this many.
pub const RXE_MIN_SRQ_SGE: u32 = 1;
/// `RXE_MIN_SRQ_WR`: an SRQ asking for fewer WRs gets this many.
pub const RXE_MIN_SRQ_WR: u32 = 1;
/// `RXE_MAX_INLINE_DATA`: most inline bytes in a send WQE
/// (`RXE_MAX_WQE_SIZE - sizeof(struct rxe_send_wqe)` = `RXE_MAX_SGE * sizeof(struct ib_sge)`).
pub const RXE_MAX_INLINE_DATA: u32 = 512;
/// `RXE_PAGE_SIZE_CAP`: the page sizes a fast-registration MR may be mapped with, one bit
/// per size (bit n: 2^n bytes), 4 KiB to 2 GiB; the device's `page_size_cap`.
pub const RXE_PAGE_SIZE_CAP: u64 = 0xffff_f000;
/// `RXE_PORT_MAX_MSG_SZ`: the largest message (sum of SGE lengths) a WQE may describe.
pub const RXE_MAX_MSG_SIZE: u64 = 1 << 31;
/// `RXE_NUM_PORT`: the only valid port number is 1.
pub const RXE_NUM_PORT: u8 = 1;
/// Bytes an atomic operation (compare-and-swap, fetch-and-add, atomic write) works on.
pub const ATOMIC_SIZE: u32 = 8;
/// Largest 24-bit queue pair number.
pub const MAX_QPN: u32 = 0x00ff_ffff;
/// Bytes of a send-queue slot any WQE can use: `sizeof(struct rxe_send_wqe)` +
/// `RXE_MAX_INLINE_DATA` (= 32 SGEs). A kernel-side copy buffer of this size holds the used
/// part of any SQ slot.
pub const MAX_SEND_WQE_BYTES: usize = 208 + 512;
/// Bytes of a receive-queue slot any WQE can use: `sizeof(struct rxe_recv_wqe)` + 32 SGEs.
pub const MAX_RECV_WQE_BYTES: usize = 40 + 32 * 16;

/// Takes one object of a kind whose device-wide count is `used` and whose limit (as the
/// device reports it, e.g. `max_pd`) is `max`: false, and nothing taken, when `max` are in
/// use. Pair each success with [`give_back`].
pub fn take(used: &core::sync::atomic::AtomicU32, max: u32) -> bool {
    use core::sync::atomic::Ordering;
    used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
        (n < max).then_some(n + 1)
    })
    .is_ok()
}

/// Returns one object taken with [`take`] (never below zero).
pub fn give_back(used: &core::sync::atomic::AtomicU32) {
    use core::sync::atomic::Ordering;
    let _ = used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
}

/// True when `page_size` is one of the sizes `RXE_PAGE_SIZE_CAP` offers: a power of two
/// whose bit is set in the cap (4 KiB ..= 2 GiB).
pub fn page_size_supported(page_size: u64) -> bool {
    page_size.is_power_of_two() && page_size & RXE_PAGE_SIZE_CAP != 0
}
