// SPDX-License-Identifier: GPL-2.0
//! Bounds-checked little-endian field access on byte slices. Every read returns `None` rather
//! than panicking when the field does not lie inside the slice.

/// The `N` bytes at `off`, if they lie inside `b`.
pub(crate) fn array<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    let end = off.checked_add(N)?;
    b.get(off..end)?.try_into().ok()
}

/// The byte at `off`.
pub(crate) fn u8_at(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}

/// The little-endian `u16` at `off`.
pub(crate) fn u16_le(b: &[u8], off: usize) -> Option<u16> {
    array::<2>(b, off).map(u16::from_le_bytes)
}

/// The little-endian `u32` at `off`.
pub(crate) fn u32_le(b: &[u8], off: usize) -> Option<u32> {
    array::<4>(b, off).map(u32::from_le_bytes)
}

/// The little-endian `u64` at `off`.
pub(crate) fn u64_le(b: &[u8], off: usize) -> Option<u64> {
    array::<8>(b, off).map(u64::from_le_bytes)
}

/// Writes `src` at `off`; `None` (and nothing written) when it does not fit.
pub(crate) fn put(b: &mut [u8], off: usize, src: &[u8]) -> Option<()> {
    let end = off.checked_add(src.len())?;
    crate::bytes::copy(b.get_mut(off..end)?, src).then_some(())
}

/// `u32` to `usize` without a lossy cast (infallible on the 32/64-bit targets we build for).
pub(crate) fn usize_from(v: u32) -> Option<usize> {
    usize::try_from(v).ok()
}
