// SPDX-License-Identifier: GPL-2.0
//! One engine type for a device whose scheme is chosen at load time (`recovery=`).
//!
//! The transport keeps one [`DeviceShared`] per device and one [`AnyEngine`] per QP, all
//! of the variant the module parameter names; dispatch is a `match`, no allocation, no
//! trait objects.

use super::fasr::Fasr;
use super::gbn::Gbn;
use super::irn::Irn;
use super::melo::Melo;
use super::srnic::Srnic;
use super::{ActionSink, Counters, Recovery, ReqEvent, RespEvent};
use crate::proto::pool::bits_pool::BitsPool;
use crate::proto::pool::sr_pool::SrPool;

/// The per-device shared state of every scheme (only the chosen scheme's part is used).
#[derive(Clone, Debug, Default)]
pub struct DeviceShared {
    /// FaSR's two-level SR pool (default sizes).
    pub sr_pool: SrPool,
    /// MELO's bits pool (default sizes).
    pub bits_pool: BitsPool,
}

impl DeviceShared {
    /// Empty pools.
    pub fn new() -> Self {
        DeviceShared {
            sr_pool: SrPool::new(),
            bits_pool: BitsPool::new(),
        }
    }
}

/// One QP's engine, whichever scheme the device runs (default pool and bitmap sizes).
///
/// Its size is the largest variant's (SRNIC's modelled slow-path queue); a transport that
/// wants each QP to cost only its own scheme's state can hold the concrete engine type
/// instead.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // Deliberate: no allocation in proto, sized once per QP.
pub enum AnyEngine {
    /// rdma_rxe go-back-N.
    Gbn(Gbn),
    /// IRN.
    Irn(Irn),
    /// FaSR.
    Fasr(Fasr),
    /// SRNIC.
    Srnic(Srnic),
    /// MELO.
    Melo(Melo),
}

impl Recovery for AnyEngine {
    type Shared = DeviceShared;

    fn on_requester(&mut self, shared: &mut DeviceShared, ev: ReqEvent, out: &mut dyn ActionSink) {
        match self {
            AnyEngine::Gbn(e) => e.on_requester(&mut (), ev, out),
            AnyEngine::Irn(e) => e.on_requester(&mut (), ev, out),
            AnyEngine::Fasr(e) => e.on_requester(&mut shared.sr_pool, ev, out),
            AnyEngine::Srnic(e) => e.on_requester(&mut (), ev, out),
            AnyEngine::Melo(e) => e.on_requester(&mut shared.bits_pool, ev, out),
        }
    }

    fn on_responder(&mut self, shared: &mut DeviceShared, ev: RespEvent, out: &mut dyn ActionSink) {
        match self {
            AnyEngine::Gbn(e) => e.on_responder(&mut (), ev, out),
            AnyEngine::Irn(e) => e.on_responder(&mut (), ev, out),
            AnyEngine::Fasr(e) => e.on_responder(&mut shared.sr_pool, ev, out),
            AnyEngine::Srnic(e) => e.on_responder(&mut (), ev, out),
            AnyEngine::Melo(e) => e.on_responder(&mut shared.bits_pool, ev, out),
        }
    }

    fn release(&mut self, shared: &mut DeviceShared) {
        match self {
            AnyEngine::Gbn(e) => e.release(&mut ()),
            AnyEngine::Irn(e) => e.release(&mut ()),
            AnyEngine::Fasr(e) => e.release(&mut shared.sr_pool),
            AnyEngine::Srnic(e) => e.release(&mut ()),
            AnyEngine::Melo(e) => e.release(&mut shared.bits_pool),
        }
    }

    fn counters(&self) -> &Counters {
        match self {
            AnyEngine::Gbn(e) => e.counters(),
            AnyEngine::Irn(e) => e.counters(),
            AnyEngine::Fasr(e) => e.counters(),
            AnyEngine::Srnic(e) => e.counters(),
            AnyEngine::Melo(e) => e.counters(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::psn::Psn;
    use crate::proto::recovery::{Action, RtoConfig};

    #[test]
    fn dispatches_to_the_variant_and_its_pool() {
        let rto = RtoConfig {
            rto_low: 10,
            rto_high: 100,
            n_low: 3,
        };
        let mut sh = DeviceShared::new();
        let mut e = AnyEngine::Fasr(Fasr::new(Psn::new(0), Psn::new(0), rto));
        let mut n = 0;
        e.on_responder(
            &mut sh,
            RespEvent::Data {
                psn: Psn::new(2),
                now: 0,
            },
            &mut |a: Action| n += usize::from(matches!(a, Action::Deliver { .. })),
        );
        assert_eq!(n, 1);
        assert_eq!(sh.sr_pool.used_units(), 1);
        e.release(&mut sh);
        assert_eq!(sh.sr_pool.used_units(), 0);
        let mut g = AnyEngine::Gbn(Gbn::new(Psn::new(0), Psn::new(0), rto));
        g.on_responder(
            &mut sh,
            RespEvent::Data {
                psn: Psn::new(2),
                now: 0,
            },
            &mut |_| {},
        );
        assert_eq!(g.counters().naks_sent, 1);
    }
}
