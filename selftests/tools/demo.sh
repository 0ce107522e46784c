#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make run`: rxe_sr's device, then the goodput table's measurements
# (written by the client, g2, to OUT/bench.csv: driver,op,loss,gbps; one row per run). RC,
# 64 KiB messages; the ib_write_lat rows hold t_avg in microseconds (lossless).
. "$HOST_SHARE/selftests/lib/lib.sh"
TEST_INDEX=demo
secs=${BENCH_SECONDS:-2}

echo "=== rxe_sr"
load_rdma_core
modprobe rxe_sr && rdma link add sr0 type rxe_sr netdev eth0 && wait_port_active sr0
echo "\$ modinfo -p rxe_sr"; modinfo -p rxe_sr
echo "\$ rdma link show sr0/1"; rdma link show sr0/1
echo "\$ ibv_devices"; ibv_devices
echo "\$ ibv_devinfo -d sr0"; ibv_devinfo -d sr0
echo "\$ cat /sys/class/infiniband/sr0/ports/1/gids/$(roce_gid_index sr0)   # RoCEv2 GID of $MY_IP"
cat /sys/class/infiniband/sr0/ports/1/gids/"$(roce_gid_index sr0)"
rdma link del sr0; modprobe -r rxe_sr
echo "=== end rxe_sr"

# The comparison: rdma_rxe, then rxe_sr under each recovery= scheme; ib_write_bw,
# ib_send_bw and ib_read_bw (RC, 64 KiB messages) at each loss rate on both guests' egress,
# BENCH_REPS runs of BENCH_SECONDS each per cell (the host prints the medians).
# BENCH_LOSSES, BENCH_OPS and BENCH_SCHEMES (space-separated) narrow the matrix, and
# BENCH_REF=0 leaves rdma_rxe out (a quicker look at one change; make run sets none).
read -ra losses <<< "${BENCH_LOSSES:-0 0.1 1 2 5}"
read -ra ops <<< "${BENCH_OPS:-ib_write_bw ib_send_bw ib_read_bw}"
read -ra schemes <<< "${BENCH_SCHEMES:-gbn fasr srnic irn melo}"
ref=${BENCH_REF:-1}
reps=${BENCH_REPS:-3}
total=$(( (ref + ${#schemes[@]}) * ${#ops[@]} * ${#losses[@]} * reps ))
done_runs=0

# bench DRIVER DEV: every op, loss rate and repetition on DEV, rows for DRIVER.
bench() {
  local driver=$1 dev=$2 op loss rep bw
  for op in "${ops[@]}"; do
    for loss in "${losses[@]}"; do
      for rep in $(seq "$reps"); do
        bw=$(perftest_pair "$dev" "$op" "$loss" "$secs") || bw=
        done_runs=$((done_runs + 1))
        is_client && echo "${driver},${op},${loss},${bw}" >> "$OUT/bench.csv"
        log "progress $done_runs/$total: $driver $op loss ${loss}% run $rep: ${bw:-failed} Gb/s"
      done
    done
  done
}

# lat DRIVER DEV: ib_write_lat lossless, t_avg in microseconds, BENCH_REPS times.
lat() {
  local v rep
  for rep in $(seq "$reps"); do
    v=$(perflat_pair "$2" ib_write_lat "${LAT_ITERS:-1000}") || v=
    is_client && echo "$1,ib_write_lat(us),0,${v}" >> "$OUT/bench.csv"
    log "$1 ib_write_lat run $rep: ${v:-failed} us"
  done
}

is_client && echo "driver,op,loss,gbps" > "$OUT/bench.csv"
log "benchmark: $total goodput runs of ${secs}s"

# The testbed's own latency, lossless, beside ib_write_lat: ICMP echoes, answered by the
# server's kernel, half their round trip (QEMU's packet path and both kernels' network
# stacks). No floor: the ping process sleeps between replies where perftest polls.
netem_set 0
sync_point "ping-floor"
if is_client; then
  rtt=$(ping -q -c 300 -i 0.01 "$SERVER_IP" | awk -F/ '/^rtt/ { print $5 }') || rtt=
  log "ping over the guests' link: RTT avg ${rtt:-failed} ms"
  [ -n "$rtt" ] && echo "ping (RTT/2),ib_write_lat(us),0,$(awk -v r="$rtt" 'BEGIN { printf "%.2f", r * 500 }')" >> "$OUT/bench.csv"
fi
sync_point "ping-floor-done" 120
if [ "$ref" = 1 ]; then
  rxe_ref_up || { echo "rdma_rxe did not come up"; exit 1; }
  bench rdma_rxe rxe0
  lat rdma_rxe rxe0
  rxe_ref_down
fi

# A scheme may carry module parameters after a "+" (e.g. fasr+sr_pipe_psns=0): its rows are
# named with them, so one run compares settings side by side.
for scheme in "${schemes[@]}"; do
  read -ra params <<< "$(printf '%s' "$scheme" | tr '+' ' ')"
  load_rdma_core && modprobe rxe_sr recovery="${params[0]}" "${params[@]:1}" && rdma link add sr0 type rxe_sr netdev eth0 \
    && wait_port_active sr0 || { echo "rxe_sr recovery=$scheme did not come up"; exit 1; }
  sync_point "up-$scheme"
  bench "rxe_sr-$scheme" sr0
  case $scheme in gbn|fasr) lat "rxe_sr-$scheme" sr0 ;; esac
  log "rxe_sr-$scheme counters: $(rdma statistic show link sr0/1)"
  sync_point "down-$scheme"
  rdma link del sr0; modprobe -r rxe_sr
done
