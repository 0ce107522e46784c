// SPDX-License-Identifier: GPL-2.0
//! The words of a per-QP bitmap over an SR window: IRN's and SRNIC's receive and SACK
//! bitmaps and the requester's PSN sets. proto does not allocate, so their storage comes
//! from outside: the module hands in heap words sized for the device's SR window when it
//! makes a QP's SR state; host tests and the simulator use [`InlineWords`].

use core::ops::{Deref, DerefMut};

/// Storage of one window bitmap: a slice of 64-bit words the caller allocated, zeroed.
pub trait WindowWords: DerefMut<Target = [u64]> {}

impl<T: DerefMut<Target = [u64]>> WindowWords for T {}

/// The words of a bitmap of `window` PSNs (a multiple of 64).
pub const fn words_for(window: u32) -> usize {
    window.div_ceil(64) as usize
}

/// Window words kept inline, `N` of them: the host's storage.
#[cfg(not(MODULE))]
#[derive(Clone, Copy, Debug)]
pub struct InlineWords<const N: usize>([u64; N]);

#[cfg(not(MODULE))]
impl<const N: usize> InlineWords<N> {
    /// All clear.
    pub const ZERO: Self = InlineWords([0; N]);
}

#[cfg(not(MODULE))]
impl<const N: usize> Deref for InlineWords<N> {
    type Target = [u64];

    fn deref(&self) -> &[u64] {
        &self.0
    }
}

#[cfg(not(MODULE))]
impl<const N: usize> DerefMut for InlineWords<N> {
    fn deref_mut(&mut self) -> &mut [u64] {
        &mut self.0
    }
}
