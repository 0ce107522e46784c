// SPDX-License-Identifier: GPL-2.0
//! The verbs provider: what rxe_sr reports and does for each ib_device operation.
//!
//! Everything here is safe Rust over typed values: every operation reaches kx's driver
//! traits, implemented for the device's state by the file of its object family (`Driver`,
//! the device-level one, by [`device`]), through kx's adapters.

#![forbid(unsafe_code)]

pub(crate) mod ah;
pub(crate) mod cq;
pub(crate) mod device;
pub(crate) mod kernel_wr;
pub(crate) mod link;
pub(crate) mod mcast;
pub(crate) mod mr;
pub(crate) mod mw;
pub(crate) mod pd;
pub(crate) mod qp;
pub(crate) mod qp_modify;
pub(crate) mod qp_post;
pub(crate) mod srq;

use kernel::prelude::*;

/// The one physical port.
pub(crate) const PORT_NUM: u32 = 1;

/// A full index table (QPs, MRs, MWs: no free index in the device's range) is reported as
/// ENOMEM, as a full count of PDs, CQs, SRQs or AHs is; the table says EBUSY.
pub(crate) fn full_is_enomem(e: Error) -> Error {
    if e == EBUSY {
        ENOMEM
    } else {
        e
    }
}
