// SPDX-License-Identifier: GPL-2.0
//! RC and UC: the send queue into the requester: new send WQEs fetched from the user ring
//! (each validated) or from a kernel consumer's queue, and the device's per-opcode send
//! counters.

use crate::objects::counters::Counter;
use crate::proto::rc::requester::PostError;
use crate::proto::rc::{Fatal, RcConfig, Service};
use crate::transport::qp::KernelQueueLock;
use crate::transport::rc_conn::KRequester;
use crate::transport::rc_env::KEnv;
use crate::uabi::cqe::Completion;
use crate::uabi::limits::MAX_SEND_WQE_BYTES;
use crate::uabi::send_wqe::{QpType, SendLimits, SendOp, SendWqe};

/// Copies new send WQEs from the ring into the requester, each validated. A WQE that fails
/// validation completes in error once everything before it has retired (then the QP
/// enters the Error state).
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
pub(crate) fn fetch(
    req: &mut KRequester,
    env: &mut KEnv<'_>,
    cfg: &RcConfig,
    limits: SendLimits,
) -> Result<(), Fatal> {
    let Some(ring) = env.sq else {
        return Ok(());
    };
    let shared = ring.queue();
    if env.sq_q.observe_producer(shared.load_producer()).is_err() {
        // A producer index user space mangled: what was validly queued still runs.
        return Ok(());
    }
    let qp_type = if cfg.service == Service::Rc {
        QpType::Rc
    } else {
        QpType::Uc
    };
    while req.room() > 0 {
        let Some(slot) = env.sq_q.nth(req.len() as u32) else {
            break;
        };
        let mut bytes = [0u8; MAX_SEND_WQE_BYTES];
        shared.read_slot(slot, &mut bytes);
        let wr_id = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        let Some(wqe) = req.vacant() else {
            break;
        };
        // Parsed straight into the requester's slot: no WQE copy on this stack.
        let status = match SendWqe::parse_into(&bytes, qp_type, limits, wqe) {
            Ok(()) => {
                let op = wqe.op;
                match req.post_vacant(cfg) {
                    Ok(()) => {
                        count_send(env, &op);
                        continue;
                    }
                    Err(PostError::Full) => break,
                    Err(PostError::Unsupported(s)) => s,
                }
            }
            Err(e) => e.wc_status(),
        };
        if !req.is_empty() {
            // Wait for the requests before it to retire.
            break;
        }
        use crate::proto::rc::RcEnv as _;
        env.retire_send(Some(&Completion::zeroed(wr_id, cfg.qpn, status)));
        return Err(Fatal);
    }
    Ok(())
}

/// Counts a request the requester took, if it is a SEND (`rdma_sends`).
pub(crate) fn count_send(env: &KEnv<'_>, op: &SendOp) {
    if matches!(
        op,
        SendOp::Send | SendOp::SendWithImm { .. } | SendOp::SendWithInv { .. }
    ) {
        env.dev.counters().inc(Counter::RdmaSends);
    }
}

/// Moves a kernel QP's posted send WRs (validated at post time) into the requester while
/// it has room.
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
pub(crate) fn fetch_kernel(
    req: &mut KRequester,
    env: &mut KEnv<'_>,
    cfg: &RcConfig,
    kq: &KernelQueueLock,
) -> Result<(), Fatal> {
    while req.room() > 0 {
        let Some(ks) = kq.lock().as_mut().and_then(|k| k.sq.peek().flatten()) else {
            break;
        };
        let status = match req.post(ks.wqe, cfg) {
            Ok(()) => {
                if let Some(k) = kq.lock().as_mut() {
                    k.sq.pop();
                }
                count_send(env, &ks.wqe.op);
                continue;
            }
            Err(PostError::Full) => break,
            Err(PostError::Unsupported(s)) => s,
        };
        if !req.is_empty() {
            // Wait for the requests before it to retire.
            break;
        }
        if let Some(k) = kq.lock().as_mut() {
            k.sq.pop();
        }
        use crate::proto::rc::RcEnv as _;
        env.retire_send(Some(&Completion::zeroed(ks.wqe.wr_id, cfg.qpn, status)));
        return Err(Fatal);
    }
    Ok(())
}
