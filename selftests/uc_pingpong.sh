#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# rxe_sr <-> rxe_sr: rdma-core's ibv_uc_pingpong, unmodified, with its data check: 500
# iterations of 4 KiB (four packets per message: UC segmentation and reassembly).
. "$HOST_SHARE/selftests/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(pingpong_pair ibv_uc_pingpong -d sr0 -g "$gidx" -n 500 -s 4096 --chk) || rc=1
printf '%s\n' "$out"
sync_point done
[ "${rc:-0}" = 0 ] || fail "ibv_uc_pingpong failed"
expect_grep "500 iterations" '500 iters in' "$out"
sr_down_clean
