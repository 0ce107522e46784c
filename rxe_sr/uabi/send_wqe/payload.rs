// SPDX-License-Identifier: GPL-2.0
//! Where a send WQE's local data is ([`Payload`]): a gather/scatter list of SGEs, or the
//! inline bytes (`IB_SEND_INLINE`) copied out of the slot ([`InlineData`]).

use crate::uabi::limits::RXE_MAX_INLINE_DATA;
use crate::uabi::sge::SgeList;

/// The inline payload of a send WQE, copied by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineData {
    len: usize,
    data: [u8; INLINE_CAP],
}

/// Capacity of [`InlineData`] (`RXE_MAX_INLINE_DATA`).
pub const INLINE_CAP: usize = 512;

// RXE_MAX_INLINE_DATA and the array capacity must agree.
const _: () = assert!(RXE_MAX_INLINE_DATA == 512);

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl InlineData {
    /// No bytes.
    pub const EMPTY: InlineData = InlineData {
        len: 0,
        data: [0; INLINE_CAP],
    };

    /// Copies `src`, or `None` when longer than [`INLINE_CAP`].
    pub fn new(src: &[u8]) -> Option<InlineData> {
        let mut d = InlineData::EMPTY;
        d.fill(src.len())?.copy_from_slice(src);
        Some(d)
    }

    /// Makes the data `len` bytes long (the bytes are left for the caller to write) and
    /// returns them, or `None` (unchanged) when `len` exceeds [`INLINE_CAP`].
    pub fn fill(&mut self, len: usize) -> Option<&mut [u8]> {
        let bytes = self.data.get_mut(..len)?;
        self.len = len;
        Some(bytes)
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.data.get(..self.len).unwrap_or(&[])
    }

    /// Number of bytes.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Where a send WQE's local data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// No local buffer (FLUSH, ATOMIC_WRITE, LOCAL_INV, BIND_MW).
    None,
    /// Gather list (SEND/WRITE) or scatter list (READ, atomics' result).
    Sges(SgeList),
    /// Inline bytes (`IB_SEND_INLINE`).
    Inline(InlineData),
}
