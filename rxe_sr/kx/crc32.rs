// SPDX-License-Identifier: GPL-2.0
//! linux/crc32.h: the kernel's CRC-32, for the RoCEv2 ICRC.
//!
//! rdma_rxe computes its ICRC with the same `crc32_le()` (lib/crc32.c, or an
//! architecture's faster version where the kernel has one).

use crate::kx::bindings;
use crate::proto::wire::icrc::Crc32;

/// The kernel's `crc32_le()` as the ICRC's [`Crc32`].
pub(crate) struct KernelCrc32;

impl Crc32 for KernelCrc32 {
    #[inline]
    fn crc32_le(crc: u32, data: &[u8]) -> u32 {
        // SAFETY: `data` is a live slice: `data.len()` bytes readable at `data.as_ptr()` for
        // the call, which only reads them and keeps no pointer.
        unsafe { bindings::crc32_le(crc, data.as_ptr(), data.len()) }
    }
}
