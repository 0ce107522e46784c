#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# rxe_sr <-> rxe_sr: rdma-core's ibv_rc_pingpong, unmodified, with its data check (--chk):
# 500 iterations of 4 KiB (4 packets each at the default 1024-byte path MTU), then 100 of
# 100 KiB (a hundred packets per message).
. "$HOST_SHARE/selftests/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(pingpong_pair ibv_rc_pingpong -d sr0 -g "$gidx" -n 500 -s 4096 --chk) || rc=1
printf '%s\n' "$out"
sync_point small-done
[ "${rc:-0}" = 0 ] || fail "ibv_rc_pingpong (4 KiB) failed"
expect_grep "500 iterations" '500 iters in' "$out"
n=100
quick && n=40
out=$(pingpong_pair ibv_rc_pingpong -d sr0 -g "$gidx" -n $n -s 102400 --chk) || rc=1
printf '%s\n' "$out"
sync_point done
[ "${rc:-0}" = 0 ] || fail "ibv_rc_pingpong (100 KiB) failed"
expect_grep "$n iterations" "$n iters in" "$out"
sr_down_clean
