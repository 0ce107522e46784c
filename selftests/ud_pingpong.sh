#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# rxe_sr <-> rxe_sr: rdma-core's own ibv_ud_pingpong, unmodified, 500 iterations of 512
# bytes between the two guests.
. "$HOST_SHARE/selftests/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
args=(-d sr0 -g "$gidx" -n 500 -s 512)
rc=0
if is_server; then
  timeout 120 ibv_ud_pingpong "${args[@]}" > /tmp/pp.out 2>&1 &
  pid=$!
  sleep 1
  sync_point ready
  wait $pid || rc=1
  out=$(cat /tmp/pp.out)
else
  sync_point ready
  out=$(retry 5 timeout 120 ibv_ud_pingpong "${args[@]}" "$SERVER_IP" 2>&1) || rc=1
fi
printf '%s\n' "$out"
sync_point done
[ $rc = 0 ] || fail "ibv_ud_pingpong failed"
expect_grep "500 iterations" '500 iters in' "$out"
sr_down_clean
