#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# rxe_sr <-> rxe_sr: perftest, unmodified, over RC: ib_{send,write,read}_bw at 64 KiB,
# ib_atomic_bw, ib_write_bw over 100 QPs (-q 100), ib_{send,write,read,atomic}_lat; then
# ib_write_bw over 1000 QPs (300 in quick mode) with perftest's default TX depth of 128,
# whose one send CQ of 128 entries per QP is past rdma_rxe's max_cqe (32767).
. "$HOST_SHARE/selftests/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
rc_perf_suite sr0
# Counted iterations (130 a QP, above the TX depth, which perftest would otherwise lower
# to the count): with -D over 1000 QPs, perftest printed 0 iterations here while the
# traffic flowed.
qps=1000
quick && qps=300
v=$(PERF_ITERS=130 PERF_SIZE=64 perftest_pair sr0 ib_write_bw 0 60 -q "$qps") ||
  fail "ib_write_bw -q $qps (CQ of $((128 * qps))) failed"
if is_client; then
  positive "$v" || fail "ib_write_bw -q $qps: no bandwidth"
  log "ok: ib_write_bw -q $qps, TX depth 128 (a CQ of $((128 * qps)) entries): $v Gb/s"
fi
# The same 1000 QPs at 1% loss on both guests' egress (issue 13, item 4), in the long mode
# only (RXE_SR_LOSSY_QPS=1): it exposes an open bug. In 3 of 7 runs on the default
# kernel (gbn), perftest never finished: 2 of the 1000 QPs stopped at 128 of their 130
# WRITEs (the TX depth) with every PSN they sent acknowledged (sq-psn equal to the peer's
# rq-psn), nothing in flight and no timer running; perftest then waits forever for the
# completion that would let it post the last two (see README).
if [ "${RXE_SR_LOSSY_QPS:-0}" = 1 ]; then
  v=$(PERF_ITERS=130 PERF_SIZE=64 perftest_pair sr0 ib_write_bw 1 40 -q "$qps") ||
    fail "ib_write_bw -q $qps at 1% loss failed"
  if is_client; then
    positive "$v" || fail "ib_write_bw -q $qps at 1% loss: no bandwidth"
    log "ok: ib_write_bw -q $qps at 1% loss: $v Gb/s (timeouts $(stat_of local_ack_timeout_err), retries exhausted $(stat_of retry_exceeded_err))"
  fi
  netem_set 0
fi
sync_point done
sr_down_clean
