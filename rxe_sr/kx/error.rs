// SPDX-License-Identifier: GPL-2.0
//! Errnos (include/uapi/asm-generic/errno.h) that 6.12's `kernel::error::code` does not name.

use kernel::error::Error;

fn from_uapi(e: u32) -> Error {
    Error::from_errno(-i32::try_from(e).unwrap_or(i32::MAX))
}

/// EOPNOTSUPP: operation not supported.
pub(crate) fn eopnotsupp() -> Error {
    from_uapi(kernel::bindings::EOPNOTSUPP)
}

/// EADDRINUSE: address already in use.
pub(crate) fn eaddrinuse() -> Error {
    from_uapi(kernel::bindings::EADDRINUSE)
}

/// EAFNOSUPPORT: address family not supported.
pub(crate) fn eafnosupport() -> Error {
    from_uapi(kernel::bindings::EAFNOSUPPORT)
}

/// ENOBUFS: no buffer space; from [`crate::kx::skbuff::TxSkb::xmit`], the egress queue
/// (the qdisc) was full and dropped the packet.
pub(crate) fn enobufs() -> Error {
    from_uapi(kernel::bindings::ENOBUFS)
}

/// EMSGSIZE: message too long; from kx/c/roce_tx.c's fragment helpers, an skb's fragment
/// slots ran out.
pub(crate) fn emsgsize() -> Error {
    from_uapi(kernel::bindings::EMSGSIZE)
}
