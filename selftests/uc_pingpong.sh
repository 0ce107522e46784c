#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# rxe_sr <-> rxe_sr over UC: rdma-core's ibv_uc_pingpong, unmodified, 500 iterations of
# 4 KiB (four packets per message: UC segmentation and reassembly), as a smoke test of a
# stock application; then msg_check.py over UC, 500 messages of 4 KiB each way (every
# other one with immediate), every byte and immediate checked.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(pingpong_pair ibv_uc_pingpong -d sr0 -g "$gidx" -n 500 -s 4096) || rc=1
printf '%s\n' "$out"
sync_point pingpong
[ "${rc:-0}" = 0 ] || fail "ibv_uc_pingpong failed"
expect_grep "500 iterations" '500 iters in' "$out"
msg_check_pair sr0 "$gidx" uc --type uc --iters 500 --size 4096 || fail "msg_check over UC"
log "ok: UC, 500 messages of 4 KiB each way, every byte checked"
sync_point done
sr_down_clean
