// SPDX-License-Identifier: GPL-2.0
//! Port hardware statistics (include/rdma/ib_hw_stats.h), as `rdma statistic` shows them:
//! [`StatDesc`], a counter's descriptor ([`stat_descs`] builds a driver's table of them at
//! compile time, `HwStatsDriver::HW_STATS`), and the `alloc_hw_port_stats` and `get_hw_stats`
//! entries of `ib_device_ops`, which read the driver's counters through
//! `HwStatsDriver::hw_stats`.

use core::ffi::CStr;
use core::ptr;
use kernel::ffi::c_int;

use crate::kx::bindings;

/// A driver's port counters.
pub(crate) trait HwStatsDriver: DriverData {
    /// The port counters `rdma statistic` lists (built with [`stat_descs`](crate::kx::ib_hw_stats::stat_descs)).
    const HW_STATS: &'static [StatDesc];

    /// `get_hw_stats`: the current value of each of [`HwStatsDriver::HW_STATS`], in order.
    fn hw_stats(dev: &Device<Self>, out: &mut [u64]);
}
use crate::kx::ib_device::{Device, DriverData};

/// A counter's descriptor (`struct rdma_stat_desc`): its name.
#[repr(transparent)]
pub(crate) struct StatDesc(bindings::rdma_stat_desc);

/// The descriptors of counters named `names`, in that order (for a `const`).
pub(crate) const fn stat_descs<const N: usize>(names: &[&'static CStr; N]) -> [StatDesc; N] {
    let mut d = [const {
        StatDesc(bindings::rdma_stat_desc {
            name: ptr::null(),
            flags: 0,
            priv_: ptr::null(),
        })
    }; N];
    let mut i = 0;
    while i < N {
        // core::ffi::c_char is i8 on x86; the kernel's c_char (u8) is the same byte.
        d[i].0.name = names[i].as_ptr().cast();
        i += 1;
    }
    d
}

/// `ib_device_ops.alloc_hw_port_stats`.
///
/// # Safety
/// Called by the core for a registered device of `T`.
pub(super) unsafe extern "C" fn alloc_hw_port_stats<T: HwStatsDriver>(
    _ibdev: *mut bindings::ib_device,
    _port: u32,
) -> *mut bindings::rdma_hw_stats {
    let descs = T::HW_STATS;
    // SAFETY: the descriptors are `'static` (`StatDesc` is a transparent `rdma_stat_desc`);
    // the core frees the returned struct.
    unsafe {
        bindings::rdma_alloc_hw_stats_struct(
            descs.as_ptr().cast(),
            c_int::try_from(descs.len()).unwrap_or(0),
            u64::from(bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN) as _,
        )
    }
}

/// `ib_device_ops.get_hw_stats`: fills every value; returns how many.
///
/// # Safety
/// Called by the core for a device of `T` with a stats struct from `alloc_hw_port_stats`
/// (holding its lock).
pub(super) unsafe extern "C" fn get_hw_stats<T: HwStatsDriver>(
    ibdev: *mut bindings::ib_device,
    stats: *mut bindings::rdma_hw_stats,
    _port: u32,
    _index: c_int,
) -> c_int {
    // SAFETY: a device of ours, live for the call.
    let dev = unsafe { Device::<T>::from_raw(ibdev) };
    let n = T::HW_STATS.len();
    // SAFETY: the struct was allocated with `n` values (`num_counters`), and the core holds
    // its lock for the call.
    let out = unsafe { (*stats).value.as_mut_slice(n) };
    T::hw_stats(dev, out);
    c_int::try_from(n).unwrap_or(0)
}
