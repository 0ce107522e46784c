// SPDX-License-Identifier: GPL-2.0
//! The verbs objects' state, as the transport and the verbs share it: the device (its
//! tables, port, counters and multicast groups), the live-object counts, address vectors
//! and AHs, CQs, SRQs and the receive queues they share with QPs, MRs and MWs with the
//! access to memory through their keys, QP shapes and attributes. (The QP's transport
//! state is `transport::qp`: it holds the RC/UC connection.)

#![forbid(unsafe_code)]

pub(crate) mod ah;
pub(crate) mod counters;
pub(crate) mod cq;
pub(crate) mod device;
pub(crate) mod inflight;
pub(crate) mod live;
pub(crate) mod mcast;
pub(crate) mod mr;
pub(crate) mod mr_access;
pub(crate) mod mw;
pub(crate) mod mw_binding;
pub(crate) mod qp;
pub(crate) mod recv_queue;
pub(crate) mod rx_marks;
pub(crate) mod sr_pools;
pub(crate) mod srq;
