// SPDX-License-Identifier: GPL-2.0
//! Memory windows (IBTA 10.6.7): the rules for binding, invalidating and reaching memory
//! through a window, as plain values. A window grants remote access to a range of a memory
//! region it is bound to, under its own R_Key.
//!
//! Type 1 windows are bound by the Bind Memory Window verb (which rdma-core turns into a
//! BIND_MW work request) and stay usable by any QP of their PD; rebinding with length 0
//! unbinds. Type 2 windows (type 2B here, as rdma_rxe) are bound by BIND_MW work requests,
//! only from the Free state, and are then reachable only through the binding QP; LOCAL_INV
//! or SEND with invalidate returns them to Free. Zero-based windows are not offered.

/// `IB_ACCESS_LOCAL_WRITE`.
pub const ACCESS_LOCAL_WRITE: u32 = 1;
/// `IB_ACCESS_REMOTE_WRITE`.
pub const ACCESS_REMOTE_WRITE: u32 = 1 << 1;
/// `IB_ACCESS_REMOTE_READ`.
pub const ACCESS_REMOTE_READ: u32 = 1 << 2;
/// `IB_ACCESS_REMOTE_ATOMIC`.
pub const ACCESS_REMOTE_ATOMIC: u32 = 1 << 3;
/// `IB_ACCESS_MW_BIND`: the region may have windows bound to it.
pub const ACCESS_MW_BIND: u32 = 1 << 4;
/// `IB_ZERO_BASED`.
pub const ACCESS_ZERO_BASED: u32 = 1 << 5;
/// What a bind may grant (local write is accepted and means nothing for a window).
const BIND_ACCESS: u32 =
    ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE | ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC;

/// The window type (`enum ib_mw_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MwType {
    /// Bound by the verb; any QP of the PD.
    Type1,
    /// Bound by work request; only the binding QP.
    Type2,
}

/// A window's state (IBTA 10.6.7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MwState {
    /// Type 2, not bound.
    Free,
    /// Bound (a type 1 window is Valid from allocation on, with length 0 until bound).
    Valid,
}

/// The region a bind names, as the bind checks need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrView {
    /// Its L_Key.
    pub lkey: u32,
    /// Its protection domain (an opaque identity).
    pub pd: usize,
    /// First virtual address.
    pub iova: u64,
    /// Length in bytes.
    pub length: u64,
    /// `IB_ACCESS_*` granted at registration.
    pub access: u32,
}

/// A BIND_MW work request's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindReq {
    /// The window's current R_Key.
    pub mw_rkey: u32,
    /// The R_Key it gets: the low byte (the key) is taken, the index stays.
    pub new_rkey: u32,
    /// Start of the bound range.
    pub addr: u64,
    /// Length of the bound range (0: unbind, type 1 only).
    pub length: u64,
    /// `IB_ACCESS_*` the window grants.
    pub access: u32,
}

/// Why a window operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MwError {
    /// A check failed (the BIND_MW completes with `IB_WC_MW_BIND_ERR`, an invalidate with
    /// a local or remote error).
    Invalid,
    /// Access flags rxe_sr does not offer (zero-based windows).
    NotSupported,
}

/// One memory window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Type 1 or 2.
    pub mw_type: MwType,
    /// Free or Valid.
    pub state: MwState,
    /// Its R_Key now.
    pub rkey: u32,
    /// Its protection domain.
    pub pd: usize,
    /// The region it is bound to (its L_Key), while bound with a nonzero length.
    pub mr_lkey: Option<u32>,
    /// Start of the bound range.
    pub addr: u64,
    /// Length of the bound range.
    pub length: u64,
    /// Access granted.
    pub access: u32,
    /// Type 2: the QP it was bound through.
    pub qpn: Option<u32>,
}

impl Window {
    /// A newly allocated window (type 1: Valid but empty; type 2: Free).
    pub const fn new(mw_type: MwType, rkey: u32, pd: usize) -> Window {
        Window {
            mw_type,
            state: match mw_type {
                MwType::Type1 => MwState::Valid,
                MwType::Type2 => MwState::Free,
            },
            rkey,
            pd,
            mr_lkey: None,
            addr: 0,
            length: 0,
            access: 0,
            qpn: None,
        }
    }

    /// Binds the window, through QP `qpn` of PD `qp_pd`, to `mr` (None when the request
    /// names no region: length 0). The checks are IBTA's C10-72..75 and o10-36/37, in the
    /// order rdma_rxe makes them.
    pub fn bind(
        &mut self,
        req: &BindReq,
        qp_pd: usize,
        qpn: u32,
        mr: Option<MrView>,
    ) -> Result<(), MwError> {
        if req.access & !(BIND_ACCESS | ACCESS_ZERO_BASED) != 0 {
            return Err(MwError::Invalid);
        }
        if req.access & ACCESS_ZERO_BASED != 0 {
            return Err(MwError::NotSupported);
        }
        if req.mw_rkey != self.rkey {
            return Err(MwError::Invalid);
        }
        match self.mw_type {
            MwType::Type1 if self.state != MwState::Valid => return Err(MwError::Invalid),
            // A type 2 window binds only from Free, and never to nothing.
            MwType::Type2 if self.state != MwState::Free || mr.is_none() || req.length == 0 => {
                return Err(MwError::Invalid)
            }
            _ => {}
        }
        if self.pd != qp_pd {
            return Err(MwError::Invalid);
        }
        let mr = if req.length == 0 {
            None
        } else {
            Some(mr.ok_or(MwError::Invalid)?)
        };
        if let Some(m) = mr {
            let writable = req.access & (ACCESS_REMOTE_WRITE | ACCESS_REMOTE_ATOMIC) != 0;
            let end = req.addr.checked_add(req.length).ok_or(MwError::Invalid)?;
            if m.pd != qp_pd
                || m.access & ACCESS_ZERO_BASED != 0
                || m.access & ACCESS_MW_BIND == 0
                || (writable && m.access & ACCESS_LOCAL_WRITE == 0)
                || req.addr < m.iova
                || end > m.iova.saturating_add(m.length)
            {
                return Err(MwError::Invalid);
            }
        }
        self.rkey = (self.rkey & !0xff) | (req.new_rkey & 0xff);
        self.state = MwState::Valid;
        self.mr_lkey = mr.map(|m| m.lkey);
        self.addr = req.addr;
        self.length = req.length;
        self.access = req.access;
        if self.mw_type == MwType::Type2 {
            self.qpn = Some(qpn);
        }
        Ok(())
    }

    /// Invalidates the window named `rkey` (LOCAL_INV or SEND with invalidate) through a QP
    /// of PD `qp_pd`: type 2, bound, and of the QP's PD only (IBTA o10-37.2.5: a QP reaches
    /// only its own PD's windows); it returns to Free.
    pub fn invalidate(&mut self, rkey: u32, qp_pd: usize) -> Result<(), MwError> {
        if rkey != self.rkey
            || self.mw_type != MwType::Type2
            || self.state != MwState::Valid
            || self.pd != qp_pd
        {
            return Err(MwError::Invalid);
        }
        *self = Window::new(MwType::Type2, self.rkey, self.pd);
        Ok(())
    }

    /// Whether a remote request through QP `qpn` of PD `qp_pd` may use `rkey` for `access`
    /// (`ACCESS_REMOTE_*`) on `[va, va + len)`: gives the L_Key of the region to reach.
    pub fn reach(
        &self,
        rkey: u32,
        qp_pd: usize,
        qpn: u32,
        access: u32,
        va: u64,
        len: u64,
    ) -> Option<u32> {
        let end = va.checked_add(len)?;
        let ok = rkey == self.rkey
            && self.state == MwState::Valid
            && self.pd == qp_pd
            && (self.mw_type == MwType::Type1 || self.qpn == Some(qpn))
            && self.length != 0
            && self.access & access == access
            && va >= self.addr
            && end <= self.addr.saturating_add(self.length);
        if ok {
            self.mr_lkey
        } else {
            None
        }
    }
}
