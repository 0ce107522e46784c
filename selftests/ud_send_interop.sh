#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# UD SEND from rxe_sr (g1) to rdma_rxe (g2): proof that rxe_sr's packets are standard
# RoCEv2 (the upstream C driver checks the ICRC, headers, P_Key and Q_Key and drops
# anything else). 16 messages: gathered from two SGEs, inline, and with immediate data; g2
# receives every one with the right bytes, length, source QP and immediate; g1's send CQ
# reports each as a success and sent_pkts counts 16.
. "$HOST_SHARE/selftests/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
N=16
QKEY=$((0x1234567))

if is_server; then
  sr_up
  dev=sr0
else
  trap rxe_ref_down EXIT
  check "rdma_rxe up as rxe0" rxe_ref_up
  dev=rxe0
fi
gidx=$(roce_gid_index $dev) || fail "no RoCEv2 GID"

rm -f "$HOST_SHARE/vals/ud-recv-qpn" "$HOST_SHARE/vals/ud-send-qpn" 2>/dev/null
mkdir -p "$HOST_SHARE/vals"
sync_point start
if is_server; then
  out=$(timeout 90 python3 "$HOST_SHARE/selftests/ud_msgs.py" send sr0 "$gidx" $N $QKEY 10.77.0.2 2>&1); rc=$?
else
  out=$(timeout 90 python3 "$HOST_SHARE/selftests/ud_msgs.py" recv rxe0 "$gidx" $N $QKEY 10.77.0.1 2>&1); rc=$?
fi
printf '%s\n' "$out"
sync_point done
[ $rc = 0 ] || fail "the UD exchange failed (exit $rc)"
if is_server; then
  expect_grep "every send completed successfully" "^send completions: $N, successful: $N" "$out"
  log "counters: $(rdma statistic show link sr0/1)"
  expect_grep "sent_pkts counts them" "sent_pkts $N rdma_sends $N" "$(rdma statistic show link sr0/1)"
  sr_down_clean
else
  expect_grep "rdma_rxe received and verified every message" "^verified $N of $N$" "$out"
fi
