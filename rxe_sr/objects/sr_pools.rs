// SPDX-License-Identifier: GPL-2.0
//! A device's selective-retransmission pools: FaSR's two-level SR pool and MELO's bits
//! pool, sized at load by the module parameters, on the heap, behind the device's pool
//! lock. Only the running scheme's pool is used; both are built so a device can change
//! scheme for its later QPs.
//!
//! Lock order: a QP's lock, then this one (an engine reaches the pool while its QP is
//! locked, through `RcEnv::with_shared`); nothing takes a QP's lock while holding it.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::Mutex;

use crate::kx::rxe::moduleparam::PoolSizes;
use crate::proto::pool::bits_pool::{BitsBlock, BitsPoolIn};
use crate::proto::pool::ops::{BitsPoolOps, PoolUsage, SrPoolOps};
use crate::proto::pool::slots::Slots;
use crate::proto::pool::sr_pool::{BitmapBlock, SrPoolIn, SrUnit};
use crate::proto::recovery::any::SharedIn;
use crate::proto::recovery::scheme::Scheme;

impl<T> Slots<T> for KVVec<T> {
    fn slots(&self) -> &[T] {
        self
    }
    fn slots_mut(&mut self) -> &mut [T] {
        self
    }
}

/// The pools of one device.
pub(crate) type DevicePools = SharedIn<KVVec<SrUnit>, KVVec<BitmapBlock>, KVVec<BitsBlock>>;

/// Largest size of each pool: element indices are 16 bits (one value is the end mark).
pub(crate) const MAX_POOL: u32 = 65534;

/// Checks every size is in `1..=MAX_POOL`; names the parameter of the first that is not.
pub(crate) fn check_sizes(s: &PoolSizes) -> core::result::Result<(), &'static str> {
    for (v, name) in [
        (s.sr_units, "sr_pool_units"),
        (s.sr_blocks, "sr_pool_blocks"),
        (s.melo_blocks, "melo_pool_blocks"),
    ] {
        if v == 0 || v > MAX_POOL {
            return Err(name);
        }
    }
    Ok(())
}

/// Empty pools of `sizes` (checked at load).
pub(crate) fn new_pools(sizes: PoolSizes) -> Result<DevicePools> {
    let units = KVVec::from_elem(SrUnit::EMPTY, sizes.sr_units as usize, GFP_KERNEL)?;
    let blocks = KVVec::from_elem(BitmapBlock::EMPTY, sizes.sr_blocks as usize, GFP_KERNEL)?;
    let bits = KVVec::from_elem(BitsBlock::EMPTY, sizes.melo_blocks as usize, GFP_KERNEL)?;
    Ok(SharedIn {
        sr_pool: SrPoolIn::with_storage(units, blocks).map_err(|_| EINVAL)?,
        bits_pool: BitsPoolIn::with_storage(bits).map_err(|_| EINVAL)?,
    })
}

/// Occupancy of both pools (FaSR's units and blocks, MELO's blocks).
pub(crate) fn usage(p: &DevicePools) -> (PoolUsage, PoolUsage) {
    (
        SrPoolOps::usage(&p.sr_pool),
        BitsPoolOps::usage(&p.bits_pool),
    )
}

/// A device's loss-recovery state: its scheme and its SR pools.
#[pin_data]
pub(crate) struct DeviceSr {
    /// The scheme of RC QPs connected from now on (its index in [`Scheme::ALL`]).
    scheme: AtomicU32,
    /// The pools the QPs of FaSR and MELO share.
    #[pin]
    pools: Mutex<DevicePools>,
}

impl DeviceSr {
    /// Running `scheme` over `pools`.
    pub(crate) fn new(scheme: Scheme, pools: DevicePools) -> impl PinInit<Self> {
        pin_init!(DeviceSr {
            scheme: AtomicU32::new(scheme.index().unsigned_abs()),
            pools <- new_mutex!(pools, "rxe_sr_sr_pools"),
        })
    }

    /// The scheme of RC QPs connected from now on.
    pub(crate) fn scheme(&self) -> Scheme {
        let i = self.scheme.load(Ordering::Relaxed);
        i32::try_from(i)
            .ok()
            .and_then(Scheme::from_index)
            .unwrap_or(Scheme::Gbn)
    }

    /// Sets the scheme of RC QPs connected from now on (QPs already connected keep theirs).
    pub(crate) fn set_scheme(&self, scheme: Scheme) {
        self.scheme
            .store(scheme.index().unsigned_abs(), Ordering::Relaxed);
    }

    /// The pools (lock order: after a QP's lock).
    pub(crate) fn pools(&self) -> &Mutex<DevicePools> {
        &self.pools
    }
}
