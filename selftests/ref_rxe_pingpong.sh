#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# The reference path: rdma_rxe in both guests, ibv_rc_pingpong (a smoke test) and
# msg_check.py (every byte checked both ways) over the clean link. Proves the testbed
# carries RoCEv2 end to end.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
# rdma_rxe and the test bed only, no rxe_sr code: the default pass covers them; the KASAN
# passes (quick) leave them out.
quick && skip "quick mode: no rxe_sr code under test"
trap rxe_ref_down EXIT
check "rdma_rxe up as rxe0" rxe_ref_up
gidx=$(roce_gid_index rxe0) || fail "no RoCEv2 GID"
out=$(pingpong_pair ibv_rc_pingpong -d rxe0 -g "$gidx" -n 500 -s 4096) || rc=1
printf '%s\n' "$out"
[ "${rc:-0}" = 0 ] || fail "ibv_rc_pingpong failed"
expect_grep "500 iterations completed" '^2048000 bytes in .* seconds|bytes in .* = .*Mbit/sec' "$out"
expect_grep "iterations reported" '500 iters in' "$out"
sync_point pingpong
msg_check_pair rxe0 "$gidx" ref --iters 500 --size 4096 || fail "msg_check over rdma_rxe"
sync_point done
