#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make bench`'s long-haul sweep (scripts/bench-wan): each cell is a round
# trip time and a loss on the long-haul profile (wan_spec in lib.sh: netem delay of half the
# RTT on both guests' egress, a rate limit, Bernoulli or burst loss). The cells are the
# lossless RTT 0 reference, then every RTT of BENCH_WAN_RTTS (ms) with every loss of
# BENCH_WAN_LOSSES (percent, or geH for bursts). In each cell every driver of
# BENCH_WAN_DRIVERS (rdma_rxe, or a recovery= scheme with module parameters after "+", e.g.
# fasr+sr_pipe_psns=512) is loaded afresh and runs, the drivers taking turns, BENCH_WAN_REPS
# rounds:
#   - goodput: ib_write_bw (BENCH_WAN_BW=ib_read_bw: READs), 64 KiB, one QP,
#     BENCH_WAN_SECS seconds;
#   - message completion time: fct.py, BENCH_WAN_FCT_ITERS WRITEs of 1 MiB one at a time,
#     each timed from post to completion, every byte checked: the first on its new QP, and
#     p50 and p99 of the rest.
# Every QP's local ACK timeout is 4.096 us x 2^BENCH_WAN_TIMEOUT (default 16: 268 ms,
# above every RTT of the sweep, so no driver times out on a packet still on its way).
# The client (g2) writes OUT/wan.csv, one row per run:
#   driver,rtt_ms,loss,rep,gbps,fct_p50_ms,fct_p99_ms,fct_first_ms
# (an empty figure: that part of the run failed), and each guest's device counters after
# each run to OUT/counters-wan-DRIVER-RTT-LOSS-REP.txt.
. "$HOST_SHARE/selftests/lib/lib.sh"
TEST_INDEX=bench_wan
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
read -r -a rtts <<< "${BENCH_WAN_RTTS:-20 40 80}"
read -r -a losses <<< "${BENCH_WAN_LOSSES:-0 0.001 0.01 0.1 1 ge30 ge70}"
read -r -a drivers <<< "${BENCH_WAN_DRIVERS:-rdma_rxe gbn gbn+gbn_window_psns=1024 fasr srnic gbn+gbn_window_psns=1024+fec_unit=32+fec_depth=4 fasr+fec_unit=32+fec_depth=4}"
reps=${BENCH_WAN_REPS:-3}
secs=${BENCH_WAN_SECS:-10}
iters=${BENCH_WAN_FCT_ITERS:-30}
tmo=${BENCH_WAN_TIMEOUT:-16}
bw_tool=${BENCH_WAN_BW:-ib_write_bw}
case "$bw_tool" in ib_write_bw|ib_read_bw) ;; *) echo "BENCH_WAN_BW: not ib_write_bw or ib_read_bw: $bw_tool"; exit 1 ;; esac
# RTT 0 without loss is the reference: listed again, it would run twice under one key.
cells=("0 0")
for r in "${rtts[@]}"; do
  for l in "${losses[@]}"; do [ "$r $l" = "0 0" ] || cells+=("$r $l"); done
done
total=$(( ${#cells[@]} * ${#drivers[@]} * reps ))
n=0
is_client && echo "driver,rtt_ms,loss,rep,gbps,fct_p50_ms,fct_p99_ms,fct_first_ms" > "$OUT/wan.csv"
log "benchmark: $total runs (${#cells[@]} cells x ${#drivers[@]} drivers x $reps), link rate ${WAN_RATE:-100mbit}, goodput by $bw_tool"

for cell in "${cells[@]}"; do
  read -r rtt loss <<< "$cell"
  spec=$(wan_spec "$rtt" "$loss")
  for rep in $(seq "$reps"); do
    for drv in "${drivers[@]}"; do
      key="$drv-$rtt-$loss-$rep"
      dev=$(bench_driver_up "$drv") || { echo "$drv did not come up"; exit 1; }
      sync_point "up-$key"
      bw=$(PERF_SIZE=65536 perftest_pair "$dev" "$bw_tool" "$spec" "$secs" -u "$tmo") || bw=
      fct=$(fct_pair "$dev" "$spec" "$key" "$iters" --timeout "$tmo") || fct=
      read -r p50 p99 first <<< "$fct"
      rdma statistic show link "$dev/1" > "$OUT/counters-wan-$key.txt" 2>&1 || true
      n=$((n + 1))
      if is_client; then
        echo "$drv,$rtt,$loss,$rep,$bw,$p50,$p99,$first" >> "$OUT/wan.csv"
        log "progress $n/$total: $drv RTT ${rtt} ms loss $loss run $rep: ${bw:-failed} Gb/s, 1 MiB WRITE p50 ${p50:-failed} ms p99 ${p99:-failed} ms first ${first:-failed} ms"
      fi
      sync_point "down-$key"
      bench_driver_down "$dev"
    done
  done
done
log "benchmark: done"
