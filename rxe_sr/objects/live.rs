// SPDX-License-Identifier: GPL-2.0
//! Live-object counters: every verbs object rxe_sr creates is counted up and down, so a test
//! can check that unloading or a crashing process leaves nothing behind.

use core::sync::atomic::{AtomicI64, Ordering};

/// A counter of live objects of one kind.
pub(crate) struct Live(AtomicI64);

impl Live {
    const fn new() -> Self {
        Live(AtomicI64::new(0))
    }
    /// One more.
    pub(crate) fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    /// One fewer.
    pub(crate) fn dec(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
    /// How many are alive.
    pub(crate) fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The live-object counters, by kind.
pub(crate) struct LiveObjects {
    /// User contexts.
    pub(crate) ucontexts: Live,
    /// Protection domains.
    pub(crate) pds: Live,
    /// Completion queues.
    pub(crate) cqs: Live,
    /// Memory regions.
    pub(crate) mrs: Live,
    /// Queue pairs.
    pub(crate) qps: Live,
    /// Address handles.
    pub(crate) ahs: Live,
    /// Shared receive queues.
    pub(crate) srqs: Live,
    /// Memory windows.
    pub(crate) mws: Live,
}

/// Every live-object counter.
pub(crate) static LIVE: LiveObjects = LiveObjects {
    ucontexts: Live::new(),
    pds: Live::new(),
    cqs: Live::new(),
    mrs: Live::new(),
    qps: Live::new(),
    ahs: Live::new(),
    srqs: Live::new(),
    mws: Live::new(),
};

/// One live object of a kind, counted while this value exists (an object whose driver data
/// holds one is counted exactly as long as that data lives).
pub(crate) struct Counted(&'static Live);

impl Counted {
    /// Counts one more of `kind`.
    pub(crate) fn new(kind: &'static Live) -> Self {
        kind.inc();
        Counted(kind)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.dec();
    }
}
