// SPDX-License-Identifier: GPL-2.0
//! Entry points for the `recovery` module parameter declared in glue.c.

use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CStr;

use super::bindings;
use crate::params::Recovery;

/// The index of the scheme the parameter holds.
pub(crate) fn recovery_index() -> i32 {
    // SAFETY: reads an int the parameter setter wrote before module init.
    unsafe { bindings::rxe_sr_glue_recovery() }
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
    match Recovery::from_name(s.as_bytes()) {
        Some(r) => r as c_int,
        None => EINVAL.to_errno(),
    }
}

/// The name of the scheme at `index` (a static C string), for reading the parameter.
#[no_mangle]
extern "C" fn rxe_sr_rs_recovery_name(index: c_int) -> *const c_char {
    Recovery::from_index(index)
        .unwrap_or(Recovery::Gbn)
        .name()
        .as_char_ptr()
}
