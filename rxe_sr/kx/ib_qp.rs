// SPDX-License-Identifier: GPL-2.0
//! Queue pairs (include/rdma/ib_verbs.h, `struct ib_qp`): [`Qp<T>`], the QP the core
//! allocates with, inside it, the driver's data (pin-initialised), the QP's two work items
//! ([`QpTimer`]s: its own, and the slow path's) and the count of the receive path's
//! references; [`QpTable`], a device's QPs
//! by number, whose lookups give counted references ([`QpRef`]) that destroy waits out; and
//! the QP entries of `ib_device_ops`, which call the driver's `QpDriver` methods.
//!
//! A QP lives from a successful `create_qp` to `destroy_qp`. Destroy takes it out of the
//! table (no new reference), waits for the references held (sleeping), stops its work for
//! good, and only then lets the driver tear its data down: the core frees the object after,
//! with nothing of the driver's still pointing into it.

use core::marker::PhantomData;
use core::mem::size_of;
use core::ptr::{self, NonNull};
use kernel::error::from_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::types::Opaque;

use crate::kx::bindings;
use crate::kx::ib_ah::AhDriver;
use crate::kx::ib_cq::{Cq, CqDriver, WcQp};
use crate::kx::ib_device::Device;
use crate::kx::ib_pd::PdId;
use crate::kx::ib_srq::{Srq, SrqDriver};
use crate::kx::ib_udata::UData;
use crate::kx::ib_verbs::{QpAttr, QpAttrMask, QpCap, QpInitAttr, QpInitReply, QpType};
use crate::kx::ib_wr::{RecvWrList, SendWrList};
use crate::kx::skbuff::SkBuff;
use crate::kx::timer::QpTimer;
use crate::kx::wait_bit::UseCount;
use crate::kx::xarray::IndexTable;

/// A driver's queue pairs: the data in each, the table that numbers them, the QP verbs and the QP's work items. A QP names its CQs, its SRQ and (posting to a datagram QP) address handles.
pub(crate) trait QpDriver: CqDriver + SrqDriver + AhDriver {
    /// The driver's data in each queue pair ([`Qp`]), pin-initialised there.
    type Qp: Send + Sync;

    /// The device's QPs by number (the adapter publishes a created QP there and takes a
    /// destroyed one out).
    fn qp_table(dev: &Device<Self>) -> &QpTable<Self>;

    /// `create_qp`: a QP for `attr` (`udata` `None` for a kernel consumer): its data's
    /// initialiser, the number reserved for it in [`QpDriver::qp_table`] and its capabilities.
    fn create_qp(
        dev: &Device<Self>,
        attr: &QpInitAttr,
        udata: Option<UData<'_>>,
    ) -> Result<NewQp<impl PinInit<Self::Qp, Error>>>;

    /// `destroy_qp`, once the QP is out of the table, its references are gone and its work
    /// is stopped for good, before its data is dropped.
    fn destroy_qp(qp: &Qp<Self>);

    /// `modify_qp` with the attributes `mask` names.
    fn modify_qp(qp: &Qp<Self>, attr: &QpAttr, mask: QpAttrMask) -> Result;

    /// `query_qp`: the attributes and the creation reply.
    fn query_qp(qp: &Qp<Self>) -> (QpAttr, QpInitReply);

    /// `post_send` with work requests (a kernel consumer; possibly in atomic context).
    fn post_send(qp: &Qp<Self>, wrs: SendWrList<'_, Self>) -> Result;

    /// `post_send` without work requests: the rxe user ABI's doorbell (the requests are in
    /// the send ring).
    fn doorbell(qp: &Qp<Self>) -> Result;

    /// `post_recv` (a kernel consumer; possibly in atomic context).
    fn post_recv(qp: &Qp<Self>, wrs: RecvWrList<'_>) -> Result;
}

/// What a software provider does apart from the verbs, as rdma_rxe's tasks do: the
/// datagrams of the device's receive queue and each QP's two work items, in process
/// context with no lock held.
pub(crate) trait WorkDriver: QpDriver {
    /// A datagram from the device's receive queue (its work item; datagrams of one device
    /// are taken one at a time, in order).
    fn receive(dev: &Device<Self>, skb: SkBuff);

    /// The QP's work item ([`Qp::timer`]).
    fn qp_work(qp: &Qp<Self>);

    /// The QP's slow-path work item ([`Qp::slow_path`]).
    fn qp_slow_path(qp: &Qp<Self>);
}

/// A queue pair of a `T` device: the core's `struct ib_qp`, the receive path's references,
/// the QP's work items and the driver's data.
///
/// # Invariants
/// Allocated (zeroed, `size_ib_qp` bytes) and freed by the core, never moved; the core set
/// `device`, `pd`, `qp_type`, `send_cq`, `recv_cq` (both non-null) and `srq` before
/// `create_qp` and does not change them. `parts` is initialised from a successful
/// `create_qp` until `destroy_qp` drops it, and every `&Qp<T>` handed out lies within that
/// span.
#[repr(C)]
pub(crate) struct Qp<T: QpDriver> {
    ib: Opaque<bindings::ib_qp>,
    parts: QpParts<T>,
}

/// What a QP holds besides the core's `struct ib_qp`, initialised in place at `create_qp`.
#[pin_data]
struct QpParts<T: QpDriver> {
    /// The receive path's references, which `destroy_qp` waits out.
    users: UseCount,
    /// The work item.
    #[pin]
    timer: QpTimer,
    /// The slow-path work item.
    #[pin]
    slow_path: QpTimer,
    /// The driver's data.
    #[pin]
    data: T::Qp,
}

impl<T: WorkDriver> QpParts<T> {
    /// The parts of the QP at `qp`: its work items call `qp_work::<T>` and
    /// `qp_slow_path::<T>` on it, and `data` is the driver's initialiser.
    ///
    /// # Safety
    /// `qp` is the core's allocation for a QP being created; the work items are armed only
    /// through a complete QP (after it is returned to the core) and stopped in `destroy_qp`
    /// before the data drops.
    unsafe fn new(qp: *mut Qp<T>, data: impl PinInit<T::Qp, Error>) -> impl PinInit<Self, Error> {
        let owner = qp.cast::<c_void>();
        try_pin_init!(Self {
            users: UseCount::new(),
            // SAFETY: `owner` outlives the timer and the handler suits it (this function's
            // contract).
            timer <- unsafe { QpTimer::new(qp_work::<T>, owner) },
            // SAFETY: as above, with `qp_slow_path::<T>`.
            slow_path <- unsafe { QpTimer::new(qp_slow_path::<T>, owner) },
            data <- data,
        }? Error)
    }
}

// SAFETY: the core's fields the driver reads are set before create and not changed; the
// driver's data is `Send + Sync`; the count and the timers are thread-safe.
unsafe impl<T: QpDriver> Send for Qp<T> {}
// SAFETY: as above.
unsafe impl<T: QpDriver> Sync for Qp<T> {}

impl<T: QpDriver> Qp<T> {
    /// `ib` comes first: a pointer to the core's part, which the core hands to every
    /// callback, is one to the whole object (checked at build time).
    const IB_FIRST: () = assert!(core::mem::offset_of!(Self, ib) == 0);

    /// The object whose core part `ib` is: the same address ([`Self::IB_FIRST`]).
    fn container(ib: *mut bindings::ib_qp) -> *mut Self {
        let () = Self::IB_FIRST;
        ib.cast()
    }

    fn as_raw(&self) -> *mut bindings::ib_qp {
        self.ib.get()
    }

    /// Its number.
    pub(crate) fn qpn(&self) -> u32 {
        // SAFETY: set at create, before the QP was published, and not changed.
        unsafe { (*self.as_raw()).qp_num }
    }

    /// Its PD.
    pub(crate) fn pd(&self) -> PdId {
        // SAFETY: set by the core before create (type invariant).
        PdId::from_raw(unsafe { (*self.as_raw()).pd })
    }

    /// Its device.
    pub(crate) fn device(&self) -> &Device<T> {
        // SAFETY: a `T` device, which outlives its QPs (type invariant).
        unsafe { Device::from_raw((*self.as_raw()).device) }
    }

    /// Its send CQ, which the QP holds while it lives.
    pub(crate) fn send_cq(&self) -> &Cq<T> {
        // SAFETY: non-null, a created CQ of the device that the core keeps while the QP
        // lives (type invariant).
        unsafe { Cq::from_raw((*self.as_raw()).send_cq) }
    }

    /// Its receive CQ, which the QP holds while it lives.
    pub(crate) fn recv_cq(&self) -> &Cq<T> {
        // SAFETY: as in `send_cq`.
        unsafe { Cq::from_raw((*self.as_raw()).recv_cq) }
    }

    /// Its SRQ, if it was created on one (held while the QP lives).
    pub(crate) fn srq(&self) -> Option<&Srq<T>> {
        // SAFETY: set by the core before create (type invariant).
        let srq = unsafe { (*self.as_raw()).srq };
        // SAFETY: non-null: a created SRQ of the device that the core keeps while the QP
        // lives.
        (!srq.is_null()).then(|| unsafe { Srq::from_raw(srq) })
    }

    /// The QP as its completions name it (`ib_wc.qp`).
    pub(crate) fn wc_qp(&self) -> WcQp {
        WcQp::from_raw(self.as_raw())
    }

    /// Its work item: a timer that queues it, or a kick that queues it now; it runs
    /// [`WorkDriver::qp_work`].
    pub(crate) fn timer(&self) -> &QpTimer {
        &self.parts.timer
    }

    /// Its slow-path work item, apart from [`Self::timer`] so that work handed to it runs
    /// in a context of its own; it runs [`WorkDriver::qp_slow_path`].
    pub(crate) fn slow_path(&self) -> &QpTimer {
        &self.parts.slow_path
    }
}

impl<T: QpDriver> core::ops::Deref for Qp<T> {
    type Target = T::Qp;

    fn deref(&self) -> &T::Qp {
        &self.parts.data
    }
}

/// What a driver's `create_qp` returns: the initialiser of the QP's data, the number it
/// reserved for it in its [`QpTable`] (given back if the creation fails after), and the
/// capabilities it got.
pub(crate) struct NewQp<I> {
    pub(crate) init: I,
    pub(crate) qpn: u32,
    pub(crate) caps: QpCap,
}

/// A device's QPs by number.
///
/// # Invariants
/// Every entry of `table` is a `Qp<T>` of the device that [`create_qp`] published after
/// initialising it; [`destroy_qp`] erases it before tearing it down.
#[pin_data]
pub(crate) struct QpTable<T: QpDriver> {
    #[pin]
    table: IndexTable,
    _qps: PhantomData<T>,
}

impl<T: QpDriver> QpTable<T> {
    /// An empty table, initialised in place.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(QpTable {
            table <- IndexTable::new(),
            _qps: PhantomData,
        })
    }

    /// Reserves a free QP number in `min..=max` for a QP being created.
    pub(crate) fn reserve(&self, min: u32, max: u32) -> Result<u32> {
        self.table.reserve(min, max)
    }

    /// The QP numbered `qpn`, if it exists: a counted reference its destroy waits out.
    pub(crate) fn get(&self, qpn: u32) -> Option<QpRef<T>> {
        self.table
            .with_entry(qpn, |p| {
                let qp = NonNull::new(p.cast::<Qp<T>>())?;
                // SAFETY: a complete QP (type invariant); the table's lock keeps destroy from
                // erasing it, and so from waiting for its users, until it is counted.
                unsafe { qp.as_ref() }.parts.users.get();
                // INVARIANT: counted just above.
                Some(QpRef(qp))
            })
            .flatten()
    }
}

/// A counted reference on a QP, taken by a table lookup; the QP is not torn down until it
/// is dropped.
///
/// # Invariants
/// Points to a live `Qp<T>` whose `users` count includes this reference.
pub(crate) struct QpRef<T: QpDriver>(NonNull<Qp<T>>);

// SAFETY: a shared reference to a `Sync` QP, and the count is atomic.
unsafe impl<T: QpDriver> Send for QpRef<T> {}

impl<T: QpDriver> core::ops::Deref for QpRef<T> {
    type Target = Qp<T>;

    fn deref(&self) -> &Qp<T> {
        // SAFETY: live while counted (type invariant).
        unsafe { self.0.as_ref() }
    }
}

impl<T: QpDriver> Drop for QpRef<T> {
    fn drop(&mut self) {
        // SAFETY: counted (type invariant); after this the QP may be freed at once, and
        // `put` touches nothing after its decrement.
        unsafe { self.0.as_ref() }.parts.users.put();
    }
}

/// The size the core allocates per QP.
pub(super) const fn size<T: QpDriver>() -> usize {
    size_of::<Qp<T>>()
}

/// The QP's work: runs [`WorkDriver::qp_work`].
///
/// # Safety
/// `owner` is the `Qp<T>` whose timer this is; the timer is stopped before the QP's data
/// is dropped.
unsafe extern "C" fn qp_work<T: WorkDriver>(owner: *mut c_void) {
    // SAFETY: per this function's contract, a live, initialised QP.
    T::qp_work(unsafe { &*owner.cast::<Qp<T>>() });
}

/// The QP's slow-path work: runs [`WorkDriver::qp_slow_path`].
///
/// # Safety
/// As for [`qp_work`], with the slow-path timer.
unsafe extern "C" fn qp_slow_path<T: WorkDriver>(owner: *mut c_void) {
    // SAFETY: per this function's contract, a live, initialised QP.
    T::qp_slow_path(unsafe { &*owner.cast::<Qp<T>>() });
}

/// Initialises the parts of `qp` in place (kept out of line: the initialiser's temporaries
/// would otherwise add to the create verb's stack frame).
///
/// # Safety
/// `qp` is the core's allocation for a QP being created, its parts not initialised, and
/// `init` is [`QpParts::new`]'s for it.
#[inline(never)]
unsafe fn init_parts<T: WorkDriver>(
    qp: *mut Qp<T>,
    init: impl PinInit<QpParts<T>, Error>,
) -> Result {
    // SAFETY: `parts` lies in the core's allocation, which never moves (this function's
    // contract); on error nothing is left initialised (pin-init's contract).
    unsafe { init.__pinned_init(ptr::addr_of_mut!((*qp).parts)) }
}

/// `ib_device_ops.create_qp`.
///
/// # Safety
/// Called by the core with a zeroed QP object of `T`'s size on a `T` device (its device,
/// PD, type, CQs and SRQ set), a valid, writable init block and null or the call's
/// `udata`.
pub(super) unsafe extern "C" fn create_qp<T: WorkDriver>(
    ibqp: *mut bindings::ib_qp,
    init: *mut bindings::ib_qp_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: per this function's contract.
        let (dev, init) = unsafe { (Device::<T>::from_raw((*ibqp).device), &mut *init) };
        // SAFETY: as above.
        if unsafe { (*ibqp).send_cq.is_null() || (*ibqp).recv_cq.is_null() } {
            return Err(EINVAL);
        }
        let attr = QpInitAttr::from_raw(init);
        // SAFETY: null or the call's user data.
        let udata = unsafe { UData::from_raw(udata) };
        let new = T::create_qp(dev, &attr, udata)?;
        let table = T::qp_table(dev);
        let qp = Qp::<T>::container(ibqp);
        // SAFETY: `qp` is the QP being created; the works are armed only through a complete
        // QP and stopped in `destroy_qp` before the data drops.
        let parts = unsafe { QpParts::new(qp, new.init) };
        // SAFETY: the core's allocation for this QP, not visible to anyone yet.
        if let Err(e) = unsafe { init_parts::<T>(qp, parts) } {
            table.table.erase(new.qpn);
            return Err(e);
        }
        // SAFETY: not visible to anyone yet.
        unsafe { (*ibqp).qp_num = new.qpn };
        // INVARIANT: complete from here: published for the receive path.
        if let Err(e) = table.table.publish(new.qpn, qp.cast()) {
            table.table.erase(new.qpn);
            // SAFETY: never visible: the parts are dropped here, once.
            unsafe {
                T::destroy_qp(&*qp);
                ptr::drop_in_place(ptr::addr_of_mut!((*qp).parts));
            }
            return Err(e);
        }
        init.cap = new.caps.to_raw();
        Ok(0)
    })
}

/// `ib_device_ops.destroy_qp`: out of the table, the receive path's references waited out,
/// the work stopped, then the driver's teardown; the core frees the object after.
///
/// # Safety
/// Called by the core once per QP it created on a `T` device, when it has no users left.
pub(super) unsafe extern "C" fn destroy_qp<T: QpDriver>(
    ibqp: *mut bindings::ib_qp,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    let qp = Qp::<T>::container(ibqp);
    // SAFETY: per this function's contract, an initialised QP.
    let q = unsafe { &*qp };
    T::qp_table(q.device()).table.erase(q.qpn());
    q.parts.users.wait_for_zero();
    // The works may be running (they take the QP's locks, none of which is held here); each
    // may arm the other, which does nothing once that one is shut down.
    q.parts.timer.shutdown();
    q.parts.slow_path.shutdown();
    T::destroy_qp(q);
    // SAFETY: nothing reaches the QP any more: out of the table, no reference, the works
    // stopped for good. Dropped once.
    unsafe { ptr::drop_in_place(ptr::addr_of_mut!((*qp).parts)) };
    0
}

/// `ib_device_ops.modify_qp`.
///
/// # Safety
/// Called by the core with a live QP of a `T` device and a valid attribute block (whose
/// address attribute's source GID the core holds for the call when the mask names it).
pub(super) unsafe extern "C" fn modify_qp<T: QpDriver>(
    ibqp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    mask: c_int,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        let mask = QpAttrMask::from_raw(mask).ok_or(EINVAL)?;
        // SAFETY: per this function's contract.
        let (qp, a) = unsafe { (&*Qp::<T>::container(ibqp), &*attr) };
        // SAFETY: with IB_QP_AV in the mask the core holds the source GID attribute.
        let attr = unsafe { QpAttr::from_core(a, mask) };
        T::modify_qp(qp, &attr, mask).map(|()| 0)
    })
}

/// `ib_device_ops.query_qp`.
///
/// # Safety
/// Called by the core with a live QP of a `T` device and writable attribute blocks.
pub(super) unsafe extern "C" fn query_qp<T: QpDriver>(
    ibqp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    _mask: c_int,
    init: *mut bindings::ib_qp_init_attr,
) -> c_int {
    // SAFETY: per this function's contract.
    let qp = unsafe { &*Qp::<T>::container(ibqp) };
    let (a, i) = T::query_qp(qp);
    // SAFETY: the QP's CQs, as the core set them.
    let (send_cq, recv_cq) = unsafe { ((*ibqp).send_cq, (*ibqp).recv_cq) };
    // SAFETY: both point to writable storage per this function's contract.
    unsafe {
        attr.write(a.to_raw());
        init.write(i.to_raw(send_cq, recv_cq));
    }
    0
}

/// `ib_device_ops.post_send`: a kernel consumer's WR chain, or (no WR) the rxe user ABI's
/// doorbell.
///
/// # Safety
/// Called by the core with a live QP of a `T` device; `wr` null or a valid chain for it;
/// `bad_wr` writable when `wr` is not null.
pub(super) unsafe extern "C" fn post_send<T: QpDriver>(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
) -> c_int {
    // SAFETY: per this function's contract.
    let qp = unsafe { &*Qp::<T>::container(ibqp) };
    // SAFETY: the QP's type, set by the core before create.
    let qp_type = QpType::from_raw(unsafe { (*ibqp).qp_type });
    // SAFETY: per this function's contract.
    match unsafe { SendWrList::<T>::from_raw(wr, bad_wr, qp_type) } {
        Some(wrs) => from_result(|| T::post_send(qp, wrs).map(|()| 0)),
        None => from_result(|| T::doorbell(qp).map(|()| 0)),
    }
}

/// `ib_device_ops.post_recv`.
///
/// # Safety
/// Called by the core with a live QP of a `T` device, a valid WR chain and a writable
/// `bad_wr`.
pub(super) unsafe extern "C" fn post_recv<T: QpDriver>(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: per this function's contract.
    let (qp, wrs) = unsafe { (&*Qp::<T>::container(ibqp), RecvWrList::from_raw(wr, bad_wr)) };
    from_result(|| T::post_recv(qp, wrs).map(|()| 0))
}
