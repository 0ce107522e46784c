// SPDX-License-Identifier: GPL-2.0
//! The C tables a registration owns (`rdma_link_ops` of include/rdma/rdma_netlink.h,
//! `pernet_operations` of include/net/net_namespace.h, `notifier_block`s of
//! include/linux/notifier.h): allocated and pinned here, linked into the core's list by the
//! registration that holds them, as rust/kernel/net/phy.rs's `Registration` holds its
//! driver tables.

use core::pin::Pin;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::prelude::*;
use kernel::types::Opaque;

/// `table`, pinned in memory of ours for the core to link into its list. `registered` is
/// the caller's one-registration flag, already taken: it is released if allocation fails.
pub(crate) fn pin_table<T>(table: T, registered: &AtomicBool) -> Result<Pin<KBox<Opaque<T>>>> {
    KBox::pin(Opaque::new(table), GFP_KERNEL).map_err(|e| {
        registered.store(false, Ordering::Release);
        e.into()
    })
}
