// SPDX-License-Identifier: GPL-2.0
//! Module parameters.
//!
//! 6.12's `module!` macro declares no parameters, so `recovery` is declared in the C glue
//! (rxe_sr/ffi/glue.c, `module_param_cb`) and parsed and named here: the list of schemes
//! lives in one place.

#![forbid(unsafe_code)]

use crate::ffi;
use kernel::{c_str, str::CStr};

/// The loss-recovery scheme, fixed at module load with `recovery=`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Recovery {
    /// Go-back-N, byte-for-byte standard RoCEv2 (rdma_rxe and RNICs are peers).
    Gbn = 0,
    /// FaSR: fast/slow paths, two-level shared SR pool, FNACK.
    Fasr = 1,
    /// SRNIC: header extensions and bitmap onloading.
    Srnic = 2,
    /// IRN: per-QP BDP-sized bitmaps (the memory-hungry baseline).
    Irn = 3,
    /// MELO: shared bits pool, NACK with up to three holes.
    Melo = 4,
}

impl Recovery {
    /// Every scheme, in index order.
    pub(crate) const ALL: [Recovery; 5] = [
        Recovery::Gbn,
        Recovery::Fasr,
        Recovery::Srnic,
        Recovery::Irn,
        Recovery::Melo,
    ];

    /// The name used on the command line and in messages.
    pub(crate) fn name(self) -> &'static CStr {
        match self {
            Recovery::Gbn => c_str!("gbn"),
            Recovery::Fasr => c_str!("fasr"),
            Recovery::Srnic => c_str!("srnic"),
            Recovery::Irn => c_str!("irn"),
            Recovery::Melo => c_str!("melo"),
        }
    }

    /// Parses a parameter value (a trailing newline, as from sysfs, is ignored).
    pub(crate) fn from_name(value: &[u8]) -> Option<Self> {
        let value = value.strip_suffix(b"\n").unwrap_or(value);
        Self::ALL.into_iter().find(|r| r.name().as_bytes() == value)
    }

    /// The scheme at `index` in [`Recovery::ALL`].
    pub(crate) fn from_index(index: i32) -> Option<Self> {
        usize::try_from(index)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
    }
}

/// The scheme chosen at load.
pub(crate) fn recovery() -> Recovery {
    Recovery::from_index(ffi::params::recovery_index()).unwrap_or(Recovery::Gbn)
}
