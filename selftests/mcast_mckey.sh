#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 200
# rxe_sr <-> rxe_sr UD multicast through rdma-cm: librdmacm's mckey, unmodified. g1 joins
# 239.7.7.7 (rdma_join_multicast: IGMP join, then attach_mcast on its UD QP) and waits for
# 100 messages; g2 joins as a sender and sends them to the multicast QPN. Each message
# crosses the wire once and is delivered to every QP attached to the group.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
group=239.7.7.7
if is_server; then
  timeout 120 mckey -m "$group" -b "$MY_IP" -C 100 -S 512 > /tmp/mckey.out 2>&1 &
  pid=$!
  sleep 2
  sync_point receiver-ready
  wait $pid || rc=1
  cat /tmp/mckey.out
  [ "${rc:-0}" = 0 ] || fail "mckey receiver did not get its 100 messages"
  expect_grep "the receiver completed its 100 receives" 'data transfers complete' "$(cat /tmp/mckey.out)"
else
  sync_point receiver-ready
  out=$(timeout 120 mckey -m "$group" -b "$MY_IP" -s -C 100 -S 512 2>&1) || rc=1
  printf '%s\n' "$out"
  [ "${rc:-0}" = 0 ] || fail "mckey sender failed"
fi
sync_point done
sr_down_clean
