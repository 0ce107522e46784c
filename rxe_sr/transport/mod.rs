// SPDX-License-Identifier: GPL-2.0
//! The transport: what turns work requests into packets and packets into completions.
//! Today: the UD requester. Next: the RC requester, responder and completer around a
//! `proto::recovery` engine.

pub(crate) mod ud;
