// SPDX-License-Identifier: GPL-2.0
//! What the RC/UC state machines (`proto::rc`) act on, in the kernel: memory through MRs,
//! the QP's shared rings, its CQs, and skbs to the peer.

use core::sync::atomic::{fence, Ordering};

use crate::kx::ib_pd::PdId;
use crate::kx::ib_verbs::AccessFlags;
use crate::kx::netdevice::NetDev;
use crate::kx::rxe::mmap_queue::MappedQueue;
use crate::kx::skbuff::PayloadSink;
use crate::kx::timer;
use crate::objects::ah::Av;
use crate::objects::counters::Counter;
use crate::objects::device::RoceDevice;
use crate::objects::inflight::QpInflight;
use crate::objects::mr::{self, Access};
use crate::objects::mr_access;
use crate::objects::mw_binding;
use crate::objects::srq::RoceSrq;
use crate::proto::rc::mw::BindReq;
use crate::proto::rc::{AtomicOp, PayloadSrc, RcEnv, RcEvent, RemoteErr, RemoteOp, TxError};
use crate::proto::recovery::any::SharedPools;
use crate::proto::wire::ext_headers::Feth;
use crate::proto::wire::fec_caps::coded_epoch;
use crate::proto::wire::PacketRepr;
use crate::transport::qp::{KernelQueueLock, QpCqs};
use crate::transport::rc_counters;
use crate::transport::rc_fec::{self, KEncoder, RepairPath};
use crate::uabi::cqe::{Completion, WcStatus};
use crate::uabi::queue::FromClientQueue;
use crate::uabi::recv_wqe::RecvWqe;
use crate::uabi::send_wqe::SendOp;
use crate::uabi::sge::SgeList;

/// One call's environment: borrowed pieces of the locked QP and its device.
pub(crate) struct KEnv<'a> {
    pub(crate) dev: &'a RoceDevice,
    pub(crate) nd: &'a NetDev,
    pub(crate) pd: PdId,
    /// The QP's number (type 2 memory windows answer only their QP).
    pub(crate) qpn: u32,
    /// `IB_ACCESS_REMOTE_*` the QP allows its peer.
    pub(crate) qp_access: u32,
    pub(crate) av: &'a Av,
    pub(crate) sport: u16,
    pub(crate) sq: Option<&'a MappedQueue>,
    pub(crate) sq_q: &'a mut FromClientQueue,
    pub(crate) rq: Option<&'a MappedQueue>,
    pub(crate) rq_q: &'a mut FromClientQueue,
    pub(crate) rq_max_sge: u32,
    /// The QP's SRQ (`None` when it has its own receive queue).
    srq: Option<&'a RoceSrq>,
    cqs: QpCqs<'a>,
    /// A kernel QP's queues (its receives come from there).
    kq: &'a KernelQueueLock,
    /// Packets sent through this environment (a reschedule point every [`YIELD_EVERY`]).
    sent: u32,
    /// An RC requester's part of the device's in-flight budget ([`Self::with_inflight`]):
    /// the QP's shared part, and the PSNs it held as last settled.
    inflight: Option<(&'a QpInflight, &'a mut u32)>,
    /// PSNs the budget admitted since then.
    taken: u32,
    /// The QP's FEC encoder, once its peer took the offer ([`Self::with_fec`]).
    fec: Option<&'a mut KEncoder>,
    /// The encoder of its responder's coded responses ([`Self::with_fec_resp`]).
    fec_resp: Option<&'a mut KEncoder>,
}

/// A step may send many packets (a whole READ response, a window of requests): every this
/// many, the environment lets the scheduler run others.
const YIELD_EVERY: u32 = 64;

impl<'a> KEnv<'a> {
    /// The environment of a QP whose CQs are `cqs` and whose SRQ (if any) is `srq`. It is
    /// used in process context with no spinlock held (it may reschedule while sending).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        dev: &'a RoceDevice,
        nd: &'a NetDev,
        pd: PdId,
        qpn: u32,
        qp_access: u32,
        av: &'a Av,
        sport: u16,
        (sq, sq_q): (Option<&'a MappedQueue>, &'a mut FromClientQueue),
        (rq, rq_q, rq_max_sge): (Option<&'a MappedQueue>, &'a mut FromClientQueue, u32),
        srq: Option<&'a RoceSrq>,
        cqs: QpCqs<'a>,
        kq: &'a KernelQueueLock,
    ) -> Self {
        KEnv {
            dev,
            nd,
            pd,
            qpn,
            qp_access,
            av,
            sport,
            sq,
            sq_q,
            rq,
            rq_q,
            rq_max_sge,
            srq,
            cqs,
            kq,
            sent: 0,
            inflight: None,
            taken: 0,
            fec: None,
            fec_resp: None,
        }
    }

    /// Codes the request packets marked as coded with `enc` and sends its repairs.
    pub(crate) fn with_fec(mut self, enc: Option<&'a mut KEncoder>) -> Self {
        self.fec = enc;
        self
    }

    /// Codes the responses marked as coded with `enc` and sends its repairs.
    pub(crate) fn with_fec_resp(mut self, enc: Option<&'a mut KEncoder>) -> Self {
        self.fec_resp = enc;
        self
    }

    /// The requester (`responses` false) or the responder has nothing more to send now:
    /// its encoder's units that hold enough packets no repair covers get one.
    pub(crate) fn flush_fec(&mut self, responses: bool) {
        let path = self.repair_path();
        let enc = if responses {
            self.fec_resp.as_deref_mut()
        } else {
            self.fec.as_deref_mut()
        };
        if let Some(enc) = enc {
            enc.flush_idle(&mut |rh, pl| path.send(rh, pl));
        }
    }

    /// Where this QP's repairs go.
    fn repair_path(&self) -> RepairPath<'a> {
        RepairPath {
            dev: self.dev,
            nd: self.nd,
            av: self.av,
            sport: self.sport,
        }
    }

    /// Lets an RC requester ask the device's in-flight budget for room: `qp` is its QP's
    /// part, `held` what it held as last settled (without this, every message is admitted).
    pub(crate) fn with_inflight(mut self, qp: &'a QpInflight, held: &'a mut u32) -> Self {
        self.inflight = Some((qp, held));
        self
    }

    /// The budget's part of the step, for settling it: what it held before, and what was
    /// admitted since.
    pub(crate) fn take_inflight(&mut self) -> Option<(&'a QpInflight, &'a mut u32, u32)> {
        let taken = core::mem::take(&mut self.taken);
        self.inflight.take().map(|(q, h)| (q, h, taken))
    }
}

/// Writes a request's or response's payload (`plen` bytes from `payload`) into the skb
/// through its sink: bytes given, gathered by L_Key, or read by R_Key for a READ.
fn payload_filler<'p>(
    dev: &'p RoceDevice,
    pd: PdId,
    qpn: u32,
    payload: PayloadSrc<'p>,
    plen: usize,
) -> impl FnMut(&mut PayloadSink<'_>) -> Result<(), TxError> + 'p {
    move |dst: &mut PayloadSink<'_>| match payload {
        PayloadSrc::None => Ok(()),
        PayloadSrc::Bytes(src) => {
            if src.len() == plen && dst.put(src) {
                Ok(())
            } else {
                Err(TxError::Local(WcStatus::LocLenErr))
            }
        }
        PayloadSrc::Local { sges, offset } => {
            gather(dev, pd, sges, offset, dst).map_err(TxError::Local)
        }
        PayloadSrc::Remote { rkey, va } => {
            if mr_access::read_into(dev, pd, rkey, va, plen, dst, Access::RemoteRead(qpn)) {
                Ok(())
            } else {
                Err(TxError::Local(WcStatus::RemAccessErr))
            }
        }
    }
}

/// Copies `dst.len()` bytes of an SGE list from byte `offset` into `dst` (L_Keys checked).
fn gather(
    dev: &RoceDevice,
    pd: PdId,
    sges: &SgeList,
    offset: u32,
    dst: &mut PayloadSink<'_>,
) -> Result<(), WcStatus> {
    // The pieces come in order, each right after the one before: each appends.
    sges.pieces(u64::from(offset), dst.remaining(), |s, addr, r| {
        mr_access::gather_into(dev, pd, s.lkey, addr, r.len(), dst)
    })
}

impl KEnv<'_> {
    fn qp_allows(&self, op: RemoteOp) -> bool {
        let flag = match op {
            RemoteOp::Read => AccessFlags::REMOTE_READ.bits(),
            RemoteOp::Write => AccessFlags::REMOTE_WRITE.bits(),
            RemoteOp::Atomic => AccessFlags::REMOTE_ATOMIC.bits(),
        };
        self.qp_access & flag != 0
    }
}

/// Invalidates `key` (a type 2 window's or a fast-registration MR's) for a QP of `pd`.
fn invalidate_key(dev: &RoceDevice, pd: PdId, key: u32) -> bool {
    if mr::is_mw_key(key) {
        mw_binding::invalidate(dev, pd, key).is_ok()
    } else {
        mr_access::invalidate(dev, pd, key)
    }
}

fn access_of(op: RemoteOp, qpn: u32) -> Access {
    match op {
        RemoteOp::Read => Access::RemoteRead(qpn),
        RemoteOp::Write => Access::RemoteWrite(qpn),
        RemoteOp::Atomic => Access::RemoteAtomic(qpn),
    }
}

impl RcEnv for KEnv<'_> {
    fn admit(&mut self, held: u32, psns: u32) -> bool {
        let Some((qp, last)) = self.inflight.as_mut() else {
            return true;
        };
        let d = self.dev.inflight();
        // What this step acknowledged is room already.
        d.budget.settle(last, self.taken, held);
        self.taken = 0;
        let ok = d.admit_or_wait(qp, self.qpn, psns);
        if ok {
            self.taken = psns;
        }
        ok
    }

    fn now_us(&self) -> u64 {
        timer::now_us()
    }

    fn transmit(
        &mut self,
        hdr: &PacketRepr<'_>,
        payload: PayloadSrc<'_>,
        len: u32,
    ) -> Result<(), TxError> {
        let (dev, pd, qpn) = (self.dev, self.pd, self.qpn);
        self.sent = self.sent.wrapping_add(1);
        if self.sent % YIELD_EVERY == 0 {
            // Process context with no spinlock held (`new`'s terms).
            crate::kx::sched::cond_resched();
        }
        let plen = usize::try_from(len).map_err(|_| TxError::Dropped)?;
        let total = hdr
            .buffer_len()
            .checked_add(plen + usize::from(hdr.bth.pad_cnt))
            .ok_or(TxError::Dropped)?;
        // The payload, then the headers, are written straight into the skb.
        let off = hdr.header_len();
        let fill_payload = payload_filler(dev, pd, qpn, payload, plen);
        // The headers: the rest of a linear datagram is zeroed by its builder.
        let emit = |ib: &mut [u8]| match hdr.emit_header_bytes(plen, ib) {
            Ok(at) if at == off => Ok(()),
            _ => Err(TxError::Dropped),
        };
        // A packet marked as coded is coded in its skb, once its ICRC is filled.
        let (psn, path) = (hdr.bth.psn, self.repair_path());
        let epoch = coded_epoch(hdr.bth.resv7);
        // A response marked coded goes to the responses' encoder.
        let response = hdr.bth.opcode.info().is_some_and(|i| i.kind.is_response());
        let mut enc = if response {
            self.fec_resp.as_deref_mut()
        } else {
            self.fec.as_deref_mut()
        }
        .filter(|_| epoch.is_some());
        if let (Some(e), Some(epoch)) = (enc.as_deref_mut(), epoch) {
            e.prepare(psn, epoch, &mut |rh, pl| path.send(rh, pl));
        }
        let mut coded = false;
        // Only a packet to code needs its finished bytes (and so goes linear).
        let tap = enc.is_some().then_some(|ip: &[u8], ib: &[u8]| {
            if let Some(e) = enc.as_deref_mut() {
                coded = e.code(psn, rc_fec::ip_id(ip), ib);
            }
        });
        let sent = crate::net::tx::send_with(
            dev,
            self.nd,
            self.av,
            self.sport,
            total,
            off..off + plen,
            fill_payload,
            emit,
            tap,
        );
        if let Some(e) = enc.filter(|_| coded) {
            match sent {
                Ok(()) => e.emit_due(&mut |rh, pl| path.send(rh, pl)),
                // Coded, and not sent: the requester sends the PSN again.
                Err(_) => e.poison(psn),
            }
        }
        match sent {
            Ok(()) => Ok(()),
            Err(crate::net::tx::SendError::Fill(e)) => Err(e),
            Err(crate::net::tx::SendError::Net(e)) if e == crate::kx::error::enobufs() => {
                dev.counters().inc(Counter::SendBusy);
                Err(TxError::Busy)
            }
            Err(crate::net::tx::SendError::Net(_)) => Err(TxError::Dropped),
        }
    }

    fn scatter(&mut self, sges: &SgeList, offset: u32, data: &[u8]) -> Result<(), WcStatus> {
        sges.pieces(u64::from(offset), data.len(), |s, addr, r| {
            mr_access::scatter(
                self.dev,
                self.pd,
                s.lkey,
                addr,
                data.get(r).ok_or(WcStatus::LocLenErr)?,
            )
        })
    }

    fn remote_check(
        &mut self,
        op: RemoteOp,
        rkey: u32,
        va: u64,
        len: u32,
    ) -> Result<(), RemoteErr> {
        if !self.qp_allows(op) {
            return Err(RemoteErr::Invalid);
        }
        if op == RemoteOp::Atomic && va % 8 != 0 {
            return Err(RemoteErr::Invalid);
        }
        if mr_access::remote_check(self.dev, self.pd, rkey, va, len, access_of(op, self.qpn)) {
            Ok(())
        } else {
            Err(RemoteErr::Access)
        }
    }

    fn remote_write(&mut self, rkey: u32, va: u64, data: &[u8]) -> Result<(), RemoteErr> {
        if mr_access::write(
            self.dev,
            self.pd,
            rkey,
            va,
            data,
            Access::RemoteWrite(self.qpn),
        ) {
            Ok(())
        } else {
            Err(RemoteErr::Access)
        }
    }

    fn remote_atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, RemoteErr> {
        mr_access::remote_atomic(self.dev, self.pd, self.qpn, rkey, va, |orig| op.apply(orig))
            .ok_or(RemoteErr::Access)
    }

    fn remote_flush(
        &mut self,
        rkey: u32,
        range: Option<(u64, u32)>,
        plt: u8,
    ) -> Result<(), RemoteErr> {
        let mut rights = 0;
        if plt & Feth::PLT_GLOBAL != 0 {
            rights |= AccessFlags::FLUSH_GLOBAL.bits();
        }
        if plt & Feth::PLT_PERSISTENT != 0 {
            rights |= AccessFlags::FLUSH_PERSISTENT.bits();
        }
        // The QP must grant the rights too (rdma_rxe's check_qp_attr_access).
        if rights == 0 || self.qp_access & rights != rights {
            return Err(RemoteErr::Invalid);
        }
        let range = range.map(|(va, len)| (va, u64::from(len)));
        if !mr_access::remote_flush_check(self.dev, self.pd, rkey, range, self.qpn, rights) {
            return Err(RemoteErr::Access);
        }
        // Every earlier request's bytes were copied into the memory before ePSN reached
        // this FLUSH; the fence orders those stores before the acknowledgment that follows
        // (rdma_rxe's wmb()).
        fence(Ordering::SeqCst);
        Ok(())
    }

    fn invalidate(&mut self, rkey: u32) -> Result<(), RemoteErr> {
        // As rdma_rxe: only fast-registration MRs and type 2 memory windows can be
        // invalidated.
        if invalidate_key(self.dev, self.pd, rkey) {
            Ok(())
        } else {
            Err(RemoteErr::Invalid)
        }
    }

    fn local_op(&mut self, op: &SendOp) -> Result<(), WcStatus> {
        match *op {
            SendOp::BindMw(m) => {
                let req = BindReq {
                    mw_rkey: m.mw_rkey,
                    new_rkey: m.rkey,
                    addr: m.addr,
                    length: m.length,
                    access: m.access,
                };
                let mr = if m.length == 0 {
                    None
                } else {
                    mr_access::view(self.dev, self.pd, m.mr_lkey)
                };
                mw_binding::bind(self.dev, &req, self.pd, self.qpn, mr)
                    .map_err(|_| WcStatus::MwBindErr)
            }
            SendOp::LocalInv { invalidate_rkey } => {
                if invalidate_key(self.dev, self.pd, invalidate_rkey) {
                    Ok(())
                } else {
                    Err(WcStatus::LocQpOpErr)
                }
            }
            SendOp::RegMr { key, access } => match mr::check_access(access as i32) {
                Ok(access) => mr_access::fast_reg(self.dev, self.pd, key, access),
                Err(_) => Err(WcStatus::LocQpOpErr),
            },
            _ => Err(WcStatus::LocQpOpErr),
        }
    }

    fn take_recv(&mut self) -> Option<Result<RecvWqe, (u64, WcStatus)>> {
        if let Some(srq) = self.srq {
            return srq.take();
        }
        if let Some(k) = self.kq.lock().as_mut() {
            return k.pop_recv().map(Ok);
        }
        crate::objects::recv_queue::take_from_ring(self.rq, self.rq_q, self.rq_max_sge)
    }

    fn retire_send(&mut self, c: Option<&Completion>) {
        if let Some(ring) = self.sq {
            if let Some(cons) = self.sq_q.advance_consumer() {
                ring.queue().publish_consumer(cons);
            }
        }
        if let Some(c) = c {
            // A full CQ has raised its error event.
            let _ = self.cqs.send(c);
        }
    }

    fn complete_recv(&mut self, c: &Completion, solicited: bool) {
        let _ = self.cqs.recv(c, solicited);
        if c.status == WcStatus::Success {
            self.dev.counters().inc(Counter::RdmaRecvs);
        }
    }

    fn with_shared(&mut self, f: &mut dyn FnMut(&mut (dyn SharedPools + 'static), &mut dyn RcEnv)) {
        // Lock order: the QP's lock (held by the caller), then the device's pool lock.
        let dev = self.dev;
        let mut pools = dev.sr_pools().lock();
        f(&mut *pools, self);
    }

    fn count(&mut self, ev: RcEvent, n: u64) {
        rc_counters::count(self.dev, ev, n);
    }
}
