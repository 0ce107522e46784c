// SPDX-License-Identifier: GPL-2.0
//! The verbs provider: what rxe_sr reports and does for each ib_device operation.
//!
//! Everything here is safe Rust over plain values; the C-ABI entry points that the RDMA core
//! calls live in `ffi/` and forward here.

#![forbid(unsafe_code)]

pub(crate) mod cq;
pub(crate) mod device;
pub(crate) mod link;
pub(crate) mod mr;
pub(crate) mod qp;
