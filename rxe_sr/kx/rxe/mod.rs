// SPDX-License-Identifier: GPL-2.0
//! The soft-RoCE part of kx: what is this driver's rather than the RDMA core's. rdma_rxe's
//! user ABI (its queues shared with user space and their `mmap`, the ABI's layout checked
//! against the C headers), the ICRC's CRC-32, the module parameters and the device
//! attribute `recovery`, with the [`soft_roce::SoftRoce`] hooks and the `ib_device_ops`
//! they add.
//!
//! These files may use the driver's pure types (`uabi`, `proto`); the generic part of kx
//! (the files directly in kx/) names neither them nor this folder, so it could serve
//! another driver as it is.

pub(crate) mod icrc;
pub(crate) mod mmap_queue;
pub(crate) mod moduleparam;
mod rdma_user_rxe;
pub(crate) mod soft_roce;
