#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# rxe_sr <-> rxe_sr: perftest, unmodified, over RC: ib_{send,write,read}_bw at 64 KiB,
# ib_atomic_bw, ib_write_bw over 100 QPs (-q 100), ib_{send,write,read,atomic}_lat.
. "$HOST_SHARE/selftests/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
rc_perf_suite sr0
sync_point done
sr_down_clean
