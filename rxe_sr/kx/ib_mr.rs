// SPDX-License-Identifier: GPL-2.0
//! Memory regions (include/rdma/ib_verbs.h, `struct ib_mr`): [`Mr<T>`], the core's `ib_mr`
//! and the driver's data in one reference-counted allocation; the memory a kernel
//! consumer's keys reach ([`KernelVa`], [`KernelPages`]) and the scatterlist a ULP maps
//! into a fast-registration MR ([`SgMapping`]); and the MR entries of `ib_device_ops`,
//! which call the driver's `MrDriver` methods. (User memory is `ib_umem.rs`.)
//!
//! The driver allocates an MR (unlike the other verbs objects) and hands the core a pointer
//! to its `ib_mr`: that pointer holds one reference on the `Arc<Mr<T>>`, from registration
//! until `dereg_mr` succeeds; the driver's lookups hold others, so an MR found by key
//! stays allocated while it is being used, even if it is deregistered meanwhile.

use core::marker::PhantomData;
use core::ptr;
use kernel::alloc::{flags::GFP_KERNEL, KVVec};
use kernel::error::from_result;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::Opaque;

use crate::kx::bindings;
use crate::kx::ib_device::{Device, DriverData};
use crate::kx::ib_pd::PdId;

/// A driver's memory regions: the data in each and the MR verbs.
pub(crate) trait MrDriver: DriverData {
    /// The driver's data in each memory region ([`ib_mr::Mr`]).
    type Mr: Send + Sync;

    /// `reg_user_mr`: an MR of `pd` over the caller's memory.
    fn reg_user_mr(
        dev: &Device<Self>,
        pd: PdId,
        req: &UserMrReq,
    ) -> Result<impl PinInit<Self::Mr, Error>>;

    /// `get_dma_mr`: the MR of a kernel PD that covers kernel memory (`mem`).
    fn get_dma_mr(
        dev: &Device<Self>,
        pd: PdId,
        access: i32,
        mem: KernelVa,
    ) -> Result<impl PinInit<Self::Mr, Error>>;

    /// `alloc_mr`: a fast-registration MR of a kernel PD for up to `max_num_sg` blocks.
    fn alloc_mr(
        dev: &Device<Self>,
        pd: PdId,
        max_num_sg: u32,
    ) -> Result<impl PinInit<Self::Mr, Error>>;

    /// A new MR was built by one of the three above: give it its keys
    /// ([`ib_mr::Mr::set_keys`]) and make it reachable. On error it is dropped.
    fn publish_mr(dev: &Device<Self>, mr: &Arc<Mr<Self>>) -> Result;

    /// `map_mr_sg`: maps a ULP's scatterlist into a fast-registration MR; returns the
    /// entries mapped and the iova and length the core reports.
    fn map_mr_sg(mr: &Mr<Self>, sg: SgMapping<'_>) -> Result<(c_int, u64, u64)>;

    /// `rereg_user_mr`, in place: what `flags` names changes, the PD to `pd`, the rights to
    /// `req.access`, the memory to `req`'s range; an error leaves the MR as it was.
    fn rereg_user_mr(
        dev: &Device<Self>,
        mr: &Mr<Self>,
        flags: MrRereg,
        pd: PdId,
        req: &UserMrReq,
    ) -> Result;

    /// `dereg_mr`: an error refuses it (the MR stays registered); on success the core's
    /// reference goes.
    fn dereg_mr(dev: &Device<Self>, mr: &Mr<Self>) -> Result;

    /// `advise_mr`: prefetch advice for ranges of on-demand paging MRs of `pd`; `flush`
    /// asks for the work to be done before the call returns.
    fn advise_mr(
        dev: &Device<Self>,
        pd: PdId,
        advice: Advice,
        flush: bool,
        sges: impl Iterator<Item = AdviseSge>,
    ) -> Result;
}
use crate::kx::skbuff::PayloadSink;

/// A memory region of a `T` device: the core's `struct ib_mr` and the driver's data.
///
/// # Invariants
/// Lives in an `Arc` ([`Mr::new`]); `ib` is zeroed at creation, then written by the driver
/// before the core sees it ([`Mr::set_keys`]) and by the core (`ib_map_mr_sg`, and the
/// fields it sets when a registration returns).
#[pin_data]
#[repr(C)]
pub(crate) struct Mr<T: MrDriver> {
    #[pin]
    ib: Opaque<bindings::ib_mr>,
    #[pin]
    data: T::Mr,
}

// SAFETY: the driver's data is `Send + Sync`; the driver reads the core's `ib_mr` only by
// volatile reads of integers (`core_mapping`), writes it only before the core sees the MR.
unsafe impl<T: MrDriver> Send for Mr<T> {}
// SAFETY: as above.
unsafe impl<T: MrDriver> Sync for Mr<T> {}

impl<T: MrDriver> Mr<T> {
    /// `ib` comes first: a pointer to the core's part, which the core hands to every
    /// callback, is one to the whole object (checked at build time).
    const IB_FIRST: () = assert!(core::mem::offset_of!(Self, ib) == 0);

    /// The object whose core part `ib` is: the same address ([`Self::IB_FIRST`]).
    fn container(ib: *mut bindings::ib_mr) -> *mut Self {
        let () = Self::IB_FIRST;
        ib.cast()
    }

    /// A new MR with data `init` (its `ib_mr` zeroed).
    fn new(init: impl PinInit<T::Mr, Error>) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Mr {
                ib <- Opaque::ffi_init(|p: *mut bindings::ib_mr| {
                    // SAFETY: `p` is the field's storage; an all-zero `ib_mr` is valid.
                    unsafe { p.write(bindings::ib_mr::default()) }
                }),
                data <- init,
            }? Error),
            GFP_KERNEL,
        )
    }

    /// Sets the keys and range the core reports (`lkey`, `rkey`, `iova`, `length`). Called
    /// before the MR is returned to the core.
    pub(crate) fn set_keys(&self, key: u32, iova: u64, length: u64) {
        // SAFETY: the core does not see the MR before it is returned; the driver writes
        // these fields only here.
        unsafe {
            let ib = self.ib.get();
            (*ib).lkey = key;
            (*ib).rkey = key;
            (*ib).iova = iova;
            (*ib).length = length;
        }
    }

    /// What the last `ib_map_mr_sg` left in the core's `ib_mr` (page size, iova, length),
    /// as a REG_MR work request registers it. A ULP may change `iova` after mapping
    /// (xprtrdma puts a transaction id in its top bits), so it is read when the REG_MR runs.
    pub(crate) fn core_mapping(&self) -> (u32, u64, u64) {
        let ib = self.ib.get();
        // SAFETY: `ib` is valid for the MR's life; the fields are plain integers, read as C
        // data (volatile), since the core writes them on its own.
        unsafe {
            (
                ptr::read_volatile(ptr::addr_of!((*ib).page_size)),
                ptr::read_volatile(ptr::addr_of!((*ib).iova)),
                ptr::read_volatile(ptr::addr_of!((*ib).length)),
            )
        }
    }

    /// The MR the core passes back in a verb (or a kernel work request names).
    ///
    /// # Safety
    /// `ibmr` is an MR of a `T` device that [`reg_user_mr`], [`get_dma_mr`] or
    /// [`alloc_mr`] returned and `dereg_mr` has not freed, for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ibmr: *mut bindings::ib_mr) -> &'a Self {
        // SAFETY: the object inside the Arc whose reference the core holds (per this
        // function's contract), `ib` at its start (`IB_FIRST`).
        unsafe { &*Self::container(ibmr) }
    }
}

impl<T: MrDriver> core::ops::Deref for Mr<T> {
    type Target = T::Mr;

    fn deref(&self) -> &T::Mr {
        &self.data
    }
}

/// A user registration (`reg_user_mr`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct UserMrReq {
    /// The process's address of its first byte.
    pub(crate) start: u64,
    /// Its length in bytes.
    pub(crate) length: u64,
    /// The address its keys name its first byte by.
    pub(crate) iova: u64,
    /// `IB_ACCESS_*` asked for (an `int` in the ABI).
    pub(crate) access: i32,
}

/// What an `ibv_rereg_mr` changes (`enum ib_mr_rereg_flags`; uverbs refused any other).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MrRereg(c_int);

impl MrRereg {
    /// IB_MR_REREG_TRANS: new memory (the request's start, length and iova).
    pub(crate) fn translation(self) -> bool {
        self.0 & bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS as c_int != 0
    }

    /// IB_MR_REREG_PD: a new PD.
    pub(crate) fn pd(self) -> bool {
        self.0 & bindings::ib_mr_rereg_flags_IB_MR_REREG_PD as c_int != 0
    }

    /// IB_MR_REREG_ACCESS: new access rights (the request's).
    pub(crate) fn access(self) -> bool {
        self.0 & bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS as c_int != 0
    }
}

/// Kernel memory as a kernel consumer's DMA MR reaches it: with virtual DMA, the addresses
/// in its SGEs are kernel virtual addresses. Only `get_dma_mr` (which the core calls for
/// kernel PDs, whose consumers own the memory their SGEs name) and a kernel consumer's
/// inline send request (`ib_wr.rs`) make one.
pub(crate) struct KernelVa(());

impl KernelVa {
    /// The memory a kernel consumer's work request names (its inline data, which a
    /// consumer posts from its own kernel buffers).
    pub(super) fn of_kernel_request() -> Self {
        KernelVa(())
    }

    /// Copies `dst.len()` bytes at kernel address `addr` into `dst`; false outside the
    /// kernel's direct map.
    pub(crate) fn read(&self, addr: u64, dst: &mut [u8]) -> bool {
        // SAFETY: `dst` is writable for its length; the helper refuses addresses outside the
        // direct map. The memory belongs to the kernel consumer whose key named it.
        unsafe {
            bindings::rxe_sr_glue_kva_copy(addr, dst.as_mut_ptr().cast(), dst.len(), false) == 0
        }
    }

    /// As [`Self::read`], `n` bytes appended to a datagram's payload.
    pub(crate) fn read_into(&self, addr: u64, n: usize, dst: &mut PayloadSink<'_>) -> bool {
        let Ok(addr) = usize::try_from(addr) else {
            return false;
        };
        // SAFETY: no page array: a kernel address, which the helpers refuse outside the
        // direct map. The memory belongs to the kernel consumer whose key named it.
        unsafe { dst.put_mem(core::ptr::null(), 0, addr, n) }
    }

    /// Copies `src` to kernel address `addr`; false outside the kernel's direct map.
    pub(crate) fn write(&self, addr: u64, src: &[u8]) -> bool {
        // SAFETY: the helper only reads `src`; otherwise as in `read`.
        unsafe {
            bindings::rxe_sr_glue_kva_copy(addr, src.as_ptr().cast_mut().cast(), src.len(), true)
                == 0
        }
    }
}

/// The blocks a ULP mapped into a fast-registration MR (`map_mr_sg`), as kernel addresses.
///
/// # Invariants
/// Holds at most `capacity` blocks; `len` of them are mapped; each came from a scatterlist
/// a kernel consumer mapped ([`SgMapping::map_into`]).
pub(crate) struct KernelPages {
    blocks: KVVec<u64>,
    len: usize,
}

impl KernelPages {
    /// Room for `max` blocks, none mapped.
    pub(crate) fn new(max: u32) -> Result<Self> {
        let n = usize::try_from(max).map_err(|_| EINVAL)?;
        Ok(KernelPages {
            blocks: KVVec::from_elem(0, n, GFP_KERNEL)?,
            len: 0,
        })
    }

    /// Blocks mapped.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies `len` bytes between `buf` and byte `off` of the registration whose blocks
    /// are `page_size` bytes, the first byte `iova % page_size` into the first block.
    fn copy(
        &self,
        page_size: u64,
        iova: u64,
        off: usize,
        buf: *mut u8,
        len: usize,
        to: bool,
    ) -> bool {
        self.each_piece(page_size, iova, off, len, |addr, done, n| {
            // SAFETY: `buf + done` is valid for `n` bytes (the callers' slices); the block is
            // the mapping consumer's (invariant), refused by the helper outside the direct map.
            unsafe { bindings::rxe_sr_glue_kva_copy(addr, buf.add(done).cast(), n, to) == 0 }
        })
    }

    /// Runs `f(kernel address, bytes before it, bytes)` on each piece of the `len` bytes at
    /// byte `off` of the registration (see [`Self::copy`]), one block at a time, until one
    /// fails.
    fn each_piece(
        &self,
        page_size: u64,
        iova: u64,
        off: usize,
        len: usize,
        mut f: impl FnMut(u64, usize, usize) -> bool,
    ) -> bool {
        let Ok(ps) = usize::try_from(page_size) else {
            return false;
        };
        if ps == 0 {
            return false;
        }
        let Some(mut at) = usize::try_from(iova % page_size)
            .ok()
            .and_then(|f| f.checked_add(off))
        else {
            return false;
        };
        let mut done = 0;
        while done < len {
            let (idx, inpage) = (at / ps, at % ps);
            let n = (len - done).min(ps - inpage);
            let Some(&block) = self.blocks.get(idx).filter(|_| idx < self.len) else {
                return false;
            };
            if !f(block.wrapping_add(inpage as u64), done, n) {
                return false;
            }
            done += n;
            at += n;
        }
        true
    }

    /// Copies `dst.len()` bytes at byte `off` of the registration into `dst` (see
    /// [`KernelPages::write`] for `page_size` and `iova`).
    pub(crate) fn read(&self, page_size: u64, iova: u64, off: usize, dst: &mut [u8]) -> bool {
        self.copy(page_size, iova, off, dst.as_mut_ptr(), dst.len(), false)
    }

    /// As [`Self::read`], `n` bytes appended to a datagram's payload.
    pub(crate) fn read_into(
        &self,
        page_size: u64,
        iova: u64,
        off: usize,
        n: usize,
        dst: &mut PayloadSink<'_>,
    ) -> bool {
        self.each_piece(page_size, iova, off, n, |addr, _, k| {
            let Ok(addr) = usize::try_from(addr) else {
                return false;
            };
            // SAFETY: no page array: a kernel address of the mapping consumer's (type
            // invariant), which the helpers refuse outside the direct map.
            unsafe { dst.put_mem(core::ptr::null(), 0, addr, k) }
        })
    }

    /// Copies `src` to byte `off` of the registration whose blocks are `page_size` bytes,
    /// its first byte `iova % page_size` into the first block.
    pub(crate) fn write(&self, page_size: u64, iova: u64, off: usize, src: &[u8]) -> bool {
        self.copy(
            page_size,
            iova,
            off,
            src.as_ptr().cast_mut(),
            src.len(),
            true,
        )
    }
}

/// A DMA-mapped scatterlist a ULP maps into a fast-registration MR (`map_mr_sg`), borrowed
/// for the call.
///
/// # Invariants
/// `sg` holds `nents` mapped entries and `offset` is null or writable, for `'a`.
pub(crate) struct SgMapping<'a> {
    sg: *mut bindings::scatterlist,
    nents: c_int,
    offset: *mut u32,
    page_size: u32,
    _call: PhantomData<&'a mut bindings::scatterlist>,
}

/// How `ib_sg_to_pages` calls back: the context around its `ib_mr` holds the target list.
#[repr(C)]
struct MapCtx<'p> {
    ib: bindings::ib_mr,
    pages: &'p mut KernelPages,
}

/// `ib_sg_to_pages`' page callback: appends one block.
///
/// # Safety
/// `ibmr` is the `ib` field of a live [`MapCtx`] (as [`SgMapping::map_into`] passes it).
unsafe extern "C" fn set_page(ibmr: *mut bindings::ib_mr, addr: u64) -> c_int {
    // SAFETY: per this function's contract; `ib` is the first field of the `repr(C)` context.
    let ctx = unsafe { &mut *ibmr.cast::<MapCtx<'_>>() };
    let pages = &mut *ctx.pages;
    match pages.blocks.get_mut(pages.len) {
        Some(slot) => {
            *slot = addr;
            pages.len += 1;
            0
        }
        None => ENOMEM.to_errno(),
    }
}

impl SgMapping<'_> {
    /// The block size the ULP asked for (`ib_map_mr_sg`'s `page_size`).
    pub(crate) fn page_size(&self) -> u32 {
        self.page_size
    }

    /// Splits the scatterlist into blocks of the page size the ULP chose, replacing what
    /// `pages` held; returns how many entries were mapped and the iova and length the core
    /// reports for them (`ib_sg_to_pages`' result; it does not sleep).
    pub(crate) fn map_into(self, pages: &mut KernelPages) -> (c_int, u64, u64) {
        pages.len = 0;
        let mut ctx = MapCtx {
            ib: bindings::ib_mr {
                page_size: self.page_size,
                ..Default::default()
            },
            pages,
        };
        // SAFETY: scatterlist and offset valid (invariant); the callback gets `&ctx.ib`, first
        // field of the live `ctx`, whose `page_size` it reads and `iova`/`length` it writes.
        let n = unsafe {
            bindings::ib_sg_to_pages(
                &mut ctx.ib,
                self.sg,
                self.nents,
                self.offset,
                Some(set_page),
            )
        };
        (n, ctx.ib.iova, ctx.ib.length)
    }
}

/// What the driver builds an MR from.
fn created<T: MrDriver>(
    dev: &Device<T>,
    init: impl PinInit<T::Mr, Error>,
) -> Result<*mut bindings::ib_mr> {
    let mr = Mr::<T>::new(init)?;
    T::publish_mr(dev, &mr)?;
    // The core's reference, given back in `dereg_mr`.
    Ok(Arc::into_raw(mr).cast_mut().cast())
}

/// `ib_device_ops.reg_user_mr`.
///
/// # Safety
/// Called by uverbs with a live PD of a `T` device.
pub(super) unsafe extern "C" fn reg_user_mr<T: MrDriver>(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    // SAFETY: per this function's contract.
    let dev = unsafe { Device::<T>::from_raw((*pd).device) };
    let req = UserMrReq {
        start,
        length,
        iova,
        access,
    };
    T::reg_user_mr(dev, PdId::from_raw(pd), &req)
        .and_then(|init| created(dev, init))
        .unwrap_or_else(|e| e.to_ptr())
}

/// `ib_device_ops.rereg_user_mr`: changed in place (null: uverbs updates its `ib_mr`'s PD,
/// iova and length itself), or an errno, the MR left as it was.
///
/// # Safety
/// Called by uverbs with a user MR of a `T` device that `reg_user_mr` returned, no other
/// call on it running (uverbs holds its object for writing), and a live PD of that device.
pub(super) unsafe extern "C" fn rereg_user_mr<T: MrDriver>(
    ibmr: *mut bindings::ib_mr,
    flags: c_int,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    // SAFETY: per this function's contract; the core set the MR's device.
    let (mr, dev) = unsafe {
        (
            Mr::<T>::from_raw(ibmr),
            Device::<T>::from_raw((*ibmr).device),
        )
    };
    let req = UserMrReq {
        start,
        length,
        iova,
        access,
    };
    match T::rereg_user_mr(dev, mr, MrRereg(flags), PdId::from_raw(pd), &req) {
        Ok(()) => ptr::null_mut(),
        Err(e) => e.to_ptr(),
    }
}

/// `ib_device_ops.get_dma_mr`: the MR behind a kernel PD's `local_dma_lkey`.
///
/// # Safety
/// Called by the core with a live kernel PD of a `T` device.
pub(super) unsafe extern "C" fn get_dma_mr<T: MrDriver>(
    pd: *mut bindings::ib_pd,
    access: c_int,
) -> *mut bindings::ib_mr {
    // SAFETY: per this function's contract.
    let dev = unsafe { Device::<T>::from_raw((*pd).device) };
    // The core asks for DMA MRs only for kernel PDs: their consumers own what their SGEs
    // name.
    T::get_dma_mr(dev, PdId::from_raw(pd), access, KernelVa(()))
        .and_then(|init| created(dev, init))
        .unwrap_or_else(|e| e.to_ptr())
}

/// `ib_device_ops.alloc_mr`: a fast-registration MR of a kernel PD.
///
/// # Safety
/// Called by the core with a live PD of a `T` device.
pub(super) unsafe extern "C" fn alloc_mr<T: MrDriver>(
    pd: *mut bindings::ib_pd,
    mr_type: bindings::ib_mr_type,
    max_num_sg: u32,
) -> *mut bindings::ib_mr {
    if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
        return crate::kx::error::eopnotsupp().to_ptr();
    }
    // SAFETY: per this function's contract.
    let dev = unsafe { Device::<T>::from_raw((*pd).device) };
    T::alloc_mr(dev, PdId::from_raw(pd), max_num_sg)
        .and_then(|init| created(dev, init))
        .unwrap_or_else(|e| e.to_ptr())
}

/// `ib_device_ops.map_mr_sg`: the number of scatterlist entries mapped, or an errno.
///
/// # Safety
/// Called by the core with an MR of a `T` device that `alloc_mr` returned, a DMA-mapped
/// scatterlist of `sg_nents` entries and null or a writable `sg_offset`.
pub(super) unsafe extern "C" fn map_mr_sg<T: MrDriver>(
    ibmr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    sg_nents: c_int,
    sg_offset: *mut u32,
) -> c_int {
    // SAFETY: per this function's contract.
    let mr = unsafe { Mr::<T>::from_raw(ibmr) };
    let (page_size, _, _) = mr.core_mapping();
    // INVARIANT: per this function's contract.
    let sg = SgMapping {
        sg,
        nents: sg_nents,
        offset: sg_offset,
        page_size,
        _call: PhantomData,
    };
    from_result(|| {
        let (n, iova, length) = T::map_mr_sg(mr, sg)?;
        // SAFETY: the core's own fields, as `ib_sg_to_pages` would set them in place; the
        // ULP mapping the MR does not use it meanwhile.
        unsafe {
            (*ibmr).iova = iova;
            (*ibmr).length = length;
        }
        Ok(n)
    })
}

/// `ib_device_ops.dereg_mr`: refused (the MR stays registered) when the driver refuses.
///
/// # Safety
/// Called by the core once per MR of a `T` device it got from us, after its users are
/// gone (and again only if this call failed).
pub(super) unsafe extern "C" fn dereg_mr<T: MrDriver>(
    ibmr: *mut bindings::ib_mr,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: per this function's contract; the core set the MR's device.
    let (mr, dev) = unsafe {
        (
            Mr::<T>::from_raw(ibmr),
            Device::<T>::from_raw((*ibmr).device),
        )
    };
    if let Err(e) = T::dereg_mr(dev, mr) {
        return e.to_errno();
    }
    // SAFETY: the core's reference, from `Arc::into_raw` in `created`, given back once.
    drop(unsafe { Arc::from_raw(Mr::<T>::container(ibmr).cast_const()) });
    0
}

/// What `ibv_advise_mr` asks for (`enum ib_uverbs_advise_mr_advice`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Advice {
    /// Fault the pages in for reading.
    Prefetch,
    /// Fault the pages in for writing.
    PrefetchWrite,
    /// Map the pages the process already has, faulting none.
    PrefetchNoFault,
}

/// One entry of an `ibv_advise_mr` scatter list: `length` bytes at `addr` through `lkey`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdviseSge {
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

/// `ib_device_ops.advise_mr`: prefetch advice on ranges of on-demand paging MRs of `pd`.
/// The core has checked the flags (`IB_UVERBS_ADVISE_MR_FLAG_FLUSH` at most) and copied in
/// at least one SGE.
///
/// # Safety
/// Called by uverbs with a live PD of a `T` device and `num_sge` SGEs at `sg_list`.
pub(super) unsafe extern "C" fn advise_mr<T: MrDriver>(
    pd: *mut bindings::ib_pd,
    advice: bindings::ib_uverbs_advise_mr_advice,
    flags: u32,
    sg_list: *mut bindings::ib_sge,
    num_sge: u32,
    _attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    let advice = match advice {
        bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH => {
            Advice::Prefetch
        }
        bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE => {
            Advice::PrefetchWrite
        }
        bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT => {
            Advice::PrefetchNoFault
        }
        _ => return crate::kx::error::eopnotsupp().to_errno(),
    };
    let flush = flags & bindings::ib_uverbs_advise_mr_flag_IB_UVERBS_ADVISE_MR_FLAG_FLUSH != 0;
    // SAFETY: per this function's contract.
    let dev = unsafe { Device::<T>::from_raw((*pd).device) };
    let sges: &[bindings::ib_sge] = if sg_list.is_null() || num_sge == 0 {
        &[]
    } else {
        // SAFETY: per this function's contract, `num_sge` SGEs the core owns for the call.
        unsafe { core::slice::from_raw_parts(sg_list, num_sge as usize) }
    };
    let sges = sges.iter().map(|s| AdviseSge {
        addr: s.addr,
        length: s.length,
        lkey: s.lkey,
    });
    from_result(|| T::advise_mr(dev, PdId::from_raw(pd), advice, flush, sges).map(|()| 0))
}
