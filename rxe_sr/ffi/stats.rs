// SPDX-License-Identifier: GPL-2.0
//! Port hardware statistics (`rdma statistic`): the descriptor table and the two
//! ib_device_ops that read the device's counters.

use core::ptr;
use kernel::ffi::c_int;

use crate::kx::bindings;
use crate::objects::counters::{COUNT, NAMES};
use crate::objects::device::RoceDevice;

/// The descriptors, built once from `objects::counters::NAMES`.
struct Descs([bindings::rdma_stat_desc; COUNT]);

// SAFETY: read-only; the names are static C strings.
unsafe impl Sync for Descs {}

const fn descs() -> Descs {
    let mut d = [bindings::rdma_stat_desc {
        name: ptr::null(),
        flags: 0,
        priv_: ptr::null(),
    }; COUNT];
    let mut i = 0;
    while i < COUNT {
        // core::ffi::c_char is i8 on x86; the kernel's c_char (u8) is the same byte.
        d[i].name = NAMES[i].as_ptr().cast();
        i += 1;
    }
    Descs(d)
}

static DESCS: Descs = descs();

/// `ib_device_ops.alloc_hw_port_stats`.
///
/// # Safety
/// Called by the core for a registered device of ours.
pub(crate) unsafe extern "C" fn alloc_hw_port_stats(
    _ibdev: *mut bindings::ib_device,
    _port: u32,
) -> *mut bindings::rdma_hw_stats {
    // SAFETY: the descriptors are static; the core frees the returned struct.
    unsafe {
        bindings::rdma_alloc_hw_stats_struct(
            DESCS.0.as_ptr(),
            COUNT as c_int,
            u64::from(bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN) as _,
        )
    }
}

/// `ib_device_ops.get_hw_stats`: fills every value; returns how many.
///
/// # Safety
/// Called by the core with a stats struct from `alloc_hw_port_stats` (holding its lock).
pub(crate) unsafe extern "C" fn get_hw_stats(
    ibdev: *mut bindings::ib_device,
    stats: *mut bindings::rdma_hw_stats,
    _port: u32,
    _index: c_int,
) -> c_int {
    // SAFETY: a device of ours, live for the call.
    let dev = unsafe { RoceDevice::from_ib(ibdev) };
    let v = dev.counters().snapshot();
    // SAFETY: the struct was allocated with COUNT values (`num_counters`).
    let out = unsafe { (*stats).value.as_mut_slice(COUNT) };
    if !crate::bytes::copy(out, &v) {
        return kernel::error::code::EINVAL.to_errno();
    }
    COUNT as c_int
}
