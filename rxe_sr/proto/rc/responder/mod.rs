// SPDX-License-Identifier: GPL-2.0
//! The responder of a connected QP (IBTA 9.7.4.2, 9.7.5.2; rdma_rxe's rxe_resp.c).
//!
//! Every request packet is checked against ePSN first:
//! - PSN == ePSN: the opcode must continue the message in progress (or start one); the
//!   packet is executed and ePSN advances. A SEND that finds no receive WQE gets an RNR
//!   NAK (ePSN stays, the requester retries later); a bad R_Key or range gets NAK
//!   "remote access error", a malformed request NAK "invalid request", and the QP enters
//!   the Error state, as IBTA's class B/C errors require.
//! - PSN after ePSN (RC): a packet was lost; drop it and send one NAK "PSN sequence error"
//!   per gap (rdma_rxe's `sent_psn_nak`).
//! - PSN before ePSN (RC): a duplicate. Each SEND and WRITE packet is re-acknowledged,
//!   with the PSN of the last packet an ACK could cover (`ack_psn`), never a READ
//!   response's PSN: a plain ACK at or past a READ's PSNs would tell the requester that the
//!   READ is done, or that its responses were lost (rdma_rxe's `resp.ack_psn`); an RDMA
//!   READ is executed again from the PSN it names (the requester resumes reads that way);
//!   an atomic is answered from the saved result, never executed twice.
//!
//! UC: no ACKs or NAKs; a gap drops the rest of the message in progress, and the next
//! message starts at the first FIRST/ONLY packet seen.
//!
//! ACKs are sent when a packet asks for one (AckReq), carrying the PSN and the MSN (the
//! count of messages completed, 24 bits).
//!
//! On a device running an SR scheme every response echoes the capability a standard
//! request carried, and the responder takes requests in the SR format (BTH TVer = 1)
//! from the first one on (`selective`): out-of-order packets are placed where they belong
//! (an RDMA WRITE packet by its own RETH, a SEND packet by its MSN-ETH into a window of
//! receive WQEs fetched ahead), the scheme's engine decides what is delivered and when
//! RCV-NXT advances, and messages complete in order as it does. READs and atomics execute
//! only in order, at RCV-NXT (once and in order, whatever arrived after them).
//!
//! - `request`: one request packet: the ePSN and opcode-sequence checks, dispatch, and
//!   the answer to what executing it gave (ACK, RNR NAK, fatal NAK).
//! - `send`, `write`, `read`, `atomic`: executing SEND, RDMA WRITE, RDMA READ (the
//!   READ response stream) and the atomics.
//! - `resources`: the READ/atomic resources kept for duplicates ([`RdRes`]).
//! - `duplicate`: requests before ePSN.
//! - `ack`: header-only responses: ACK, NAK, RNR NAK, atomic ACK.
//! - `selective`: the SR format: its state, the engine, feedback.
//! - `sr_request`: one SR-format request: placement, ordered operations, refusals.
//! - `sack_coalesce`: FaSR's SACKs that only move sack-high, held back.
//! - `recv_window`: SR: receive WQEs taken ahead, messages completed in order.

mod ack;
mod atomic;
mod duplicate;
mod flush;
mod read;
mod recv_window;
mod request;
mod resources;
mod sack_coalesce;
mod selective;
mod send;
mod sr_request;
mod write;

use core::ops::DerefMut;

use self::read::ReadStream;
use self::write::WriteCur;
use crate::proto::psn::Psn;
use crate::proto::rc::{nak, packets, RcEnv, RcEvent, RemoteErr};
use crate::proto::wire::caps::CapAnswer;
use crate::proto::wire::fec_caps::FecResponderCaps;
use crate::proto::wire::{Opcode, PacketRepr};
use crate::proto::words::WindowWords;
use crate::uabi::cqe::WcStatus;
use crate::uabi::recv_wqe::RecvWqe;

pub use self::recv_window::{RecvSlot, RECV_WINDOW, SRQ_RECV_WINDOW};
pub use self::resources::RdRes;
pub use self::selective::{RespSr, RespSrCounters};

/// READ and atomic resources kept at most (the device's `max_qp_rd_atom`: the largest
/// `max_dest_rd_atomic` a QP may have).
pub const MAX_RD_RES: usize = 128;

/// READ response packets sent per call at most (a new READ's first batch, each
/// [`Responder::pump`]).
pub const READ_BUDGET: u32 = 64;

/// The longest message (the device's `max_msg_sz`).
pub const MAX_MSG_SZ: u32 = 1 << 31;

/// The message being received. (Held by value in the QP: no allocation in the core.)
#[derive(Clone, Copy, Debug)]
#[allow(clippy::large_enum_variant)]
enum Cur {
    /// A multi-packet SEND into `wqe`, `offset` bytes placed.
    Send { wqe: RecvWqe, offset: u32 },
    /// A multi-packet RDMA WRITE.
    Write(WriteCur),
}

/// The responder's tallies of its events ([`RcEvent`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RespCounters {
    /// Out-of-sequence request packets (`rcvd_seq_err`).
    pub seq_err: u64,
    /// Duplicate request packets (`duplicate_request`).
    pub duplicates: u64,
    /// RNR NAKs sent (`send_rnr_nak`).
    pub rnr_naks_sent: u64,
    /// Error NAKs sent.
    pub err_naks_sent: u64,
    /// UC packets dropped for a gap.
    pub uc_dropped: u64,
    /// Duplicate READ or atomic requests that matched no saved resource: dropped.
    pub dup_unmatched: u64,
    /// SR-format requests on a QP without SR (or on UC): dropped.
    pub sr_refused: u64,
    /// Of the duplicates, READ repairs dropped because the READ in progress was still to
    /// send every response they asked for ([`Responder::repair_redundant`]).
    pub repairs_redundant: u64,
    /// Requests that arrived while READ responses were still to go out and were not held
    /// back for them (see [`Responder::read_pending`]): dropped, as the requester resends.
    pub busy_dropped: u64,
}

impl RespCounters {
    /// Adds `n` to the tally of `ev`, if it is one of these.
    fn record(&mut self, ev: RcEvent, n: u64) {
        let c = match ev {
            RcEvent::OutOfSequence => &mut self.seq_err,
            RcEvent::Duplicate => &mut self.duplicates,
            RcEvent::RnrNakSent => &mut self.rnr_naks_sent,
            RcEvent::ErrNakSent => &mut self.err_naks_sent,
            RcEvent::UcDropped => &mut self.uc_dropped,
            RcEvent::DupUnmatched => &mut self.dup_unmatched,
            RcEvent::SrUnsupported => &mut self.sr_refused,
            RcEvent::RepairRedundant => &mut self.repairs_redundant,
            RcEvent::BusyDropped => &mut self.busy_dropped,
            _ => return,
        };
        *c += n;
    }
}

/// What made the responder move its QP to the Error state: the request it refused, for
/// the kernel log (rdma_rxe prints the like with rxe_dbg_qp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FatalNote {
    /// The refused request's PSN (ePSN: it was in sequence).
    pub psn: Psn,
    /// Its BTH opcode.
    pub opcode: u8,
    /// Its payload length.
    pub payload_len: u32,
    /// The NAK syndrome's code sent back (`nak::*`).
    pub nak: u8,
    /// The completion status of the receive WQE in progress, if there was one.
    pub status: WcStatus,
    /// The message in progress when it arrived.
    pub in_progress: InProgress,
    /// True when the opcode did not continue (or start) a message as the one in progress
    /// required; false when executing it failed.
    pub out_of_sequence: bool,
}

/// The kind of message a responder was in the middle of receiving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InProgress {
    /// Between messages.
    None,
    /// A multi-packet SEND.
    Send,
    /// A multi-packet RDMA WRITE.
    Write,
}

impl InProgress {
    /// For the kernel log.
    pub const fn describe(self) -> &'static str {
        match self {
            InProgress::None => "no message",
            InProgress::Send => "a SEND",
            InProgress::Write => "an RDMA WRITE",
        }
    }
}

/// The responder of one connected QP, keeping its READ/atomic resources in `R`; on a
/// device running an SR scheme, its window of receive WQEs in `W` and its SR state in `E`.
pub struct Responder<
    R: DerefMut<Target = [Option<RdRes>]>,
    W: DerefMut<Target = [Option<RecvSlot>]>,
    E,
> {
    epsn: Psn,
    /// The PSN after the last SEND, WRITE or atomic packet executed: a duplicate SEND or
    /// WRITE is acknowledged at `ack_psn - 1`. READs move ePSN but not this.
    ack_psn: Psn,
    msn: u32,
    nak_sent: bool,
    /// SR format: the RCV-NXT for which a READ or atomic that arrived early drew its NAK
    /// (one per RCV-NXT; see `sr_ordered`).
    ordered_nak: Option<Psn>,
    /// SR format: the PSNs (first, count) of the ordered operation last executed at
    /// RCV-NXT while RCV-NXT has not passed them yet (an engine may move it later, as
    /// SRNIC's slow path does): a copy arriving meanwhile is a duplicate, never run again.
    ordered_run: Option<(Psn, u32)>,
    cur: Option<Cur>,
    /// A receive WQE taken but not used (a UC message that broke off): used first.
    spare: Option<RecvWqe>,
    /// UC: dropping packets until the next message starts.
    uc_dropping: bool,
    /// READ and atomic resources, a ring of `max_dest_rd_atomic` entries (at most its
    /// length).
    res: R,
    res_next: usize,
    /// READ responses still to send.
    stream: Option<ReadStream>,
    /// SR format: a new READ's responses set aside while `stream` (then a replay) serves
    /// a repair first ([`Responder::repair_goes_ahead`]); `Some` only while `stream` is a
    /// replay.
    paused: Option<ReadStream>,
    /// Statistics.
    pub counters: RespCounters,
    /// Set when a request moved the QP to Error; the driver logs and clears it.
    pub fatal: Option<FatalNote>,
    /// Messages that consumed a receive WQE (SEND, RDMA WRITE with immediate) completed:
    /// the MSN-ETH number of the next one (24 bits).
    recv_msn: u32,
    /// BTH TVer and Resv7 of the responses to the request being handled.
    answer: CapAnswer,
    /// Selective retransmission (`None`: standard RoCEv2 only).
    sr: Option<E>,
    /// SR: receive WQEs fetched ahead, slot `msn % len` for message `msn`.
    window: W,
    /// The device runs FEC: the FEC offer is echoed, and the responses of coded requests
    /// are coded.
    fec: FecResponderCaps,
}

/// Result of executing one in-sequence packet.
enum Exec {
    /// Done: advance ePSN by this many PSNs; acknowledge if asked.
    Done(u32),
    /// Done, and the answer (READ responses, atomic ACK) was already sent.
    Answered(u32),
    /// No receive WQE: RNR NAK.
    Rnr,
    /// Fatal: NAK with this code; complete the receive WQE in progress with the status.
    Fatal(u8, WcStatus),
    /// Fatal, already answered and noted (a READ whose first responses failed).
    Failed,
}

impl Exec {
    /// NAK "invalid request" (a malformed request, or one the QP cannot take); the receive
    /// WQE in progress completes with a remote invalid request error.
    const fn invalid_request() -> Self {
        Exec::Fatal(nak::INVALID_REQUEST, WcStatus::RemInvReqErr)
    }

    /// NAK "remote access error" (a bad R_Key, range or rights); the receive WQE in
    /// progress completes with a remote access error.
    const fn remote_access_error() -> Self {
        Exec::Fatal(nak::REMOTE_ACCESS, WcStatus::RemAccessErr)
    }

    /// NAK "remote operational error" (the responder's own receive WQE is bad); the WQE in
    /// progress completes with a remote operation error.
    const fn remote_op_error() -> Self {
        Exec::Fatal(nak::REMOTE_OP, WcStatus::RemOpErr)
    }

    /// The NAK of a refused remote access: "remote access error" or "invalid request", as
    /// [`RemoteErr`] says.
    const fn remote_refused(e: RemoteErr) -> Self {
        match e {
            RemoteErr::Access => Exec::remote_access_error(),
            RemoteErr::Invalid => Exec::invalid_request(),
        }
    }
}

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// A responder expecting `rq_psn` first, keeping its READ/atomic resources in `res`
    /// (cleared here; [`MAX_RD_RES`] entries cover any `max_dest_rd_atomic`), with `sr`
    /// and a `window` (up to [`RECV_WINDOW`] slots are used) when the device runs an SR
    /// scheme.
    pub fn new(rq_psn: Psn, mut res: R, sr: Option<E>, mut window: W) -> Self {
        res.fill(None);
        window.fill(None);
        Responder {
            epsn: rq_psn,
            ack_psn: rq_psn,
            msn: 0,
            nak_sent: false,
            ordered_nak: None,
            ordered_run: None,
            cur: None,
            spare: None,
            uc_dropping: false,
            res,
            res_next: 0,
            stream: None,
            paused: None,
            counters: RespCounters {
                seq_err: 0,
                duplicates: 0,
                rnr_naks_sent: 0,
                err_naks_sent: 0,
                uc_dropped: 0,
                dup_unmatched: 0,
                sr_refused: 0,
                repairs_redundant: 0,
                busy_dropped: 0,
            },
            fatal: None,
            recv_msn: 0,
            answer: CapAnswer { tver: 0, resv7: 0 },
            sr,
            window,
            fec: FecResponderCaps::new(false),
        }
    }

    /// The responder of a device that runs FEC (`on`): it echoes the FEC offer and codes
    /// the responses of coded requests.
    pub fn with_fec(mut self, on: bool) -> Self {
        self.fec = FecResponderCaps::new(on);
        self
    }

    /// The marks of the first transmission of a response (READ responses, atomic ACK) to
    /// the request `p`: coded when `p` was ([`FecResponderCaps::coded_marks`]).
    fn first_answer(&self, p: &PacketRepr<'_>) -> CapAnswer {
        match self.fec.coded_marks(p.bth.resv7) {
            Some(resv7) => CapAnswer {
                resv7,
                ..self.answer
            },
            None => self.answer,
        }
    }

    /// The requester asked for other parameters for the responses as parameter epoch
    /// `epoch`, waiting for the response of PSN `owed`: true when taken (the caller's
    /// encoder of responses follows). Only an ask whose `owed` lies in a READ or atomic
    /// the responder keeps can come from the requester now; any other changes nothing.
    pub fn on_fec_resp_ask(&mut self, epoch: u8, owed: Psn) -> bool {
        self.owes(owed) && self.fec.take_ask(epoch)
    }

    /// ePSN (`ibv_query_qp`'s rq_psn).
    pub const fn epsn(&self) -> Psn {
        self.epsn
    }

    /// True while READ responses remain to be sent: the caller runs [`Responder::pump`]
    /// and holds back the QP's further requests until it is false.
    pub const fn read_pending(&self) -> bool {
        self.stream.is_some() || self.paused.is_some()
    }

    /// True for a request that is taken at once although READ responses are still going
    /// out: an SR-format READ request before ePSN, asking again for responses the requester
    /// found missing. The requester places READ responses by PSN, so the repair is served
    /// ahead of the new READs' responses still to send (they wait, set aside) instead of
    /// behind every one of them; in the standard format responses keep PSN order.
    ///
    /// A repair waits behind a repair still being sent (a replay is never cut short, and
    /// never finished in one go: it may be millions of responses, sent in budgets).
    pub fn repair_goes_ahead(&self, p: &PacketRepr<'_>) -> bool {
        p.is_sr()
            && p.bth.opcode == Opcode::RC_RDMA_READ_REQUEST
            && p.bth.psn.before(self.epsn)
            && self.sr_active()
            && !self.stream.is_some_and(|s| s.replay)
    }

    /// True for a repair (see [`Self::repair_goes_ahead`]) whose every response is still to
    /// be sent by the READ stream in progress or set aside: the requester asked too early
    /// (a responder slower than its probe bound), not after a loss.
    ///
    /// Choice: such a repair is dropped (counted) rather than served. Serving it would
    /// preempt the stream, which then sends the same responses again, so a slow responder
    /// falls ever further behind the probes and the requester times out.
    pub fn repair_redundant(&self, p: &PacketRepr<'_>, pmtu: u32) -> bool {
        let Some(reth) = p.ext.reth else {
            return false;
        };
        let (first, n) = (p.bth.psn, packets(reth.dma_len, pmtu).max(1));
        [self.stream, self.paused].into_iter().flatten().any(|s| {
            let next = s.psn.add(s.sent);
            let end = s.psn.add(s.n);
            !first.before(next) && !end.before(first.add(n))
        })
    }

    /// Gives up the receive WQEs this responder holds, oldest first, when the QP enters the
    /// Error state or goes: one that holds none of its message yet (a spare, one taken
    /// ahead) goes to `give_back` (a QP on a shared receive queue returns it there), and
    /// to `flushed` if that refuses it; `flushed` gets the `wr_id` of the rest (a message
    /// in progress). READ responses not yet sent are forgotten too.
    pub fn drop_held(
        &mut self,
        mut flushed: impl FnMut(u64),
        mut give_back: impl FnMut(&RecvWqe) -> bool,
    ) {
        self.stream = None;
        self.paused = None;
        if let Some(Cur::Send { wqe, .. }) = self.cur.take() {
            flushed(wqe.wr_id);
        }
        if let Some(w) = self.spare.take() {
            if !give_back(&w) {
                flushed(w.wr_id);
            }
        }
        self.drop_window(&mut flushed, &mut give_back);
    }

    /// Counts one event `ev` of the responder: in its tallies, and through `env`.
    fn count(&mut self, env: &mut dyn RcEnv, ev: RcEvent) {
        self.counters.record(ev, 1);
        env.count(ev, 1);
    }

    fn take_recv(&mut self, env: &mut dyn RcEnv) -> Option<Result<RecvWqe, (u64, WcStatus)>> {
        match self.spare.take() {
            Some(w) => Some(Ok(w)),
            None => env.take_recv(),
        }
    }

    fn bump_msn(&mut self) {
        self.msn = (self.msn + 1) & 0x00ff_ffff;
    }

    fn bump_recv_msn(&mut self) {
        self.recv_msn = (self.recv_msn + 1) & 0x00ff_ffff;
    }
}
