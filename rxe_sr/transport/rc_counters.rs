// SPDX-License-Identifier: GPL-2.0
//! The device counters the events of the connected transport (`proto::rc::RcEvent`) add
//! to, as the kernel's environment reports them ([`count`]).

use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::proto::rc::RcEvent;

/// Adds `n` of event `ev` to `dev`'s counters (a new peak for
/// [`RcEvent::OnloadQueuePeak`]); events only the QP tallies are left out.
pub(crate) fn count(dev: &RoceDevice, ev: RcEvent, n: u64) {
    let c = dev.counters();
    match ev {
        RcEvent::OnloadQueuePeak => c.max(Counter::SrOnloadQueuePeak, n),
        _ => {
            if let Some(k) = counter_of(ev) {
                c.add(k, n);
            }
        }
    }
}

/// The device counter event `ev` adds to, if any.
fn counter_of(ev: RcEvent) -> Option<Counter> {
    use RcEvent as E;
    Some(match ev {
        E::Retry => Counter::CompleterRetryErr,
        E::Timeout => Counter::LocalAckTimeoutErr,
        E::RnrNakRcvd => Counter::RcvdRnrErr,
        E::SeqNakRcvd => Counter::RcvdSeqErr,
        E::RetryExceeded => Counter::RetryExceededErr,
        E::RnrRetryExceeded => Counter::RetryRnrExceededErr,
        E::AdmitWait => Counter::InflightWaits,
        E::SrAgreed => Counter::SrQpsNegotiated,
        E::SrDeclined => Counter::SrQpsStandard,
        E::SackRcvd => Counter::SrSacksRcvd,
        E::FnackRcvd => Counter::SrFnacksRcvd,
        E::HoleRcvd => Counter::SrHolesRcvd,
        E::AackRcvd => Counter::SrAacksRcvd,
        E::SelectiveResent => Counter::SrResentPkts,
        E::LostResend => Counter::SrLostResends,
        E::StallProbe => Counter::SrStallProbes,
        E::OutOfSequence => Counter::OutOfSeqRequest,
        E::Duplicate => Counter::DuplicateRequest,
        E::RnrNakSent => Counter::SendRnrErr,
        E::DupUnmatched => Counter::DupRdAtomicDropped,
        // SR requests to a QP without SR (gbn, UC), and those an SR responder refused.
        E::SrUnsupported | E::SrRefused => Counter::SrRefused,
        E::OooPlaced => Counter::SrOooPlaced,
        E::AackSent => Counter::SrAacksSent,
        E::SackSent => Counter::SrSacksSent,
        E::SackCoalesced => Counter::SrSacksCoalesced,
        E::FnackSent => Counter::SrFnacksSent,
        E::HoleSent => Counter::SrHolesSent,
        E::OrderedEarly => Counter::SrOrderedEarly,
        E::WindowFull => Counter::SrWindowFull,
        E::EarlyRnr => Counter::SrEarlyRnr,
        E::EarlyRefused => Counter::SrEarlyRefused,
        E::StaleStandard => Counter::SrStaleStandard,
        E::OutOfWindow => Counter::SrOutOfWindow,
        E::FastPath => Counter::SrFastPath,
        E::SlowPath => Counter::SrSlowPath,
        E::GbnFallback => Counter::SrGbnFallbacks,
        E::LostCntOverflow => Counter::SrLostCntOverflows,
        E::OnloadServed => Counter::SrOnloadServed,
        E::OnloadDelayUs => Counter::SrOnloadDelayUs,
        E::OnloadQueuePeak => Counter::SrOnloadQueuePeak,
        E::Resent
        | E::DupResponse
        | E::ErrNakSent
        | E::UcDropped
        | E::RepairRedundant
        | E::BusyDropped
        | E::SrAckSent
        | E::SrNakSent => return None,
    })
}
