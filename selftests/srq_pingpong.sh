#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# rxe_sr <-> rxe_sr: rdma-core's ibv_srq_pingpong, unmodified: 16 RC QPs receiving from one
# shared receive queue, 300 iterations of 4 KiB with the data check.
. "$HOST_SHARE/selftests/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(pingpong_pair ibv_srq_pingpong -d sr0 -g "$gidx" -q 16 -n 300 -s 4096 --chk) || rc=1
printf '%s\n' "$out"
sync_point done
[ "${rc:-0}" = 0 ] || fail "ibv_srq_pingpong failed"
expect_grep "300 iterations over 16 QPs on one SRQ" '300 iters in' "$out"
sr_down_clean
