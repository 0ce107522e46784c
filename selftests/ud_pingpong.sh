#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# rxe_sr <-> rxe_sr: rdma-core's own ibv_ud_pingpong, unmodified, 500 iterations of 512
# bytes between the two guests (a smoke test of the stock tool); then msg_check.py over UD,
# 500 messages of 512 B each way, every byte, immediate and source QPN checked.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(pingpong_pair ibv_ud_pingpong -d sr0 -g "$gidx" -n 500 -s 512) || rc=1
printf '%s\n' "$out"
sync_point pingpong
[ "${rc:-0}" = 0 ] || fail "ibv_ud_pingpong failed"
expect_grep "500 iterations" '500 iters in' "$out"
msg_check_pair sr0 "$gidx" ud --type ud --iters 500 --size 512 || fail "msg_check over UD"
log "ok: UD, 500 messages of 512 B each way, every byte checked"
sync_point done
sr_down_clean
