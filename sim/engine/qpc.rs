// SPDX-License-Identifier: GPL-2.0
//! The NIC's on-chip memory for QP contexts (QPC), what the papers' high-concurrency
//! results rest on (FaSR §V-C, SRNIC §2.2).
//!
//! Each QP's context is the base transport QPC plus the scheme's per-QP SR state, the
//! latter measured from the engine type itself ([`measure`]); a scheme's shared SR memory
//! (FaSR's SR pool, MELO's bits pool) sits on chip once per device. The on-chip QPC SRAM
//! holds as many contexts as fit; past that it is a cache over host memory, and when the
//! pipeline serves a QP whose context is not on chip it stalls for a PCIe round trip while
//! the context is fetched ([`QpcCache::access`]).
//!
//! Figures and their sources (1 tick = one 1 KiB packet at 100 Gb/s = 81.9 ns):
//! - [`NicMemory::FPGA`], the FaSR/IRN+/SRNIC testbed NIC (FaSR §V-A): 1.4 MB of SRAM for
//!   QPCs and 256 B of base QPC per QP. MB read as MiB, as SRNIC §3.2.1 does (210 B x 10K
//!   QPs = "2.0 MB").
//! - [`NicMemory::CX6`], the commodity NIC that runs go-back-N: a QPC of 375 B (SRNIC §2.2,
//!   citing Kalia et al. for CX-5). Its cache size is a CALIBRATION, not a measurement:
//!   SRNIC §2.2 notes that 2 MB / 375 B would hold 5.6K QPCs, yet CX-5/CX-6 collapse past
//!   256 QPs (SRNIC Fig. 2, FaSR Fig. 7(b)): the SRAM also holds WQE caches, MTT and
//!   buffers, which this model does not split out. We size the QPC cache to hold exactly
//!   256 of its contexts, so the knee lands where both papers measure it.
//! - Miss penalty: 15 ticks, the ~1.2 us PCIe round trip (FaSR §II-A and §V-D).
//! - Replacement: random (hardware's usual cheap policy). LRU is available, but under a
//!   round-robin scheduler it misses on every turn as soon as one context does not fit.

use std::mem::size_of;

use rxe_sr::proto::recovery::{fasr, gbn, melo};

use super::loss::Rng;
use super::{FasrPool, IrnEngine, MeloPool, Scheme, SrnicEngine};

/// Ticks of a PCIe round trip (~1.2 us, FaSR §II-A / §V-D) at 81.9 ns per tick.
pub const PCIE_RTT_TICKS: u64 = 15;
/// QPs whose contexts the CX6-style cache holds: the calibration (see the module doc).
pub const CX6_CACHED_QPCS: u64 = 256;

/// How the QPC cache picks a victim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replacement {
    /// A uniformly random resident context.
    Random,
    /// The least recently used context.
    Lru,
}

/// One NIC's on-chip QPC memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NicMemory {
    /// Name in tables.
    pub name: &'static str,
    /// SRAM for QPCs and the scheme's shared SR memory, in bytes.
    pub sram_bytes: u64,
    /// Base transport QPC per QP, in bytes (the scheme's SR state comes on top).
    pub base_qpc_bytes: u64,
    /// Ticks the pipeline stalls to fetch a context that is not on chip.
    pub miss_penalty: u64,
    /// Victim choice.
    pub replacement: Replacement,
}

impl NicMemory {
    /// The FPGA NIC of FaSR's testbed (FaSR §V-A): 1.4 MB of QPC SRAM, 256 B base QPC.
    pub const FPGA: NicMemory = NicMemory {
        name: "fpga",
        sram_bytes: 14 * (1 << 20) / 10,
        base_qpc_bytes: 256,
        miss_penalty: PCIE_RTT_TICKS,
        replacement: Replacement::Random,
    };

    /// A CX6-style commodity NIC: 375 B QPC (SRNIC §2.2), cache calibrated to 256 QPCs.
    pub const CX6: NicMemory = NicMemory {
        name: "cx6",
        sram_bytes: CX6_CACHED_QPCS * 375,
        base_qpc_bytes: 375,
        miss_penalty: PCIE_RTT_TICKS,
        replacement: Replacement::Random,
    };

    /// The NIC each scheme ran on in FaSR's evaluation: go-back-N on the commodity NIC,
    /// the selective schemes on the FPGA.
    pub fn for_scheme(scheme: Scheme) -> NicMemory {
        match scheme {
            Scheme::Gbn => NicMemory::CX6,
            _ => NicMemory::FPGA,
        }
    }

    /// Bytes of one QP's context for a scheme with `mem`.
    pub fn context_bytes(&self, mem: &SrMemory) -> u64 {
        self.base_qpc_bytes + mem.per_qp_bytes as u64
    }

    /// Contexts that fit on chip beside the scheme's shared SR memory.
    pub fn capacity(&self, mem: &SrMemory) -> u64 {
        self.sram_bytes.saturating_sub(mem.shared_bytes as u64) / self.context_bytes(mem).max(1)
    }
}

/// A scheme's SR memory, measured from its engine types.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrMemory {
    /// Bytes of one QP's engine state on the NIC (`size_of` of the engine; SRNIC's less
    /// what it onloads to host memory). The engines own no heap.
    pub engine_bytes: usize,
    /// Bytes of go-back-N's engine: the RC state every engine carries (PSNs, RTO,
    /// counters), which the base QPC stands for.
    pub rc_bytes: usize,
    /// The scheme's SR state per QP: `engine_bytes - rc_bytes`.
    pub per_qp_bytes: usize,
    /// The device's shared SR memory (`size_of` of the pool), counted once.
    pub shared_bytes: usize,
}

impl SrMemory {
    /// SR bytes per QP on one device with `qps` QPs (the shared memory spread over them).
    pub fn bytes_per_qp(&self, qps: usize) -> f64 {
        self.per_qp_bytes as f64 + self.shared_bytes as f64 / qps.max(1) as f64
    }
}

/// Measures a scheme's SR memory from the engine and pool types the simulator runs.
pub fn measure(scheme: Scheme) -> SrMemory {
    let rc = size_of::<gbn::Gbn>();
    let (engine, shared) = match scheme {
        Scheme::Gbn => (rc, 0),
        Scheme::Irn => (size_of::<IrnEngine>(), 0),
        Scheme::Fasr => (size_of::<fasr::Fasr>(), size_of::<FasrPool>()),
        Scheme::Srnic => (SrnicEngine::onchip_state_bytes(), 0),
        Scheme::Melo => (size_of::<melo::Melo>(), size_of::<MeloPool>()),
    };
    SrMemory {
        engine_bytes: engine,
        rc_bytes: rc,
        per_qp_bytes: engine.saturating_sub(rc),
        shared_bytes: shared,
    }
}

/// What the QPC model saw in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpcStats {
    /// Bytes of one QP's context.
    pub context_bytes: u64,
    /// Contexts that fit on chip.
    pub capacity: u64,
    /// Context lookups by the transmit pipeline.
    pub lookups: u64,
    /// Of which missed.
    pub misses: u64,
    /// Ticks the pipeline stalled on misses.
    pub stall_ticks: u64,
}

impl QpcStats {
    /// Share of lookups that missed.
    pub fn miss_rate(&self) -> f64 {
        if self.lookups == 0 {
            0.0
        } else {
            self.misses as f64 / self.lookups as f64
        }
    }
}

const NONE: u32 = u32::MAX;

/// The on-chip QPC store of one NIC, a cache over host memory when not every context fits.
pub struct QpcCache {
    penalty: u64,
    replacement: Replacement,
    /// Resident QPs, one per slot.
    slots: Vec<u32>,
    /// Each QP's slot, or [`NONE`].
    slot_of: Vec<u32>,
    /// Each QP's last access (LRU).
    last_use: Vec<u64>,
    capacity: usize,
    clock: u64,
    rng: Rng,
    /// Counts.
    pub stats: QpcStats,
}

impl QpcCache {
    /// The store of `qps` contexts for a scheme with `mem` on `nic`; the contexts that fit
    /// are on chip from the start (written at QP creation), the others in host memory.
    pub fn new(nic: &NicMemory, mem: &SrMemory, qps: usize, seed: u64) -> Self {
        let capacity = (nic.capacity(mem).min(qps as u64)) as usize;
        let mut c = QpcCache {
            penalty: nic.miss_penalty,
            replacement: nic.replacement,
            slots: Vec::with_capacity(capacity),
            slot_of: vec![NONE; qps],
            last_use: vec![0; qps],
            capacity,
            clock: 0,
            rng: Rng::new(seed ^ 0x9C_C0DE),
            stats: QpcStats {
                context_bytes: nic.context_bytes(mem),
                capacity: nic.capacity(mem),
                ..QpcStats::default()
            },
        };
        for qp in 0..capacity {
            c.slot_of[qp] = qp as u32;
            c.slots.push(qp as u32);
        }
        c
    }

    /// Every context is on chip: no lookup can miss.
    pub fn fits_all(&self) -> bool {
        self.capacity == self.slot_of.len()
    }

    /// The pipeline needs `qp`'s context: returns the ticks it stalls (0 on a hit). A miss
    /// fetches the context, evicting another when the SRAM is full.
    pub fn access(&mut self, qp: usize) -> u64 {
        self.stats.lookups += 1;
        self.clock += 1;
        if let Some(t) = self.last_use.get_mut(qp) {
            *t = self.clock;
        }
        if self.slot_of.get(qp).is_none_or(|&s| s != NONE) {
            return 0;
        }
        self.stats.misses += 1;
        self.stats.stall_ticks += self.penalty;
        if self.capacity == 0 {
            return self.penalty;
        }
        let slot = if self.slots.len() < self.capacity {
            self.slots.push(qp as u32);
            self.slots.len() - 1
        } else {
            let victim = match self.replacement {
                Replacement::Random => self.rng.below(self.slots.len() as u64) as usize,
                Replacement::Lru => (0..self.slots.len())
                    .min_by_key(|&s| self.last_use[self.slots[s] as usize])
                    .unwrap_or(0),
            };
            let old = self.slots[victim] as usize;
            self.slot_of[old] = NONE;
            self.slots[victim] = qp as u32;
            victim
        };
        self.slot_of[qp] = slot as u32;
        self.penalty
    }
}
