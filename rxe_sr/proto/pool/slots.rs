// SPDX-License-Identifier: GPL-2.0
//! Where a pool keeps its elements: an array (sized at compile time, on the host and in
//! the simulator) or heap storage sized at load (in the kernel, which implements [`Slots`]
//! for its own vector type).

/// Storage for a pool's elements.
pub trait Slots<T> {
    /// The elements.
    fn slots(&self) -> &[T];
    /// The elements, mutably.
    fn slots_mut(&mut self) -> &mut [T];
}

impl<T, const N: usize> Slots<T> for [T; N] {
    fn slots(&self) -> &[T] {
        self
    }
    fn slots_mut(&mut self) -> &mut [T] {
        self
    }
}
