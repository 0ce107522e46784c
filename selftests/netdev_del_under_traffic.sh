#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 360
# The netdev under a device deleted while RC traffic runs. The test bed
# needs eth0, so sr1 is bound to an active-backup bond enslaving it; ib_write_bw runs
# between the guests over sr1 and g1 deletes bond0 under it. The unregister notifier
# queues sr1's removal; rxe_sr has disassociate_ucontext, so the verbs core does not wait
# for the applications: it destroys their objects (a process sees EIO and
# IBV_EVENT_DEVICE_FATAL), sr1 goes and drops its netdev references, and `ip link del`
# returns within 60 s while a process that holds a QP and ignores the device's errors (an
# ibv_rc_pingpong server waiting for a client that does not come) still runs (with
# rdma_rxe it waits until every application closes the device). On g2, ib_write_bw is
# killed and sr1 deleted with `rdma link del`, its holder still running. Then eth0 is back,
# the module unloads with no object left and the disassociated contexts counted, and the
# kernel log and kmemleak (the debug kernel) are clean.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
modprobe bonding max_bonds=0 2> /dev/null || skip "no bonding in this kernel"
restore() {
  ip link del bond0 2> /dev/null
  ip link set eth0 up
  ip addr add "$MY_IP/24" dev eth0 2> /dev/null
  true
}
trap restore EXIT
modprobe -r rxe_sr rdma_rxe 2> /dev/null
dmesg_mark
check "load the verbs core" load_rdma_core
check "load rxe_sr" modprobe rxe_sr
leak_begin
bond_eth0 || fail "bonding"
check "rdma link add sr1 on bond0" rdma link add sr1 type rxe_sr netdev bond0
check "port ACTIVE" wait_port_active sr1
gidx=$(roce_gid_index sr1 "$MY_IP") || fail "no RoCEv2 GID for $MY_IP on sr1"
args=(-d sr1 -x "$gidx" -s 65536 -q 2 -t 4 --run_infinitely -D 2 -F --report_gbits)
qp_holder_start sr1 "$gidx"
if is_server; then
  timeout 180 ib_write_bw "${args[@]}" > /tmp/nd.out 2>&1 &
  app=$!
  sleep 1
  sync_point ready 60
else
  sync_point ready 60
  timeout 180 ib_write_bw "${args[@]}" "$SERVER_IP" > /tmp/nd.out 2>&1 &
  app=$!
fi
sleep 3
sync_point flowing 60
kill -0 $app 2> /dev/null || fail "ib_write_bw ended before the netdev went: $(tail -3 /tmp/nd.out)"
log "counters while flowing: $(rdma statistic show link sr1/1 | cut -c1-200)"
if is_server; then
  start=$SECONDS
  timeout 60 ip link del bond0 || fail "ip link del bond0 failed or did not return within 60 s with ib_write_bw running"
  log "ok: ip link del bond0 returned after $((SECONDS - start)) s, without waiting for the application"
  kill -0 $app 2> /dev/null && alive=1 || alive=0
  qp_holder_stop "ip link del returned"
  kill -TERM $app 2> /dev/null
  wait $app; log "ib_write_bw exit status $? (alive after ip link del: $alive; errors allowed: its netdev went away)"
  for _ in $(seq 60); do rdma link show | grep -qw sr1 || break; sleep 0.5; done
  no_match -w sr1 rdma link show || fail "sr1 still registered 30 s after its netdev went"
  log "ok: sr1 removed with its netdev"
  restore
else
  sleep 6
  kill -TERM $app 2> /dev/null
  wait $app; log "ib_write_bw exit status $? (killed; errors allowed: the peer's device went away)"
  check "rdma link del sr1, the QP holder still running" timeout 60 rdma link del sr1
  qp_holder_stop "rdma link del returned"
  restore
fi
sync_point deleted 120
check "eth0 carries the address again" ping -c 1 -W 5 "10.77.0.$((3 - GUEST))"
leak_check
check "rmmod" rmmod rxe_sr
out=$(dmesg_since_mark)
expect_grep "nothing left at unload" 'objects left: 0 ucontexts, 0 PDs, 0 CQs, 0 MRs, 0 QPs, 0 AHs, 0 SRQs, 0 MWs' "$out"
expect_disassociated "$out"
check "no oops or warning in the kernel log" dmesg_clean
