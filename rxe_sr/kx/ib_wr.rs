// SPDX-License-Identifier: GPL-2.0
//! Kernel consumers' work requests (include/rdma/ib_verbs.h, `struct ib_recv_wr`,
//! `struct ib_send_wr` and the requests that embed it, `struct ib_sge`): [`RecvWrList`], a
//! `post_recv` / `post_srq_recv` chain read into receive WQEs, and [`SendWrList`], a
//! `post_send` chain read into send WQEs; the failing request is reported back through
//! `bad_wr`.

use core::marker::PhantomData;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::ib_ah::Ah;
use crate::kx::ib_driver::Driver;
use crate::uabi::recv_wqe::RecvWqe;
use crate::uabi::send_wqe::{
    InlineData, QpType, Remote, SendFlags, SendLimits, SendOp, SendOpcode, SendWqe, UdDest,
    WrFields,
};
use crate::uabi::sge::{Sge, SgeList};
use crate::uabi::WqeError;

/// The SGEs of a kernel work request, validated into `list` (at most `max_sge`); returns
/// the total length.
///
/// # Safety
/// `sg_list` holds `num_sge` entries (or `num_sge` is 0).
pub(crate) unsafe fn kernel_sges_into(
    sg_list: *const bindings::ib_sge,
    num_sge: i32,
    max_sge: u32,
    list: &mut SgeList,
) -> Result<u32, WqeError> {
    let n = u32::try_from(num_sge).map_err(|_| WqeError::TooManySge)?;
    list.collect_into(n, max_sge, |i| {
        // SAFETY: `i < num_sge` (SgeList::collect's contract), inside the caller's array.
        let s = unsafe { &*sg_list.add(i) };
        Ok(Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        })
    })
}

/// A chain of receive work requests a kernel consumer posted, borrowed for the call.
///
/// # Invariants
/// `first` is null or a valid chain (each `sg_list` holds `num_sge` entries) and `bad_wr`
/// is writable, both for `'a`.
pub(crate) struct RecvWrList<'a> {
    first: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
    _call: PhantomData<&'a bindings::ib_recv_wr>,
}

impl RecvWrList<'_> {
    /// The chain of a `post_recv` or `post_srq_recv` call.
    ///
    /// # Safety
    /// `first` is null or a valid receive WR chain whose SGE arrays hold `num_sge` entries,
    /// and `bad_wr` is writable, both for `'a` (the core's contract for these verbs).
    pub(crate) unsafe fn from_raw<'a>(
        first: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> RecvWrList<'a> {
        // INVARIANT: per this function's contract.
        RecvWrList {
            first,
            bad_wr,
            _call: PhantomData,
        }
    }

    /// Reads each request, in order, into a receive WQE of at most `max_sge` SGEs and hands
    /// it to `post`. The first request that is invalid (EINVAL) or that `post` refuses stops
    /// the walk and is named in `bad_wr`, as IBTA's Post Receive requires (the ones before
    /// it stay posted).
    pub(crate) fn post_each(self, max_sge: u32, mut post: impl FnMut(RecvWqe) -> Result) -> Result {
        let mut cur = self.first;
        while !cur.is_null() {
            // SAFETY: a request of the chain (type invariant).
            let w = unsafe { &*cur };
            let mut sges = SgeList::EMPTY;
            // SAFETY: its SGE array holds `num_sge` entries (type invariant).
            let res = match unsafe { kernel_sges_into(w.sg_list, w.num_sge, max_sge, &mut sges) } {
                Ok(length) => post(RecvWqe {
                    // SAFETY: a plain integer whichever union member was written.
                    wr_id: unsafe { w.__bindgen_anon_1.wr_id },
                    sges,
                    length,
                }),
                Err(_) => Err(EINVAL),
            };
            if let Err(e) = res {
                // SAFETY: writable (type invariant).
                unsafe { self.bad_wr.write(cur) };
                return Err(e);
            }
            cur = w.next;
        }
        Ok(())
    }

    /// Refuses the whole chain: its first request is named in `bad_wr`.
    pub(crate) fn refuse(self, e: Error) -> Error {
        // SAFETY: writable (type invariant).
        unsafe { self.bad_wr.write(self.first) };
        e
    }
}

/// A chain of send work requests a kernel consumer posted to a QP of a `T` device,
/// borrowed for the call.
///
/// # Invariants
/// `first` is null or a valid chain of requests of the types their opcodes imply (an
/// `ib_ud_wr` each when `datagram`: the QP is a UD or GSI QP), each `sg_list` holding
/// `num_sge` entries, each AH one of the device's; `bad_wr` is writable; all for `'a`.
pub(crate) struct SendWrList<'a, T: Driver> {
    first: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
    datagram: bool,
    _call: PhantomData<(&'a bindings::ib_send_wr, T)>,
}

/// One send work request of a [`SendWrList`].
///
/// # Invariants
/// As [`SendWrList`]'s, for this request.
pub(crate) struct SendWr<'a, T: Driver> {
    wr: &'a bindings::ib_send_wr,
    datagram: bool,
    _driver: PhantomData<T>,
}

impl<T: Driver> SendWrList<'_, T> {
    /// The chain of a `post_send` call on a QP of type `qp_type`; `None` when `first` is
    /// null (the rxe user ABI's doorbell: the requests are in the send ring).
    ///
    /// # Safety
    /// `first` is null or a valid chain as the core passes one for a QP of a `T` device of
    /// type `qp_type`, and `bad_wr` is writable, both for `'a`.
    pub(crate) unsafe fn from_raw<'a>(
        first: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
        qp_type: Option<QpType>,
    ) -> Option<SendWrList<'a, T>> {
        // INVARIANT: per this function's contract.
        (!first.is_null()).then_some(SendWrList {
            first,
            bad_wr,
            datagram: qp_type.is_some_and(|t| t.is_datagram()),
            _call: PhantomData,
        })
    }

    /// Hands each request to `post`, in order. The first one `post` refuses stops the walk
    /// and is named in `bad_wr`, as IBTA's Post Send requires (the ones before it stay
    /// posted).
    pub(crate) fn post_each(self, mut post: impl FnMut(&SendWr<'_, T>) -> Result) -> Result {
        let mut cur = self.first;
        while !cur.is_null() {
            let wr = SendWr {
                // SAFETY: a request of the chain (type invariant).
                wr: unsafe { &*cur },
                datagram: self.datagram,
                _driver: PhantomData,
            };
            if let Err(e) = post(&wr) {
                // SAFETY: writable (type invariant).
                unsafe { self.bad_wr.write(cur) };
                return Err(e);
            }
            cur = wr.wr.next;
        }
        Ok(())
    }

    /// Refuses the whole chain: its first request is named in `bad_wr`.
    pub(crate) fn refuse(self, e: Error) -> Error {
        // SAFETY: writable (type invariant).
        unsafe { self.bad_wr.write(self.first) };
        e
    }
}

impl<'a, T: Driver> SendWr<'a, T> {
    /// The address handle of a request to a datagram QP (`None` for another QP, or if it
    /// names none).
    pub(crate) fn ah(&self) -> Option<&'a Ah<T>> {
        if !self.datagram {
            return None;
        }
        // SAFETY: a datagram QP's requests are `ib_ud_wr`s (type invariant).
        let u = unsafe { &*core::ptr::from_ref(self.wr).cast::<bindings::ib_ud_wr>() };
        // SAFETY: the AH of a posted request is one of the device's, live while the request
        // is (its poster keeps it).
        unsafe { Ah::<T>::from_raw(u.ah) }
    }
}

impl<T: Driver> SendWr<'_, T> {
    /// Decodes and validates a kernel consumer's send request into `out`.
    ///
    /// The request is the `ib_send_wr` inside an `ib_ud_wr`, `ib_rdma_wr`, `ib_atomic_wr` or
    /// `ib_reg_wr`, by opcode; it gets the checks a ring slot gets (`SendWqe::build`) for a QP of
    /// type `qp_type` and limits `limits`. Inline data is copied now, as the caller may reuse its
    /// buffer once post_send returns. `None` when it is invalid.
    // Kept out of line: its WQE copies would otherwise add to the caller's stack frame.
    #[inline(never)]
    pub(crate) fn build_wqe(
        &self,
        qp_type: QpType,
        limits: SendLimits,
        out: &mut SendWqe,
    ) -> Option<()> {
        let (wr, w) = (self.wr, self.wr);
        let opcode = SendOpcode::from_kernel(w.opcode)?;
        // SAFETY: plain integers whichever union member was written.
        let (wr_id, imm, inv) = unsafe {
            (
                w.__bindgen_anon_1.wr_id,
                w.ex.imm_data.to_ne_bytes(),
                w.ex.invalidate_rkey,
            )
        };
        let rdma = || {
            // SAFETY: RDMA opcodes come in an `ib_rdma_wr`, which begins with its `ib_send_wr`.
            let r = unsafe { &*core::ptr::from_ref(wr).cast::<bindings::ib_rdma_wr>() };
            Remote {
                addr: r.remote_addr,
                rkey: r.rkey,
            }
        };
        // SAFETY: atomic opcodes come in an `ib_atomic_wr`.
        let atomic = || unsafe { &*core::ptr::from_ref(wr).cast::<bindings::ib_atomic_wr>() };
        let op = match opcode {
            SendOpcode::Send => SendOp::Send,
            SendOpcode::SendWithImm => SendOp::SendWithImm { imm },
            SendOpcode::SendWithInv => SendOp::SendWithInv {
                invalidate_rkey: inv,
            },
            SendOpcode::RdmaWrite => SendOp::RdmaWrite { remote: rdma() },
            SendOpcode::RdmaWriteWithImm => SendOp::RdmaWriteWithImm {
                remote: rdma(),
                imm,
            },
            SendOpcode::RdmaRead => SendOp::RdmaRead { remote: rdma() },
            SendOpcode::AtomicCmpAndSwp => {
                let a = atomic();
                SendOp::AtomicCmpAndSwp {
                    remote: Remote {
                        addr: a.remote_addr,
                        rkey: a.rkey,
                    },
                    compare: a.compare_add,
                    swap: a.swap,
                }
            }
            SendOpcode::AtomicFetchAndAdd => {
                let a = atomic();
                SendOp::AtomicFetchAndAdd {
                    remote: Remote {
                        addr: a.remote_addr,
                        rkey: a.rkey,
                    },
                    add: a.compare_add,
                }
            }
            SendOpcode::LocalInv => SendOp::LocalInv {
                invalidate_rkey: inv,
            },
            SendOpcode::RegMr => {
                // SAFETY: REG_MR comes in an `ib_reg_wr`.
                let r = unsafe { &*core::ptr::from_ref(wr).cast::<bindings::ib_reg_wr>() };
                SendOp::RegMr {
                    key: r.key,
                    access: u32::try_from(r.access).ok()?,
                }
            }
            // Not offered to kernel consumers (rdma_rxe has no kernel users of them).
            SendOpcode::BindMw | SendOpcode::Flush | SendOpcode::AtomicWrite => return None,
        };
        let ud = if qp_type.is_datagram() && self.datagram {
            // SAFETY: datagram QPs take `ib_ud_wr`s (type invariant).
            let u = unsafe { &*core::ptr::from_ref(w).cast::<bindings::ib_ud_wr>() };
            Some(UdDest {
                remote_qpn: u.remote_qpn,
                remote_qkey: u.remote_qkey,
                pkey_index: u.pkey_index,
                ah_num: 0,
                av: None,
            })
        } else {
            None
        };
        let flags = SendFlags::from_bits_truncate(w.send_flags as u32);
        // Inline: the SGEs name kernel memory to copy now; their total is the inline length.
        let (inline_list, dma_length) = if flags.inline() {
            let max = crate::uabi::limits::RXE_MAX_SGE;
            let mut list = SgeList::EMPTY;
            // SAFETY: its SGE array holds `num_sge` entries (type invariant).
            let total = unsafe { kernel_sges_into(w.sg_list, w.num_sge, max, &mut list) }.ok()?;
            (Some(list), total)
        } else {
            (None, 0)
        };
        let inline = |len: u32, d: &mut InlineData| {
            let len = usize::try_from(len).map_err(|_| WqeError::InlineTooLong)?;
            let buf = d.fill(len).ok_or(WqeError::InlineTooLong)?;
            let mut at = 0usize;
            for s in inline_list.as_ref().map_or(&[][..], |l| l.as_slice()) {
                let n = usize::try_from(s.length).map_err(|_| WqeError::InlineTooLong)?;
                let dst = at
                    .checked_add(n)
                    .and_then(|end| buf.get_mut(at..end))
                    .ok_or(WqeError::InlineTooLong)?;
                // SAFETY: `dst` is writable for `n` bytes; the helper refuses addresses outside
                // the direct map.
                if unsafe {
                    bindings::rxe_sr_glue_kva_copy(s.addr, dst.as_mut_ptr().cast(), n, false)
                } != 0
                {
                    return Err(WqeError::SgeAddressOverflow);
                }
                at += n;
            }
            if at != len {
                return Err(WqeError::InlineTooLong);
            }
            Ok(())
        };
        let (sg_list, num_sge, max_sge) = (w.sg_list, w.num_sge, limits.max_sge);
        // SAFETY: its SGE array holds `num_sge` entries (type invariant).
        let sges = |l: &mut SgeList| unsafe { kernel_sges_into(sg_list, num_sge, max_sge, l) };
        let fields = WrFields {
            wr_id,
            opcode,
            flags,
            op,
            ud,
            dma_length,
        };
        SendWqe::build_into(fields, qp_type, limits, inline, sges, out).ok()
    }
}
