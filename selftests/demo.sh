#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make run`: rxe_sr's device, then the goodput table's measurements
# (written by the client, g2, to OUT/bench.csv: driver,op,loss,gbps).
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

rxe_ref_up || { echo "rdma_rxe did not come up"; exit 1; }
is_client && echo "driver,op,loss,gbps" > "$OUT/bench.csv"
for op in ib_write_bw ib_send_bw ib_read_bw; do
  for loss in 0 0.1 1 5; do
    bw=$(perftest_pair rxe0 "$op" "$loss" "$secs") || bw=
    is_client && echo "rdma_rxe,${op},${loss},${bw}" >> "$OUT/bench.csv"
    log "rdma_rxe $op loss ${loss}%: ${bw:-failed} Gb/s"
  done
done
rxe_ref_down
