#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1500
# rdma-core's own test suite (python3-pyverbs ships it), in the same run against rdma_rxe
# (g1) and rxe_sr (g2); each guest's traffic tests loop back within its one device.
# rdma_rxe must pass with no failure but its known race in test_resize_cq (now and then a
# completion is not yet queued when the test shrinks the CQ), which rxe_sr must not share.
# rxe_sr must fail nothing, and pass every test rdma_rxe passes in the same run (and more:
# the RDMA-CM tests, which skip on rdma_rxe because its device has no parent and so no net
# interface in sysfs). Any other difference, or any kernel warning, fails this test. Both
# drivers' counts are printed, and the tests rxe_sr passes that rdma_rxe does not.
# With SUITE_TAG=forky (rdma_core_suite_forky.sh), the suite, libibverbs, the stock
# providers and pyverbs all come from the image's forky root ($FORKY), and the suite runs
# chrooted into it; the tag names the run in its files.
. "$HOST_SHARE/selftests/lib/lib.sh"

tag=${SUITE_TAG:-bookworm}
root=
if [ "$tag" = forky ]; then root=$FORKY; fi
suite_exit() {
  is_server && rxe_ref_down
  if [ -n "$root" ]; then chroot_leave "$root"; fi
}
trap suite_exit EXIT
if [ -n "$root" ]; then check "/proc, /sys, /dev and the share bound into $root" chroot_enter "$root"; fi
rdma_core=$(chroot "${root:-/}" dpkg-query -W -f '${Version}' ibverbs-providers)
log "rdma-core $rdma_core's suite and stock providers ($tag)"
rm -rf "$root/tmp/t" && cp -r "$root/usr/share/doc/rdma-core/tests" "$root/tmp/t" \
  && find "$root/tmp/t" -name '*.gz' -exec gunzip -f {} +
# The huge-page tests (ODP on hugetlbfs memory, parent domains) skip without reserved 2 MiB
# pages: 16 (32 MiB of the guest's 1 GiB) for the run.
hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
echo 16 > $hp
[ "$(cat $hp)" -ge 4 ] || fail "could not reserve huge pages for the suite ($(cat $hp))"
dmesg_mark
if is_server; then
  check "rdma_rxe up as rxe0" rxe_ref_up
  dev=rxe0 driver=rdma_rxe
else
  sr_up
  dev=sr0 driver=rxe_sr
fi
# On the debug kernel (quick mode) rxe_sr's run is far from done after 500 s.
suite_secs=500
quick && suite_secs=1200
timeout "$suite_secs" chroot "${root:-/}" sh -c "cd /tmp && exec python3 -u t/run_tests.py --dev $dev -v" \
  > /tmp/suite.log 2>&1
cp /tmp/suite.log "$OUT/rdma_core_suite.$tag.$driver.log"
summary=$(grep -E '^Ran [0-9]+ tests' /tmp/suite.log)
result=$(grep -E '^(OK|FAILED)' /tmp/suite.log | tail -1)
[ -n "$summary" ] || fail "the suite did not finish (see rdma_core_suite.$tag.$driver.log)"
ran=$(echo "$summary" | awk '{print $2}')
num() { echo "$result" | sed -n "s/.*$1=\([0-9]*\).*/\1/p"; }
f=$(num failures); e=$(num errors); s=$(num skipped)
passed=$(( ran - ${f:-0} - ${e:-0} - ${s:-0} ))
log "$driver: $ran tests, $passed passed, ${f:-0} failed, ${e:-0} errors, ${s:-0} skipped"
share_put "$driver" "$ran $passed ${f:-0} ${e:-0} ${s:-0}"
bad=$(grep -E '^(FAIL|ERROR): ' /tmp/suite.log | awk '{print $2}' | sort -u)
# SUITE_CORE_NEWER (an extended regex): the suite's tests that need the RDMA core of a kernel
# newer than 6.12, which fail on both drivers alike; their failures are logged, not counted.
if [ -n "${SUITE_CORE_NEWER:-}" ]; then
  known=$(echo "$bad" | grep -xE "$SUITE_CORE_NEWER" || true)
  bad=$(echo "$bad" | grep -vxE "$SUITE_CORE_NEWER" || true)
  [ -z "$known" ] || log "$driver: failed, as they need a newer kernel's RDMA core: $(echo $known)"
fi
# The names of the tests that passed: unittest prints "test_x (module.Class.test_x) ... ok",
# or, for a test with a docstring, the name on one line and "doc ... ok" on the next.
awk '/^test_[A-Za-z0-9_]+ \(/ { name = $1 } / \.\.\. ok$/ && name != "" { print name; name = "" }
     / \.\.\. (skipped|FAIL|ERROR)/ { name = "" }' /tmp/suite.log | sort -u > "$OUT/passed.$tag.$driver"
if [ "$driver" = rdma_rxe ]; then
  bad=$(echo "$bad" | grep -vx test_resize_cq || true)
  [ -z "$bad" ] || fail "rdma_rxe (the reference) failed: $bad"
  mkdir -p "$HOST_SHARE/vals" && cp "$OUT/passed.$tag.$driver" "$HOST_SHARE/vals/suite-passed.$tag.rdma_rxe"
else
  [ -z "$bad" ] || fail "rxe_sr failed: $bad"
  log "ok: rxe_sr failed no test"
fi
sync_point lists
if [ "$driver" = rxe_sr ]; then
  missing=$(comm -23 "$HOST_SHARE/vals/suite-passed.$tag.rdma_rxe" "$OUT/passed.$tag.rxe_sr")
  [ -z "$missing" ] || fail "rdma_rxe passed, rxe_sr did not: $missing"
  more=$(comm -13 "$HOST_SHARE/vals/suite-passed.$tag.rdma_rxe" "$OUT/passed.$tag.rxe_sr")
  log "ok: rxe_sr passed every test rdma_rxe passed, and $(echo "$more" | grep -c .) more: $(echo $more)"
  # SUITE_MUST_PASS (an extended regex): the suite's tests whose names match must all have
  # passed on rxe_sr, none skipped, and there must be some.
  if [ -n "${SUITE_MUST_PASS:-}" ]; then
    want=$(grep -oE '^test_[A-Za-z0-9_]+ \(' /tmp/suite.log | awk '{print $1}' \
      | grep -E "$SUITE_MUST_PASS" | sort -u || true)
    [ -n "$want" ] || fail "the suite ran no test matching /$SUITE_MUST_PASS/"
    not=$(comm -23 <(echo "$want") "$OUT/passed.$tag.rxe_sr")
    [ -z "$not" ] || fail "rxe_sr did not pass (skipped or failed): $not"
    log "ok: rxe_sr passed all $(echo "$want" | grep -c .) tests matching /$SUITE_MUST_PASS/: $(echo $want)"
  fi
fi
echo 0 > $hp
check "no oops or warning in the kernel log" dmesg_clean
is_client && sr_down_clean
sync_point done
is_client && log "side by side: rdma_rxe $(share_get 1 rdma_rxe | awk '{print $2" passed of "$1}'), rxe_sr $(share_get 2 rxe_sr | awk '{print $2" passed of "$1}')"
exit 0
