#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# rxe_sr <-> rxe_sr: rdma-core's ibv_rc_pingpong, unmodified, as a smoke test of a stock
# application: 500 iterations of 4 KiB (4 packets each at the default 1024-byte path MTU),
# then 100 of 100 KiB (a hundred packets per message). Then the same two shapes through
# msg_check.py, every byte of every message checked both ways.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(pingpong_pair ibv_rc_pingpong -d sr0 -g "$gidx" -n 500 -s 4096) || rc=1
printf '%s\n' "$out"
sync_point small-done
[ "${rc:-0}" = 0 ] || fail "ibv_rc_pingpong (4 KiB) failed"
expect_grep "500 iterations" '500 iters in' "$out"
n=100
quick && n=40
out=$(pingpong_pair ibv_rc_pingpong -d sr0 -g "$gidx" -n $n -s 102400) || rc=1
printf '%s\n' "$out"
sync_point large-done
[ "${rc:-0}" = 0 ] || fail "ibv_rc_pingpong (100 KiB) failed"
expect_grep "$n iterations" "$n iters in" "$out"
msg_check_pair sr0 "$gidx" small --iters 500 --size 4096 || fail "msg_check, 4 KiB messages"
msg_check_pair sr0 "$gidx" large --iters $n --size 102400 || fail "msg_check, 100 KiB messages"
log "ok: 500 messages of 4 KiB and $n of 100 KiB each way, every byte checked"
sync_point done
sr_down_clean
