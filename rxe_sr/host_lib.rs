// SPDX-License-Identifier: GPL-2.0
//! Host build of rxe_sr's pure parts: the protocol core and the user-ABI parsing.
//!
//! The kernel module compiles `rxe_sr/bytes.rs`, `rxe_sr/proto/` and `rxe_sr/uabi/` as its
//! modules `crate::bytes`, `crate::proto` and `crate::uabi`; this crate root gives them the same paths on the host, so `cargo test` and the simulator run
//! exactly the code the kernel runs. Nothing here may use `std` or allocation, and all of it is safe Rust.
#![no_std]

pub mod bytes;
pub mod proto;
pub mod uabi;
