#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# A receive WQE that an SR QP took ahead from its SRQ and holds no byte of goes back to
# the SRQ when the QP enters the Error state, for the SRQ's other QPs (srq_give_back.py):
# under each SR scheme, g2 forges the last packet of an SR SEND past g1's RCV-NXT that
# takes g1's third receive and is refused (sr_early_refused), g1 moves that QP to Error,
# and g2's SEND on a second QP of the same SRQ must land in that receive.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
if is_server; then side=a peer=10.77.0.2; else side=b peer=10.77.0.1; fi
for scheme in fasr srnic irn melo; do
  sr_up "$scheme"
  gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
  sync_point "up-$scheme"
  out=$(timeout 200 python3 "$HOST_SHARE/selftests/lib/srq_give_back.py" "$side" sr0 "$gidx" "$peer" \
    "t${TEST_INDEX:-0}-give-back-$scheme" 2>&1) || { printf '%s\n' "$out"; fail "srq_give_back.py ($side) under recovery=$scheme"; }
  printf '%s\n' "$out"
  if is_server; then
    expect_grep "$scheme: the receive went back to the SRQ" '^give back: OK$' "$out"
    refused=$(stat_of sr_early_refused)
    [ "$refused" = 1 ] || fail "recovery=$scheme: sr_early_refused $refused (want 1: the forged packet)"
    log "ok: recovery=$scheme: the unused receive served the SRQ's other QP"
  fi
  sync_point "done-$scheme"
  sr_down_clean
done
