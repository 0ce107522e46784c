// SPDX-License-Identifier: GPL-2.0
//! Address handles. A user AH gets an AH number, returned in `struct rxe_create_ah_resp`;
//! the rxe provider puts it in UD send WQEs, and the transport finds the AV by it in the
//! device's AH table. A kernel consumer's AH (ib_cm, ib_mad) needs no number: its work
//! requests carry the AH itself.

use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::prelude::*;

use crate::kx::ib_ah::AhDriver;
use crate::kx::ib_device::Device;
use crate::kx::ib_pd::PdId;
use crate::kx::ib_udata::UData;
use crate::kx::ib_verbs::AhAttr;
use crate::objects::ah::{AhEntry, AhState, Av, MAX_AH_NUM};
use crate::objects::device::RoceDevice;
use crate::objects::device::RxeSr;
use crate::objects::live;
use crate::uabi::limits;
use crate::uabi::{layout, resp};
use crate::verbs::PORT_NUM;

/// The AV of an address attribute: RoCE type, port 1, a GRH with a RoCEv2 source GID of the
/// destination's IP version. EINVAL for anything else.
pub(crate) fn av_of(attr: &AhAttr) -> Result<Av> {
    if !attr.is_roce() || attr.port_num() != PORT_NUM || !attr.has_grh() {
        return Err(EINVAL);
    }
    let sgid = attr.source_gid().filter(|g| g.roce_v2).ok_or(EINVAL)?;
    Av::new(
        sgid.gid,
        attr.dgid(),
        attr.flow_label(),
        attr.hop_limit(),
        attr.traffic_class(),
    )
    .ok_or(EINVAL)
}

/// `create_ah` / `create_user_ah`: every AH, user or kernel, counts against `max_ah` (ENOMEM
/// past it, as the device reports it). A kernel consumer's AH may be created in atomic
/// context (ib_cm creates response AHs under a lock), so that path neither sleeps nor
/// allocates (the count is an atomic).
pub(crate) fn create(
    dev: &RoceDevice,
    pd: PdId,
    attr: &AhAttr,
    udata: Option<UData<'_>>,
) -> Result<AhState> {
    let av = av_of(attr)?;
    if !limits::take(&dev.used.ahs, dev.used.max.ah) {
        return Err(ENOMEM);
    }
    let ah_num = match udata {
        Some(u) => number(dev, AhEntry { pd, av }, u).inspect_err(|_| {
            limits::give_back(&dev.used.ahs);
        })?,
        None => 0,
    };
    live::LIVE.ahs.inc();
    Ok(AhState { av, ah_num })
}

/// Gives a user AH its number: reserved, returned to the caller, then published (a lookup
/// never finds an AH whose creation still fails).
fn number(dev: &RoceDevice, entry: AhEntry, mut udata: UData<'_>) -> Result<u32> {
    let ah_num = dev.ahs().reserve(1, MAX_AH_NUM)?;
    let published = (|| {
        let entry = KBox::new(entry, GFP_KERNEL)?;
        let mut out = [0u8; layout::CREATE_AH_RESP_SIZE];
        resp::emit_create_ah_resp(ah_num, &mut out).ok_or(EINVAL)?;
        udata.respond(&out)?;
        dev.ahs().publish(ah_num, entry)
    })();
    match published {
        Ok(()) => Ok(ah_num),
        Err(e) => {
            dev.ahs().erase(ah_num);
            Err(e)
        }
    }
}

/// `destroy_ah` (possibly in atomic context): its number and its place under `max_ah` are
/// free again.
pub(crate) fn destroy(dev: &RoceDevice, ah: &AhState) {
    if ah.ah_num != 0 {
        drop(dev.ahs().erase(ah.ah_num));
    }
    limits::give_back(&dev.used.ahs);
    live::LIVE.ahs.dec();
}

impl AhDriver for RxeSr {
    type Ah = AhState;

    fn create_ah(
        dev: &Device<Self>,
        pd: PdId,
        attr: &AhAttr,
        udata: Option<UData<'_>>,
    ) -> Result<AhState> {
        crate::verbs::ah::create(dev, pd, attr, udata)
    }

    fn destroy_ah(dev: &Device<Self>, ah: &AhState) {
        crate::verbs::ah::destroy(dev, ah);
    }
}
