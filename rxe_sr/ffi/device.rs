// SPDX-License-Identifier: GPL-2.0
//! The verbs objects' entries of `ib_device_ops` (QPs,
//! multicast, mmap, hardware statistics): the C-ABI entry points still in `ffi/`, added to
//! the device-level ops that `kx::ib_device` builds from the `Driver` impl.

use super::{mcast, qp, stats};
use crate::kx::bindings;
use crate::kx::mmap_queue as queue;

/// Fills in the object verbs and the sizes of the objects the core allocates for them.
pub(crate) fn object_ops(ops: &mut bindings::ib_device_ops) {
    ops.create_qp = Some(qp::create_qp);
    ops.modify_qp = Some(qp::modify_qp);
    ops.query_qp = Some(qp::query_qp);
    ops.destroy_qp = Some(qp::destroy_qp);
    ops.post_send = Some(qp::post_send);
    ops.post_recv = Some(qp::post_recv);
    ops.attach_mcast = Some(mcast::attach_mcast);
    ops.detach_mcast = Some(mcast::detach_mcast);
    ops.mmap = Some(queue::mmap);
    ops.mmap_free = Some(queue::mmap_free);
    ops.alloc_hw_port_stats = Some(stats::alloc_hw_port_stats);
    ops.get_hw_stats = Some(stats::get_hw_stats);
    ops.size_ib_qp = qp::SIZE;
}
