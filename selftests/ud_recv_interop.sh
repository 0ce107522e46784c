#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# UD SEND from rdma_rxe (g2) to rxe_sr (g1): rxe_sr's receive path takes standard RoCEv2
# (ICRC, BTH, DETH checked), finds the QP, consumes a receive WQE, scatters the GRH area and
# the message into the user's MR and completes it: 16 messages (two-SGE gather, inline,
# immediate) arrive verified, and rdma_recvs counts 16.
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
  out=$(timeout 90 python3 "$HOST_SHARE/selftests/ud_msgs.py" recv sr0 "$gidx" $N $QKEY 10.77.0.2 2>&1); rc=$?
else
  out=$(timeout 90 python3 "$HOST_SHARE/selftests/ud_msgs.py" send rxe0 "$gidx" $N $QKEY 10.77.0.1 2>&1); rc=$?
fi
printf '%s\n' "$out"
sync_point done
[ $rc = 0 ] || fail "the UD exchange failed (exit $rc)"
if is_server; then
  expect_grep "rxe_sr received and verified every message" "^verified $N of $N$" "$out"
  log "counters: $(rdma statistic show link sr0/1)"
  expect_grep "rdma_recvs counts them" "rdma_recvs $N" "$(rdma statistic show link sr0/1)"
  sr_down_clean
else
  expect_grep "every send completed successfully" "^send completions: $N, successful: $N" "$out"
fi
