#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# A long chain of UD sends behind one doorbell: perftest ib_send_bw over
# UD with --post_list 256 (each ibv_post_send call queues 256 work requests, rung once).
# rxe_sr sends at most 64 per call and hands the rest to the QP's work, so the caller and
# the device's receive path are not held for the whole chain. perftest must run to its end
# (it exits non-zero on an error completion) and its receiver must see datagrams, with a
# clean kernel log. Then ud_chain.py on g1 posts a chain of 8192 UD sends in one call and
# checks that every one completes, successfully, and that the device left part of the chain
# to the QP's work (ud_send_deferred moved) instead of sending all of them inside the call.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
secs=4; quick && secs=2
gbps=$(PERF_SIZE=1024 perftest_pair sr0 ib_send_bw 0 "$secs" -c UD --post_list 256 -t 512) || fail "ib_send_bw UD --post_list 256"
if is_client; then
  log "ib_send_bw UD, post_list 256: ${gbps:-none} Gb/s at the receiver"
  awk -v g="${gbps:-0}" 'BEGIN { exit !(g > 0) }' || fail "no goodput measured"
fi
sync_point done
if is_server; then
  gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
  out=$(timeout 150 python3 "$HOST_SHARE/selftests/lib/ud_chain.py" sr0 "$gidx" 10.77.0.2 8192 2>&1); rc=$?
  printf '%s\n' "$out"
  [ $rc = 0 ] || fail "ud_chain.py: $(printf '%s\n' "$out" | tail -1)"
fi
sync_point chain-done
sr_down_clean
