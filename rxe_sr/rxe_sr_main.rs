// SPDX-License-Identifier: GPL-2.0
//! rxe_sr: a soft-RoCE (RoCEv2 over UDP) RDMA provider with selective retransmission.
//!
//! Layers (see DESIGN.md and scripts/check-layers), top to bottom:
//! - [`verbs`]: the ib_device and its verbs, in safe Rust.
//! - [`transport`]: UD, and RC/UC connection state around `proto::rc`.
//! - [`net`]: the RoCEv2 UDP sockets (one pair per network namespace with links), their
//!   receive side and its counters.
//! - [`objects`]: verbs objects' state shared by the verbs and the transport.
//! - [`kx`]: the kernel abstractions (bindings, C glue, the verbs objects' containers, the
//!   `Driver` trait and its adapters, locks, tables, timers): the only place with `unsafe`.
//! - [`proto`], [`uabi`], [`bytes`]: pure, no kernel dependency, shared with the host build
//!   and tested there by `cargo test`.
//!
//! Users: `modprobe rxe_sr recovery=gbn`, then `rdma link add sr0 type rxe_sr netdev eth0`.

// `try_pin_init!` over `DeviceState`'s fields nests deeper than the default limit.
#![recursion_limit = "256"]

use kernel::prelude::*;

// Pure: panic-free byte copies, shared by every layer (the bottom one).
#[allow(unreachable_pub)]
mod bytes;
mod kx;
mod net;
mod objects;
// The core is shared with the host crate: its `pub` items are the host crate's API. What
// the module does not use is marked item by item (`cfg_attr(MODULE, expect(dead_code))`,
// which fails once the module uses it).
#[allow(unreachable_pub, unused_imports)]
mod proto;
mod transport;
// Pure like proto/: the rxe user ABI's rings and WQEs, parsed from bytes user space wrote
// (unused items marked as in proto/).
#[allow(unreachable_pub, unused_imports)]
mod uabi;
mod verbs;

module! {
    type: RxeSr,
    name: "rxe_sr",
    author: "rxe_sr developers",
    description: "Soft-RoCE RDMA provider (RoCEv2) with selective retransmission",
    license: "GPL",
    alias: ["rdma-link-rxe_sr"],
}

/// The loaded module: what it registered, torn down in reverse order on unload.
struct RxeSr {
    link: Option<kx::rdma_netlink::LinkTypeRegistration>,
    notifier: Option<kx::netdevice::NotifierRegistration>,
    /// Closes the sockets of namespaces being dismantled.
    pernet: Option<kx::net_namespace::PernetRegistration>,
    /// Dropped last: the devices compute their ICRCs with it.
    icrc: Option<kx::rxe::icrc::IcrcTransform>,
}

/// FEC parameters as the load message names them.
struct FecName(Option<proto::fec::FecParams>);

impl core::fmt::Display for FecName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(p) => write!(f, "{}:1, depth {}", p.n(), p.d()),
            None => f.write_str("off"),
        }
    }
}

impl kernel::Module for RxeSr {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let recovery = kx::rxe::moduleparam::recovery();
        let sizes = kx::rxe::moduleparam::pool_sizes();
        if let Err(name) = objects::sr_pools::check_sizes(&sizes) {
            pr_err!(
                "{}: out of range: each pool size is 1..={}\n",
                name,
                objects::sr_pools::MAX_POOL
            );
            return Err(EINVAL);
        }
        let gbn_window = kx::rxe::moduleparam::gbn_window_psns();
        if !(proto::rc::MAX_UNACKED_PSNS..=proto::rc::GBN_MAX_UNACKED_PSNS).contains(&gbn_window) {
            pr_err!(
                "gbn_window_psns: out of range: {}..={}\n",
                proto::rc::MAX_UNACKED_PSNS,
                proto::rc::GBN_MAX_UNACKED_PSNS
            );
            return Err(EINVAL);
        }
        let window = kx::rxe::moduleparam::sr_window_psns();
        if !proto::rc::sr_window_valid(window) || window < gbn_window {
            pr_err!(
                "sr_window_psns: out of range: {} (a power of two from {} to {}, at least gbn_window_psns, {})\n",
                window,
                proto::rc::SR_ASSUMED_WINDOW_PSNS,
                1u32 << proto::rc::SR_MAX_WINDOW_LOG2,
                gbn_window
            );
            return Err(EINVAL);
        }
        let pipe = kx::rxe::moduleparam::sr_pipe_psns();
        if pipe > window {
            pr_err!(
                "sr_pipe_psns: out of range: 0..={} (sr_window_psns; 0: the SR window alone)\n",
                window
            );
            return Err(EINVAL);
        }
        let inflight = kx::rxe::moduleparam::dev_inflight_psns();
        if inflight > objects::inflight::MAX_BUDGET {
            pr_err!(
                "dev_inflight_psns: out of range: 0..={} (0: no bound)\n",
                objects::inflight::MAX_BUDGET
            );
            return Err(EINVAL);
        }
        let (unit, depth) = kx::rxe::moduleparam::fec_raw();
        let depth_ok = proto::fec::FecParams::new(4, depth).is_some();
        if !depth_ok || (unit != 0 && kx::rxe::moduleparam::fec().is_none()) {
            pr_err!(
                "fec_unit={} fec_depth={}: the unit is 4, 8, 16 or 32 packets (0: no FEC), the depth 1, 2, 4 or 8\n",
                unit,
                depth
            );
            return Err(EINVAL);
        }
        let icrc = kx::rxe::icrc::IcrcTransform::new().ok_or(EBUSY)?;
        // The RoCEv2 sockets are opened per namespace with its first link
        // (net/namespaces.rs), so rdma_rxe may be loaded beside rxe_sr.
        let pernet =
            kx::net_namespace::PernetRegistration::register::<net::namespaces::Namespaces>()?;
        let notifier = kx::netdevice::NotifierRegistration::register::<verbs::link::Links>()?;
        let link = kx::rdma_netlink::LinkTypeRegistration::register::<verbs::link::Links>()?;
        pr_info!(
            "loaded (recovery={}; SR pools: {} units, {} blocks; MELO pool: {} blocks; FaSR pipe: {} PSNs; SR window: {} PSNs; go-back-N window: {} PSNs; in flight per device: {} PSNs; FEC: {}; ICRC: {})\n",
            recovery.name(),
            sizes.sr_units,
            sizes.sr_blocks,
            sizes.melo_blocks,
            pipe,
            window,
            gbn_window,
            inflight,
            FecName(kx::rxe::moduleparam::fec()),
            icrc.driver().to_str().unwrap_or("?")
        );
        Ok(RxeSr {
            link: Some(link),
            notifier: Some(notifier),
            pernet: Some(pernet),
            icrc: Some(icrc),
        })
    }
}

impl Drop for RxeSr {
    fn drop(&mut self) {
        // No new links, then remove every device (this waits for their users; the last
        // device of a namespace closes its sockets), then stop watching netdevs and
        // namespaces.
        drop(self.link.take());
        kx::ib_device_list::unregister_all();
        drop(self.notifier.take());
        let open = net::namespaces::open_count();
        if open > 0 {
            pr_warn!(
                "{} namespaces' RoCEv2 sockets open with no device left\n",
                open
            );
        }
        drop(self.pernet.take());
        drop(self.icrc.take());
        let o = &objects::live::LIVE;
        let stray = net::RCVD_NO_DEVICE.load(core::sync::atomic::Ordering::Relaxed);
        if stray > 0 {
            pr_info!(
                "{} RoCEv2 datagrams arrived for no rxe_sr device and were dropped\n",
                stray
            );
        }
        let gone = verbs::pd::DISASSOCIATED.load(core::sync::atomic::Ordering::Relaxed);
        if gone > 0 {
            pr_info!(
                "{} user contexts were disassociated (their device unregistered or moved while a process had it open)\n",
                gone
            );
        }
        pr_info!(
            "unloaded ({} devices were created, {} are left; objects left: {} ucontexts, {} PDs, {} CQs, {} MRs, {} QPs, {} AHs, {} SRQs, {} MWs)\n",
            verbs::device::devices_created(),
            verbs::device::devices_live(),
            o.ucontexts.get(),
            o.pds.get(),
            o.cqs.get(),
            o.mrs.get(),
            o.qps.get(),
            o.ahs.get(),
            o.srqs.get(),
            o.mws.get()
        );
    }
}
