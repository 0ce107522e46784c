// SPDX-License-Identifier: GPL-2.0
//! The rdma_rxe user ABI, as pure Rust (issue 4): placeholder.
