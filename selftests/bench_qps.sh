#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make bench`: the QP sweep. ib_write_bw over 1, 10, 100 and 1000 RC QPs
# (4 KiB messages) at 1% loss on both guests' egress, for rdma_rxe and for rxe_sr under each
# recovery= scheme (the module reloaded for every point, so its counters are that point's),
# BENCH_REPS runs each. A run moves a fixed amount of data, BENCH_MSGS messages spread over
# the QPs (at least 20 per QP), and the goodput is those bytes over the time they took: a
# timed run (-D) counts only the completions inside its sampling window, and with 100 QPs
# each 128 deep, perftest's completion moderation (one signalled completion per 100
# messages a QP) leaves that window empty for every driver that serves its QPs fairly.
# The client (g2) writes OUT/bench.csv (driver,op,qps,gbps) and OUT/pools.csv: per point the
# SR pools' peaks on each guest's device (the WRITEs' responder g1, whose receive side holds
# the out-of-order state, and their requester g2), the GBN fallbacks of both, and the QPs
# that negotiated the SR format (driver,qps,rsp_units_peak,rsp_blocks_peak,rsp_melo_peak,
# req_units_peak,req_blocks_peak,req_melo_peak,gbn_fallbacks,qps_negotiated).
. "$HOST_SHARE/selftests/lib.sh"
TEST_INDEX=bench
msgs=${BENCH_MSGS:-32000}
reps=${BENCH_REPS:-3}
# BENCH_QPS / BENCH_SCHEMES / BENCH_REF=0 narrow the sweep for a quick look.
read -r -a qps_list <<< "${BENCH_QPS:-1 10 100 1000}"
read -r -a schemes <<< "${BENCH_SCHEMES:-gbn fasr srnic irn melo}"
ref=${BENCH_REF:-1}
total=$(( (ref + ${#schemes[@]}) * ${#qps_list[@]} * reps ))
n=0
is_client && echo "driver,op,qps,gbps" > "$OUT/bench.csv"
is_client && echo "driver,qps,rsp_units_peak,rsp_blocks_peak,rsp_melo_peak,req_units_peak,req_blocks_peak,req_melo_peak,gbn_fallbacks,qps_negotiated" > "$OUT/pools.csv"
# pools_of: this guest's pool peaks and GBN fallbacks, comma-separated.
pools_of() { echo "$(stat_of sr_pool_units_peak),$(stat_of sr_pool_blocks_peak),$(stat_of melo_pool_blocks_peak),$(stat_of sr_gbn_fallbacks)"; }

# per_qp QPS: the iterations of each QP.
per_qp() { local k=$(( (msgs + $1 - 1) / $1 )); echo $(( k < 20 ? 20 : k )); }

# point DRIVER DEV QPS: the runs of one point.
point() {
  local bw rep
  for rep in $(seq "$reps"); do
    # The seconds argument only bounds the run (perftest_pair's timeout).
    bw=$(PERF_ITERS=$(per_qp "$3") PERF_SIZE=4096 perftest_pair "$2" ib_write_bw 1 40 -q "$3") || bw=
    n=$((n + 1))
    is_client && echo "$1,ib_write_bw,$3,${bw}" >> "$OUT/bench.csv"
    log "progress $n/$total: $1 ib_write_bw $3 QPs run $rep: ${bw:-failed} Gb/s"
  done
}

log "benchmark: $total runs of $msgs messages of 4 KiB"
if [ "$ref" = 1 ]; then
  rxe_ref_up || { echo "rdma_rxe did not come up"; exit 1; }
  for q in "${qps_list[@]}"; do point rdma_rxe rxe0 "$q"; done
  rxe_ref_down
fi
for scheme in "${schemes[@]}"; do
  for q in "${qps_list[@]}"; do
    modprobe -r rxe_sr 2>/dev/null
    load_rdma_core && modprobe rxe_sr recovery="$scheme" && rdma link add sr0 type rxe_sr netdev eth0 \
      && wait_port_active sr0 || { echo "rxe_sr recovery=$scheme did not come up"; exit 1; }
    sync_point "up-$scheme-$q"
    point "rxe_sr-$scheme" sr0 "$q"
    share_put "pools-$scheme-$q" "$(pools_of)"
    sync_point "down-$scheme-$q"
    if is_client; then
      local_p=$(pools_of)
      IFS=, read -r ru rb rm rf <<< "$(share_get 1 "pools-$scheme-$q")"
      IFS=, read -r qu qb qm qf <<< "$local_p"
      echo "rxe_sr-$scheme,$q,$ru,$rb,$rm,$qu,$qb,$qm,$(( ${rf:-0} + ${qf:-0} )),$(stat_of sr_qps_negotiated)" >> "$OUT/pools.csv"
    fi
    rdma link del sr0; modprobe -r rxe_sr
  done
done
