// SPDX-License-Identifier: GPL-2.0
//! The RC/UC transport (proto::rc) end to end on the host: two QPs, each a requester and a
//! responder, over a simulated link that loses, duplicates and reorders packets. Every
//! packet crosses the link as bytes (emitted and parsed with proto::wire), memory is plain
//! buffers behind keys, time is simulated. The checks are on data and completions.
//!
//! The net is `tests/harness/rc_net.rs`, included here; the tests are by topic:
//! - `delivery`: exactly-once delivery of the mixed workload and long streams, RC and UC;
//! - `errors`: failed requests and the completions behind them;
//! - `receives`: RNR NAKs, slow receivers, receives taken ahead, SRQs;
//! - `window`: the window, the READ limit, acknowledgment requests, the in-flight budget;
//! - `timeouts`: the retransmission timer, its round trip and backoff;
//! - `operations`: ATOMIC WRITE, FLUSH, BIND_MW and LOCAL_INV;
//! - `duplicates`: duplicate atomics, WRITEs and READs at the responder;
//! - `reads`: READ batches and limits, READs in the SR window and past it;
//! - `read_repairs`: lost READ responses asked for again, repairs;
//! - `sr_schemes`: every SR scheme end to end, peers kept standard, short pools;
//! - `selective`: selective retransmission of WRITE streams, lost resends, probes;
//! - `fasr`: FaSR's resends, FNACKs and pipe;
//! - `fec`: the FEC shim between the QPs;
//! - `forged`: forged packets among the real ones;
//! - `long_path`: WRITE streams over a long fat path (`harness/rc_wan.rs`).
//!
//! `common` holds the helpers they share.

include!("../harness/rc_net.rs");
include!("../harness/rc_wan.rs");

mod common;
mod delivery;
mod duplicates;
mod errors;
mod fasr;
mod fec;
mod forged;
mod long_path;
mod operations;
mod read_repairs;
mod reads;
mod receives;
mod selective;
mod sr_schemes;
mod timeouts;
mod window;
