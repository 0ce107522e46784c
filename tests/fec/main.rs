// SPDX-License-Identifier: GPL-2.0
//! The FEC shim's pure parts on the host: the codec (`codec`) and the receiving side
//! that holds packets back for a rebuild (`rx`).

mod codec;
mod common;
mod resp_rx;
mod rx;
