#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# rxe_sr (g1, the server side of every tool) <-> rdma_rxe (g2, the client side): RC and
# UC, data checked (rc_interop in lib.sh), and the RC perftest set. Interop with the upstream C driver
# is the proof of a standard wire format.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
rc_interop server
