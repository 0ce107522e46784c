// SPDX-License-Identifier: GPL-2.0
//! RC and UC QPs: the drive loop that runs the transport (`transport::rc` around
//! `proto::rc`) under the QP's lock, the doorbell, the delivery of received packets, the
//! READ responses' work and the QP timer.

use super::*;

/// The parts of a live QP the connected transport needs besides its lock.
pub(super) struct QpCtx<'a> {
    pub(super) ibdev: *mut bindings::ib_device,
    pub(super) dev: &'a RoceDevice,
    pub(super) pd: PdId,
    pub(super) qpn: u32,
    pub(super) cqs: QpCqs,
    pub(super) srq: *mut bindings::ib_srq,
    pub(super) st: &'a QpObject,
}

impl<'a> QpCtx<'a> {
    /// # Safety
    /// `ibqp` is a live QP of ours with state `st`, kept alive for `'a`.
    pub(super) unsafe fn new(ibqp: *mut bindings::ib_qp, st: &'a QpObject) -> Self {
        // SAFETY: per this function's contract: the QP's device, PD and CQs are live.
        unsafe {
            QpCtx {
                ibdev: (*ibqp).device,
                dev: RoceDevice::from_ib((*ibqp).device),
                pd: PdId::of((*ibqp).pd),
                qpn: (*ibqp).qp_num,
                cqs: QpCqs::of(ibqp),
                srq: (*ibqp).srq,
                st,
            }
        }
    }

    /// Runs `f` with the device's netdev (referenced for the call), if it has one.
    pub(super) fn with_netdev<R>(&self, f: impl FnOnce(&NetDev<'_>) -> R) -> Option<R> {
        // SAFETY: our device; the reference is dropped below.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.ibdev, 1) };
        // SAFETY: null or referenced.
        let nd = unsafe { NetDev::from_raw(ndev) }?;
        let r = f(&nd);
        // SAFETY: drops the reference ib_device_get_netdev took.
        unsafe { bindings::rxe_sr_glue_dev_put(ndev) };
        Some(r)
    }
}

/// What to run on a connected QP once its environment is built.
pub(super) enum Step<'p> {
    /// The doorbell: fetch new send WQEs and send.
    Doorbell,
    /// A packet from the peer.
    Packet(&'p PacketRepr<'p>),
    /// The timer fired.
    Timer,
    /// The next batch of READ responses.
    Pump,
}

/// Drives a connected QP's transport one step under its lock, then fetches and sends what
/// the step made room for, re-arms the timer, and moves the QP to Error if it failed.
///
/// # Safety
/// `ctx` describes a live QP whose lock `g` is.
pub(super) unsafe fn drive(ctx: &QpCtx<'_>, g: &mut QpInner, nd: &NetDev<'_>, step: Step<'_>) {
    let shape = &ctx.st.shape;
    let QpInner {
        attrs,
        sq,
        rq,
        sq_q,
        rq_q,
        rc,
    } = g;
    let Some(conn) = rc.as_mut() else {
        return;
    };
    let RcConn {
        cfg,
        av,
        sport,
        resp,
        req,
    } = conn;
    // SAFETY: per this function's contract the CQs are live.
    let mut env = unsafe {
        KEnv::new(
            ctx.dev,
            nd,
            ctx.pd,
            ctx.qpn,
            attrs.qp_access_flags.bits(),
            av,
            *sport,
            (sq.as_ref(), sq_q),
            (rq.as_ref(), rq_q, shape.rq.max_sge),
            ctx.srq,
            ctx.cqs,
            &ctx.st.kq,
        )
    };
    let rts = attrs.state == QpState::Rts;
    let before = (req.as_ref().map(|r| r.counters), resp.counters);
    let mut outcome = match step {
        Step::Packet(p) if is_request(p) => resp.on_request(&mut env, cfg, p),
        Step::Packet(p) => match req.as_mut() {
            Some(r) if rts => r.on_response(&mut env, cfg, p),
            _ => Outcome::Ok,
        },
        Step::Timer => match req.as_mut() {
            Some(r) if rts => r.on_timer(&mut env, cfg),
            _ => Outcome::Ok,
        },
        Step::Pump => resp.pump(&mut env, cfg, READ_BUDGET),
        Step::Doorbell => Outcome::Ok,
    };
    if let (Outcome::Ok, Some(r), true) = (outcome, req.as_mut(), rts) {
        let limits = SendLimits {
            max_sge: shape.sq.max_sge,
            max_inline: shape.sq.max_inline,
        };
        outcome = if env.sq.is_some() {
            fetch(r, &mut env, cfg, limits)
        } else {
            fetch_kernel(r, &mut env, cfg, &ctx.st.kq)
        };
        if outcome == Outcome::Ok {
            outcome = r.run(&mut env, cfg);
        }
    }
    count(
        ctx.dev,
        before,
        (req.as_ref().map(|r| r.counters), resp.counters),
    );
    if let (Some(r), Some(t)) = (req.as_ref(), ctx.st.timer.as_ref()) {
        if let Some(d) = r.deadline() {
            t.arm(d);
        }
    }
    if resp.read_pending() && outcome == Outcome::Ok {
        // The QP's work sends the rest.
        if let Some(t) = ctx.st.timer.as_ref() {
            t.kick();
        }
    }
    drop(env);
    if outcome == Outcome::Error {
        if let Some(f) = resp.fatal.take() {
            pr_warn!(
                "qp {:#x}: refused request psn {:#x} opcode {:#x} ({} B, {} in progress{}): nak {}, status {:?}; qp to error\n",
                ctx.qpn,
                f.psn.get(),
                f.opcode,
                f.payload_len,
                f.in_progress.describe(),
                if f.out_of_sequence { ", opcode out of sequence" } else { "" },
                f.nak,
                f.status,
            );
        }
        // SAFETY: per this function's contract.
        unsafe { enter_error(g, ctx.st, ctx.qpn, ctx.cqs) };
    }
}

/// Adds what one step of the transport counted to the device's counters.
pub(super) fn count(
    dev: &RoceDevice,
    (req0, resp0): (Option<ReqCounters>, RespCounters),
    (req1, resp1): (Option<ReqCounters>, RespCounters),
) {
    let c = dev.counters();
    let delta = |counter, old: u64, new: u64| c.add(counter, new.saturating_sub(old));
    delta(Counter::OutOfSeqRequest, resp0.seq_err, resp1.seq_err);
    delta(
        Counter::DuplicateRequest,
        resp0.duplicates,
        resp1.duplicates,
    );
    delta(
        Counter::SendRnrErr,
        resp0.rnr_naks_sent,
        resp1.rnr_naks_sent,
    );
    delta(
        Counter::DupRdAtomicDropped,
        resp0.dup_unmatched,
        resp1.dup_unmatched,
    );
    if let (Some(a), Some(b)) = (req0, req1) {
        delta(Counter::RcvdRnrErr, a.rnr_naks, b.rnr_naks);
        delta(Counter::RcvdSeqErr, a.seq_naks, b.seq_naks);
        delta(Counter::CompleterRetryErr, a.retries, b.retries);
        delta(
            Counter::RetryExceededErr,
            a.retry_exceeded,
            b.retry_exceeded,
        );
        delta(
            Counter::RetryRnrExceededErr,
            a.rnr_retry_exceeded,
            b.rnr_retry_exceeded,
        );
    }
}

/// True for request packets (to the responder), false for responses (to the completer).
pub(super) fn is_request(p: &PacketRepr<'_>) -> bool {
    !matches!(
        p.bth.opcode.info().map(|i| i.kind),
        Some(OpKind::Acknowledge | OpKind::AtomicAcknowledge | OpKind::RdmaReadResponse)
    )
}

/// Copies new send WQEs from the ring into the requester, each validated. A WQE that fails
/// validation completes in error once everything before it has retired (then the QP
/// enters the Error state).
// Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
#[inline(never)]
pub(super) fn fetch(
    req: &mut Requester<KVVec<SqEntry>>,
    env: &mut KEnv<'_>,
    cfg: &RcConfig,
    limits: SendLimits,
) -> Outcome {
    let Some(ring) = env.sq else {
        return Outcome::Ok;
    };
    let shared = ring.queue();
    if env.sq_q.observe_producer(shared.load_producer()).is_err() {
        // A producer index user space mangled: what was validly queued still runs.
        return Outcome::Ok;
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
        return Outcome::Error;
    }
    Outcome::Ok
}

/// Counts a request the requester took, if it is a SEND (`rdma_sends`).
pub(super) fn count_send(env: &KEnv<'_>, op: &SendOp) {
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
pub(super) fn fetch_kernel(
    req: &mut Requester<KVVec<SqEntry>>,
    env: &mut KEnv<'_>,
    cfg: &RcConfig,
    kq: &KernelQueueLock,
) -> Outcome {
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
        return Outcome::Error;
    }
    Outcome::Ok
}

/// `post_send` on an RC or UC QP: the doorbell.
///
/// # Safety
/// `ibqp` is a live QP of ours with state `st`.
pub(super) unsafe fn post_send_connected(ibqp: *mut bindings::ib_qp, st: &QpObject) -> c_int {
    // SAFETY: per this function's contract.
    let ctx = unsafe { QpCtx::new(ibqp, st) };
    // SAFETY: the QP outlives the call; dropped after the lock.
    let _events = unsafe { CqEvents::new(ctx.cqs) };
    let mut g = st.inner.lock();
    match g.attrs.state {
        QpState::Rts => {}
        QpState::Err => {
            let QpInner { sq, sq_q, .. } = &mut *g;
            // SAFETY: the QP's CQs outlive it.
            unsafe {
                flush(
                    sq.as_ref(),
                    sq_q,
                    layout::SEND_WQE_WR_ID_OFF,
                    ctx.qpn,
                    |c| ctx.cqs.send(c),
                )
            };
            return 0;
        }
        _ => return EINVAL.to_errno(),
    }
    // SAFETY: `g` is the QP's lock.
    match ctx.with_netdev(|nd| unsafe { drive(&ctx, &mut g, nd, Step::Doorbell) }) {
        Some(()) => 0,
        None => EINVAL.to_errno(),
    }
}

/// What became of an RC or UC packet.
pub(crate) enum Delivery {
    /// The QP took it.
    Done,
    /// Dropped (counted by the caller).
    Dropped,
    /// A request for a QP still sending READ responses: hand the packet to
    /// [`Later::hold`], which queues it for the QP's work.
    Later(Later),
}

/// A QP that holds back its requests while its READ responses go out.
pub(crate) struct Later(QpRef);

impl Later {
    /// Queues the packet on the QP (its work runs it once the responses are out). False
    /// when the queue is full: the packet is dropped, and the requester's retry resends it.
    pub(crate) fn hold(self, skb: SkBuff) -> bool {
        let st = self.0.state();
        let Some(held) = st.held.as_ref() else {
            return false;
        };
        let ok = held.push(skb).is_ok();
        if let Some(t) = st.timer.as_ref() {
            t.kick();
        }
        ok
    }
}

/// True for QP states whose responder takes requests.
pub(super) fn receiving(state: QpState) -> bool {
    matches!(state, QpState::Rtr | QpState::Rts)
}

/// Delivers an RC or UC packet to its QP: requests to the responder (in RTR and RTS),
/// responses to the completer (in RTS). The packet must come from the QP's peer and be
/// addressed to the QP's own GID (rdma_rxe's check_addr): QPNs are easy to guess, IP
/// addresses on the path are not forged as easily.
pub(crate) fn connected_deliver(
    dev: &RoceDevice,
    d: &RoceDatagram<'_>,
    p: &PacketRepr<'_>,
) -> Delivery {
    let Some(qp) = QpRef::get(dev, p.bth.dest_qpn) else {
        return Delivery::Dropped;
    };
    let st = qp.state();
    let want = match rc_transport::service(st.shape.qp_type) {
        Some(Service::Rc) => crate::proto::wire::Transport::Rc,
        Some(Service::Uc) => crate::proto::wire::Transport::Uc,
        None => return Delivery::Dropped,
    };
    if p.bth.opcode.transport() != want || p.bth.pkey & 0x7fff != 0x7fff {
        return Delivery::Dropped;
    }
    // SAFETY: the QP is counted live, with its device, PD and CQs.
    let ctx = unsafe { QpCtx::new(qp.ibqp, st) };
    // SAFETY: the QP is counted (here or by the Later returned) until after this is dropped,
    // after the lock.
    let _events = unsafe { CqEvents::new(ctx.cqs) };
    let mut g = st.inner.lock();
    let Some(conn) = g.rc.as_ref().filter(|_| receiving(g.attrs.state)) else {
        return Delivery::Dropped;
    };
    if conn.av.dgid != d.src_gid() || conn.av.sgid != d.dest_gid() {
        dev.counters().inc(Counter::RcvdAddrMismatch);
        return Delivery::Dropped;
    }
    let busy = conn.resp.read_pending() || st.held.as_ref().is_some_and(|h| h.len() > 0);
    if busy && is_request(p) {
        drop(g);
        return Delivery::Later(Later(qp));
    }
    // SAFETY: `g` is the QP's lock.
    match ctx.with_netdev(|nd| unsafe { drive(&ctx, &mut g, nd, Step::Packet(p)) }) {
        Some(()) => Delivery::Done,
        None => Delivery::Dropped,
    }
}

/// Requests held back at most per run of the QP's work (then it queues itself again).
pub(super) const HELD_PER_RUN: u32 = 16;

/// The responder's part of an RC QP's work: the next batches of READ responses, then, once
/// they are out, the requests held back meanwhile, in order.
///
/// # Safety
/// `ctx` describes a live RC QP; called from its work (process context, no lock held).
pub(super) unsafe fn serve_held(ctx: &QpCtx<'_>) {
    let st = ctx.st;
    let Some(held) = st.held.as_ref() else {
        return;
    };
    for _ in 0..HELD_PER_RUN {
        let mut g = st.inner.lock();
        let pending = match g.rc.as_ref() {
            Some(c) if receiving(g.attrs.state) => c.resp.read_pending(),
            _ => {
                held.purge();
                return;
            }
        };
        if pending {
            // SAFETY: `g` is the QP's lock.
            let _ = ctx.with_netdev(|nd| unsafe { drive(ctx, &mut g, nd, Step::Pump) });
            continue;
        }
        drop(g);
        let Some(mut skb) = held.pop() else {
            return;
        };
        let Some((_, p)) = skb.ip_bytes().and_then(crate::transport::rx::parse) else {
            ctx.dev.counters().inc(Counter::RcvdDropped);
            continue;
        };
        let mut g = st.inner.lock();
        if g.rc.is_none() || !receiving(g.attrs.state) {
            continue;
        }
        // SAFETY: `g` is the QP's lock.
        let _ = ctx.with_netdev(|nd| unsafe { drive(ctx, &mut g, nd, Step::Packet(&p)) });
    }
    // More to do: the work runs again after others had their turn.
    if let Some(t) = st.timer.as_ref() {
        t.kick();
    }
}

/// The QP timer's work ([`QpTimer`]'s handler): runs the transport's timer step.
///
/// # Safety
/// `owner` is the `ib_qp` the timer was created for; destroy_qp drops the timer (waiting
/// for this work) before the QP goes away.
pub(super) unsafe extern "C" fn qp_timer(owner: *mut c_void) {
    let ibqp = owner.cast::<bindings::ib_qp>();
    // SAFETY: per this function's contract.
    let Some(st) = (unsafe { state(ibqp) }) else {
        return;
    };
    // SAFETY: as above.
    let ctx = unsafe { QpCtx::new(ibqp, st) };
    // SAFETY: the QP outlives its work; dropped last, with no lock held.
    let _events = unsafe { CqEvents::new(ctx.cqs) };
    if rc_transport::service(st.shape.qp_type).is_none() {
        if st.kq.lock().is_some() {
            // A kernel datagram QP: its send work.
            // SAFETY: as above.
            unsafe { run_kernel_sends(&ctx) };
        } else {
            // A user datagram QP: the rest of its send ring.
            let _ = ctx.with_netdev(|nd| {
                let mut g = st.inner.lock();
                // SAFETY: as above: the QP's CQs outlive it.
                unsafe { run_ud_requester(&mut g, &ctx, nd) }
            });
        }
        return;
    }
    let mut g = st.inner.lock();
    if g.attrs.state == QpState::Err {
        // A kernel consumer posted to a QP in Error: its requests complete as flushed.
        // SAFETY: as above.
        unsafe { flush_kernel(st, ctx.qpn, ctx.cqs) };
        return;
    }
    if g.attrs.state == QpState::Rts {
        // SAFETY: `g` is the QP's lock.
        let _ = ctx.with_netdev(|nd| unsafe { drive(&ctx, &mut g, nd, Step::Timer) });
    }
    drop(g);
    // SAFETY: as above: our work, no lock held.
    unsafe { serve_held(&ctx) };
}
