#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# rxe_sr <-> rxe_sr through rdma-cm: librdmacm's rping, unmodified, with its data check
# (-V). Connection set-up runs over the GSI QP (QP1): the kernel's ib_mad and ib_cm send
# their CM MADs (REQ/REP/RTU, DREQ/DREP) through rxe_sr's kernel verbs. Then rping's RDMA
# READ/WRITE/SEND cycle: 200 rounds of 64 bytes, then 50 of 65000 bytes (rping caps its size just below 64 KiB).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
check "sr0 names its netdev in sysfs" test -e /sys/class/infiniband/sr0/device/net/eth0
out=$(rping_pair small -C 200 -S 64) || rc=1
printf '%s\n' "$out"
sync_point small-done
[ "${rc:-0}" = 0 ] || fail "rping (64 B) failed"
out=$(rping_pair big -C 50 -S 65000) || rc=1
printf '%s\n' "$out"
sync_point big-done
[ "${rc:-0}" = 0 ] || fail "rping (65000 B) failed"
if is_client; then
  # ib_cm counts its messages per port: the connection requests really went out (over QP1).
  sent=$(cat /sys/class/infiniband/sr0/ports/1/cm_tx_msgs/req 2>/dev/null || echo 0)
  log "CM REQs sent: $sent"
  positive "$sent" || fail "ib_cm counted no REQ sent on sr0"
fi
sr_down_clean
