#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# Object lifetimes under traffic and loss, under every recovery scheme
# (quick mode: fasr, 25 rounds of 20): qp_churn.py makes and tears down 1000 RC QPs on
# each guest (25 rounds of 40) with 5% loss on the link, so that retransmission timers are armed when the QPs go: each QP has two WRITEs and
# a READ in flight when it is destroyed (at once, after its first completion, or after
# Error and its flush), when its CQ is closed under it, when the peer's target MR is
# deregistered under the peer's WRITEs and READs, or when its own source and sink MRs are
# deregistered under its WRITEs and the READ responses on their way. Afterwards: every
# step returned (no hang), `rdma resource` is back where it began, a data-checked exchange
# on the device passes, the kernel log has no oops, warning, KASAN or lockdep report, the
# debug kernel's kmemleak finds nothing leaked through rxe_sr or the RDMA core, and unload
# finds no object left.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
rounds=${RXE_SR_CHURN_ROUNDS:-25} qps=40
schemes="gbn fasr srnic irn melo"
# Quick (the KASAN passes): 500 QPs under fasr; 1000 under two schemes take too long there.
quick && schemes=fasr qps=20
if is_server; then side=a peer=10.77.0.2; else side=b peer=10.77.0.1; fi
for scheme in $schemes; do
  sr_up "$scheme"
  pin_peer_neigh
  leak_begin
  res0=$(rdma resource show sr0)
  gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
  netem_set 5
  sync_point "churn-up-$scheme" 120 || fail "the other guest did not come"
  out=$(timeout 800 python3 "$HOST_SHARE/selftests/lib/qp_churn.py" "$side" sr0 "$gidx" "$peer" \
    "t${TEST_INDEX:-0}-churn-$scheme" "$rounds" "$qps" 2>&1); rc=$?
  printf '%s\n' "$out" | tail -4
  [ "$rc" = 0 ] || { printf '%s\n' "$out" | tail -30; fail "$scheme: qp_churn.py failed (exit $rc)"; }
  expect_grep "$scheme: $((rounds * qps)) QPs made and torn down" "^qps_made $((rounds * qps)) " "$out"
  netem_set 0
  sync_point "churn-done-$scheme" 120 || fail "the other guest did not finish"
  res1=$(rdma resource show sr0)
  check "$scheme: rdma resource back where it began ($res1)" test "$res1" = "$res0"
  rc_verify_pair sr0 "churn-verify-$scheme" 1 > /tmp/churn-verify.out ||
    { cat /tmp/churn-verify.out; fail "$scheme: the data-checked exchange after the churn failed"; }
  log "ok: $scheme: a data-checked exchange after the churn"
  sync_point "churn-end-$scheme" 120
  sr_down_clean
done
