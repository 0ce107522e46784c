// SPDX-License-Identifier: GPL-2.0
//! The ICRC's CRC-32 (linux/crc32.h, crypto/hash.h).
//!
//! As rdma_rxe, through the crypto API's "crc32", so that an architecture's implementation
//! (crc32-pclmul on x86) is used where the kernel has one: 6.12's `crc32_le()` is
//! lib/crc32.c's generic one. Without the crypto transform (kx/c/icrc.c could not allocate it),
//! `crc32_le()`.

use core::ffi::CStr;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::kx::bindings;
use crate::proto::wire::icrc::Crc32;

/// The kernel's CRC-32 as the ICRC's [`Crc32`].
pub(crate) struct KernelCrc32;

impl Crc32 for KernelCrc32 {
    #[inline]
    fn crc32_le(crc: u32, data: &[u8]) -> u32 {
        // SAFETY: `data` is a live slice: `data.len()` bytes readable at `data.as_ptr()` for
        // the call, which only reads them and keeps no pointer.
        unsafe { bindings::rxe_sr_glue_crc32(crc, data.as_ptr().cast(), data.len()) }
    }
}

/// Whether an [`IcrcTransform`] exists.
static TRANSFORM: AtomicBool = AtomicBool::new(false);

/// The crypto transform the ICRC is computed with, from module load to unload.
///
/// # Invariants
/// At most one exists ([`TRANSFORM`]). The module makes it before any device exists and
/// drops it after the last one is gone (devices are the only callers of [`KernelCrc32`]).
pub(crate) struct IcrcTransform {
    /// The implementation's name, NUL-terminated (cut to fit).
    driver: [u8; 64],
}

impl IcrcTransform {
    /// Allocates the transform (falling back to `crc32_le()` when the crypto API has no
    /// "crc32"); `None` when one exists already.
    pub(crate) fn new() -> Option<Self> {
        if TRANSFORM.swap(true, Ordering::AcqRel) {
            return None;
        }
        // SAFETY: the only transform (checked above), made before any device exists.
        let name = unsafe { bindings::rxe_sr_glue_crc32_init() };
        let mut driver = [0u8; 64];
        // SAFETY: the helper returns a NUL-terminated string (a static one or the
        // transform's driver name) that lives until the transform is freed, after this.
        let bytes = unsafe { CStr::from_ptr(name.cast()) }.to_bytes();
        // The last byte stays NUL.
        for (d, b) in driver.iter_mut().zip(bytes.iter().take(63)) {
            *d = *b;
        }
        Some(IcrcTransform { driver })
    }

    /// The implementation in use: the crypto driver's name (e.g. `crc32-pclmul`,
    /// `crc32-generic`), or `crc32_le`.
    pub(crate) fn driver(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.driver).unwrap_or_default()
    }
}

impl Drop for IcrcTransform {
    fn drop(&mut self) {
        // SAFETY: dropped at unload, after every device (every user of the transform) is gone.
        unsafe { bindings::rxe_sr_glue_crc32_exit() };
        TRANSFORM.store(false, Ordering::Release);
    }
}
