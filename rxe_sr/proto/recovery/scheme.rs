// SPDX-License-Identifier: GPL-2.0
//! The loss-recovery schemes by name: what the `recovery=` module parameter takes.

use core::ffi::CStr;

/// A loss-recovery scheme; the discriminant is its index in [`Scheme::ALL`] (what the
/// module parameter stores).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scheme {
    /// Go-back-N, byte-for-byte standard RoCEv2 (rdma_rxe and RNICs are peers).
    Gbn = 0,
    /// FaSR: fast/slow paths, two-level shared SR pool, FNACK.
    Fasr = 1,
    /// SRNIC: header extensions and bitmap onloading.
    Srnic = 2,
    /// IRN: per-QP BDP-sized bitmaps (the memory-hungry baseline).
    Irn = 3,
    /// MELO: shared bits pool, NACK with up to three holes.
    Melo = 4,
}

impl Scheme {
    /// Every scheme, in index order.
    pub const ALL: [Scheme; 5] = [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ];

    /// The name on the command line, NUL-terminated for C (the parameter's getter).
    pub fn c_name(self) -> &'static CStr {
        match self {
            Scheme::Gbn => c"gbn",
            Scheme::Fasr => c"fasr",
            Scheme::Srnic => c"srnic",
            Scheme::Irn => c"irn",
            Scheme::Melo => c"melo",
        }
    }

    /// The name on the command line and in messages.
    pub fn name(self) -> &'static str {
        self.c_name().to_str().unwrap_or("?")
    }

    /// Parses a parameter value (one trailing newline, as written through sysfs, is
    /// ignored).
    pub fn from_name(value: &[u8]) -> Option<Self> {
        let value = value.strip_suffix(b"\n").unwrap_or(value);
        Self::ALL
            .into_iter()
            .find(|s| s.c_name().to_bytes() == value)
    }

    /// The scheme at `index` in [`Scheme::ALL`].
    pub fn from_index(index: i32) -> Option<Self> {
        usize::try_from(index)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
    }

    /// Its index in [`Scheme::ALL`].
    pub fn index(self) -> i32 {
        self as i32
    }
}

#[cfg(test)]
mod tests {
    use super::Scheme;

    #[test]
    fn names_round_trip_and_index_matches_all() {
        for (i, s) in Scheme::ALL.into_iter().enumerate() {
            assert_eq!(Scheme::from_index(s.index()), Some(s));
            assert_eq!(usize::try_from(s.index()).ok(), Some(i));
            assert_eq!(Scheme::from_name(s.name().as_bytes()), Some(s));
            assert_eq!(s.c_name().to_bytes(), s.name().as_bytes());
        }
    }

    #[test]
    fn parses_sysfs_writes_and_refuses_the_rest() {
        assert_eq!(Scheme::from_name(b"fasr\n"), Some(Scheme::Fasr));
        assert_eq!(Scheme::from_name(b"melo"), Some(Scheme::Melo));
        for bad in [
            &b""[..],
            b"\n",
            b"GBN",
            b"fasr\n\n",
            b" gbn",
            b"srnic2",
            b"gbn\0",
        ] {
            assert_eq!(Scheme::from_name(bad), None, "{:?}", bad);
        }
        assert_eq!(Scheme::from_index(-1), None);
        assert_eq!(Scheme::from_index(5), None);
    }
}
