// SPDX-License-Identifier: GPL-2.0
//! Fixed-size, preallocated pools of SR state shared by all QPs of a device.
//!
//! - [`sr_pool`]: FaSR's two-level shared SR pool (SR state units + linked bitmap blocks).
//! - [`bits_pool`]: MELO's shared bits pool (bits blocks + free-slot stack).
//!
//! Sizes are const generic parameters; allocation and release of one element are O(1).

pub mod bits_pool;
pub mod sr_pool;
