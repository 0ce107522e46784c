// SPDX-License-Identifier: GPL-2.0
//! The verbs provider: what rxe_sr reports and does for each ib_device operation.
//!
//! Everything here is safe Rust over typed values: the device-level operations reach
//! [`device`]'s `Driver` impl through `kx::ib_device`'s adapter; the object operations'
//! C-ABI entry points are still in `ffi/` (issue 10) and forward here.

#![forbid(unsafe_code)]

pub(crate) mod ah;
pub(crate) mod cq;
pub(crate) mod device;
pub(crate) mod link;
pub(crate) mod mcast;
pub(crate) mod mr;
pub(crate) mod mw;
pub(crate) mod pd;
pub(crate) mod qp;
pub(crate) mod srq;
