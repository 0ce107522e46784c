// SPDX-License-Identifier: GPL-2.0
// The RC/UC test net, shared by the host tests that drive two QPs over a simulated link
// (`include!`d, so its items are private to each test crate): two sides, each a requester
// and a responder with plain memory behind keys, a link that loses, duplicates and
// reorders, simulated time, forged packets.

use std::collections::VecDeque;

use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::rc::requester::{PostError, ReqSr, Requester, SqEntry};
use rxe_sr::proto::rc::responder::{
    RdRes, RecvSlot, RespSr, Responder, MAX_RD_RES, READ_BUDGET, RECV_WINDOW,
};
use rxe_sr::proto::rc::dev_inflight::Inflight;
use rxe_sr::proto::rc::sr::SrSetup;
use rxe_sr::proto::recovery::any::{DeviceShared, SharedPools};
use rxe_sr::proto::recovery::scheme::Scheme;
use rxe_sr::proto::recovery::RtoConfig;

type Resp = Responder<Vec<Option<RdRes>>, Vec<Option<RecvSlot>>, Box<RespSr<Vec<u64>>>>;
type Req = Requester<Vec<SqEntry>, Box<ReqSr<Vec<u64>>>>;

/// The requester's SR state for `s`, first PSN `psn`, its bitmaps on the heap.
fn req_sr(s: SrSetup, psn: Psn) -> Box<ReqSr<Vec<u64>>> {
    Box::new(ReqSr::new(s, psn, &mut |n| vec![0; n]))
}

/// The responder's SR state for `s`, expecting `psn`, its bitmaps on the heap.
fn resp_sr(s: SrSetup, psn: Psn) -> Box<RespSr<Vec<u64>>> {
    Box::new(RespSr::new(s, psn, &mut |n| vec![0; n]))
}
use rxe_sr::proto::rc::{
    AtomicOp, Fatal, PayloadSrc, RcConfig, RcEnv, RcEvent, RemoteErr, RemoteOp, Service, TxError, MAX_UNACKED_PSNS,
};
use rxe_sr::proto::recovery::Counters;
use rxe_sr::proto::wire::caps::RequesterState;
use rxe_sr::proto::wire::opcode::OpKind;
use rxe_sr::proto::wire::PacketRepr;
use rxe_sr::uabi::cqe::{Completion, WcStatus};
use rxe_sr::uabi::recv_wqe::RecvWqe;
use rxe_sr::uabi::send_wqe::{Payload, Remote, SendFlags, SendOp, SendOpcode, SendWqe};
use rxe_sr::uabi::sge::{Sge, SgeList};

const LOCAL_WRITE: u32 = 1;
const REMOTE_WRITE: u32 = 2;
const REMOTE_READ: u32 = 4;
const REMOTE_ATOMIC: u32 = 8;
const ALL: u32 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;
const FLUSH_GLOBAL: u32 = 1 << 8;
const FLUSH_PERSISTENT: u32 = 1 << 9;

struct Region {
    key: u32,
    base: u64,
    data: Vec<u8>,
    access: u32,
}

#[derive(Default)]
struct Mem {
    regions: Vec<Region>,
    /// Local operations executed (BIND_MW, LOCAL_INV), in order.
    local_ops: Vec<SendOp>,
    /// FLUSHes executed.
    flushes: Vec<Flushed>,
}

/// A FLUSH the responder executed: the key, range and placement type, and the region's
/// bytes then.
type Flushed = (u32, Option<(u64, u32)>, u8, Vec<u8>);

impl Mem {
    fn reg(&mut self, key: u32, base: u64, len: usize, access: u32) {
        self.regions.push(Region { key, base, data: vec![0; len], access });
    }
    fn find(&mut self, key: u32, va: u64, len: u64, need: u32) -> Option<(&mut Vec<u8>, usize)> {
        let r = self.regions.iter_mut().find(|r| r.key == key)?;
        if r.access & need != need || va < r.base || va + len > r.base + r.data.len() as u64 {
            return None;
        }
        let off = (va - r.base) as usize;
        Some((&mut r.data, off))
    }
    fn region(&mut self, key: u32) -> &mut Vec<u8> {
        &mut self.regions.iter_mut().find(|r| r.key == key).unwrap().data
    }
    /// Walks `sges` from byte `offset` for `len` bytes, calling `f(key, va, range in the
    /// walk)` per piece.
    /// Walks `len` bytes of `sges` from byte `offset` with the transport's own walker,
    /// calling `f(key, va, range in the walk)` per piece.
    fn walk(sges: &SgeList, offset: u32, len: usize, mut f: impl FnMut(u32, u64, std::ops::Range<usize>) -> bool) -> bool {
        sges.pieces(u64::from(offset), len, |s, va, r| if f(s.lkey, va, r) { Ok(()) } else { Err(WcStatus::LocProtErr) })
            .is_ok()
    }
}

/// One end: its QP and what it saw.
struct Side {
    cfg: RcConfig,
    req: Req,
    resp: Resp,
    /// The device's pools (FaSR, MELO).
    shared: Box<dyn SharedPools>,
    /// Packets this side put on the wire in the SR format (BTH TVer = 1).
    sr_packets: u64,
    mem: Mem,
    rq: VecDeque<RecvWqe>,
    send_cqes: Vec<Completion>,
    recv_cqes: Vec<Completion>,
    retired: usize,
    /// The events counted through this side's environment over the net's life, added up as
    /// the kernel's device counters add them.
    counted: Tally,
    error: bool,
    /// The device's in-flight budget (`None`: the kernel's with no budget), and the PSNs
    /// of it this QP held at the end of its last step.
    inflight: Option<Inflight>,
    held: u32,
    /// The device's FEC shim (`rc_fec.rs`; `None`: no FEC).
    fec: Option<Box<SideFec>>,
    /// Repair packets that reached this side without FEC (dropped as malformed).
    repairs_refused: u64,
}

struct Env<'a> {
    now: u64,
    mem: &'a mut Mem,
    rq: &'a mut VecDeque<RecvWqe>,
    out: &'a mut Vec<Vec<u8>>,
    send_cqes: &'a mut Vec<Completion>,
    recv_cqes: &'a mut Vec<Completion>,
    retired: &'a mut usize,
    shared: Option<&'a mut (dyn SharedPools + 'static)>,
    sr_packets: &'a mut u64,
    /// The device's budget and the PSNs of it this QP holds as last settled.
    inflight: Option<(&'a Inflight, &'a mut u32)>,
    /// PSNs the budget admitted since then.
    taken: u32,
    /// The events counted through this environment (the kernel's device counters).
    counted: Tally,
    /// Each packet gets an ICRC over the net's fixed IP/UDP headers (FEC sides).
    icrc: bool,
}

/// Counts by event (`RcEvent as usize`; a peak for [`RcEvent::OnloadQueuePeak`]).
type Tally = [u64; 64];

/// What a QP's tallies, its SR engines' counters and its capability exchange add up to, by
/// event: between two steps, the difference must be what the step counted through its
/// environment.
fn tallied(req: &Req, resp: &Resp) -> Tally {
    use RcEvent as E;
    let mut t = [0; 64];
    let mut add = |ev, n: u64| t[ev as usize] += n;
    let c = req.counters;
    for (ev, n) in [
        (E::Retry, c.retries),
        (E::Timeout, c.timeouts),
        (E::RnrNakRcvd, c.rnr_naks),
        (E::SeqNakRcvd, c.seq_naks),
        (E::Resent, c.resent_pkts),
        (E::DupResponse, c.dup_responses),
        (E::RetryExceeded, c.retry_exceeded),
        (E::RnrRetryExceeded, c.rnr_retry_exceeded),
        (E::AdmitWait, c.admit_waits),
    ] {
        add(ev, n);
    }
    let engine = |add: &mut dyn FnMut(RcEvent, u64), e: &Counters, rx: bool| {
        add(E::FastPath, e.fast_path);
        add(E::SlowPath, e.slow_path);
        add(E::GbnFallback, e.gbn_fallbacks);
        if rx {
            add(E::LostCntOverflow, e.lost_cnt_overflows);
            add(E::OnloadServed, e.onload_served);
            add(E::OnloadDelayUs, e.onload_delay_total);
        }
    };
    if let Some(sr) = req.sr() {
        let c = sr.counters;
        for (ev, n) in [
            (E::SackRcvd, c.sacks_rcvd),
            (E::FnackRcvd, c.fnacks_rcvd),
            (E::HoleRcvd, c.holes_rcvd),
            (E::AackRcvd, c.aacks_rcvd),
            (E::SelectiveResent, c.selective_resent),
            (E::LostResend, c.lost_resends),
            (E::StallProbe, c.stall_probes),
        ] {
            add(ev, n);
        }
        match sr.state() {
            RequesterState::Sr(_) => add(E::SrAgreed, 1),
            RequesterState::Standard => add(E::SrDeclined, 1),
            RequesterState::Probing { .. } => {}
        }
        engine(&mut add, sr.engine_counters(), false);
    }
    let c = resp.counters;
    for (ev, n) in [
        (E::OutOfSequence, c.seq_err),
        (E::Duplicate, c.duplicates),
        (E::RnrNakSent, c.rnr_naks_sent),
        (E::ErrNakSent, c.err_naks_sent),
        (E::UcDropped, c.uc_dropped),
        (E::DupUnmatched, c.dup_unmatched),
        (E::SrUnsupported, c.sr_refused),
        (E::RepairRedundant, c.repairs_redundant),
        (E::BusyDropped, c.busy_dropped),
    ] {
        add(ev, n);
    }
    if let Some(sr) = resp.sr() {
        let c = sr.counters;
        for (ev, n) in [
            (E::OooPlaced, c.ooo_placed),
            (E::SrAckSent, c.acks_sent),
            (E::AackSent, c.aacks_sent),
            (E::SackSent, c.sacks_sent),
            (E::SackCoalesced, c.sacks_coalesced),
            (E::FnackSent, c.fnacks_sent),
            (E::HoleSent, c.holes_sent),
            (E::SrNakSent, c.naks_sent),
            (E::OrderedEarly, c.ordered_early),
            (E::WindowFull, c.window_full),
            (E::EarlyRnr, c.early_rnr),
            (E::EarlyRefused, c.early_refused),
            (E::StaleStandard, c.stale_standard),
            (E::SrRefused, c.refused),
            (E::OutOfWindow, c.out_of_window),
        ] {
            add(ev, n);
        }
        engine(&mut add, sr.engine_counters(), true);
        add(E::OnloadQueuePeak, sr.engine_counters().onload_queue_peak);
    }
    t
}

/// Checks that a step counted through its environment exactly what it added to the QP's
/// tallies (`before` to `after`): each event where it happened, none twice, none missed.
fn check_counted(before: &Tally, after: &Tally, counted: &Tally) {
    let peak = RcEvent::OnloadQueuePeak as usize;
    for (i, (&old, &new)) in before.iter().zip(after).enumerate() {
        let want = match i {
            _ if i == peak && new > old => new,
            _ if i == peak => 0,
            _ => new - old,
        };
        assert_eq!(want, counted[i], "event {i} counted through the environment");
    }
}

/// Adds what one step counted to `total`, as the kernel's device counters do (the highest
/// peak for [`RcEvent::OnloadQueuePeak`]).
fn add_counted(total: &mut Tally, step: &Tally) {
    let peak = RcEvent::OnloadQueuePeak as usize;
    for (i, (t, &n)) in total.iter_mut().zip(step).enumerate() {
        *t = if i == peak { (*t).max(n) } else { *t + n };
    }
}

/// The wr_id bit that makes the test's receive queue hand a WQE over as malformed.
const BAD_RECV: u64 = 1 << 62;

thread_local! {
    /// Every Nth request packet offered to the egress queue is refused as `TxError::Busy`
    /// (0: never), and how many were refused: a full local queue, on this thread's nets.
    static BUSY_EVERY: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static TX_OFFERED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static BUSY_REFUSED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Calls of `with_shared` (the device's pool lock in the kernel) on this thread.
    static SHARED_CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn is_request(kind: OpKind) -> bool {
    matches!(
        kind,
        OpKind::Send
            | OpKind::RdmaWrite
            | OpKind::RdmaReadRequest
            | OpKind::CompareSwap
            | OpKind::FetchAdd
            | OpKind::AtomicWrite
            | OpKind::Flush
    )
}

impl RcEnv for Env<'_> {
    fn now_us(&self) -> u64 {
        self.now
    }
    fn admit(&mut self, held: u32, psns: u32) -> bool {
        let Some((d, last)) = self.inflight.as_mut() else {
            return true;
        };
        d.settle(last, self.taken, held);
        self.taken = 0;
        let ok = d.admit(psns);
        if ok {
            self.taken = psns;
        }
        ok
    }
    fn transmit(&mut self, hdr: &PacketRepr<'_>, payload: PayloadSrc<'_>, len: u32) -> Result<(), TxError> {
        let every = BUSY_EVERY.get();
        if every > 0 && hdr.bth.opcode.info().is_some_and(|i| is_request(i.kind)) {
            TX_OFFERED.set(TX_OFFERED.get() + 1);
            if TX_OFFERED.get().is_multiple_of(every) {
                BUSY_REFUSED.set(BUSY_REFUSED.get() + 1);
                return Err(TxError::Busy);
            }
        }
        let mut data = vec![0u8; len as usize];
        match payload {
            PayloadSrc::None => assert_eq!(len, 0),
            PayloadSrc::Bytes(b) => data.copy_from_slice(b),
            PayloadSrc::Local { sges, offset } => {
                let mem = &mut *self.mem;
                let ok = Mem::walk(sges, offset, len as usize, |key, va, r| match mem.find(key, va, r.len() as u64, 0) {
                    Some((buf, off)) => {
                        data[r.clone()].copy_from_slice(&buf[off..off + r.len()]);
                        true
                    }
                    None => false,
                });
                if !ok {
                    return Err(TxError::Local(WcStatus::LocProtErr));
                }
            }
            PayloadSrc::Remote { rkey, va } => {
                let (buf, off) = self.mem.find(rkey, va, len as u64, REMOTE_READ).ok_or(TxError::Dropped)?;
                data.copy_from_slice(&buf[off..off + len as usize]);
            }
        }
        let p = PacketRepr { payload: &data, ..*hdr };
        if hdr.bth.opcode.info().is_some_and(|i| i.kind == OpKind::Acknowledge) {
            ACK_PACKETS.set(ACK_PACKETS.get() + 1);
        }
        if p.is_sr() {
            *self.sr_packets += 1;
        }
        let mut bytes = vec![0u8; p.buffer_len()];
        p.emit(&mut bytes).expect("the transport builds valid packets");
        if self.icrc {
            fec_fill_icrc(&mut bytes);
        }
        self.out.push(bytes);
        Ok(())
    }
    fn scatter(&mut self, sges: &SgeList, offset: u32, data: &[u8]) -> Result<(), WcStatus> {
        let mem = &mut *self.mem;
        let ok = Mem::walk(sges, offset, data.len(), |key, va, r| match mem.find(key, va, r.len() as u64, LOCAL_WRITE) {
            Some((buf, off)) => {
                buf[off..off + r.len()].copy_from_slice(&data[r]);
                true
            }
            None => false,
        });
        if ok {
            Ok(())
        } else {
            Err(WcStatus::LocProtErr)
        }
    }
    fn remote_check(&mut self, op: RemoteOp, rkey: u32, va: u64, len: u32) -> Result<(), RemoteErr> {
        let need = match op {
            RemoteOp::Read => REMOTE_READ,
            RemoteOp::Write => REMOTE_WRITE,
            RemoteOp::Atomic => REMOTE_ATOMIC,
        };
        self.mem.find(rkey, va, u64::from(len), need).map(|_| ()).ok_or(RemoteErr::Access)
    }
    fn remote_write(&mut self, rkey: u32, va: u64, data: &[u8]) -> Result<(), RemoteErr> {
        let (buf, off) = self.mem.find(rkey, va, data.len() as u64, REMOTE_WRITE).ok_or(RemoteErr::Access)?;
        buf[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn remote_atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, RemoteErr> {
        let (buf, off) = self.mem.find(rkey, va, 8, REMOTE_ATOMIC).ok_or(RemoteErr::Access)?;
        let cell: &mut [u8; 8] = (&mut buf[off..off + 8]).try_into().unwrap();
        let orig = u64::from_le_bytes(*cell);
        *cell = op.apply(orig).to_le_bytes();
        Ok(orig)
    }
    fn remote_flush(&mut self, rkey: u32, range: Option<(u64, u32)>, plt: u8) -> Result<(), RemoteErr> {
        let need = if plt & 1 != 0 { FLUSH_GLOBAL } else { 0 } | if plt & 2 != 0 { FLUSH_PERSISTENT } else { 0 };
        let r = self.mem.regions.iter().find(|r| r.key == rkey).ok_or(RemoteErr::Access)?;
        let ok = match range {
            Some((va, len)) => {
                r.access & need == need && va >= r.base && va + u64::from(len) <= r.base + r.data.len() as u64
            }
            None => r.access & need == need,
        };
        if !ok {
            return Err(RemoteErr::Access);
        }
        let seen = r.data.clone();
        self.mem.flushes.push((rkey, range, plt, seen));
        Ok(())
    }
    fn count(&mut self, ev: RcEvent, n: u64) {
        let c = &mut self.counted[ev as usize];
        *c = match ev {
            RcEvent::OnloadQueuePeak => (*c).max(n),
            _ => *c + n,
        };
    }
    fn invalidate(&mut self, _rkey: u32) -> Result<(), RemoteErr> {
        Ok(())
    }
    fn local_op(&mut self, op: &SendOp) -> Result<(), WcStatus> {
        self.mem.local_ops.push(*op);
        match op {
            SendOp::LocalInv { invalidate_rkey: 0xdead } => Err(WcStatus::LocQpOpErr),
            _ => Ok(()),
        }
    }
    fn take_recv(&mut self) -> Option<Result<RecvWqe, (u64, WcStatus)>> {
        // A wr_id with BAD_RECV's bit set stands for a receive WQE the kernel found
        // malformed in the ring (a hostile writer): the transport gets its error.
        self.rq.pop_front().map(|w| if w.wr_id & BAD_RECV != 0 { Err((w.wr_id, WcStatus::LocLenErr)) } else { Ok(w) })
    }
    fn retire_send(&mut self, c: Option<&Completion>) {
        *self.retired += 1;
        if let Some(c) = c {
            self.send_cqes.push(*c);
        }
    }
    fn complete_recv(&mut self, c: &Completion, _solicited: bool) {
        self.recv_cqes.push(*c);
    }
    fn with_shared(&mut self, f: &mut dyn FnMut(&mut (dyn SharedPools + 'static), &mut dyn RcEnv)) {
        let sh = self.shared.take().expect("with_shared does not nest");
        SHARED_CALLS.set(SHARED_CALLS.get() + 1);
        f(sh, self);
        self.shared = Some(sh);
    }
}

thread_local! {
    /// SRNIC's slow-path delay (microseconds) in the nets this thread builds.
    static SRNIC_DELAY_US: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The SR window (log2 of PSNs, `sr_window_psns`) of the nets this thread builds.
    static SR_WINDOW_LOG2: std::cell::Cell<u8> =
        const { std::cell::Cell::new(rxe_sr::proto::rc::SR_DEFAULT_WINDOW_LOG2) };
}

/// The SR setup of `scheme` in the harness (timeouts as the QP's local ACK timeout).
fn setup(scheme: Scheme) -> Option<SrSetup> {
    let rto = RtoConfig { rto_low: 1000, rto_high: 1000, n_low: 3 };
    SrSetup::new(scheme, rto, SRNIC_DELAY_US.get())
        .map(|s| SrSetup { window_log2: SR_WINDOW_LOG2.get(), ..s })
}

/// Something B's application does while the net runs.
#[derive(Clone, Debug)]
#[allow(dead_code, reason = "not every test file drives B's application")]
enum SideEvent {
    /// Posts a receive WQE.
    PostRecv(Box<RecvWqe>),
    /// Takes `rights` away from the region with `key` (an MR invalidated or re-registered).
    Revoke { key: u32, rights: u32 },
}

impl Side {
    /// A side whose device runs `scheme`, and the FEC shim with `fec` (`None`: off).
    fn with_options(service: Service, qpn: u32, dest: u32, pmtu: u32, scheme: Scheme, fec: Option<FecParams>) -> Side {
        let cfg = RcConfig {
            service,
            qpn,
            dest_qpn: dest,
            pmtu,
            timeout_us: 1000,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            max_rd_atomic: 4,
            max_dest_rd_atomic: 16,
            sig_all: true,
            port: 1,
            fec: fec.is_some(),
            gbn_window: MAX_UNACKED_PSNS,
        };
        let slots = vec![SqEntry::empty(wqe(SendOp::Send, SendOpcode::Send, 0, 0, 0)); 64];
        let sq_psn = Psn::new(100 + qpn);
        let rq_psn = Psn::new(100 + dest);
        let sr = setup(scheme).filter(|_| service == Service::Rc);
        Side {
            cfg,
            req: Requester::new(slots, sq_psn, &cfg, sr.map(|s| req_sr(s, sq_psn))),
            resp: Responder::new(
                rq_psn,
                vec![None; MAX_RD_RES],
                sr.map(|s| resp_sr(s, rq_psn)),
                vec![None; if sr.is_some() { RECV_WINDOW } else { 0 }],
            )
            .with_fec(fec.is_some()),
            shared: Box::new(DeviceShared::new()),
            sr_packets: 0,
            mem: Mem::default(),
            rq: VecDeque::new(),
            send_cqes: vec![],
            recv_cqes: vec![],
            retired: 0,
            counted: [0; 64],
            error: false,
            inflight: None,
            held: 0,
            fec: fec.map(|p| SideFec::new(p, dest)),
            repairs_refused: 0,
        }
    }

    fn with_env<R>(&mut self, now: u64, out: &mut Vec<Vec<u8>>, f: impl FnOnce(&mut Req, &mut Resp, &RcConfig, &mut Env<'_>) -> R) -> R {
        let before = tallied(&self.req, &self.resp);
        let mut env = Env {
            now,
            mem: &mut self.mem,
            rq: &mut self.rq,
            out,
            send_cqes: &mut self.send_cqes,
            recv_cqes: &mut self.recv_cqes,
            retired: &mut self.retired,
            shared: Some(&mut *self.shared),
            sr_packets: &mut self.sr_packets,
            inflight: self.inflight.as_ref().map(|d| (d, &mut self.held)),
            taken: 0,
            counted: [0; 64],
            icrc: self.fec.is_some(),
        };
        let from = env.out.len();
        let r = f(&mut self.req, &mut self.resp, &self.cfg, &mut env);
        if let Some(fec) = self.fec.as_mut() {
            fec.code_responses(env.out, from, !self.resp.read_pending());
            if self.req.fec_on() {
                fec.code_sent(env.out, from, self.req.sent_all());
            }
        }
        // As the kernel's drive does after each step: what was acknowledged goes back.
        let taken = env.taken;
        let counted = env.counted;
        check_counted(&before, &tallied(&self.req, &self.resp), &counted);
        add_counted(&mut self.counted, &counted);
        if let Some(d) = self.inflight.as_ref() {
            let now = if self.error { 0 } else { self.req.admitted_psns() };
            d.settle(&mut self.held, taken, now);
        }
        r
    }

    fn note(&mut self, o: Result<(), Fatal>) {
        if o.is_err() {
            self.error = true;
        }
    }
}

fn sges(list: &[(u32, u64, u32)]) -> SgeList {
    let mut l = SgeList::EMPTY;
    for &(lkey, addr, length) in list {
        assert!(l.push(Sge { addr, length, lkey }));
    }
    l
}

fn wqe(op: SendOp, opcode: SendOpcode, lkey: u32, addr: u64, len: u32) -> SendWqe {
    SendWqe {
        wr_id: addr ^ u64::from(len),
        opcode,
        flags: SendFlags::from_bits_truncate(SendFlags::SIGNALED),
        op,
        ud: None,
        payload: if len == 0 { Payload::None } else { Payload::Sges(sges(&[(lkey, addr, len)])) },
        length: len,
    }
}

/// Link behaviour, per packet, from a seeded xorshift.
#[derive(Clone, Copy, Debug)]
struct Link {
    loss_ppm: u32,
    dup_ppm: u32,
    reorder_ppm: u32,
    seed: u64,
}

impl Link {
    const CLEAN: Link = Link { loss_ppm: 0, dup_ppm: 0, reorder_ppm: 0, seed: 1 };
    fn roll(&mut self, ppm: u32) -> bool {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        (self.seed % 1_000_000) < u64::from(ppm)
    }
}

struct Net {
    a: Side,
    b: Side,
    link: Link,
    now: u64,
    delivered: u64,
    lost: u64,
    /// Of the packets lost, request packets whose PSN had reached the link before: resends
    /// (on a link that neither duplicates nor reorders).
    lost_resends: u64,
    /// The request PSNs that reached the link, by side (`true`: from A).
    on_wire: std::collections::HashSet<(bool, u32)>,
    /// The request PSNs delivered to the other side, and the resends put on the link of a
    /// PSN delivered before (a resend of what arrived).
    arrived: std::collections::HashSet<(bool, u32)>,
    resent_arrived: u64,
    /// READ response packets that reached the link, and those of them it lost.
    read_responses: u64,
    read_responses_lost: u64,
    /// A slow host: after every `.0` packets delivered the wire stands still for `.1`
    /// microseconds, and timers also fire while packets are in flight (as in the guests,
    /// whose timers do not wait for an idle link).
    pauses: Option<(u64, u64)>,
    /// Forged packets: before the wire's packet number `.0` (counted from 0 over the whole
    /// net's life) is delivered, a copy of it changed by `.1` goes to the same side.
    hostile: Vec<(u64, Mutation)>,
    /// Packets popped off the wire so far (the index `hostile` refers to).
    popped: u64,
    /// Forged packets the receive path refused as malformed, and those it took in.
    forged_refused: u64,
    forged_taken: u64,
    /// Repair packets the link lost.
    repairs_lost: u64,
    /// B's application: each event happens once this many packets were delivered, in order.
    b_events: VecDeque<(u64, SideEvent)>,
    /// B's application as perftest's receiver: each receive completion's WQE is posted
    /// again this long after it.
    b_reposts: Option<Reposts>,
    /// B's SR acknowledgments reach A advertising this window (SR-ACK-ETH byte 4, log2 of
    /// PSNs) instead of B's own, as from a peer of another build (`None`: as sent).
    b_window_log2: Option<u8>,
}

/// Receive WQEs B's application posts again, each at its time.
struct Reposts {
    delay_us: u64,
    /// Receive completions seen so far.
    seen: usize,
    due: VecDeque<(u64, RecvWqe)>,
    /// The WQEs by wr_id.
    wqes: Vec<RecvWqe>,
}

impl Net {
    /// Builds A's requester again as the QP's creation would, with A's configuration as it
    /// is now: a send ring of `slots` entries and the SR state `sr` (`None`: the standard
    /// format only).
    fn restart_a_requester(&mut self, slots: usize, sr: Option<SrSetup>) {
        let psn = Psn::new(100 + self.a.cfg.qpn);
        let empty = SqEntry::empty(wqe(SendOp::Send, SendOpcode::Send, 0, 0, 0));
        let sr = sr.map(|s| req_sr(s, psn));
        self.a.req = Requester::new(vec![empty; slots], psn, &self.a.cfg, sr);
    }

    /// Builds B's responder again as the QP's creation would, with the SR state `sr`.
    #[allow(dead_code, reason = "not every test file sets B's SR window")]
    fn restart_b_responder(&mut self, sr: SrSetup) {
        let epsn = self.b.resp.epsn();
        let fec = self.b.fec.is_some();
        self.b.resp = Responder::new(
            epsn,
            vec![None; MAX_RD_RES],
            Some(resp_sr(sr, epsn)),
            vec![None; RECV_WINDOW],
        )
        .with_fec(fec);
    }

    fn new(service: Service, pmtu: u32, link: Link) -> Net {
        Net::with_schemes(service, pmtu, link, Scheme::Gbn, Scheme::Gbn)
    }

    fn with_schemes(service: Service, pmtu: u32, link: Link, sa: Scheme, sb: Scheme) -> Net {
        Net::with_fec(service, pmtu, link, (sa, None), (sb, None))
    }

    /// A net whose sides run the scheme and FEC (`None`: off) given for each.
    fn with_fec(service: Service, pmtu: u32, link: Link, a: (Scheme, Option<FecParams>), b: (Scheme, Option<FecParams>)) -> Net {
        let mut a = Side::with_options(service, 17, 18, pmtu, a.0, a.1);
        let mut b = Side::with_options(service, 18, 17, pmtu, b.0, b.1);
        for s in [&mut a, &mut b] {
            s.mem.reg(0x100, 0x10_0000, 1 << 20, ALL);
            s.mem.reg(0x200, 0x20_0000, 1 << 20, ALL | FLUSH_GLOBAL);
            s.mem.reg(0x300, 0x30_0000, 4096, LOCAL_WRITE); // no remote rights
        }
        Net {
            a,
            b,
            link,
            now: 0,
            delivered: 0,
            lost: 0,
            lost_resends: 0,
            on_wire: Default::default(),
            arrived: Default::default(),
            resent_arrived: 0,
            read_responses: 0,
            read_responses_lost: 0,
            pauses: None,
            hostile: vec![],
            popped: 0,
            b_events: VecDeque::new(),
            b_reposts: None,
            b_window_log2: None,
            forged_refused: 0,
            forged_taken: 0,
            repairs_lost: 0,
        }
    }

    fn post(&mut self, a_side: bool, w: SendWqe) -> Result<(), PostError> {
        let s = if a_side { &mut self.a } else { &mut self.b };
        s.req.post(w, &s.cfg)
    }

    /// Hands one packet from A (`from_a`) or B to the other side; returns what it sent back.
    /// Bytes that do not parse are refused (the wire's own packets are checked in
    /// [`Net::run`]; a forged one may be anything), as the kernel's receive path does.
    fn deliver(&mut self, from_a: bool, bytes: &[u8]) -> Vec<Vec<u8>> {
        let dst = if from_a { &mut self.b } else { &mut self.a };
        if is_repair(bytes) {
            let Some(fec) = dst.fec.as_mut() else {
                dst.repairs_refused += 1;
                self.forged_refused += 1;
                return vec![];
            };
            // An ask or a take goes to the requester, which takes it or not; the encoder
            // follows. An ask for the responses goes to the responder.
            if let Some((rh, _)) = SideFec::parse(bytes).filter(|(rh, _)| !rh.kind.is_repair()) {
                if rh.kind == RhKind::RespAsk {
                    if dst.resp.on_fec_resp_ask(rh.epoch, rh.first_psn) {
                        fec.resp_enc.take_ask(rh.epoch, rh.params);
                        fec.asks_taken.push(rh.params);
                    }
                } else if rh.kind == RhKind::Take {
                    dst.req.on_fec_take(&dst.cfg, rh.first_psn);
                } else if dst.req.on_fec_ask(&dst.cfg, rh.epoch, rh.first_psn) {
                    fec.enc.take_ask(rh.epoch, rh.params);
                    fec.asks_taken.push(rh.params);
                }
                return vec![];
            }
            if SideFec::parse(bytes).is_some_and(|(rh, _)| rh.kind == RhKind::RespRepair) {
                return self.resp_repair(from_a, bytes);
            }
            let rebuilt = fec.on_repair(bytes, dst.resp.epsn());
            let mut out = rebuilt.map(|r| self.fec_pass(from_a, &r)).unwrap_or_default();
            let dst = if from_a { &mut self.b } else { &mut self.a };
            let mut released = vec![];
            let epsn = dst.resp.epsn();
            if let Some(fec) = dst.fec.as_mut() {
                fec.rx.settle(&mut |p| released.push(p));
                out.extend(fec.ask_due(epsn));
            }
            for p in released {
                out.extend(self.deliver_now(from_a, &p));
            }
            return out;
        }
        if dst.fec.is_none() {
            return self.deliver_now(from_a, bytes);
        }
        self.fec_pass(from_a, bytes)
    }

    /// A repair of responses for the requester of the side `from_a` sends to: what it
    /// rebuilds goes through [`Net::fec_pass`], then the held responses nothing will fill
    /// the gap for go on, and the ask due, if any, goes to the responder.
    fn resp_repair(&mut self, from_a: bool, bytes: &[u8]) -> Vec<Vec<u8>> {
        let dst = if from_a { &mut self.b } else { &mut self.a };
        let owed = dst.req.owed_response();
        let Some(fec) = dst.fec.as_mut() else {
            return vec![];
        };
        let rebuilt = fec.on_resp_repair(bytes, owed);
        let mut out = rebuilt.map(|r| self.fec_pass(from_a, &r)).unwrap_or_default();
        out.extend(self.release_responses(from_a));
        let dst = if from_a { &mut self.b } else { &mut self.a };
        let owed = dst.req.owed_response().unwrap_or(dst.req.una());
        if let Some(fec) = dst.fec.as_mut() {
            out.extend(fec.resp_ask_due(owed));
        }
        out
    }

    /// The responses the requester's shim held that may go on now, each delivered as the
    /// response the requester waits for moves.
    fn release_responses(&mut self, from_a: bool) -> Vec<Vec<u8>> {
        let mut out = vec![];
        loop {
            let dst = if from_a { &mut self.b } else { &mut self.a };
            let owed = dst.req.owed_response();
            let Some(p) = dst.fec.as_mut().and_then(|f| f.resp_rx.release(owed)) else {
                return out;
            };
            out.extend(self.deliver_now(from_a, &p));
        }
    }

    /// A response for a side with FEC: coded, then held while a response before it may
    /// still be rebuilt, or delivered after what the shim held.
    fn fec_pass_response(&mut self, from_a: bool, bytes: &[u8], psn: Psn) -> Vec<Vec<u8>> {
        let dst = if from_a { &mut self.b } else { &mut self.a };
        let (una, owed) = (dst.req.una(), dst.req.owed_response());
        let Some(fec) = dst.fec.as_mut() else {
            return self.deliver_now(from_a, bytes);
        };
        fec.resp_rx.code(psn, 0, bytes, una);
        let mut out = vec![];
        match fec.resp_rx.pass(psn, bytes.to_vec(), owed) {
            RespPass::Held => return out,
            RespPass::Now(p) => out.extend(self.deliver_now(from_a, &p)),
            RespPass::AfterHeld(p) => {
                out.extend(self.release_responses(from_a));
                out.extend(self.deliver_now(from_a, &p));
            }
        }
        out.extend(self.release_responses(from_a));
        out
    }

    /// A packet for a side with FEC: a request is coded, then delivered with what it puts
    /// in order, or held; a response likewise ([`Net::fec_pass_response`]).
    fn fec_pass(&mut self, from_a: bool, bytes: &[u8]) -> Vec<Vec<u8>> {
        let dst = if from_a { &mut self.b } else { &mut self.a };
        let pmtu = dst.cfg.pmtu;
        if let Some(p) = PacketRepr::parse(bytes)
            .ok()
            .filter(|p| p.bth.opcode.info().is_some_and(|i| !is_request(i.kind)))
        {
            let psn = p.bth.psn;
            return self.fec_pass_response(from_a, bytes, psn);
        }
        // A READ request stands for its responses' PSNs.
        let psn = PacketRepr::parse(bytes)
            .ok()
            .filter(|p| p.bth.opcode.info().is_some_and(|i| is_request(i.kind)))
            .map(|p| match (p.bth.opcode.info().map(|i| i.kind), p.ext.reth) {
                (Some(OpKind::RdmaReadRequest), Some(r)) => (p.bth.psn, r.dma_len.div_ceil(pmtu).max(1)),
                _ => (p.bth.psn, 1),
            });
        let (Some((psn, span)), Some(fec)) = (psn, dst.fec.as_mut()) else {
            return self.deliver_now(from_a, bytes);
        };
        // As the kernel: a UC request carrying the offer is answered by a take, when due.
        let mut out = vec![];
        let resv7 = PacketRepr::parse(bytes).map_or(0, |p| p.bth.resv7);
        if let Some(rh) = fec.rx.take_for(dst.cfg.service == Service::Uc, resv7, psn, fec.peer_qpn) {
            fec.takes_sent += 1;
            out.push(repair_packet(&rh, &[]));
        }
        let epsn = dst.resp.epsn();
        fec.rx.code(psn, 0, bytes, epsn);
        // As the kernel: in order with nothing held, straight on.
        if fec.rx.pass_in_order(psn, span, epsn) {
            out.extend(self.deliver_now(from_a, bytes));
            return out;
        }
        let mut released = vec![];
        fec.rx.pass(psn, span, bytes.to_vec(), epsn, &mut |p| released.push(p));
        for p in released {
            out.extend(self.deliver_now(from_a, &p));
        }
        out
    }

    /// Hands one packet to the side it is for, as it is.
    fn deliver_now(&mut self, from_a: bool, bytes: &[u8]) -> Vec<Vec<u8>> {
        let advertised;
        let bytes = match self.b_window_log2 {
            // An SR ACKNOWLEDGE (opcode 0x11, TVer 1): SR-ACK-ETH follows the 12-byte BTH.
            Some(w) if !from_a && bytes.len() > 16 && bytes[0] == 0x11 && bytes[1] & 0xf == 1 => {
                advertised = [&bytes[..16], &[w], &bytes[17..]].concat();
                &advertised[..]
            }
            _ => bytes,
        };
        let mut out = vec![];
        let Some((p, info)) = PacketRepr::parse(bytes).ok().and_then(|p| Some((p, p.bth.opcode.info()?))) else {
            self.forged_refused += 1;
            return out;
        };
        let now = self.now;
        let dst = if from_a { &mut self.b } else { &mut self.a };
        if dst.error {
            return out;
        }
        let request = is_request(info.kind);
        let o = dst.with_env(now, &mut out, |req, resp, cfg, env| {
            if !request {
                return req.on_response(env, cfg, &p);
            }
            let mut o = resp.on_request(env, cfg, &p);
            // The kernel's QP work: the rest of a READ's responses, batch by batch.
            while o.is_ok() && resp.read_pending() {
                o = resp.pump(env, cfg, READ_BUDGET);
            }
            o
        });
        dst.note(o);
        // As the kernel does: a responder deadline already due (SRNIC's slow path)
        // runs right after the packet, in the QP's work.
        if !dst.error && dst.resp.deadline().is_some_and(|d| d <= now) {
            let o = dst.with_env(now, &mut out, |_, resp, cfg, env| resp.on_timer(env, cfg));
            dst.note(o);
        }
        out
    }

    /// Runs `a_side`'s requester; returns what it sent.
    fn send(&mut self, a_side: bool) -> Vec<Vec<u8>> {
        let now = self.now;
        let mut out = vec![];
        let s = if a_side { &mut self.a } else { &mut self.b };
        let o = s.with_env(now, &mut out, |req, _, cfg, env| req.run(env, cfg));
        s.note(o);
        out
    }

    /// Runs until both sides are idle (or `max_steps`); returns false on a stall.
    fn run(&mut self, max_steps: usize) -> bool {
        let mut wire: VecDeque<(bool, Vec<u8>)> = VecDeque::new();
        for a_side in [true, false] {
            let now = self.now;
            let mut out = vec![];
            let s = if a_side { &mut self.a } else { &mut self.b };
            let o = s.with_env(now, &mut out, |req, _, cfg, env| req.run(env, cfg));
            s.note(o);
            wire.extend(out.into_iter().map(|p| (a_side, p)));
        }
        let mut paused_at = 0;
        for _ in 0..max_steps {
            if let Some((every, pause_us)) = self.pauses {
                if self.delivered.is_multiple_of(every) && self.delivered != paused_at {
                    paused_at = self.delivered;
                    // The timers due within the pause fire at their time.
                    let end = self.now + pause_us;
                    while let Some(t) = self.next_deadline().filter(|&t| t <= end) {
                        self.now = self.now.max(t);
                        self.fire_timers(&mut wire);
                    }
                    self.now = end;
                }
                self.fire_timers(&mut wire);
            }
            if let Some((from_a, bytes)) = wire.pop_front() {
                self.now += 1;
                let k = self.popped;
                self.popped += 1;
                let dst_failed = if from_a { self.b.error } else { self.a.error };
                let forged: Vec<Vec<u8>> = if dst_failed {
                    vec![]
                } else {
                    self.hostile.iter().filter(|(at, _)| *at == k).map(|(_, m)| m.apply(&bytes)).collect()
                };
                for f in forged {
                    let refused = self.forged_refused;
                    let out = self.deliver(from_a, &f);
                    self.forged_taken += u64::from(self.forged_refused == refused);
                    wire.extend(out.into_iter().map(|p| (!from_a, p)));
                }
                if is_repair(&bytes) {
                    if self.link.roll(self.link.loss_ppm) {
                        self.repairs_lost += 1;
                        continue;
                    }
                    if self.link.roll(self.link.dup_ppm) {
                        wire.push_back((from_a, bytes.clone()));
                    }
                    let out = self.deliver(from_a, &bytes);
                    wire.extend(out.into_iter().map(|p| (!from_a, p)));
                    continue;
                }
                let p = PacketRepr::parse(&bytes).expect("valid packet on the wire");
                let request = p.bth.opcode.info().is_some_and(|i| is_request(i.kind));
                let resend = request && !self.on_wire.insert((from_a, p.bth.psn.get()));
                self.resent_arrived += u64::from(resend && self.arrived.contains(&(from_a, p.bth.psn.get())));
                let read_response = p.bth.opcode.info().is_some_and(|i| i.kind == OpKind::RdmaReadResponse);
                self.read_responses += u64::from(read_response);
                let lost = self.link.roll(self.link.loss_ppm);
                if trace() {
                    let (dir, fate) = (if from_a { "A>" } else { "<B" }, if lost { "LOST" } else { "" });
                    let acks = (p.ext.aeth, p.ext.sr_ack_eth);
                    eprintln!("t={} {dir} {:?} psn {} {acks:?} {fate}", self.now, p.bth.opcode, p.bth.psn.get());
                }
                if lost {
                    self.lost += 1;
                    self.lost_resends += u64::from(resend);
                    self.read_responses_lost += u64::from(read_response);
                    continue;
                }
                if self.link.roll(self.link.dup_ppm) {
                    wire.push_back((from_a, bytes.clone()));
                }
                if self.link.roll(self.link.reorder_ppm) && !wire.is_empty() {
                    let at = wire.len().min(3);
                    wire.insert(at, (from_a, bytes));
                    continue;
                }
                self.delivered += 1;
                if request {
                    self.arrived.insert((from_a, p.bth.psn.get()));
                }
                self.run_b_events();
                let out = self.deliver(from_a, &bytes);
                wire.extend(out.into_iter().map(|p| (!from_a, p)));
                self.run_reposts();
                continue;
            }
            // Nothing in flight: jump to the next timer or repost.
            let repost = self.b_reposts.as_ref().and_then(|r| r.due.front().map(|d| d.0));
            let Some(t) = self.next_deadline().into_iter().chain(repost).min() else {
                return self.a.req.is_empty() && self.b.req.is_empty();
            };
            self.now = self.now.max(t);
            self.run_reposts();
            self.fire_timers(&mut wire);
        }
        false
    }

    /// B's receiver application: notes the new receive completions and posts again the
    /// WQEs due by now.
    fn run_reposts(&mut self) {
        let Some(r) = self.b_reposts.as_mut() else {
            return;
        };
        for c in &self.b.recv_cqes[r.seen..] {
            if let Some(w) = r.wqes.get(c.wr_id as usize) {
                r.due.push_back((self.now + r.delay_us, *w));
            }
        }
        r.seen = self.b.recv_cqes.len();
        while r.due.front().is_some_and(|d| d.0 <= self.now) {
            if let Some((_, w)) = r.due.pop_front() {
                self.b.rq.push_back(w);
            }
        }
    }

    /// B's application events that are due by now.
    fn run_b_events(&mut self) {
        while self.b_events.front().is_some_and(|&(at, _)| at <= self.delivered) {
            match self.b_events.pop_front() {
                Some((_, SideEvent::PostRecv(w))) => self.b.rq.push_back(*w),
                Some((_, SideEvent::Revoke { key, rights })) => {
                    if let Some(r) = self.b.mem.regions.iter_mut().find(|r| r.key == key) {
                        r.access &= !rights;
                    }
                }
                None => {}
            }
        }
    }

    /// The earliest timer deadline of either side (a side in the Error state has none).
    fn next_deadline(&self) -> Option<u64> {
        [&self.a, &self.b]
            .into_iter()
            .filter(|s| !s.error)
            .flat_map(|s| [s.req.deadline(), s.resp.deadline()])
            .flatten()
            .min()
    }

    /// Runs each side's timers that are due, onto `wire`.
    fn fire_timers(&mut self, wire: &mut VecDeque<(bool, Vec<u8>)>) {
        for a_side in [true, false] {
            let now = self.now;
            let mut out = vec![];
            let s = if a_side { &mut self.a } else { &mut self.b };
            if s.error {
                continue;
            }
            if s.resp.deadline().is_some_and(|d| d <= now) {
                let o = s.with_env(now, &mut out, |_, resp, cfg, env| resp.on_timer(env, cfg));
                s.note(o);
            }
            if s.req.deadline().is_none_or(|d| d > now) {
                wire.extend(out.into_iter().map(|p| (a_side, p)));
                continue;
            }
            let o = s.with_env(now, &mut out, |req, _, cfg, env| req.on_timer(env, cfg));
            s.note(o);
            wire.extend(out.into_iter().map(|p| (a_side, p)));
        }
    }
}

/// RC_TRACE=1 (with --nocapture): every packet on the wire, and its fate, to stderr.
fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("RC_TRACE").is_some())
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn recv_wqe(wr_id: u64, lkey: u32, addr: u64, len: u32) -> RecvWqe {
    RecvWqe { wr_id, sges: sges(&[(lkey, addr, len)]), length: len }
}


const SR_SCHEMES: [Scheme; 4] = [Scheme::Fasr, Scheme::Srnic, Scheme::Irn, Scheme::Melo];

/// Go-back-N and every SR scheme.
const ALL_SCHEMES: [Scheme; 5] = [Scheme::Gbn, Scheme::Fasr, Scheme::Srnic, Scheme::Irn, Scheme::Melo];

/// Gives both sides' SR resources back and checks the device pools are empty again.
fn release_and_check_pools(n: &mut Net) {
    for s in [&mut n.a, &mut n.b] {
        if let Some(sr) = s.req.sr_mut() {
            sr.release(&mut *s.shared);
        }
        if let Some(sr) = s.resp.sr_mut() {
            sr.release(&mut *s.shared);
        }
        let (sr, bits) = (s.shared.sr_pool().usage(), s.shared.bits_pool().usage());
        assert_eq!((sr.units, sr.blocks, bits.blocks), (0, 0, 0));
    }
}

thread_local! {
    /// ACKNOWLEDGE packets (ACK, NAK, SACK, ...) put on the wire, on this thread's nets.
    static ACK_PACKETS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

// Forged packets: the receive path, from bytes to the transport's state, under attack.

/// A change to a packet's bytes (BTH first; the ICRC is not checked on this path, as if
/// the forger had computed it).
#[derive(Clone, Debug)]
enum Mutation {
    /// Byte `at` (modulo the length) XORed with `mask`.
    Flip { at: usize, mask: u8 },
    /// The big-endian u32 at `at` within the first 64 bytes (the headers) set to `value`.
    Set32 { at: usize, value: u32 },
    /// The BTH PSN moved by the delta (modulo 2^24).
    Psn(i32),
    /// The BTH opcode replaced.
    Opcode(u8),
    /// The packet cut to a length (modulo its length + 1).
    Truncate(usize),
    /// Bytes appended.
    Extend(Vec<u8>),
}

impl Mutation {
    fn apply(&self, b: &[u8]) -> Vec<u8> {
        let mut v = b.to_vec();
        match *self {
            Mutation::Flip { at, mask } => {
                let i = at % v.len();
                v[i] ^= mask;
            }
            Mutation::Set32 { at, value } => {
                let head = v.len().min(64);
                if head >= 4 {
                    let i = at % (head - 3);
                    v[i..i + 4].copy_from_slice(&value.to_be_bytes());
                }
            }
            Mutation::Psn(d) => {
                let psn = u32::from_be_bytes([0, v[9], v[10], v[11]]);
                let moved = psn.wrapping_add(d as u32) & 0xFF_FFFF;
                v[9..12].copy_from_slice(&moved.to_be_bytes()[1..]);
            }
            Mutation::Opcode(o) => v[0] = o,
            Mutation::Truncate(n) => v.truncate(n % (v.len() + 1)),
            Mutation::Extend(ref e) => v.extend_from_slice(e),
        }
        v
    }
}

include!("rc_fec.rs");
