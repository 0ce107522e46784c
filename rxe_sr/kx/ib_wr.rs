// SPDX-License-Identifier: GPL-2.0
//! Kernel consumers' work requests (include/rdma/ib_verbs.h, `struct ib_recv_wr`,
//! `struct ib_send_wr` and the requests that embed it, `struct ib_sge`): [`RecvWrList`], a
//! `post_recv` / `post_srq_recv` chain, and [`SendWrList`], a `post_send` chain, each
//! request read through typed accessors; the failing request is reported back through
//! `bad_wr`.

use core::marker::PhantomData;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::kx::ib_ah::{Ah, AhDriver};
use crate::kx::ib_mr::KernelVa;
use crate::kx::ib_verbs::QpType;

/// One scatter/gather element (`struct ib_sge`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sge {
    /// Start address (a kernel virtual address, or an iova of the key's MR).
    pub(crate) addr: u64,
    /// Bytes.
    pub(crate) length: u32,
    /// The local key naming the memory.
    pub(crate) lkey: u32,
}

/// The scatter/gather array of a work request, borrowed for the call.
#[derive(Clone, Copy)]
pub(crate) struct SgeArray<'a>(&'a [bindings::ib_sge]);

impl<'a> SgeArray<'a> {
    /// The array of a request; `None` for a negative count.
    ///
    /// # Safety
    /// `sg_list` holds `num_sge` entries, readable for `'a`, when `num_sge` is positive.
    unsafe fn new(sg_list: *const bindings::ib_sge, num_sge: i32) -> Option<Self> {
        let n = usize::try_from(num_sge).ok()?;
        if n == 0 {
            return Some(SgeArray(&[]));
        }
        // SAFETY: `n` entries readable at `sg_list` for `'a` (this function's contract).
        Some(SgeArray(unsafe { core::slice::from_raw_parts(sg_list, n) }))
    }

    /// Entries.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Entry `i`, if there is one.
    pub(crate) fn get(&self, i: usize) -> Option<Sge> {
        self.0.get(i).map(|s| Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        })
    }
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

    /// Hands each request to `post` (its `wr_id` and its SGEs, `None` for a negative
    /// count), in order. The first one `post` refuses stops the walk and is named in
    /// `bad_wr`, as IBTA's Post Receive requires (the ones before it stay posted).
    pub(crate) fn post_each(
        self,
        mut post: impl FnMut(u64, Option<SgeArray<'_>>) -> Result,
    ) -> Result {
        let mut cur = self.first;
        while !cur.is_null() {
            // SAFETY: a request of the chain (type invariant).
            let w = unsafe { &*cur };
            // SAFETY: a plain integer whichever union member was written.
            let wr_id = unsafe { w.__bindgen_anon_1.wr_id };
            // SAFETY: its SGE array holds `num_sge` entries for the call (type invariant).
            let sges = unsafe { SgeArray::new(w.sg_list, w.num_sge) };
            if let Err(e) = post(wr_id, sges) {
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
pub(crate) struct SendWrList<'a, T: AhDriver> {
    first: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
    datagram: bool,
    _call: PhantomData<(&'a bindings::ib_send_wr, T)>,
}

/// One send work request of a [`SendWrList`].
///
/// # Invariants
/// As [`SendWrList`]'s, for this request.
pub(crate) struct SendWr<'a, T: AhDriver> {
    wr: &'a bindings::ib_send_wr,
    datagram: bool,
    _driver: PhantomData<T>,
}

impl<T: AhDriver> SendWrList<'_, T> {
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

impl<'a, T: AhDriver> SendWr<'a, T> {
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

/// The remote memory of an RDMA or atomic request: address and key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RemoteVa {
    /// Remote virtual address.
    pub(crate) addr: u64,
    /// Remote key.
    pub(crate) rkey: u32,
}

/// The datagram fields of a request to a UD or GSI QP (`struct ib_ud_wr`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct UdFields {
    /// Destination QP.
    pub(crate) remote_qpn: u32,
    /// Destination Q_Key.
    pub(crate) remote_qkey: u32,
    /// P_Key index (GSI).
    pub(crate) pkey_index: u16,
}

impl<T: AhDriver> SendWr<'_, T> {
    /// `enum ib_wr_opcode`: what the request asks for; it decides which of the accessors
    /// below answer.
    pub(crate) fn opcode(&self) -> u32 {
        self.wr.opcode
    }

    /// The request's `wr_id`.
    pub(crate) fn wr_id(&self) -> u64 {
        // SAFETY: a plain integer whichever union member was written.
        unsafe { self.wr.__bindgen_anon_1.wr_id }
    }

    /// The immediate data, in wire byte order (meaningful for the `*_WITH_IMM` opcodes).
    pub(crate) fn imm(&self) -> [u8; 4] {
        // SAFETY: a plain integer whichever union member was written.
        unsafe { self.wr.ex.imm_data }.to_ne_bytes()
    }

    /// The key to invalidate (meaningful for `SEND_WITH_INV` and `LOCAL_INV`).
    pub(crate) fn invalidate_rkey(&self) -> u32 {
        // SAFETY: a plain integer whichever union member was written.
        unsafe { self.wr.ex.invalidate_rkey }
    }

    /// `IB_SEND_*` flags.
    pub(crate) fn send_flags(&self) -> u32 {
        self.wr.send_flags as u32
    }

    /// The SGEs; `None` for a negative count.
    pub(crate) fn sges(&self) -> Option<SgeArray<'_>> {
        // SAFETY: its SGE array holds `num_sge` entries (type invariant).
        unsafe { SgeArray::new(self.wr.sg_list, self.wr.num_sge) }
    }

    /// The remote memory of an RDMA WRITE or READ (an `ib_rdma_wr`); `None` for another
    /// opcode.
    pub(crate) fn rdma(&self) -> Option<RemoteVa> {
        let rdma = [
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE,
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
            bindings::ib_wr_opcode_IB_WR_RDMA_READ,
        ];
        if !rdma.contains(&self.wr.opcode) {
            return None;
        }
        // SAFETY: RDMA opcodes come in an `ib_rdma_wr`, which begins with its `ib_send_wr`
        // (type invariant).
        let r = unsafe { &*core::ptr::from_ref(self.wr).cast::<bindings::ib_rdma_wr>() };
        Some(RemoteVa {
            addr: r.remote_addr,
            rkey: r.rkey,
        })
    }

    /// An atomic's remote memory, compare-or-add and swap operands (an `ib_atomic_wr`);
    /// `None` for another opcode.
    pub(crate) fn atomic(&self) -> Option<(RemoteVa, u64, u64)> {
        let atomic = [
            bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP,
            bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD,
        ];
        if !atomic.contains(&self.wr.opcode) {
            return None;
        }
        // SAFETY: atomic opcodes come in an `ib_atomic_wr` (type invariant).
        let a = unsafe { &*core::ptr::from_ref(self.wr).cast::<bindings::ib_atomic_wr>() };
        let remote = RemoteVa {
            addr: a.remote_addr,
            rkey: a.rkey,
        };
        Some((remote, a.compare_add, a.swap))
    }

    /// A fast registration's key and access flags (an `ib_reg_wr`); `None` for another
    /// opcode.
    pub(crate) fn reg_mr(&self) -> Option<(u32, i32)> {
        if self.wr.opcode != bindings::ib_wr_opcode_IB_WR_REG_MR {
            return None;
        }
        // SAFETY: REG_MR comes in an `ib_reg_wr` (type invariant).
        let r = unsafe { &*core::ptr::from_ref(self.wr).cast::<bindings::ib_reg_wr>() };
        Some((r.key, r.access))
    }

    /// The datagram fields of a request to a UD or GSI QP; `None` for another QP.
    pub(crate) fn ud(&self) -> Option<UdFields> {
        if !self.datagram {
            return None;
        }
        // SAFETY: datagram QPs take `ib_ud_wr`s (type invariant).
        let u = unsafe { &*core::ptr::from_ref(self.wr).cast::<bindings::ib_ud_wr>() };
        Some(UdFields {
            remote_qpn: u.remote_qpn,
            remote_qkey: u.remote_qkey,
            pkey_index: u.pkey_index,
        })
    }

    /// The kernel memory the SGEs of an `IB_SEND_INLINE` request name, to copy the inline
    /// data from.
    pub(crate) fn inline_memory(&self) -> KernelVa {
        KernelVa::of_kernel_request()
    }
}
