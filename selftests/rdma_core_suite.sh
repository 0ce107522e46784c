#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# rdma-core's own test suite (python3-pyverbs ships it), in the same run against rdma_rxe
# (g1) and rxe_sr (g2); each guest's traffic tests loop back within its one device.
# rdma_rxe must pass with no failure but its known race in test_resize_cq (a completion not
# yet queued when the test shrinks the CQ; it failed 7 of 40 runs here, see PLATFORM.md),
# which rxe_sr must not share. rxe_sr must fail nothing except
# the tests listed in NEEDS_RC below, which need the RC transport that has not landed yet:
# a new failure anywhere else, or any kernel warning, fails this test. Both drivers' counts
# are printed.
. "$HOST_SHARE/selftests/lib.sh"

# Tests that need RC traffic (ibv_post_send on RC QPs answers EOPNOTSUPP until the RC
# transport lands). Remove entries as they start passing.
NEEDS_RC="test_atomic_cmp_and_swap test_atomic_fetch_and_add test_cq_events_rc
test_mr_rereg_access_bad_flow test_mr_rereg_pd test_qp_ex_rc_atomic_cmp_swp
test_qp_ex_rc_atomic_fetch_add test_qp_ex_rc_atomic_write test_qp_ex_rc_rdma_read
test_qp_ex_rc_rdma_read_zero_size test_qp_ex_rc_rdma_write test_qp_ex_rc_rdma_write_imm
test_qp_ex_rc_rdma_write_zero_length test_qp_ex_rc_send test_qp_ex_rc_send_imm
test_rc_traffic_cq_ex test_ro_rc_traffic"

rm -rf /tmp/t && cp -r /usr/share/doc/rdma-core/tests /tmp/t && find /tmp/t -name '*.gz' -exec gunzip -f {} +
dmesg_mark
if is_server; then
  trap rxe_ref_down EXIT
  check "rdma_rxe up as rxe0" rxe_ref_up
  dev=rxe0 driver=rdma_rxe
else
  sr_up
  dev=sr0 driver=rxe_sr
fi
(cd /tmp && timeout 500 python3 -u t/run_tests.py --dev $dev -v > /tmp/suite.log 2>&1)
cp /tmp/suite.log "$OUT/rdma_core_suite.$driver.log"
summary=$(grep -E '^Ran [0-9]+ tests' /tmp/suite.log)
result=$(grep -E '^(OK|FAILED)' /tmp/suite.log | tail -1)
[ -n "$summary" ] || fail "the suite did not finish (see rdma_core_suite.$driver.log)"
ran=$(echo "$summary" | awk '{print $2}')
num() { echo "$result" | sed -n "s/.*$1=\([0-9]*\).*/\1/p"; }
f=$(num failures); e=$(num errors); s=$(num skipped)
passed=$(( ran - ${f:-0} - ${e:-0} - ${s:-0} ))
log "$driver: $ran tests, $passed passed, ${f:-0} failed, ${e:-0} errors, ${s:-0} skipped"
share_put "$driver" "$ran $passed ${f:-0} ${e:-0} ${s:-0}"
bad=$(grep -E '^(FAIL|ERROR): ' /tmp/suite.log | awk '{print $2}' | sort -u)
if [ "$driver" = rdma_rxe ]; then
  bad=$(echo "$bad" | grep -vx test_resize_cq || true)
  [ -z "$bad" ] || fail "rdma_rxe (the reference) failed: $bad"
else
  unexpected=$(for t in $bad; do echo "$NEEDS_RC" | tr ' ' '\n' | grep -qx "$t" || echo "$t"; done)
  [ -z "$unexpected" ] || fail "rxe_sr failed tests outside the RC list: $unexpected"
  log "ok: every rxe_sr failure is an RC-transport test ($(echo "$bad" | grep -c .) of them)"
fi
check "no oops or warning in the kernel log" dmesg_clean
is_client && sr_down_clean
sync_point done
is_client && log "side by side: rdma_rxe $(share_get 1 rdma_rxe | awk '{print $2" passed of "$1}'), rxe_sr $(share_get 2 rxe_sr | awk '{print $2" passed of "$1}')"
exit 0
