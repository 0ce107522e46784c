#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 3000
# The guest side of `make bench`'s RNR point (scripts/bench-rnr): ib_send_bw, 64 KiB SENDs,
# the receiver keeping two receives posted (-r 2) so that the sender meets RNR NAKs again
# and again, at 1% loss on both guests' egress (BENCH_RNR_LOSS), for rdma_rxe and for
# rxe_sr under each recovery= scheme (BENCH_RNR_SCHEMES), the driver loaded afresh for each
# and its runs taking turns with the others' (BENCH_RNR_REPS rounds), each run
# BENCH_RNR_ITERS messages. The client (g2) writes OUT/bench_rnr.csv, one row per run:
#   driver,rep,gbps,secs,rnr_naks,retry_exceeded,rnr_exceeded
# gbps is perftest's average (empty when the run failed: a QP that died shows here), secs
# the run's wall time, and the rest the client device's counters over the run: RNR NAKs
# received, QPs that ran out of retries (retry_exceeded_err) and of RNR retries. Each
# guest keeps its device's counters after each run in OUT/counters-rnr-DRIVER-REP.txt.
. "$HOST_SHARE/selftests/lib/lib.sh"
TEST_INDEX=bench_rnr
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
iters=${BENCH_RNR_ITERS:-400}
reps=${BENCH_RNR_REPS:-5}
loss=${BENCH_RNR_LOSS:-1}
read -r -a schemes <<< "${BENCH_RNR_SCHEMES:-gbn fasr srnic irn melo}"
drivers=(rdma_rxe "${schemes[@]}")
total=$(( ${#drivers[@]} * reps ))
n=0
is_client && echo "driver,rep,gbps,secs,rnr_naks,retry_exceeded,rnr_exceeded" > "$OUT/bench_rnr.csv"
log "benchmark: $total runs of ib_send_bw, $iters SENDs of 64 KiB to a receiver with 2 receives posted, ${loss}% loss"

# counters DEV: the client's counters that tell how the run went, space-separated.
counters() { echo "$(stat_of rcvd_rnr_err "$1") $(stat_of retry_exceeded_err "$1") $(stat_of retry_rnr_exceeded_err "$1")"; }

for rep in $(seq "$reps"); do
  for drv in "${drivers[@]}"; do
    dev=$(bench_driver_up "$drv") || { echo "$drv did not come up"; exit 1; }
    sync_point "up-$drv-$rep"
    read -r rnr0 dead0 rdead0 <<< "$(counters "$dev")"
    t0=$(date +%s.%N)
    bw=$(PERF_ITERS=$iters perftest_pair "$dev" ib_send_bw "$loss" 120 -r 2) || bw=
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    read -r rnr1 dead1 rdead1 <<< "$(counters "$dev")"
    # Every counter of this guest's device after the run (the driver is loaded afresh
    # for each run), for a closer look at how it recovered.
    rdma statistic show link "$dev/1" > "$OUT/counters-rnr-$drv-$rep.txt" 2>&1 || true
    n=$((n + 1))
    if is_client; then
      echo "$drv,$rep,$bw,$secs,$(( ${rnr1:-0} - ${rnr0:-0} )),$(( ${dead1:-0} - ${dead0:-0} )),$(( ${rdead1:-0} - ${rdead0:-0} ))" >> "$OUT/bench_rnr.csv"
      log "progress $n/$total: $drv run $rep: ${bw:-failed} Gb/s in $secs s, RNR NAKs $(( ${rnr1:-0} - ${rnr0:-0} )), retries exceeded $(( ${dead1:-0} - ${dead0:-0} ))"
    fi
    sync_point "down-$drv-$rep"
    bench_driver_down "$dev"
  done
done
log "benchmark: done"
