// SPDX-License-Identifier: GPL-2.0
//! The module parameters (include/linux/moduleparam.h): `recovery`, the SR pool sizes,
//! FaSR's pipe, the go-back-N window, the device's in-flight budget, `max_objects`, the
//! FEC shim's and `timer_hold`.
//!
//! 6.12's `module!` macro declares no parameters, so kx/c/params.c declares them, as fields
//! of one C struct read here: `recovery` with `module_param_cb`, whose setter and getter
//! call the two entry points here, which parse and name [`Scheme`]s; the others as plain
//! unsigned ints, checked at module init, and one bool.
//! All are read-only after load (mode 0444) but `tx_zero_copy`, a separate C bool that may
//! change at any time.

use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CStr;

use crate::kx::bindings;
use crate::proto::fec::FecParams;
use crate::proto::recovery::scheme::Scheme;

/// The SR pool sizes given at load (checked by the module's init).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoolSizes {
    /// `sr_pool_units`: FaSR level-1 SR state units.
    pub(crate) sr_units: u32,
    /// `sr_pool_blocks`: FaSR level-2 bitmap blocks (16 bits each).
    pub(crate) sr_blocks: u32,
    /// `melo_pool_blocks`: MELO bits blocks (8 bits each).
    pub(crate) melo_blocks: u32,
}

/// The parameters' values. Read after load only: the parser writes them before module init
/// and the parameters are read-only (0444) from then on.
fn values() -> bindings::rxe_sr_params {
    // SAFETY: a C static written only before module init (see above); read by value.
    unsafe { core::ptr::addr_of!(bindings::rxe_sr_params).read() }
}

/// The scheme chosen at load (go-back-N when the parameter was not given).
pub(crate) fn recovery() -> Scheme {
    Scheme::from_index(values().recovery).unwrap_or(Scheme::Gbn)
}

/// The pool sizes given at load (not yet checked).
pub(crate) fn pool_sizes() -> PoolSizes {
    let v = values();
    PoolSizes {
        sr_units: v.sr_pool_units,
        sr_blocks: v.sr_pool_blocks,
        melo_blocks: v.melo_pool_blocks,
    }
}

/// `sr_pipe_psns` as given at load (not yet checked).
pub(crate) fn sr_pipe_psns() -> u32 {
    values().sr_pipe_psns
}

/// `sr_window_psns` as given at load (checked at load: a valid SR window).
pub(crate) fn sr_window_psns() -> u32 {
    values().sr_window_psns
}

/// `gbn_window_psns` as given at load (not yet checked).
pub(crate) fn gbn_window_psns() -> u32 {
    values().gbn_window_psns
}

/// `tx_zero_copy` now: send payloads from memory regions by reference.
pub(crate) fn tx_zero_copy() -> bool {
    // SAFETY: a C bool the parameter's setter may write at any time: one volatile byte
    // load, as READ_ONCE, which sees the old or the new value.
    unsafe { core::ptr::addr_of!(bindings::rxe_sr_tx_zero_copy).read_volatile() }
}

/// `timer_hold` as given at load: a past deadline waits for the receive queue.
pub(crate) fn timer_hold() -> bool {
    values().timer_hold
}

/// `dev_inflight_psns` as given at load (not yet checked).
pub(crate) fn dev_inflight_psns() -> u32 {
    values().dev_inflight_psns
}

/// `fec_unit` and `fec_depth` as given at load (not yet checked; a unit of 0: no FEC).
pub(crate) fn fec_raw() -> (u32, u32) {
    let v = values();
    (v.fec_unit, v.fec_depth)
}

/// The FEC shim `fec_unit` and `fec_depth` ask for: `None` for none, or when they are out
/// of range (refused at load).
pub(crate) fn fec() -> Option<FecParams> {
    let (unit, depth) = fec_raw();
    FecParams::new(unit, depth)
}

/// `max_objects`: the cap on each kind of verbs object of a device (0: none).
pub(crate) fn max_objects() -> u32 {
    values().max_objects
}

/// Parses a `recovery=` value: the scheme's index, or `-EINVAL`.
///
/// # Safety
/// `val` is null or a NUL-terminated string valid for the call (the param parser's).
#[no_mangle]
unsafe extern "C" fn rxe_sr_rs_recovery_parse(val: *const c_char) -> c_int {
    if val.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: per this function's contract, `val` is a valid NUL-terminated string.
    let s = unsafe { CStr::from_char_ptr(val) };
    match Scheme::from_name(s.as_bytes()) {
        Some(r) => r.index(),
        None => EINVAL.to_errno(),
    }
}

/// The name of the scheme at `index` (a static C string), for reading the parameter.
#[no_mangle]
extern "C" fn rxe_sr_rs_recovery_name(index: c_int) -> *const c_char {
    Scheme::from_index(index)
        .unwrap_or(Scheme::Gbn)
        .c_name()
        .as_ptr()
        .cast()
}
