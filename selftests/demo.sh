#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make run`: rxe_sr's device, then the goodput table's measurements
# (written by the client, g2, to OUT/bench.csv: driver,op,loss,gbps). RC rows: 64 KiB
# messages; UD rows: 1 KiB (one path MTU), goodput as the receiver counts it; the
# ib_write_lat row holds t_avg in microseconds (lossless).
. "$HOST_SHARE/selftests/lib.sh"
TEST_INDEX=demo
secs=${BENCH_SECONDS:-8}

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

# bench DRIVER DEV OP [ARGS...]: one table row, the four loss rates.
bench() {
  local driver=$1 dev=$2 op=$3 label=$3 loss bw; shift 3
  [ "$*" = "-c UD" ] && label="$op(UD)"
  for loss in 0 0.1 1 5; do
    bw=$(perftest_pair "$dev" "$op" "$loss" "$secs" "$@") || bw=
    is_client && echo "${driver},${label},${loss},${bw}" >> "$OUT/bench.csv"
    log "$driver $label loss ${loss}%: ${bw:-failed} Gb/s"
  done
}

# lat DRIVER DEV: ib_write_lat lossless, t_avg in microseconds, as a row of its own.
lat() {
  local v
  v=$(perflat_pair "$2" ib_write_lat "${LAT_ITERS:-2000}") || v=
  is_client && echo "$1,ib_write_lat(us),0,${v}" >> "$OUT/bench.csv"
  log "$1 ib_write_lat: ${v:-failed} us"
}

is_client && echo "driver,op,loss,gbps" > "$OUT/bench.csv"
rxe_ref_up || { echo "rdma_rxe did not come up"; exit 1; }
for op in ib_write_bw ib_send_bw ib_read_bw; do
  bench rdma_rxe rxe0 "$op"
done
PERF_SIZE=1024 bench rdma_rxe rxe0 ib_send_bw -c UD
lat rdma_rxe rxe0
rxe_ref_down

load_rdma_core && modprobe rxe_sr && rdma link add sr0 type rxe_sr netdev eth0 && wait_port_active sr0 \
  || { echo "rxe_sr did not come up"; exit 1; }
for op in ib_write_bw ib_send_bw ib_read_bw; do
  bench rxe_sr sr0 "$op"
done
PERF_SIZE=1024 bench rxe_sr sr0 ib_send_bw -c UD
lat rxe_sr sr0
rdma link del sr0; modprobe -r rxe_sr
