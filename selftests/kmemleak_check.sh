#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# guests: 1
# The leak check can fail: with kmemleak running (the debug kernel's
# kmemleak pass), the test module leaks 3 objects on purpose (insmod rxe_sr_ulp_test.ko
# leak=3) between leak_begin and leak_check; leak_check must fail, count at least those 3
# and name the function that made them. Without kmemleak it skips, except in a pass that
# asks for leak checks (RXE_SR_LEAKS=1), where it fails.
. "$HOST_SHARE/selftests/lib/lib.sh"
ko=$HOST_SHARE/ko/$(uname -r)/rxe_sr_ulp_test.ko
[ -f "$ko" ] || fail "the test module was not built ($ko)"
if ! kmemleak_ready || ! echo scan 2> /dev/null > /sys/kernel/debug/kmemleak; then
  [ "${RXE_SR_LEAKS:-0}" = 1 ] && fail "RXE_SR_LEAKS=1 but kmemleak is not running in this kernel"
  skip "kmemleak is not running in this kernel"
fi
rmmod rxe_sr_ulp_test 2> /dev/null
sr_up
leak_begin
[ "$LEAK_CHECK" = 1 ] || fail "leak_begin did not arm the check"
check "insmod leak=3" insmod "$ko" dev=sr0 leak=3
expect_grep "the test module leaked 3 objects" 'rxe_sr_ulp_test: leaked 3 objects' "$(dmesg_since_mark)"
# The module stays loaded until the scan, so that the report's backtraces name it.
# (Its failure is expected: fail() here neither tells the other guest nor reports.)
if out=$( (fail() { log "FAIL: $*"; exit 1; }; leak_check) 2>&1); then
  printf '%s\n' "$out" | tail -5
  rmmod rxe_sr_ulp_test
  fail "leak_check passed with 3 objects leaked on purpose"
fi
rmmod rxe_sr_ulp_test
printf '%s\n' "$out" | grep -E 'kmemleak: [0-9]+ unreferenced|FAIL' | head -3
n=$(sed -n 's/.* \([0-9]*\) allocated through rxe_sr or the RDMA core$/\1/p' <<< "$out" | tail -1)
[ "${n:-0}" -ge 3 ] || fail "leak_check counted ${n:-no} objects, not the 3 leaked"
expect_grep "the report names the leaking function" 'leak_set\+.*\[rxe_sr_ulp_test\]' "$out"
log "ok: leak_check failed on the 3 objects leaked on purpose (counted $n)"
# Those objects are the test's own, and now reported (a later scan does not count them
# again): sr_down_clean's checks start afresh, past kmemleak's "suspected memory leaks".
dmesg_mark
leak_begin
sr_down_clean
