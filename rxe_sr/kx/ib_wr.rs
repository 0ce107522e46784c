// SPDX-License-Identifier: GPL-2.0
//! Kernel consumers' receive work requests (include/rdma/ib_verbs.h, `struct ib_recv_wr`
//! and `struct ib_sge`): [`RecvWrList`], a `post_recv` / `post_srq_recv` chain read into
//! receive WQEs, the failing request reported back through `bad_wr`.

use core::marker::PhantomData;
use kernel::prelude::*;

use crate::kx::bindings;
use crate::uabi::recv_wqe::RecvWqe;
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
