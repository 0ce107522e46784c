// SPDX-License-Identifier: GPL-2.0
//! One engine type for a device whose scheme is chosen at load time (`recovery=`).
//!
//! The transport keeps one [`DeviceShared`] per device and one [`AnyEngine`] per QP, all
//! of the variant the module parameter names; dispatch is a `match`, no trait objects. The
//! engine allocates nothing: IRN's and SRNIC's bitmaps are over words its maker hands in.

use super::fasr::Fasr;
use super::gbn::Gbn;
use super::irn::Irn;
use super::melo::Melo;
use super::scheme::Scheme;
use super::srnic::{self, Srnic};
use super::{ActionSink, Counters, Recovery, ReqEvent, RespEvent, RtoConfig};
#[cfg(not(MODULE))]
use crate::proto::pool::bits_pool::BitsPool;
use crate::proto::pool::bits_pool::{BitsBlock, BitsPoolIn};
use crate::proto::pool::ops::{BitsPoolOps, SrPoolOps};
use crate::proto::pool::slots::Slots;
#[cfg(not(MODULE))]
use crate::proto::pool::sr_pool::SrPool;
use crate::proto::pool::sr_pool::{BitmapBlock, SrPoolIn, SrUnit};
use crate::proto::psn::Psn;
use crate::proto::words::WindowWords;

/// The device-wide state the QPs of an SR scheme share (object safe: the transport lends
/// it as `&mut (dyn SharedPools + 'static)`, whatever the pools' storage).
pub trait SharedPools {
    /// FaSR's two-level SR pool.
    fn sr_pool(&mut self) -> &mut (dyn SrPoolOps + 'static);
    /// MELO's bits pool.
    fn bits_pool(&mut self) -> &mut (dyn BitsPoolOps + 'static);
}

/// A device's pools over storage `U`, `B` (FaSR units and bitmap blocks) and `S` (MELO
/// bits blocks); only the running scheme's pool is used. FaSR's blocks are 16 bits, MELO's
/// 8 (the papers' choices).
#[derive(Clone, Debug)]
pub struct SharedIn<U, B, S> {
    /// FaSR's two-level SR pool.
    pub sr_pool: SrPoolIn<U, B, 16>,
    /// MELO's bits pool.
    pub bits_pool: BitsPoolIn<S, 8>,
}

impl<
        U: Slots<SrUnit> + 'static,
        B: Slots<BitmapBlock> + 'static,
        S: Slots<BitsBlock> + 'static,
    > SharedPools for SharedIn<U, B, S>
{
    fn sr_pool(&mut self) -> &mut (dyn SrPoolOps + 'static) {
        &mut self.sr_pool
    }
    fn bits_pool(&mut self) -> &mut (dyn BitsPoolOps + 'static) {
        &mut self.bits_pool
    }
}

/// The pools at the papers' default sizes, in arrays (host tests, simulator).
#[cfg(not(MODULE))]
pub type DeviceShared = SharedIn<[SrUnit; 20], [BitmapBlock; 70], [BitsBlock; 128]>;

#[cfg(not(MODULE))]
impl DeviceShared {
    /// Empty pools.
    pub fn new() -> Self {
        SharedIn {
            sr_pool: SrPool::new(),
            bits_pool: BitsPool::new(),
        }
    }
}

#[cfg(not(MODULE))]
impl Default for DeviceShared {
    fn default() -> Self {
        Self::new()
    }
}

/// One QP's engine, whichever scheme the device runs; IRN's and SRNIC's bitmaps are over
/// words `B`, as long as the QP's SR window.
///
/// Its size is the largest variant's (SRNIC's modelled slow-path queue); a transport that
/// wants each QP to cost only its own scheme's state can hold the concrete engine type
/// instead.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // Deliberate: no allocation in proto, sized once per QP.
pub enum AnyEngine<B> {
    /// rdma_rxe go-back-N.
    Gbn(Gbn),
    /// IRN.
    Irn(Irn<B>),
    /// FaSR.
    Fasr(Fasr),
    /// SRNIC.
    Srnic(Srnic<{ srnic::DEFAULT_QUEUE }, B>),
    /// MELO.
    Melo(Melo),
}

/// A side of a QP's engine: the requester's (SACKed PSNs) or the responder's (PSNs
/// received). A QP runs each side in an engine of its own.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EngineSide {
    /// The requester's side.
    Requester,
    /// The responder's side.
    Responder,
}

impl<B: WindowWords> AnyEngine<B> {
    /// The engine of `scheme` for a QP whose requester starts at `sq_psn` and whose
    /// responder expects `rq_psn`; `srnic_delay` is SRNIC's slow-path delay in ticks.
    /// `words(side)` makes the storage of a bitmap of that side (zeroed): the SR window's
    /// length for a side the engine serves, none for the other.
    pub fn new(
        scheme: Scheme,
        (sq_psn, rq_psn): (Psn, Psn),
        rto: RtoConfig,
        srnic_delay: u64,
        words: &mut dyn FnMut(EngineSide) -> B,
    ) -> Self {
        match scheme {
            Scheme::Gbn => AnyEngine::Gbn(Gbn::new(sq_psn, rq_psn, rto)),
            Scheme::Fasr => AnyEngine::Fasr(Fasr::new(sq_psn, rq_psn, rto)),
            Scheme::Srnic => {
                let sw = words(EngineSide::Responder);
                AnyEngine::Srnic(Srnic::with_words(sq_psn, rq_psn, rto, srnic_delay, sw))
            }
            Scheme::Irn => {
                let sacked = words(EngineSide::Requester);
                let received = words(EngineSide::Responder);
                AnyEngine::Irn(Irn::with_words(sq_psn, rq_psn, rto, sacked, received))
            }
            Scheme::Melo => AnyEngine::Melo(Melo::new(sq_psn, rq_psn, rto)),
        }
    }

    /// For the kernel log: the requester side's recovery state.
    pub const fn describe_requester(&self) -> &'static str {
        match self {
            AnyEngine::Gbn(_) => "go-back-N",
            AnyEngine::Irn(_) => "IRN",
            AnyEngine::Fasr(e) => e.describe_requester(),
            AnyEngine::Srnic(_) => "SRNIC",
            AnyEngine::Melo(_) => "MELO",
        }
    }

    /// Requester UNACK.
    pub const fn una(&self) -> Psn {
        match self {
            AnyEngine::Gbn(e) => e.una(),
            AnyEngine::Irn(e) => e.una(),
            AnyEngine::Fasr(e) => e.una(),
            AnyEngine::Srnic(e) => e.una(),
            AnyEngine::Melo(e) => e.una(),
        }
    }
}

impl<B: WindowWords> AnyEngine<B> {
    /// Where a resend of UNACK that was lost leaves later resends useless: MELO's
    /// responder drops a resend for the middle of its bitmap (a hole other than RCV.NXT,
    /// §3.2.3), so once the resend at RCV.NXT was lost, each later hole resent up to the
    /// engine's "retransmitted up to" PSN went for nothing, and the requester must resend
    /// those in [UNACK, this) again (the paper's timeout goes back from the front). None for
    /// the other schemes, whose responders keep a resend wherever it falls.
    pub fn lost_resend_end(&self) -> Option<Psn> {
        match self {
            AnyEngine::Melo(e) if e.retx_high().after(e.una()) => Some(e.retx_high()),
            _ => None,
        }
    }

    /// A requester event that needs no device-wide state: every event of a scheme without
    /// any, and FaSR's fast-path events ([`Fasr::on_requester_unpooled`]); returns false,
    /// having done nothing, for the others (the caller hands them over with the pools).
    pub fn on_requester_local(&mut self, ev: ReqEvent, out: &mut dyn ActionSink) -> bool {
        match self {
            AnyEngine::Gbn(e) => e.on_requester(&mut (), ev, out),
            AnyEngine::Irn(e) => e.on_requester(&mut (), ev, out),
            AnyEngine::Srnic(e) => e.on_requester(&mut (), ev, out),
            AnyEngine::Fasr(e) => return e.on_requester_unpooled(ev, out),
            AnyEngine::Melo(_) => return false,
        }
        true
    }

    /// A responder event that needs no device-wide state (see
    /// [`AnyEngine::on_requester_local`]).
    pub fn on_responder_local(&mut self, ev: RespEvent, out: &mut dyn ActionSink) -> bool {
        match self {
            AnyEngine::Gbn(e) => e.on_responder(&mut (), ev, out),
            AnyEngine::Irn(e) => e.on_responder(&mut (), ev, out),
            AnyEngine::Srnic(e) => e.on_responder(&mut (), ev, out),
            AnyEngine::Fasr(e) => return e.on_responder_unpooled(ev, out),
            AnyEngine::Melo(_) => return false,
        }
        true
    }

    /// Starts the requester side mid-stream (see [`Fasr::start_requester`]).
    pub fn start_requester(&mut self, una: Psn, snd_nxt: Psn) {
        match self {
            AnyEngine::Gbn(e) => e.start_requester(una, snd_nxt),
            AnyEngine::Irn(e) => e.start_requester(una, snd_nxt),
            AnyEngine::Fasr(e) => e.start_requester(una, snd_nxt),
            AnyEngine::Srnic(e) => e.start_requester(una, snd_nxt),
            AnyEngine::Melo(e) => e.start_requester(una, snd_nxt),
        }
    }

    /// Starts the responder side mid-stream (see [`Fasr::start_responder`]).
    pub fn start_responder(&mut self, rcv_nxt: Psn) {
        match self {
            AnyEngine::Gbn(e) => e.start_responder(rcv_nxt),
            AnyEngine::Irn(e) => e.start_responder(rcv_nxt),
            AnyEngine::Fasr(e) => e.start_responder(rcv_nxt),
            AnyEngine::Srnic(e) => e.start_responder(rcv_nxt),
            AnyEngine::Melo(e) => e.start_responder(rcv_nxt),
        }
    }
}

impl<B: WindowWords> Recovery for AnyEngine<B> {
    type Shared = dyn SharedPools;

    fn on_requester(
        &mut self,
        shared: &mut (dyn SharedPools + 'static),
        ev: ReqEvent,
        out: &mut dyn ActionSink,
    ) {
        match self {
            AnyEngine::Gbn(e) => e.on_requester(&mut (), ev, out),
            AnyEngine::Irn(e) => e.on_requester(&mut (), ev, out),
            AnyEngine::Fasr(e) => e.on_requester(shared.sr_pool(), ev, out),
            AnyEngine::Srnic(e) => e.on_requester(&mut (), ev, out),
            AnyEngine::Melo(e) => e.on_requester(shared.bits_pool(), ev, out),
        }
    }

    fn on_responder(
        &mut self,
        shared: &mut (dyn SharedPools + 'static),
        ev: RespEvent,
        out: &mut dyn ActionSink,
    ) {
        match self {
            AnyEngine::Gbn(e) => e.on_responder(&mut (), ev, out),
            AnyEngine::Irn(e) => e.on_responder(&mut (), ev, out),
            AnyEngine::Fasr(e) => e.on_responder(shared.sr_pool(), ev, out),
            AnyEngine::Srnic(e) => e.on_responder(&mut (), ev, out),
            AnyEngine::Melo(e) => e.on_responder(shared.bits_pool(), ev, out),
        }
    }

    fn release(&mut self, shared: &mut (dyn SharedPools + 'static)) {
        match self {
            AnyEngine::Gbn(e) => e.release(&mut ()),
            AnyEngine::Irn(e) => e.release(&mut ()),
            AnyEngine::Fasr(e) => e.release(shared.sr_pool()),
            AnyEngine::Srnic(e) => e.release(&mut ()),
            AnyEngine::Melo(e) => e.release(shared.bits_pool()),
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
    use crate::proto::recovery::Action;
    use crate::proto::words::InlineWords;

    type Engine = AnyEngine<InlineWords<1>>;

    #[test]
    fn dispatches_to_the_variant_and_its_pool() {
        let rto = RtoConfig {
            rto_low: 10,
            rto_high: 100,
            n_low: 3,
        };
        let mut sh = DeviceShared::new();
        let mut e = Engine::Fasr(Fasr::new(Psn::new(0), Psn::new(0), rto));
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
        let mut g = Engine::Gbn(Gbn::new(Psn::new(0), Psn::new(0), rto));
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
