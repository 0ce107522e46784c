// SPDX-License-Identifier: GPL-2.0
//! The QP entries of `ib_device_ops`: the C-ABI entry points still in `ffi/`, added to the
//! ops that `kx::ib_device` builds from the `Driver` impl.

use super::qp;
use crate::kx::bindings;

/// Fills in the object verbs and the sizes of the objects the core allocates for them.
pub(crate) fn object_ops(ops: &mut bindings::ib_device_ops) {
    ops.create_qp = Some(qp::create_qp);
    ops.modify_qp = Some(qp::modify_qp);
    ops.query_qp = Some(qp::query_qp);
    ops.destroy_qp = Some(qp::destroy_qp);
    ops.post_send = Some(qp::post_send);
    ops.post_recv = Some(qp::post_recv);
    ops.size_ib_qp = qp::SIZE;
}
