// SPDX-License-Identifier: GPL-2.0
//! The `recovery` module parameter (include/linux/moduleparam.h).
//!
//! 6.12's `module!` macro declares no parameters, so glue.c declares it with
//! `module_param_cb`; its setter and getter call the two entry points here, which parse and
//! name [`Scheme`]s. The parameter is read-only after load (mode 0444).

use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CStr;

use crate::kx::bindings;
use crate::proto::recovery::scheme::Scheme;

/// The scheme chosen at load (go-back-N when the parameter was not given).
pub(crate) fn recovery() -> Scheme {
    // SAFETY: reads an int the parameter's setter wrote before module init.
    Scheme::from_index(unsafe { bindings::rxe_sr_glue_recovery() }).unwrap_or(Scheme::Gbn)
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
