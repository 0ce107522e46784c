// SPDX-License-Identifier: GPL-2.0
//! The transport: what turns work requests into packets and packets into completions.
//! - [`rx`]: receive dispatch, from the device's queue to the packet's QP.
//! - [`ud`]: the UD requester and delivery.
//! - [`rc`]: RC and UC, around `proto::rc` (requester, completer, responder) and the
//!   `proto::recovery` gbn engine.

#![forbid(unsafe_code)]

pub(crate) mod rc;
pub(crate) mod rx;
pub(crate) mod ud;
