// SPDX-License-Identifier: GPL-2.0
//! The connected transports (RC and UC, IBTA chapter 9) as pure state machines.
//!
//! - [`requester`]: turns send work requests into request packets (segmentation by the
//!   path MTU, PSN assignment, the AckReq bit), and, as the completer, turns the
//!   responder's ACKs, NAKs, RDMA READ responses and atomic ACKs into completions. Loss
//!   recovery (UNACK, the retransmission timer, go-back-N) is the
//!   [`recovery::gbn`](super::recovery::gbn) engine's.
//! - [`responder`]: checks incoming request packets against ePSN and the opcode sequence,
//!   executes them (receive WQEs for SEND, memory for RDMA WRITE / READ / atomics), and
//!   answers with ACK, NAK, RNR NAK, READ responses or atomic ACKs.
//!
//! Neither side touches memory, rings, packets' bytes or a clock itself: they ask an
//! [`RcEnv`], which the kernel implements over MRs, the shared rings and skbs, and the host
//! tests over plain buffers and a simulated lossy link. Time is in microseconds. What they
//! count goes to the [`RcEnv`] as it happens ([`event`]).

pub mod dev_inflight;
pub mod event;
pub mod mw;
pub mod requester;
pub mod responder;
pub mod sr;
pub mod timer_hold;

use crate::proto::recovery::any::SharedPools;
use crate::proto::wire::sr_ext::{SrAckEth, SR_WINDOW_LOG2_MAX, SR_WINDOW_LOG2_MIN};
use crate::proto::wire::PacketRepr;
use crate::uabi::cqe::{Completion, WcStatus};
use crate::uabi::recv_wqe::RecvWqe;
use crate::uabi::send_wqe::SendOp;
use crate::uabi::sge::SgeList;

pub use self::event::RcEvent;

/// The connected service of a QP.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Service {
    /// Reliable Connected: acknowledged, retransmitted.
    Rc,
    /// Unreliable Connected: no ACKs; a message with a missing packet is dropped.
    Uc,
}

/// The QP attributes both sides work with (IBTA 11.2.4.2), fixed while the QP is in RTS.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RcConfig {
    /// RC or UC.
    pub service: Service,
    /// Our QPN (completions' `qp_num`).
    pub qpn: u32,
    /// The remote QPN (BTH DestQP of every packet we send).
    pub dest_qpn: u32,
    /// Path MTU in bytes (256 .. 4096).
    pub pmtu: u32,
    /// Local ACK timeout in microseconds (IBTA: 4.096 µs * 2^timeout); 0 means no timer.
    pub timeout_us: u64,
    /// Retries after a timeout or a sequence-error NAK before RETRY_EXC_ERR (0..=7).
    pub retry_cnt: u8,
    /// Retries after an RNR NAK before RNR_RETRY_EXC_ERR; 7 means unlimited.
    pub rnr_retry: u8,
    /// Responder: the RNR NAK timer code we send (0..=31).
    pub min_rnr_timer: u8,
    /// Requester: RDMA READ / atomic requests outstanding at most (at least 1 is allowed).
    pub max_rd_atomic: u32,
    /// Responder: READ / atomic resources (`max_dest_rd_atomic`): how many of them are kept
    /// for duplicates; 0 refuses READs and atomics.
    pub max_dest_rd_atomic: u32,
    /// Every send WR completes (IB_SIGNAL_ALL_WR), not only the signalled ones.
    pub sig_all: bool,
    /// Port number for receive completions.
    pub port: u8,
    /// The device runs the FEC shim: the requester offers repairs (RC, once the SR
    /// exchange is decided), the responder takes them.
    pub fec: bool,
    /// Requester: PSNs outstanding past UNACK in the standard format (go-back-N), at least
    /// [`MAX_UNACKED_PSNS`] and at most [`GBN_MAX_UNACKED_PSNS`] (clamped).
    pub gbn_window: u32,
}

/// Where a packet's payload comes from.
#[derive(Clone, Copy, Debug)]
pub enum PayloadSrc<'a> {
    /// No payload.
    None,
    /// These bytes (inline data, atomic results).
    Bytes(&'a [u8]),
    /// Gathered from the local SGE list, starting `offset` bytes into it (L_Keys checked
    /// by the environment; a failure fails the work request with the status returned).
    Local {
        /// The work request's SGEs.
        sges: &'a SgeList,
        /// Byte offset into the list.
        offset: u32,
    },
    /// Read from memory named by an R_Key (an RDMA READ response; the responder has
    /// checked the key, range and rights with [`RcEnv::remote_check`]).
    Remote {
        /// The R_Key.
        rkey: u32,
        /// Virtual address of the first byte.
        va: u64,
    },
}

/// The remote access an incoming request needs (IBTA 10.6.3.2, 9.7.4.1.5).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RemoteOp {
    /// RDMA READ: IB_ACCESS_REMOTE_READ.
    Read,
    /// RDMA WRITE: IB_ACCESS_REMOTE_WRITE.
    Write,
    /// Atomics: IB_ACCESS_REMOTE_ATOMIC, 8 bytes, 8-byte aligned.
    Atomic,
}

/// Why a remote access was refused; becomes a NAK.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RemoteErr {
    /// Bad R_Key, PD, range or rights: NAK "remote access error".
    Access,
    /// Malformed request (e.g. misaligned atomic): NAK "invalid request".
    Invalid,
}

/// An atomic operation on 8 bytes of remote memory.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AtomicOp {
    /// If the value equals `compare`, store `swap`.
    CmpSwap {
        /// Compare operand.
        compare: u64,
        /// Swap operand.
        swap: u64,
    },
    /// Add `add`.
    FetchAdd {
        /// Addend.
        add: u64,
    },
}

impl AtomicOp {
    /// The value the operation stores over `orig` (the responder returns `orig`).
    pub const fn apply(self, orig: u64) -> u64 {
        match self {
            AtomicOp::CmpSwap { compare, swap } => {
                if orig == compare {
                    swap
                } else {
                    orig
                }
            }
            AtomicOp::FetchAdd { add } => orig.wrapping_add(add),
        }
    }
}

/// Why a packet could not be sent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TxError {
    /// The local gather failed: the work request fails with this status.
    Local(WcStatus),
    /// The packet was lost before the wire (no memory, no route): RC retransmits.
    Dropped,
    /// The local egress queue was full and refused the packet: it never left, nothing about
    /// it changed, and the sender offers it again later (rather than leaving it to the
    /// peer's loss detection: a full queue is the sender's own back-pressure, not loss).
    Busy,
}

/// What the transport asks of its surroundings.
pub trait RcEnv {
    /// The current time in microseconds (monotonic).
    fn now_us(&self) -> u64;

    /// Sends one packet: the headers in `hdr` (`hdr.payload` is empty, `hdr.bth.pad_cnt`
    /// already matches `len`) followed by `len` bytes from `payload`.
    fn transmit(
        &mut self,
        hdr: &PacketRepr<'_>,
        payload: PayloadSrc<'_>,
        len: u32,
    ) -> Result<(), TxError>;

    /// Writes `data` into the SGE list at byte `offset` (L_Keys with local write checked).
    fn scatter(&mut self, sges: &SgeList, offset: u32, data: &[u8]) -> Result<(), WcStatus>;

    /// Checks that `[va, va + len)` of the memory named by `rkey` may be accessed for `op`
    /// through this QP.
    fn remote_check(&mut self, op: RemoteOp, rkey: u32, va: u64, len: u32)
        -> Result<(), RemoteErr>;

    /// Writes `data` at `va` of the memory named by `rkey` (checked for [`RemoteOp::Write`]).
    fn remote_write(&mut self, rkey: u32, va: u64, data: &[u8]) -> Result<(), RemoteErr>;

    /// Executes an atomic at `va` (checked for [`RemoteOp::Atomic`]); returns the original value.
    fn remote_atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, RemoteErr>;

    /// IBTA 1.5 FLUSH: makes what earlier requests placed in the memory named by `rkey`
    /// visible at placement type `plt` (the FETH's: [`Feth::PLT_GLOBAL`],
    /// [`Feth::PLT_PERSISTENT`] or both), over `[va, va + len)` (`range`) or over the whole
    /// memory region (`None`). Checks the key, the rights `plt` needs
    /// (IB_ACCESS_FLUSH_GLOBAL, IB_ACCESS_FLUSH_PERSISTENT) and the range when there is one.
    ///
    /// [`Feth::PLT_GLOBAL`]: crate::proto::wire::ext_headers::Feth::PLT_GLOBAL
    /// [`Feth::PLT_PERSISTENT`]: crate::proto::wire::ext_headers::Feth::PLT_PERSISTENT
    fn remote_flush(
        &mut self,
        rkey: u32,
        range: Option<(u64, u32)>,
        plt: u8,
    ) -> Result<(), RemoteErr>;

    /// SEND with invalidate: invalidates the memory key `rkey`.
    fn invalidate(&mut self, rkey: u32) -> Result<(), RemoteErr>;

    /// Executes a local operation of the send queue (BIND_MW, LOCAL_INV); the error is the
    /// work request's completion status.
    fn local_op(&mut self, op: &SendOp) -> Result<(), WcStatus>;

    /// Takes the next receive WQE from the receive queue (or SRQ): `None` when it is empty,
    /// `Some(Err((wr_id, status)))` for a WQE that failed validation.
    fn take_recv(&mut self) -> Option<Result<RecvWqe, (u64, WcStatus)>>;

    /// Retires the oldest send WQE (advances the send queue's consumer index) and, when
    /// given, posts its completion to the send CQ.
    fn retire_send(&mut self, c: Option<&Completion>);

    /// Posts a receive completion to the receive CQ.
    fn complete_recv(&mut self, c: &Completion, solicited: bool);

    /// Whether an RC message of `psns` PSNs may start under the device's in-flight budget.
    ///
    /// Asked before the message's first packet, by a requester that holds `held` PSNs of the budget
    /// ([`dev_inflight`]) now: the environment first gives back what it held and no longer does
    /// (what this step acknowledged), then admits the message if the budget allows. False leaves it
    /// queued: the requester stops there, and the environment runs it again once room is given back
    /// (its own acknowledgments, or another QP's, which wake it).
    fn admit(&mut self, held: u32, psns: u32) -> bool;

    /// Runs `f` with the device's state shared by the QPs of an SR scheme (FaSR's SR pool,
    /// MELO's bits pool), held for the call (the kernel: under the device's pool lock, taken
    /// inside the QP's lock) and with this environment.
    fn with_shared(&mut self, f: &mut dyn FnMut(&mut (dyn SharedPools + 'static), &mut dyn RcEnv));

    /// Counts `n` of event `ev`, which just happened ([`RcEvent::OnloadQueuePeak`]: a new
    /// peak `n`).
    fn count(&mut self, ev: RcEvent, n: u64);
}

/// A fatal error was completed: the QP must enter the Error state (and flush).
///
/// The error of the calls that can fail the QP, which return `Result<(), Fatal>`; `Ok`:
/// carry on. Helpers that always fail return it bare: dropping one would leave the QP
/// running past the failure.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[must_use]
pub struct Fatal;

/// Packets (PSNs) of a message of `len` bytes at path MTU `pmtu`: at least one.
pub const fn packets(len: u32, pmtu: u32) -> u32 {
    if len == 0 || pmtu == 0 {
        1
    } else {
        len.div_ceil(pmtu)
    }
}

/// The local ACK timeout of attribute `timeout` (IBTA 11.2.4.2: 4.096 µs * 2^timeout; 0 is
/// infinite), in microseconds.
pub const fn timeout_us(timeout: u8) -> u64 {
    if timeout == 0 || timeout > 31 {
        0
    } else {
        (4096u64 << timeout) / 1000
    }
}

/// The RNR NAK timer values of IBTA table 45 in microseconds, indexed by the 5-bit code.
const RNR_TIMER_US: [u64; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760,
    327_680, 491_520,
];

/// The delay an RNR NAK with timer code `code` asks for, in microseconds.
pub fn rnr_delay_us(code: u8) -> u64 {
    RNR_TIMER_US
        .get(usize::from(code & 0x1f))
        .copied()
        .unwrap_or(655_360)
}

/// AETH NAK codes (IBTA 9.7.5.2.8, table 44).
pub mod nak {
    /// PSN sequence error.
    pub const PSN_SEQ_ERR: u8 = 0;
    /// Invalid request.
    pub const INVALID_REQUEST: u8 = 1;
    /// Remote access error.
    pub const REMOTE_ACCESS: u8 = 2;
    /// Remote operational error.
    pub const REMOTE_OP: u8 = 3;
    /// Invalid RD request.
    pub const INVALID_RD_REQUEST: u8 = 4;
}

/// Requests the requester lets be unacknowledged: it sets AckReq at least every this many
/// packets (rdma_rxe's RXE_MAX_PKT_PER_ACK).
pub const MAX_PKT_PER_ACK: u32 = 64;

/// Packets a stream of messages may send between two AckReqs: the last packet of a
/// message goes without AckReq while the next message follows it at once and fewer than
/// this many packets went since the last AckReq (the acknowledgment of a later packet
/// covers it). rdma_rxe asks at the end of every message, so a stream of 4 KiB messages
/// drew an acknowledgment for every four data packets.
pub const ACK_COALESCE_PKTS: u32 = 16;

/// PSNs the requester lets be outstanding in the standard format unless the module
/// parameter `gbn_window_psns` says more (rdma_rxe's RXE_MAX_UNACKED_PSNS): go-back-N
/// resends all of them after a loss, so it stays small on a short path.
pub const MAX_UNACKED_PSNS: u32 = 128;

/// The most `gbn_window_psns` may say: go-back-N resends the whole window after a loss.
pub const GBN_MAX_UNACKED_PSNS: u32 = 1024;

/// The SR window unless the module parameter `sr_window_psns` says otherwise: the most PSNs
/// a requester lets be outstanding once the peer agreed to the SR format, and the window its
/// responder tracks past RCV-NXT and advertises in every SR acknowledgment
/// ([`SrSetup::window_log2`](sr::SrSetup::window_log2)). A hole at UNACK is repaired by
/// resending it alone while new packets keep flowing, so the window must cover the round
/// trip of that repair as well as the path's own: with only [`MAX_UNACKED_PSNS`] every loss
/// stalled the sender until its resend was acknowledged. A long fat path needs its
/// bandwidth-delay product on top of that; on a short one the device's in-flight budget,
/// stretched only by the path's estimate, keeps far fewer outstanding. Every engine's
/// receiver tracks the whole window past RCV-NXT (IRN's and SRNIC's bitmaps; FaSR's and
/// MELO's shared pools, which fall back to go-back-N when they run out). Toward a given
/// peer the requester keeps at most the smaller of its window and the one the peer
/// advertises.
pub const SR_DEFAULT_WINDOW_PSNS: u32 = 4096;

/// [`SR_DEFAULT_WINDOW_PSNS`] as log2.
pub const SR_DEFAULT_WINDOW_LOG2: u8 = 12;

/// The largest SR window, as log2 of PSNs: what SR-ACK-ETH can advertise, a quarter of
/// the PSN space, so that every PSN of the window compares as after RCV-NXT.
pub const SR_MAX_WINDOW_LOG2: u8 = SR_WINDOW_LOG2_MAX;

/// The SR window a requester assumes until its peer's first SR acknowledgment names one:
/// the least any end of this wire version tracks.
pub const SR_ASSUMED_WINDOW_PSNS: u32 = 1 << SR_WINDOW_LOG2_MIN;

/// Whether `psns` may be the SR window: a power of two an SR acknowledgment advertises.
pub const fn sr_window_valid(psns: u32) -> bool {
    psns.is_power_of_two() && SrAckEth::window_valid(psns.trailing_zeros() as u8)
}

const _: () = {
    assert!(SR_DEFAULT_WINDOW_PSNS == 1 << SR_DEFAULT_WINDOW_LOG2);
    assert!(sr_window_valid(SR_DEFAULT_WINDOW_PSNS));
    assert!(SR_ASSUMED_WINDOW_PSNS <= SR_DEFAULT_WINDOW_PSNS);
    // FaSR's compression-cnt covers the largest window past RCV-NXT.
    assert!(crate::proto::recovery::fasr::COMPRESSION_CNT_MAX + 1 >= 1 << SR_MAX_WINDOW_LOG2);
    assert!(MAX_UNACKED_PSNS <= GBN_MAX_UNACKED_PSNS);
};

/// PSNs a FaSR requester lets be in flight past the highest PSN known received (see
/// `Requester::pipe_full`) unless the module parameter `sr_pipe_psns` says otherwise:
/// twice the standard window. WRITEs gain nothing from more than 128, but SENDs,
/// acknowledged later than WRITEs, go markedly faster with 256.
pub const SR_PIPE_PSNS: u32 = 256;
