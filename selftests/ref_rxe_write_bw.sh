#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# The reference path under loss: rdma_rxe in both guests, ib_write_bw (RC, 64 KiB) with
# netem 0% and 1% on both guests' egress. Both complete with a positive goodput.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
# rdma_rxe and the test bed only, no rxe_sr code: the default pass covers them; the KASAN
# passes (quick) leave them out.
quick && skip "quick mode: no rxe_sr code under test"
trap rxe_ref_down EXIT
check "rdma_rxe up as rxe0" rxe_ref_up
for loss in 0 1; do
  bw=$(perftest_pair rxe0 ib_write_bw "$loss" 5) || fail "ib_write_bw at ${loss}% loss failed"
  if is_client; then
    [ -n "$bw" ] || fail "no bandwidth line at ${loss}%"
    awk -v b="$bw" 'BEGIN { exit !(b > 0) }' || fail "zero goodput at ${loss}%"
    log "ok: ib_write_bw rdma_rxe at ${loss}% loss: $bw Gb/s"
  fi
done
