// SPDX-License-Identifier: GPL-2.0
//! The transport: what turns work requests into packets and packets into completions.
//! - [`rx`]: receive dispatch, from the device's queue to the packet's QP.
//! - [`ud`]: the UD requester and delivery.
//! - [`datagram`]: UD and GSI QPs' sending (user rings, kernel queues) and delivery.
//! - [`rc`]: RC and UC, around `proto::rc` (requester, completer, responder) and the
//!   `proto::recovery` gbn engine; [`rc_env`], what those act on; [`rc_counters`], the
//!   device counters their events add to; [`drive`], the drive
//!   loop; [`fetch`], send WQEs into the requester; [`connected`], the doorbell, delivery,
//!   held packets and the QP's work.
//! - [`qp`]: the QP's driver data, its context and its CQs as the paths post to them;
//!   [`qp_error`], the Error state's flushes.

#![forbid(unsafe_code)]

pub(crate) mod connected;
pub(crate) mod datagram;
pub(crate) mod drive;
pub(crate) mod fetch;
pub(crate) mod qp;
pub(crate) mod qp_error;
pub(crate) mod rc;
pub(crate) mod rc_counters;
pub(crate) mod rc_env;
pub(crate) mod rx;
pub(crate) mod ud;
