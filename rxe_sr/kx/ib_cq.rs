// SPDX-License-Identifier: GPL-2.0
//! Completion queues (include/rdma/ib_verbs.h, `struct ib_cq` and `struct ib_wc`):
//! [`Cq<T>`], the CQ the core allocates with the driver's data pin-initialised inside it;
//! the consumer's callbacks (completion handler, CQ error event); the array a kernel
//! consumer polls completions into ([`WcArray`]); and the CQ entries of `ib_device_ops`,
//! which call the driver's `CqDriver` methods.

use core::marker::PhantomData;
use core::mem::size_of;
use core::ptr::{self, NonNull};
use kernel::error::from_result;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::types::Opaque;

use crate::kx::bindings;
use crate::kx::ib_device::{Device, DriverData};
use crate::kx::ib_udata::UData;

/// A driver's completion queues: the data in each and the CQ verbs.
pub(crate) trait CqDriver: DriverData {
    /// The driver's data in each completion queue ([`Cq`]), pin-initialised there.
    type Cq: Send + Sync;

    /// `create_cq`: a CQ for `attr` (`udata` `None` for a kernel consumer); returns the
    /// initialiser of its data and the depth it has (reported as `ib_cq.cqe`).
    fn create_cq(
        dev: &Device<Self>,
        attr: &CqInitAttr,
        udata: Option<UData<'_>>,
    ) -> Result<(impl PinInit<Self::Cq>, u32)>;

    /// `destroy_cq`, before the CQ's data is dropped.
    fn destroy_cq(dev: &Device<Self>, cq: &Self::Cq);

    /// `req_notify_cq`: arms the completion event; true when asked to report missed events
    /// and completions are already waiting.
    fn req_notify_cq(cq: &Cq<Self>, notify: CqNotify) -> bool;

    /// `resize_cq` to `cqe` entries; returns the new depth.
    fn resize_cq(cq: &Cq<Self>, cqe: u32, udata: Option<UData<'_>>) -> Result<u32>;

    /// `poll_cq`: a kernel consumer takes completions, oldest first, into `out`.
    fn poll_cq(cq: &Cq<Self>, out: &mut WcArray<'_>);
}

/// A completion queue of a `T` device: the core's `struct ib_cq` and the driver's data.
///
/// # Invariants
/// Allocated (zeroed, `size_ib_cq` bytes) and freed by the core, never moved; `data` is
/// initialised from the driver's successful `create_cq` until `destroy_cq` drops it, and
/// every `&Cq<T>` handed out lies within that span.
#[repr(C)]
pub(crate) struct Cq<T: CqDriver> {
    ib: Opaque<bindings::ib_cq>,
    data: T::Cq,
}

impl<T: CqDriver> Cq<T> {
    /// `ib` comes first: a pointer to the core's part, which the core hands to every
    /// callback, is one to the whole object (checked at build time).
    const IB_FIRST: () = assert!(core::mem::offset_of!(Self, ib) == 0);

    /// The object whose core part `ib` is: the same address ([`Self::IB_FIRST`]).
    fn container(ib: *mut bindings::ib_cq) -> *mut Self {
        let () = Self::IB_FIRST;
        ib.cast()
    }

    /// A CQ the core handed over in a QP (its send or receive CQ).
    ///
    /// # Safety
    /// `raw` is a CQ of a `T` device, created and not destroyed for `'a` (a QP holds its
    /// CQs while it lives).
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::ib_cq) -> &'a Self {
        // SAFETY: per this function's contract, an initialised `Cq<T>` (`IB_FIRST`: the
        // core's part begins it, checked at build time).
        unsafe { &*Self::container(raw) }
    }

    /// Calls the consumer's completion handler (uverbs queues a completion event). No lock
    /// of the driver's may be held: the handler may call back into the driver.
    pub(crate) fn comp_handler(&self) {
        let cq = self.ib.get();
        // SAFETY: a live CQ (type invariant), whose handler and context the core set at
        // creation; the handler takes this CQ and its context.
        unsafe {
            if let Some(handler) = (*cq).comp_handler {
                handler(cq, (*cq).cq_context);
            }
        }
    }

    /// Raises IB_EVENT_CQ_ERR (a completion did not fit) to the consumer's event handler;
    /// no lock of the driver's may be held.
    pub(crate) fn error_event(&self) {
        let cq = self.ib.get();
        // SAFETY: as in `comp_handler`; the event lives on this stack for the call.
        unsafe {
            if let Some(handler) = (*cq).event_handler {
                let mut ev = bindings::ib_event {
                    device: (*cq).device,
                    element: bindings::ib_event__bindgen_ty_1 { cq },
                    event: bindings::ib_event_type_IB_EVENT_CQ_ERR,
                };
                handler(&mut ev, (*cq).cq_context);
            }
        }
    }

    /// The same CQ as `other`.
    pub(crate) fn is(&self, other: &Self) -> bool {
        ptr::eq(self, other)
    }

    /// Sets the depth the core reports (`ib_cq.cqe`).
    fn set_cqe(&self, depth: u32) {
        // At most `MAX_CQE`, an int; the driver checked it.
        let cqe = i32::try_from(depth).unwrap_or(i32::MAX);
        // SAFETY: a live CQ; the core reads `cqe` only from the verb that set it or later.
        unsafe { (*self.ib.get()).cqe = cqe };
    }
}

impl<T: CqDriver> core::ops::Deref for Cq<T> {
    type Target = T::Cq;

    fn deref(&self) -> &T::Cq {
        &self.data
    }
}

/// The QP a completion names (`ib_wc.qp`), handed back to a kernel consumer as it was
/// given; never dereferenced.
#[derive(Clone, Copy)]
pub(crate) struct WcQp(*mut bindings::ib_qp);

// SAFETY: an address passed back to the consumer, never followed by the driver.
unsafe impl Send for WcQp {}

impl WcQp {
    /// No QP (an empty slot).
    pub(crate) const NONE: WcQp = WcQp(ptr::null_mut());

    /// The QP at `qp` (kept as an address only).
    pub(crate) fn from_raw(qp: *mut bindings::ib_qp) -> Self {
        WcQp(qp)
    }
}

/// How a consumer arms a CQ's completion event (`enum ib_cq_notify_flags`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CqArm {
    /// `IB_CQ_SOLICITED`: the next solicited completion (or error).
    Solicited,
    /// `IB_CQ_NEXT_COMP`: the next completion.
    NextComp,
}

/// A `req_notify_cq` request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CqNotify {
    /// What to arm for (`None`: the request arms nothing).
    pub(crate) arm: Option<CqArm>,
    /// `IB_CQ_REPORT_MISSED_EVENTS`: say whether completions are already waiting.
    pub(crate) report_missed: bool,
}

impl CqNotify {
    fn from_raw(flags: bindings::ib_cq_notify_flags) -> Self {
        let arm = if flags & bindings::ib_cq_notify_flags_IB_CQ_NEXT_COMP != 0 {
            Some(CqArm::NextComp)
        } else if flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED != 0 {
            Some(CqArm::Solicited)
        } else {
            None
        };
        CqNotify {
            arm,
            report_missed: flags & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0,
        }
    }
}

/// A `create_cq` request (`struct ib_cq_init_attr`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CqInitAttr {
    /// Entries asked for. (The completion vector is not passed on: the device has one,
    /// and uverbs refuses any other.)
    pub(crate) cqe: u32,
    /// `IB_UVERBS_CQ_FLAGS_*` (none is supported by a soft-RoCE device).
    pub(crate) flags: u32,
}

/// The array a kernel consumer's `poll_cq` fills, as `struct ib_wc`.
///
/// # Invariants
/// `wc` points to room for `cap` entries, writable for `'a`; `len <= cap` are written.
pub(crate) struct WcArray<'a> {
    wc: NonNull<bindings::ib_wc>,
    cap: usize,
    len: usize,
    _out: PhantomData<&'a mut [bindings::ib_wc]>,
}

impl WcArray<'_> {
    /// No room left.
    pub(crate) fn is_full(&self) -> bool {
        self.len >= self.cap
    }

    /// Writes the next entry: completion `c` of QP `qp`. False (nothing written) when full.
    pub(crate) fn push(&mut self, c: &Wc, qp: WcQp) -> bool {
        if self.is_full() {
            return false;
        }
        // SAFETY: `len < cap`, inside the consumer's array (type invariant).
        unsafe { self.wc.as_ptr().add(self.len).write(c.to_raw(qp)) };
        self.len += 1;
        true
    }
}

/// What a completion carries beyond the fields every one has (`ib_wc.ex`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) enum WcEx {
    /// Nothing.
    #[default]
    None,
    /// `imm_data`: the four bytes in network order.
    Imm([u8; 4]),
    /// `invalidate_rkey`.
    InvalidateRkey(u32),
}

/// The IP version of a UD or GSI receive's packet (`enum rdma_network_type`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum NetworkHdr {
    /// IPv4.
    Ipv4,
    /// IPv6.
    Ipv6,
}

/// A work completion for a kernel consumer (`struct ib_wc`), as plain data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wc {
    /// The work request's `wr_id`.
    pub(crate) wr_id: u64,
    /// `enum ib_wc_status`.
    pub(crate) status: u32,
    /// `enum ib_wc_opcode`.
    pub(crate) opcode: u32,
    /// Vendor error code.
    pub(crate) vendor_err: u32,
    /// Bytes transferred.
    pub(crate) byte_len: u32,
    /// Immediate data or invalidated key (flagged in `wc_flags` too).
    pub(crate) ex: WcEx,
    /// Source QP (UD receives).
    pub(crate) src_qp: u32,
    /// `IB_WC_*` flags, but for `IB_WC_WITH_NETWORK_HDR_TYPE`, which `network` sets.
    pub(crate) wc_flags: u32,
    /// P_Key index.
    pub(crate) pkey_index: u16,
    /// Source LID.
    pub(crate) slid: u16,
    /// Service level.
    pub(crate) sl: u8,
    /// DLID path bits.
    pub(crate) dlid_path_bits: u8,
    /// Port number.
    pub(crate) port_num: u8,
    /// The IP version of a datagram receive's packet.
    pub(crate) network: Option<NetworkHdr>,
}

impl Wc {
    /// The `struct ib_wc` of this completion of QP `qp`.
    fn to_raw(self, qp: WcQp) -> bindings::ib_wc {
        let mut w = bindings::ib_wc {
            status: self.status,
            opcode: self.opcode,
            vendor_err: self.vendor_err,
            byte_len: self.byte_len,
            qp: qp.0,
            src_qp: self.src_qp,
            slid: u32::from(self.slid),
            pkey_index: self.pkey_index,
            sl: self.sl,
            dlid_path_bits: self.dlid_path_bits,
            port_num: u32::from(self.port_num),
            ..Default::default()
        };
        // The union's first member: consumers with an `ib_cqe` get their pointer back.
        w.__bindgen_anon_1.wr_id = self.wr_id;
        match self.ex {
            // `imm_data` is `__be32`: the wire bytes as they are.
            WcEx::Imm(bytes) => w.ex.imm_data = u32::from_ne_bytes(bytes),
            WcEx::InvalidateRkey(rkey) => w.ex.invalidate_rkey = rkey,
            WcEx::None => {}
        }
        let mut flags = self.wc_flags;
        if let Some(net) = self.network {
            flags |= bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE;
            w.network_hdr_type = match net {
                NetworkHdr::Ipv4 => bindings::rdma_network_type_RDMA_NETWORK_IPV4,
                NetworkHdr::Ipv6 => bindings::rdma_network_type_RDMA_NETWORK_IPV6,
            } as u8;
        }
        // The flags are a handful of low bits.
        w.wc_flags = flags as c_int;
        w
    }
}

/// The size the core allocates per CQ.
pub(super) const fn size<T: CqDriver>() -> usize {
    size_of::<Cq<T>>()
}

/// `ib_device_ops.create_cq`.
///
/// # Safety
/// Called by the core with a zeroed CQ object of `T`'s size on a `T` device, valid
/// attributes, and null or the uverbs call's attribute bundle.
pub(super) unsafe extern "C" fn create_cq<T: CqDriver>(
    ibcq: *mut bindings::ib_cq,
    attr: *const bindings::ib_cq_init_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    from_result(|| {
        // SAFETY: per this function's contract.
        let (dev, a) = unsafe { (Device::<T>::from_raw((*ibcq).device), &*attr) };
        let attr = CqInitAttr {
            cqe: a.cqe,
            flags: a.flags,
        };
        // SAFETY: null or the live bundle of this call; its driver udata lives as long.
        let udata = unsafe { UData::from_raw(bindings::rxe_sr_glue_attrs_udata(attrs)) };
        let (init, depth) = T::create_cq(dev, &attr, udata)?;
        let cq = Cq::<T>::container(ibcq);
        // SAFETY: `data` lies in the core's allocation, which never moves; the object is
        // not visible to anyone yet. From here it is initialised (type invariant).
        unsafe { init.__pinned_init(ptr::addr_of_mut!((*cq).data)) }
            .unwrap_or_else(|never| match never {});
        // SAFETY: initialised just above.
        unsafe { &*cq }.set_cqe(depth);
        Ok(0)
    })
}

/// `ib_device_ops.destroy_cq`.
///
/// # Safety
/// Called by the core once per CQ it created on a `T` device, with no users left.
pub(super) unsafe extern "C" fn destroy_cq<T: CqDriver>(
    ibcq: *mut bindings::ib_cq,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    let cq = Cq::<T>::container(ibcq);
    // SAFETY: per this function's contract: a live `T` device and an initialised CQ.
    let (dev, data) = unsafe { (Device::<T>::from_raw((*ibcq).device), &(*cq).data) };
    T::destroy_cq(dev, data);
    // SAFETY: initialised (type invariant) and unused from here; dropped once.
    unsafe { ptr::drop_in_place(ptr::addr_of_mut!((*cq).data)) };
    0
}

/// `ib_device_ops.req_notify_cq`: 1 when asked to report missed events and completions are
/// already waiting.
///
/// # Safety
/// Called by the core with a live CQ of a `T` device.
pub(super) unsafe extern "C" fn req_notify_cq<T: CqDriver>(
    ibcq: *mut bindings::ib_cq,
    flags: bindings::ib_cq_notify_flags,
) -> c_int {
    // SAFETY: per this function's contract.
    let cq = unsafe { Cq::<T>::from_raw(ibcq) };
    c_int::from(T::req_notify_cq(cq, CqNotify::from_raw(flags)))
}

/// `ib_device_ops.resize_cq`.
///
/// # Safety
/// Called by the core with a live CQ of a `T` device and null or the call's `udata`.
pub(super) unsafe extern "C" fn resize_cq<T: CqDriver>(
    ibcq: *mut bindings::ib_cq,
    cqe: c_int,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: per this function's contract.
        let cq = unsafe { Cq::<T>::from_raw(ibcq) };
        // SAFETY: null or the call's user data.
        let udata = unsafe { UData::from_raw(udata) };
        let depth = T::resize_cq(cq, u32::try_from(cqe).map_err(|_| EINVAL)?, udata)?;
        cq.set_cqe(depth);
        Ok(0)
    })
}

/// `ib_device_ops.poll_cq`: up to `num` completions into `wc`; returns how many.
///
/// # Safety
/// Called by the core with a live CQ of a `T` device and room for `num` entries at `wc`.
pub(super) unsafe extern "C" fn poll_cq<T: CqDriver>(
    ibcq: *mut bindings::ib_cq,
    num: c_int,
    wc: *mut bindings::ib_wc,
) -> c_int {
    let Some(wc) = NonNull::new(wc) else {
        return EINVAL.to_errno();
    };
    // SAFETY: per this function's contract.
    let cq = unsafe { Cq::<T>::from_raw(ibcq) };
    // INVARIANT: the caller gave room for `num` entries.
    let mut out = WcArray {
        wc,
        cap: usize::try_from(num).unwrap_or(0),
        len: 0,
        _out: PhantomData,
    };
    T::poll_cq(cq, &mut out);
    // At most `num`, an int.
    out.len as c_int
}
