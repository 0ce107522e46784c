// SPDX-License-Identifier: GPL-2.0
//! Multicast groups (IBTA 10.5, UD only): which QPs are attached to which multicast GID. A
//! UD SEND to the multicast QPN (0xFFFFFF) is delivered to every QP attached to the
//! packet's destination GID. Limits as rdma_rxe reports them.

use kernel::alloc::{flags::GFP_KERNEL, KVec};
use kernel::prelude::*;

/// Most multicast groups per device.
pub(crate) const MAX_MCAST_GRP: u32 = 8192;
/// Most QPs attached to one group.
pub(crate) const MAX_MCAST_QP_ATTACH: u32 = 56;
/// Most attachments per device.
pub(crate) const MAX_TOTAL_MCAST_QP_ATTACH: u32 = MAX_MCAST_GRP * MAX_MCAST_QP_ATTACH;
/// The destination QPN of multicast packets (IBTA 9.2: the permissive QPN).
pub(crate) const MULTICAST_QPN: u32 = 0xff_ffff;

/// One group: its GID and the QPs attached (the first `n` of `qpns`).
#[derive(Clone, Copy)]
struct Group {
    mgid: [u8; 16],
    qpns: [u32; MAX_MCAST_QP_ATTACH as usize],
    n: usize,
}

impl Group {
    fn members(&self) -> &[u32] {
        self.qpns.get(..self.n).unwrap_or(&[])
    }

    /// Removes `qpn` if attached; true if it was.
    fn remove(&mut self, qpn: u32) -> bool {
        let Some(i) = self.members().iter().position(|&q| q == qpn) else {
            return false;
        };
        self.n -= 1;
        self.qpns.swap(i, self.n);
        true
    }
}

/// A device's groups; a freed slot is reused.
#[derive(Default)]
pub(crate) struct McastGroups {
    slots: KVec<Option<Group>>,
}

/// What an attach did.
#[derive(PartialEq, Eq)]
pub(crate) enum Attached {
    /// The group is new: the netdev must start accepting its MAC address.
    NewGroup,
    /// The QP joined an existing group (or was already in it).
    Joined,
}

impl McastGroups {
    fn find(&mut self, mgid: &[u8; 16]) -> Option<&mut Option<Group>> {
        self.slots
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|g| &g.mgid == mgid))
    }

    /// Attaches QP `qpn` to group `mgid`, creating the group on first use. ENOMEM when a
    /// limit is reached.
    pub(crate) fn attach(&mut self, mgid: [u8; 16], qpn: u32) -> Result<Attached> {
        if let Some(Some(g)) = self.find(&mgid) {
            if !g.members().contains(&qpn) {
                *g.qpns.get_mut(g.n).ok_or(ENOMEM)? = qpn;
                g.n += 1;
            }
            return Ok(Attached::Joined);
        }
        let mut qpns = [0; MAX_MCAST_QP_ATTACH as usize];
        qpns[0] = qpn;
        let group = Some(Group { mgid, qpns, n: 1 });
        if let Some(free) = self.slots.iter_mut().find(|s| s.is_none()) {
            *free = group;
        } else if self.slots.len() < MAX_MCAST_GRP as usize {
            self.slots.push(group, GFP_KERNEL)?;
        } else {
            return Err(ENOMEM);
        }
        Ok(Attached::NewGroup)
    }

    /// Detaches QP `qpn` from group `mgid`; true when the group is now empty (and gone).
    /// EINVAL when the QP was not attached.
    pub(crate) fn detach(&mut self, mgid: [u8; 16], qpn: u32) -> Result<bool> {
        let slot = self.find(&mgid).ok_or(EINVAL)?;
        let g = slot.as_mut().ok_or(EINVAL)?;
        if !g.remove(qpn) {
            return Err(EINVAL);
        }
        if g.n == 0 {
            *slot = None;
            return Ok(true);
        }
        Ok(false)
    }

    /// Detaches QP `qpn` from every group (it is being destroyed); calls `emptied(mgid)` for
    /// each group left empty (and removed).
    pub(crate) fn detach_all(&mut self, qpn: u32, mut emptied: impl FnMut([u8; 16])) {
        for slot in self.slots.iter_mut() {
            if let Some(g) = slot.as_mut() {
                if g.remove(qpn) && g.n == 0 {
                    emptied(g.mgid);
                    *slot = None;
                }
            }
        }
    }

    /// Copies the QPNs attached to `mgid` into `out`; returns how many.
    pub(crate) fn members(
        &self,
        mgid: &[u8; 16],
        out: &mut [u32; MAX_MCAST_QP_ATTACH as usize],
    ) -> usize {
        match self.slots.iter().flatten().find(|g| &g.mgid == mgid) {
            Some(g) => {
                *out = g.qpns;
                g.n
            }
            None => 0,
        }
    }
}
