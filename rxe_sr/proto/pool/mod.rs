// SPDX-License-Identifier: GPL-2.0
//! Fixed-size, preallocated pools of SR state shared by all QPs of a device.
//!
//! - [`sr_pool`]: FaSR's two-level shared SR pool (SR state units + linked bitmap blocks).
//! - [`bits_pool`]: MELO's shared bits pool (bits blocks + free-slot stack).
//! - [`ops`]: the pools' object-safe interfaces for the engines, and their occupancy.
//! - [`slots`]: the storage a pool keeps its elements in (arrays, or heap storage sized at
//!   load).
//!
//! Allocation and release of one element are O(1). The engines reach a pool through its
//! object-safe interface ([`ops::SrPoolOps`], [`ops::BitsPoolOps`]), so they do
//! not depend on its storage or size.

pub mod bits_pool;
pub mod ops;
pub mod slots;
pub mod sr_pool;
