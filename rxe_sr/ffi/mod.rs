// SPDX-License-Identifier: GPL-2.0
//! The verbs objects' C-ABI entry points and the driver code still beside them, on their way
//! into safe containers in `kx/` and `#![forbid(unsafe_code)]` modules (issue 10). Besides
//! `kx/`, the only place with `unsafe`; every block says why it is sound in a `// SAFETY:`
//! comment.

pub(crate) mod device;
pub(crate) mod qp;
pub(crate) mod rc_env;
