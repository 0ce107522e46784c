// SPDX-License-Identifier: GPL-2.0
//! The pure protocol core: no kernel crate, no allocation, safe code only, no floating point.
//!
//! It is compiled into the kernel module and tested on the host with `cargo test`.
//! - [`psn`]: 24-bit packet sequence number arithmetic (IBTA 9.7.1).
//! - [`wire`]: RoCEv2 headers, the SR extension headers and the ICRC.
//! - [`recovery`]: the sans-IO loss-recovery engines (gbn, irn, fasr, srnic, melo).
//! - [`rc`]: the RC/UC requester, completer and responder as pure state machines.
//! - [`pool`]: FaSR's two-level shared SR pool and MELO's shared bits pool.
//! - [`fec`]: the FEC shim's encoder and decoder (LoWAR).
//! - [`words`]: the storage of the per-QP bitmaps over an SR window, handed in by the
//!   caller.

#![forbid(unsafe_code)]

pub mod fec;
pub mod pool;
pub mod psn;
pub mod rc;
pub mod recovery;
pub mod wire;
pub mod words;
