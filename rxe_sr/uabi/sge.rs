// SPDX-License-Identifier: GPL-2.0
//! Scatter/gather elements (`struct rxe_sge`) and their validation, shared by send and
//! receive WQEs.

use super::cqe::WcStatus;
use super::field;
use super::layout::{SGE_ADDR_OFF, SGE_LENGTH_OFF, SGE_LKEY_OFF, SGE_SIZE};
use super::limits::{RXE_MAX_MSG_SIZE, RXE_MAX_SGE};
use super::WqeError;

/// One scatter/gather element: `length` bytes at `addr` in the MR named by `lkey`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// `rxe_sge.addr`: virtual address (or offset in a zero-based MR).
    pub addr: u64,
    /// `rxe_sge.length`.
    pub length: u32,
    /// `rxe_sge.lkey`.
    pub lkey: u32,
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl Sge {
    /// Reads the SGE at `off` in `b`, or `None` if it does not lie inside `b`.
    pub fn read(b: &[u8], off: usize) -> Option<Sge> {
        Some(Sge {
            addr: field::u64_le(b, off.checked_add(SGE_ADDR_OFF)?)?,
            length: field::u32_le(b, off.checked_add(SGE_LENGTH_OFF)?)?,
            lkey: field::u32_le(b, off.checked_add(SGE_LKEY_OFF)?)?,
        })
    }

    /// Writes the SGE at `off` in `b` (as user space does); `None` if it does not fit.
    pub fn write(&self, b: &mut [u8], off: usize) -> Option<()> {
        field::put(b, off.checked_add(SGE_ADDR_OFF)?, &self.addr.to_le_bytes())?;
        field::put(
            b,
            off.checked_add(SGE_LENGTH_OFF)?,
            &self.length.to_le_bytes(),
        )?;
        field::put(b, off.checked_add(SGE_LKEY_OFF)?, &self.lkey.to_le_bytes())
    }
}

/// A validated list of at most [`RXE_MAX_SGE`] SGEs, held by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgeList {
    len: usize,
    sges: [Sge; SGE_LIST_CAP],
}

/// Capacity of an [`SgeList`] (`RXE_MAX_SGE`).
pub const SGE_LIST_CAP: usize = 32;

// RXE_MAX_SGE and the array capacity must agree.
const _: () = assert!(RXE_MAX_SGE == 32);

impl Default for SgeList {
    fn default() -> Self {
        SgeList::EMPTY
    }
}

#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
impl SgeList {
    /// Walks `len` bytes of the list, starting `offset` bytes into it: calls
    /// `f(sge, address, range)` for each piece, where `address` is the piece's first byte
    /// in the SGE's memory and `range` its place in the walked bytes (`0..len`). A list too
    /// short for the walk is `LocLenErr`, an address that overflows `LocProtErr`; an error
    /// from `f` ends the walk.
    pub fn pieces(
        &self,
        offset: u64,
        len: usize,
        mut f: impl FnMut(&Sge, u64, core::ops::Range<usize>) -> Result<(), WcStatus>,
    ) -> Result<(), WcStatus> {
        let (mut skip, mut done) = (offset, 0usize);
        for s in self.as_slice() {
            if done == len {
                break;
            }
            let l = u64::from(s.length);
            if skip >= l {
                skip -= l;
                continue;
            }
            let n = usize::try_from(l - skip)
                .unwrap_or(usize::MAX)
                .min(len - done);
            let addr = s.addr.checked_add(skip).ok_or(WcStatus::LocProtErr)?;
            f(s, addr, done..done + n)?;
            done += n;
            skip = 0;
        }
        if done == len {
            Ok(())
        } else {
            Err(WcStatus::LocLenErr)
        }
    }

    /// The empty list.
    pub const EMPTY: SgeList = SgeList {
        len: 0,
        sges: [Sge {
            addr: 0,
            length: 0,
            lkey: 0,
        }; SGE_LIST_CAP],
    };

    /// The SGEs.
    pub fn as_slice(&self) -> &[Sge] {
        self.sges.get(..self.len).unwrap_or(&[])
    }

    /// Number of SGEs.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// True when there is no SGE.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `sge`; `false` (list unchanged) when already full.
    pub fn push(&mut self, sge: Sge) -> bool {
        match self.sges.get_mut(self.len) {
            Some(slot) => {
                *slot = sge;
                // get_mut succeeded: len < SGE_LIST_CAP, so this never saturates.
                self.len = self.len.saturating_add(1);
                true
            }
            None => false,
        }
    }

    /// Sum of the SGE lengths (cannot overflow: at most 32 * `u32::MAX`).
    pub fn total_length(&self) -> u64 {
        self.as_slice()
            .iter()
            .fold(0u64, |acc, s| acc.saturating_add(u64::from(s.length)))
    }

    /// Parses and checks `num_sge` SGEs starting at `off` in a copied slot `b`.
    ///
    /// It checks `num_sge <= max_sge` (itself capped at [`RXE_MAX_SGE`]), that the array lies
    /// inside the slot, that no `addr + length` overflows, and that the total is at most
    /// [`RXE_MAX_MSG_SIZE`]. Returns the list and its total length.
    pub fn parse(
        b: &[u8],
        off: usize,
        num_sge: u32,
        max_sge: u32,
    ) -> Result<(SgeList, u32), WqeError> {
        let mut list = SgeList::EMPTY;
        let total = list.parse_into(b, off, num_sge, max_sge)?;
        Ok((list, total))
    }

    /// [`SgeList::parse`] into `self` (emptied first), returning the total length: the
    /// kernel builds WQEs in place, as a 0.5 KiB list returned by value costs stack.
    pub fn parse_into(
        &mut self,
        b: &[u8],
        off: usize,
        num_sge: u32,
        max_sge: u32,
    ) -> Result<u32, WqeError> {
        let n = field::usize_from(num_sge).ok_or(WqeError::TooManySge)?;
        if num_sge <= max_sge.min(RXE_MAX_SGE) {
            let end = n
                .checked_mul(SGE_SIZE)
                .and_then(|len| len.checked_add(off))
                .ok_or(WqeError::SgeOutsideSlot)?;
            if end > b.len() {
                return Err(WqeError::SgeOutsideSlot);
            }
        }
        self.collect_into(num_sge, max_sge, |i| {
            let at = i
                .checked_mul(SGE_SIZE)
                .and_then(|x| x.checked_add(off))
                .ok_or(WqeError::SgeOutsideSlot)?;
            Sge::read(b, at).ok_or(WqeError::SgeOutsideSlot)
        })
    }

    /// Builds a list from `num_sge` SGEs given by value (`sge(i)`, e.g. a kernel consumer's
    /// `ib_sge` array), with the checks of [`SgeList::parse`] other than the slot bounds.
    pub fn collect(
        num_sge: u32,
        max_sge: u32,
        sge: impl FnMut(usize) -> Result<Sge, WqeError>,
    ) -> Result<(SgeList, u32), WqeError> {
        let mut list = SgeList::EMPTY;
        let total = list.collect_into(num_sge, max_sge, sge)?;
        Ok((list, total))
    }

    /// [`SgeList::collect`] into `self` (emptied first, unused entries included), returning
    /// the total length.
    pub fn collect_into(
        &mut self,
        num_sge: u32,
        max_sge: u32,
        mut sge: impl FnMut(usize) -> Result<Sge, WqeError>,
    ) -> Result<u32, WqeError> {
        *self = SgeList::EMPTY;
        if num_sge > max_sge.min(RXE_MAX_SGE) {
            return Err(WqeError::TooManySge);
        }
        let n = field::usize_from(num_sge).ok_or(WqeError::TooManySge)?;
        let mut total = 0u64;
        for i in 0..n {
            let sge = sge(i)?;
            if sge.addr.checked_add(u64::from(sge.length)).is_none() {
                return Err(WqeError::SgeAddressOverflow);
            }
            total = total.saturating_add(u64::from(sge.length));
            if !self.push(sge) {
                return Err(WqeError::TooManySge);
            }
        }
        if total > RXE_MAX_MSG_SIZE {
            return Err(WqeError::LengthTooLong);
        }
        u32::try_from(total).map_err(|_| WqeError::LengthTooLong)
    }
}
