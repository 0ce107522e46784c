// SPDX-License-Identifier: GPL-2.0
//! The verbs objects' state, as the transport and the verbs share it: the device (its
//! tables, port, counters and multicast groups), the live-object counts, address vectors,
//! PD identities, QP shapes and attributes. (Issue 10 moves the rest of the QP state and
//! the CQ, SRQ, MR, MW and AH state here from `ffi/`, family by family.)

#![forbid(unsafe_code)]

pub(crate) mod ah;
pub(crate) mod counters;
pub(crate) mod cq;
pub(crate) mod device;
pub(crate) mod live;
pub(crate) mod mcast;
pub(crate) mod mr;
pub(crate) mod mw;
pub(crate) mod qp;
pub(crate) mod recv_queue;
pub(crate) mod srq;
