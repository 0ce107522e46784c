// SPDX-License-Identifier: GPL-2.0
//! Network namespaces (include/net/net_namespace.h): a borrowed `struct net` with its
//! identity, and the module's pernet subsystem, whose exit is called for each namespace
//! being dismantled (and for every namespace when it is unregistered).

use core::marker::PhantomData;
use core::pin::Pin;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::alloc::KBox;
use kernel::prelude::*;
use kernel::types::Opaque;

use crate::kx::bindings;
use crate::kx::netdevice::NetDev;
use crate::kx::registration::pin_table;

/// A network namespace borrowed for the duration of a call.
///
/// # Invariants
/// `ptr` points to a live `struct net` for `'a`.
pub(crate) struct NetNs<'a> {
    ptr: NonNull<bindings::net>,
    _borrow: PhantomData<&'a bindings::net>,
}

/// A namespace's identity for the life of the system: unlike its address or its inode
/// number, never given to another namespace (`net->net_cookie`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct NetCookie(u64);

impl<'a> NetNs<'a> {
    /// The namespace `nd` is in. A netdev leaves its namespace only by being unregistered
    /// from it, so the namespace outlives the borrow of `nd`.
    pub(crate) fn of_netdev<'b>(nd: &'b NetDev) -> Option<NetNs<'b>> {
        // `dev_net`: `read_pnet(&dev->nd_net)`, the field's pointer, or the initial namespace
        // without CONFIG_NET_NS.
        #[cfg(CONFIG_NET_NS)]
        let ptr = {
            let dev = nd.as_raw();
            // SAFETY: `nd` is live for the borrow; a plain read of an aligned pointer, as
            // `read_pnet`'s `rcu_dereference_protected(pnet->net, true)`.
            unsafe { (*dev).nd_net.net }
        };
        // Rust before 1.82 wants `unsafe` to take a `static mut`'s address, later ones not.
        #[cfg(not(CONFIG_NET_NS))]
        #[allow(unused_unsafe)]
        let ptr = {
            // Every netdev is in the initial namespace.
            let _ = nd;
            // SAFETY: the address of the kernel's static initial namespace, nothing read.
            unsafe { core::ptr::addr_of_mut!(bindings::init_net) }
        };
        // SAFETY: the netdev's namespace lives at least as long as the netdev is in it,
        // which it is for the borrow.
        unsafe { NetNs::from_raw(ptr) }
    }

    /// Wraps a pointer the caller keeps valid for `'a`.
    ///
    /// # Safety
    /// `ptr` is null or points to a `struct net` live for the returned lifetime.
    unsafe fn from_raw(ptr: *mut bindings::net) -> Option<NetNs<'a>> {
        // INVARIANT: the caller keeps a non-null `ptr` live for `'a`.
        NonNull::new(ptr).map(|ptr| NetNs {
            ptr,
            _borrow: PhantomData,
        })
    }

    /// The raw pointer, for calls into the kernel.
    pub(crate) fn as_raw(&self) -> *mut bindings::net {
        self.ptr.as_ptr()
    }

    /// Its cookie.
    pub(crate) fn cookie(&self) -> NetCookie {
        let net = self.ptr.as_ptr();
        // SAFETY: live (invariant); `net_cookie` is written once, before the namespace is
        // visible: a plain read, as the C's `net->net_cookie`.
        NetCookie(unsafe { (*net).net_cookie })
    }

    /// The inode number of its nsfs file, as `ls -l /proc/PID/ns/net` shows it
    /// (`net:[4026531840]` for the initial namespace).
    pub(crate) fn inum(&self) -> u32 {
        let net = self.ptr.as_ptr();
        // SAFETY: live (invariant); `ns.inum` is set once when the namespace was made: a plain
        // read, as the C's `net->ns.inum`.
        unsafe { (*net).ns.inum }
    }
}

/// Told of each network namespace being dismantled (process context, may sleep).
pub(crate) trait PernetExit {
    /// `net` is being dismantled: its netdevs are gone, and whatever the module keeps for
    /// it must go now (its kernel sockets do not keep it alive).
    fn exit(net: &NetNs<'_>);
}

/// Whether the module's pernet subsystem is registered (one is enough for the module).
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// The registered pernet subsystem, owning the `pernet_operations` the core links into its
/// list; unregistered on drop, which calls [`PernetExit::exit`] for every namespace left.
///
/// # Invariants
/// `ops` is registered with the namespace core until `drop`, and `REGISTERED` is set.
pub(crate) struct PernetRegistration {
    ops: Pin<KBox<Opaque<bindings::pernet_operations>>>,
}

// SAFETY: the table is only used by the namespace core (under pernet_ops_rwsem) and freed
// after unregistering; its one pointer is to a function.
unsafe impl Send for PernetRegistration {}
// SAFETY: no method takes `&self`.
unsafe impl Sync for PernetRegistration {}

impl PernetRegistration {
    /// Starts calling `T` for namespaces being dismantled (`EBUSY` if a registration
    /// exists).
    pub(crate) fn register<T: PernetExit>() -> Result<Self> {
        if REGISTERED.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        let table = bindings::pernet_operations {
            exit: Some(pernet_exit::<T>),
            ..Default::default()
        };
        let ops = pin_table(table, &REGISTERED)?;
        // SAFETY: a table of ours, pinned and alive until `drop` unregisters it, with an
        // exit sound for any namespace the core passes.
        let ret = unsafe { bindings::register_pernet_subsys(ops.get()) };
        if let Err(e) = kernel::error::to_result(ret) {
            REGISTERED.store(false, Ordering::Release);
            return Err(e);
        }
        // INVARIANT: registered above; `REGISTERED` set.
        Ok(PernetRegistration { ops })
    }
}

impl Drop for PernetRegistration {
    fn drop(&mut self) {
        // SAFETY: registered (type invariant); unregistering calls the exit for every
        // namespace and returns once none runs, so the table may be freed.
        unsafe { bindings::unregister_pernet_subsys(self.ops.get()) };
        REGISTERED.store(false, Ordering::Release);
    }
}

/// The subsystem's exit (`pernet_operations.exit`).
///
/// # Safety
/// Called by the namespace core (pernet_ops_rwsem held) with a namespace live for the call.
unsafe extern "C" fn pernet_exit<T: PernetExit>(net: *mut bindings::net) {
    // SAFETY: per this function's contract, live for the call.
    if let Some(net) = unsafe { NetNs::from_raw(net) } {
        T::exit(&net);
    }
}
