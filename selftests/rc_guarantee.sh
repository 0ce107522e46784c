#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# RC's promise under every scheme, with netem loss 1%, duplication 1% and reordering on
# both guests' egress and a receiver short of receives (rc_guarantee.py): 200 SENDs of
# 1 B .. 8 KiB to a receiver that keeps two receives posted and posts each again only after
# a pause (RNR NAKs under loss), every byte and the order checked, every SEND completing
# successfully; then 200 FETCH_ADDs, the k-th returning k and the counter ending at 200
# (each ran once). No QP may die of retries (retry_exceeded_err stays 0).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
schemes=(gbn fasr srnic irn melo)
spec="loss 1% duplicate 1% delay 1ms reorder 10% 50%"
n=200
quick && n=60
for scheme in "${schemes[@]}"; do
  sr_up "$scheme"
  gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
  if is_server; then role=recv peer=10.77.0.2; else role=send peer=10.77.0.1; fi
  netem_set "$spec"
  sync_point "start-$scheme"
  t0=$(date +%s.%N)
  out=$(timeout 500 python3 "$HOST_SHARE/selftests/lib/rc_guarantee.py" "$role" sr0 "$gidx" "$peer" \
    "t${TEST_INDEX:-0}-guarantee-$scheme" "$n" 2>&1) || { printf '%s\n' "$out"; fail "rc_guarantee.py ($role) under recovery=$scheme"; }
  printf '%s\n' "$out"
  log "recovery=$scheme: the exchange took $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
  expect_grep "$scheme: every SEND, receive and FETCH_ADD checked" '^guarantee: OK$' "$out"
  netem_set 0
  dead=$(stat_of retry_exceeded_err)
  log "recovery=$scheme: rnr NAKs sent $(stat_of send_rnr_err), received $(stat_of rcvd_rnr_err), retry_exceeded_err ${dead:-?}"
  log "counters: $(rdma statistic show link sr0/1)"
  [ "${dead:-1}" = 0 ] || fail "recovery=$scheme: a QP died of retries"
  log "ok: recovery=$scheme: $n SENDs to a slow receiver and $n FETCH_ADDs under '$spec'"
  sync_point "done-$scheme"
  sr_down_clean
done
