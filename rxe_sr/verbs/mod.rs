// SPDX-License-Identifier: GPL-2.0
//! The verbs provider: what rxe_sr reports and does for each ib_device operation.
//!
//! Everything here is safe Rust over typed values: every operation reaches [`device`]'s
//! `Driver` impl through kx's adapters, which forwards to the rules of its object family
//! here.

#![forbid(unsafe_code)]

pub(crate) mod ah;
pub(crate) mod cq;
pub(crate) mod device;
pub(crate) mod kernel_wr;
pub(crate) mod link;
pub(crate) mod mcast;
pub(crate) mod mr;
pub(crate) mod mw;
pub(crate) mod pd;
pub(crate) mod qp;
pub(crate) mod qp_modify;
pub(crate) mod qp_post;
pub(crate) mod srq;
