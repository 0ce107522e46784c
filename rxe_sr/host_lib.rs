// SPDX-License-Identifier: GPL-2.0
//! Host build of rxe_sr's protocol core.
//!
//! The kernel module compiles `rxe_sr/proto/` as its module `crate::proto`; this crate root
//! gives the same module the same path on the host, so `cargo test` and the simulator run
//! exactly the code the kernel runs. Nothing here may use `std`, allocation or `unsafe`.
#![no_std]

pub mod proto;
