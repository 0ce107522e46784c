// SPDX-License-Identifier: GPL-2.0
//! The transport: what turns work requests into packets and packets into completions. The
//! files of RC and UC QPs start with `rc_`, those of UD and GSI QPs with `ud_`, those of
//! every QP type with `qp`.
//! - [`rx`]: receive dispatch, from the device's queue to the packet's QP.
//! - [`qp`]: the QP's driver data, its context and its CQs as the paths post to them;
//!   [`qp_error`], the Error state's flushes; [`qp_work`], the QP's work items, which run
//!   what its type has pending.
//! - [`rc_qp`]: an RC or UC QP's doorbell, the delivery of its packets, and the requests
//!   held back while its READ responses go out.
//! - [`rc_drive`]: the drive loop, one step of `proto::rc` (requester, completer,
//!   responder) under the QP's lock; [`rc_conn`], the connection state it drives, built
//!   at RTR and RTS; [`rc_env`], what the state machines act on; [`rc_fetch`], send WQEs
//!   into the requester; [`rc_counters`], the device counters their events add to;
//!   [`rc_fec`], the FEC shim's encoders and the repairs they send; [`rc_fec_resp`], the
//!   shim's direction of the responses (decoded and held for the requester).
//! - [`ud_qp`]: a UD or GSI QP's sending (user ring, kernel queue) and the delivery of UD
//!   SENDs (unicast, multicast); [`ud_packet`], one UD message: a work request into its
//!   DETH packet on the wire, a received one into a receive WQE.

#![forbid(unsafe_code)]

pub(crate) mod qp;
pub(crate) mod qp_error;
pub(crate) mod qp_work;
pub(crate) mod rc_conn;
pub(crate) mod rc_counters;
pub(crate) mod rc_drive;
pub(crate) mod rc_env;
pub(crate) mod rc_fec;
pub(crate) mod rc_fec_resp;
pub(crate) mod rc_fetch;
pub(crate) mod rc_qp;
pub(crate) mod rx;
pub(crate) mod ud_packet;
pub(crate) mod ud_qp;
