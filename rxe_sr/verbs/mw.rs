// SPDX-License-Identifier: GPL-2.0
//! Memory windows: allocation (an index above the MRs', a key) and deallocation; binding
//! and invalidation run in the transport (`objects::mw_binding`).

use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::new_spinlock;
use kernel::prelude::*;

use crate::kx::ib_device::Device;
use crate::kx::ib_mw;
use crate::kx::ib_mw::MwDriver;
use crate::kx::ib_pd::PdId;
use crate::objects::device::RoceDevice;
use crate::objects::device::RxeSr;
use crate::objects::live;
use crate::objects::mr;
use crate::objects::mw::MwSlot;
use crate::objects::mw_binding;
use crate::proto::rc::mw::{MwType, Window};

/// `alloc_mw`: type 1 or type 2 (2B) windows.
pub(crate) fn alloc(dev: &RoceDevice, pd: PdId, mw_type: ib_mw::MwType) -> Result<(MwSlot, u32)> {
    let mw_type = match mw_type {
        ib_mw::MwType::Type1 => MwType::Type1,
        ib_mw::MwType::Type2 => MwType::Type2,
    };
    let index = dev
        .mws()
        .reserve(mr::MIN_MW_INDEX, mr::MIN_MW_INDEX + (dev.used.max.mw - 1))
        .map_err(crate::verbs::full_is_enomem)?;
    let rkey = mr::key(index, dev.next_key_variant());
    let published = KBox::pin_init(
        new_spinlock!(Window::new(mw_type, rkey, pd.get()), "rxe_sr_mw"),
        GFP_KERNEL,
    )
    .and_then(|w| dev.mws().publish(index, w));
    if let Err(e) = published {
        drop(dev.mws().erase(index));
        return Err(e);
    }
    live::LIVE.mws.inc();
    Ok((MwSlot { index }, rkey))
}

/// `dealloc_mw`: the window's key stops working at once.
pub(crate) fn dealloc(dev: &RoceDevice, mw: &MwSlot) {
    mw_binding::retire(dev, mw.index);
    live::LIVE.mws.dec();
}

impl MwDriver for RxeSr {
    type Mw = MwSlot;

    fn alloc_mw(dev: &Device<Self>, pd: PdId, mw_type: ib_mw::MwType) -> Result<(MwSlot, u32)> {
        crate::verbs::mw::alloc(dev, pd, mw_type)
    }

    fn dealloc_mw(dev: &Device<Self>, mw: &MwSlot) {
        crate::verbs::mw::dealloc(dev, mw);
    }
}
