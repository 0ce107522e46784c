#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# `rdma statistic show link sr0/1` lists the device's counters. g2 sends 25 junk datagrams
# to g1's RoCEv2 port: g1's rcvd_pkts and rcvd_dropped each count exactly 25 (none is a
# valid packet for a QP) and the kernel stays clean; a link flap counts one
# link_downed.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"

if is_server; then
  sr_up
  expect_grep "counters listed" 'rcvd_pkts 0 rcvd_dropped 0 link_downed 0' "$(rdma statistic show link sr0/1)"
fi
sync_point ready
if is_client; then
  python3 - <<'PY' || fail "sending failed"
import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(25):
    n = [0, 1, 11, 12, 40, 1000][i % 6]
    s.sendto(os.urandom(n), ("10.77.0.1", 4791))
print("sent 25 datagrams")
PY
fi
sync_point sent
if is_server; then
  for _ in $(seq 50); do [ "$(stat_of rcvd_pkts)" = 25 ] && break; sleep 0.1; done
  log "after the junk: $(rdma statistic show link sr0/1)"
  [ "$(stat_of rcvd_pkts)" = 25 ] || fail "rcvd_pkts is $(stat_of rcvd_pkts), not 25"
  [ "$(stat_of rcvd_dropped)" = 25 ] || fail "rcvd_dropped is $(stat_of rcvd_dropped), not 25"
  ip link set eth0 down
  ip link set eth0 up
  check "port ACTIVE again" wait_port_active sr0
  [ "$(stat_of link_downed)" = 1 ] || fail "link_downed is $(stat_of link_downed), not 1"
  log "ok: link_downed counted the flap"
  sr_down_clean
fi
sync_point done
