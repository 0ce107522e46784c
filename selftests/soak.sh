#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# Soak: rc_verify.py (SEND, WRITE with and without immediate, READ and
# atomics both ways at once, every byte checked) over and over between the guests at 5%
# loss under fasr (RXE_SR_RECOVERY picks another scheme) for RXE_SR_SOAK_SECS seconds
# (default 60, quick mode 30; the long mode is 600: `RXE_SR_SOAK_SECS=600 bash scripts/vm-test soak.sh`).
# Every exchange must verify; the kernel log must show no lockup, RCU stall, hung task,
# oops or warning (the debug kernel detects soft lockups and hung tasks too); kmemleak (the
# debug kernel) must find nothing leaked; the unreclaimable slab must come back to within
# 2 MiB of where it began once the module is unloaded (its before, peak and after are
# logged).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
secs=${RXE_SR_SOAK_SECS:-60}
quick && [ -z "${RXE_SR_SOAK_SECS:-}" ] && secs=30
[ "$secs" -le 780 ] || fail "RXE_SR_SOAK_SECS=$secs: at most 780 (this test's timeout is 900 s)"
scheme=${RXE_SR_RECOVERY:-fasr}
load_rdma_core
s0=$(sunreclaim) || fail "no /sys/kernel/slab/*/shrink to read the slab with"
sr_up "$scheme"
leak_begin
netem_set 5
peak=$s0 i=0 start=$SECONDS
while :; do
  i=$((i + 1))
  rc_verify_pair sr0 "soak-$i" 2 > /tmp/soak-verify.out ||
    { tail -30 /tmp/soak-verify.out; fail "exchange $i at 5% loss did not verify"; }
  s=$(sunreclaim) || fail "the slab could not be read"; [ "$s" -gt "$peak" ] && peak=$s
  # g1 decides whether another exchange follows (the guests' clocks differ).
  if is_server; then
    go=1; [ $((SECONDS - start)) -ge "$secs" ] && go=0
    share_put "go-$i" "$go"
  fi
  sync_point "soak-$i" 300 || fail "the other guest did not come after exchange $i"
  [ "$(share_get 1 "go-$i")" = 1 ] || break
done
took=$((SECONDS - start))
netem_set 0
log "ok: $i exchanges of 2 rounds at 5% loss under $scheme in ${took}s, every one verified"
log "counters: $(rdma statistic show link sr0/1 | tr -s ' ' | cut -c1-700)"
sync_point "soak-end" 120
sr_down_clean
s1=$(sunreclaim) || fail "the slab could not be read"
log "unreclaimable slab: ${s0} kB before, ${peak} kB at the peak, ${s1} kB after unload"
[ $((s1 - s0)) -le 2048 ] || fail "the unreclaimable slab grew by $((s1 - s0)) kB over the soak"
