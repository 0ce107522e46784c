// SPDX-License-Identifier: GPL-2.0
//! Placeholder: filled in by issue 3.
