#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# rdma_rxe (g1, the server side) <-> rxe_sr (g2, the client side: it issues the WRITEs,
# READs, SENDs and atomics): the same set as rc_interop_sr_server.sh the other way round.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
rc_interop client
