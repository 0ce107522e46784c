#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1500
# rdma-core's suite again, as rdma_core_suite.sh runs it (rdma_rxe on g1, rxe_sr on g2, the
# same rules), but from Debian forky's rdma-core, which scripts/build-image installs under
# /opt/forky: its suite, libibverbs, stock rxe provider and pyverbs, run chrooted there.
# That provider implements ibv_advise_mr (bookworm's does not), so the suite's ODP prefetch
# tests run: rxe_sr must pass every one of them but the implicit-ODP ones (rxe_sr has no
# implicit ODP MR, and the suite skips those).
SUITE_TAG=forky
# rdma_resolve_addrinfo waits for an RDMA_CM_EVENT_ADDRINFO_RESOLVED that 6.12's rdma_ucm
# cannot give (it has no RESOLVE_IB_SERVICE or WRITE_CM_EVENT command): both drivers fail it.
SUITE_CORE_NEWER='test_rdmacm_async_resolve_addrinfo'
SUITE_MUST_PASS='^test_odp_(sync_|async_)?prefetch'
. "$HOST_SHARE/selftests/rdma_core_suite.sh"
