// SPDX-License-Identifier: GPL-2.0
//! Byte copies without a panic path. `<[u8]>::copy_from_slice` panics when the lengths
//! differ, and that path is code the kernel build should not carry (objtool cannot see that
//! it never returns). Every copy in rxe_sr goes through these helpers, which check the
//! lengths and report a mismatch to the caller instead. Pure and at the bottom of the layers:
//! proto/, uabi/ and the kernel side all use it, and it uses nothing.

#![forbid(unsafe_code)]

/// Copies `src` into `dst` and returns true when both have the same length; otherwise
/// copies nothing and returns false. (Bytes mostly; any `Copy` element works.)
#[inline]
#[must_use]
pub fn copy<T: Copy>(dst: &mut [T], src: &[T]) -> bool {
    if dst.len() != src.len() {
        return false;
    }
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
    true
}

/// The first `N` bytes of `src` as an array, or `None` when it is shorter.
#[inline]
pub fn array<const N: usize>(src: &[u8]) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    copy(&mut out, src.get(..N)?).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_must_match() {
        let mut d = [0u8; 3];
        assert!(copy(&mut d, &[1, 2, 3]));
        assert_eq!(d, [1, 2, 3]);
        assert!(!copy(&mut d, &[9, 9]));
        assert_eq!(d, [1, 2, 3]);
        assert_eq!(array::<2>(&[5, 6, 7]), Some([5, 6]));
        assert_eq!(array::<4>(&[5, 6, 7]), None);
    }
}
