#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# rxe_sr (g1) <-> rdma_rxe (g2) under impairment on both guests' egress: netem loss 1% and
# 5%, reordering, duplication. Under each, rc_verify.py (SEND, WRITE with immediate, READ
# and atomics both ways at once, every byte checked) passes, and so does rping -V through
# rdma-cm: each driver recovers the other's losses over the standard go-back-N protocol.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
if is_server; then mixed_up sr; else mixed_up rxe; fi
specs=(1 5 "delay 1ms reorder 10% 50%" "duplicate 5%")
quick && specs=(5 "duplicate 5%")
for spec in "${specs[@]}"; do
  name=$(printf '%s' "$spec" | tr -c 'A-Za-z0-9' '_')
  netem_set "$spec"
  sync_point "verify-$name"
  rc_verify_pair "$DEV" "iloss-$name" 1 || fail "rc_verify rxe_sr <-> rdma_rxe under netem '$spec'"
  log "ok: rc_verify rxe_sr <-> rdma_rxe under netem '$spec'"
  out=$(rping_pair "iloss-$name" -C 50 -S 1000) || fail "rping -V rxe_sr <-> rdma_rxe under netem '$spec'"
  log "ok: rping -V rxe_sr <-> rdma_rxe under netem '$spec'"
  netem_set 0
done
sync_point done
if is_server; then
  log "counters: $(rdma statistic show link sr0/1)"
  sr_down_clean
fi
