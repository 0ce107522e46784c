// SPDX-License-Identifier: GPL-2.0
//! Seeded randomness and the loss models of the simulated link.

/// SplitMix64: small, fast, deterministic for a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// How data packets are lost at the bottleneck.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    /// No loss.
    None,
    /// Each packet lost independently with probability `p`.
    Bernoulli(f64),
    /// Two-state Markov chain (bursty loss): Good -> Bad with `p_gb`, Bad -> Good with
    /// `p_bg`, loss probability `loss_good` / `loss_bad` in each state.
    GilbertElliott {
        /// Good -> Bad transition probability per packet.
        p_gb: f64,
        /// Bad -> Good transition probability per packet.
        p_bg: f64,
        /// Loss probability in Good.
        loss_good: f64,
        /// Loss probability in Bad.
        loss_bad: f64,
    },
}

impl LossModel {
    /// A Gilbert-Elliott model with mean loss rate `rate` in bursts of mean length
    /// `burst` packets (all packets lost in Bad, none in Good).
    pub fn bursty(rate: f64, burst: f64) -> Self {
        if rate <= 0.0 {
            return LossModel::None;
        }
        let p_bg = 1.0 / burst.max(1.0);
        // Stationary P(Bad) = p_gb / (p_gb + p_bg) = rate.
        let p_gb = rate * p_bg / (1.0 - rate).max(1e-9);
        LossModel::GilbertElliott {
            p_gb,
            p_bg,
            loss_good: 0.0,
            loss_bad: 1.0,
        }
    }

    /// The long-run mean loss rate.
    pub fn mean(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli(p) => p,
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                let bad = p_gb / (p_gb + p_bg);
                bad * loss_bad + (1.0 - bad) * loss_good
            }
        }
    }
}

/// A loss model with its state (the Gilbert-Elliott channel state).
#[derive(Clone, Debug)]
pub struct Channel {
    model: LossModel,
    bad: bool,
}

impl Channel {
    /// A channel starting in the Good state.
    pub fn new(model: LossModel) -> Self {
        Channel { model, bad: false }
    }

    /// Decides the fate of the next packet: true = lost.
    pub fn lose(&mut self, rng: &mut Rng) -> bool {
        match self.model {
            LossModel::None => false,
            LossModel::Bernoulli(p) => rng.chance(p),
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                if self.bad {
                    if rng.chance(p_bg) {
                        self.bad = false;
                    }
                } else if rng.chance(p_gb) {
                    self.bad = true;
                }
                rng.chance(if self.bad { loss_bad } else { loss_good })
            }
        }
    }
}
