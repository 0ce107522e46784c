#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# guests: 1
# rxe_sr and rdma_rxe in one kernel. Both load at once. rdma_rxe (6.12)
# binds UDP 4791 in the initial namespace when it loads, so an rxe_sr link there is refused,
# with a message naming the port's owner (rdma_rxe's receive function and module), and
# leaves no device behind. In a namespace of its own, on a veth pair whose other end is in
# the initial namespace, an rxe_sr link works beside an rdma_rxe link on that other end, and
# the two talk, over IPv4 and over IPv6: ibv_rc_pingpong (a smoke test) with each driver as
# the server once, and msg_check.py, every byte checked both ways, each driver first once.
# Unloading rxe_sr leaves rdma_rxe's device registered and active (they share the driver id).
# Each driver's netdev lookup finds only its own devices (rxe_sr keeps its devices out of
# the core's netdev index, in which rdma_rxe would take them for its own): rdma_rxe takes a
# link on an rxe_sr link's netdev, rxe_sr refuses one on an rdma_rxe link's.
# The other way round, an rxe_sr link in the initial namespace holds the port there:
# rdma_rxe's load then fails, and succeeds once the link is gone.
. "$HOST_SHARE/selftests/lib/lib.sh"
ip netns add rxe_sr_probe 2> /dev/null || skip "no network namespaces in this kernel"
ip netns del rxe_sr_probe
cleanup() {
  ip netns del nsc 2> /dev/null
  ip link del vxi 2> /dev/null
  true
}
trap cleanup EXIT
modprobe -r rxe_sr rdma_rxe 2> /dev/null
cleanup
dmesg_mark
check "load the verbs core" load_rdma_core
check "load rdma_rxe" modprobe rdma_rxe
check "load rxe_sr beside it" modprobe rxe_sr
leak_begin
rdma link add sr0 type rxe_sr netdev eth0 2> /tmp/err && fail "rxe_sr took a link where rdma_rxe holds the port"
log "ok: refused: $(cat /tmp/err)"
expect_grep "the message names the port's owner" \
  'sr0: UDP port 4791 \(IPv4\) in network namespace net:\[[0-9]+\] is held by .*\[rdma_rxe\]' "$(dmesg_since_mark)"
no_match -w sr0 rdma link show || fail "the refused link left a device"

check "namespace nsc" ip netns add nsc
check "veth pair vxi (initial namespace) - vxc (nsc)" ip link add vxi type veth peer name vxc
ip link set vxc netns nsc
ip addr add 10.89.0.1/24 dev vxi
ip addr add fd89::1/64 dev vxi nodad
ip link set vxi up
ip -n nsc addr add 10.89.0.2/24 dev vxc
ip -n nsc addr add fd89::2/64 dev vxc nodad
ip -n nsc link set lo up
ip -n nsc link set vxc up
check "rdma_rxe link rxe9 on vxi" rdma link add rxe9 type rxe netdev vxi
check "rxe_sr link src on vxc, in nsc" ip netns exec nsc rdma link add src type rxe_sr netdev vxc
check "rxe9 ACTIVE" wait_port_active rxe9
check "src ACTIVE" wait_port_active src
gi=$(roce_gid_index rxe9 10.89.0.1) || fail "no RoCEv2 GID for 10.89.0.1 on rxe9"
gc=$(roce_gid_index src 10.89.0.2) || fail "no RoCEv2 GID for 10.89.0.2 on src"
gi6=$(roce_gid_index rxe9 fd89::1) || fail "no RoCEv2 GID for fd89::1 on rxe9"
gc6=$(roce_gid_index src fd89::2) || fail "no RoCEv2 GID for fd89::2 on src"

# pingpong SERVER_NS SERVER_DEV SERVER_GID CLIENT_NS CLIENT_DEV CLIENT_GID ADDR: $iters
# round trips of 4096 B (200; 50 in quick mode: about 100 ms a round trip on the debug
# kernel with kmemleak on).
iters=200
quick && iters=50
pingpong() {
  local rc=0 s
  ip netns exec "$1" timeout 120 ibv_rc_pingpong -d "$2" -g "$3" -n $iters -s 4096 > /tmp/pp-s.out 2>&1 &
  s=$!
  sleep 1
  retry 10 ip netns exec "$4" timeout 120 ibv_rc_pingpong -d "$5" -g "$6" -n $iters -s 4096 "$7" > /tmp/pp-c.out 2>&1 || rc=1
  wait $s || rc=1
  cat /tmp/pp-s.out /tmp/pp-c.out
  [ "$(grep -c "$iters iters in" /tmp/pp-s.out /tmp/pp-c.out | awk -F: '{ n += $2 } END { print n }')" = 2 ] || rc=1
  return $rc
}
# `ip netns exec` needs a name: the initial namespace is named through PID 1's.
ip netns attach init 1 2> /dev/null || fail "cannot name the initial namespace"
# Over IPv4, then IPv6 (the GIDs' version; pingpong's own exchange stays on IPv4).
for v in 4 6; do
  if [ $v = 4 ]; then a=$gi c=$gc; else a=$gi6 c=$gc6; fi
  out=$(pingpong init rxe9 "$a" nsc src "$c" 10.89.0.1) || { printf '%s\n' "$out"; fail "rdma_rxe server, rxe_sr client, IPv$v"; }
  printf '%s\n' "$out"
  log "ok: ibv_rc_pingpong, rdma_rxe (server, initial namespace) <-> rxe_sr (client, nsc), IPv$v"
  out=$(pingpong nsc src "$c" init rxe9 "$a" 10.89.0.2) || { printf '%s\n' "$out"; fail "rxe_sr server, rdma_rxe client, IPv$v"; }
  printf '%s\n' "$out"
  log "ok: ibv_rc_pingpong, rxe_sr (server, nsc) <-> rdma_rxe (client, initial namespace), IPv$v"
  msg_check_ns init rxe9 "$a" nsc src "$c" rxe-first-$v --iters $iters --size 4096 \
    || fail "msg_check, rdma_rxe first, IPv$v"
  msg_check_ns nsc src "$c" init rxe9 "$a" sr-first-$v --iters $iters --size 4096 \
    || fail "msg_check, rxe_sr first, IPv$v"
  log "ok: msg_check rdma_rxe <-> rxe_sr, IPv$v: twice $iters x 4096 B each way checked"
done
ip netns del init

# Each driver's netdev lookup finds its own devices only. They share the driver id, and
# rdma_rxe takes a device its lookup finds for one of its own (on NETDEV_UP, DOWN and
# CHANGEMTU it writes port state into it), so rxe_sr keeps its devices out of the core's
# netdev index. vxc's events: src follows them, and rxe9 stays ACTIVE; rdma_rxe finds no
# device on vxc (it takes a link there, which it refuses on a netdev it has a device on);
# rxe_sr refuses a link on vxi, rxe9's netdev, naming the reason.
ip -n nsc link set vxc mtu 1400
ip -n nsc link set vxc down
for _ in $(seq 50); do nsx nsc rdma link show src/1 | grep -q 'state DOWN' && break; sleep 0.1; done
expect_grep "src DOWN with vxc" 'state DOWN' "$(nsx nsc rdma link show src/1)"
ip -n nsc link set vxc up
check "src ACTIVE again with vxc up" nsx nsc bash -c ". $HOST_SHARE/selftests/lib/lib.sh; wait_port_active src"
ip -n nsc link set vxc mtu 1500
expect_grep "rxe9 ACTIVE through vxc's events" 'state ACTIVE' "$(rdma link show rxe9/1)"
check "rdma_rxe finds no device on vxc: it takes a link there" \
  nsx nsc rdma link add rxc type rxe netdev vxc
check "rdma link del rxc" nsx nsc rdma link del rxc
rdma link add sr9 type rxe_sr netdev vxi 2> /tmp/err && fail "rxe_sr took a link on vxi, rxe9's netdev"
expect_grep "rxe_sr refuses a link on rxe9's netdev, naming the reason" \
  'vxi already has an RDMA device of another driver' "$(dmesg_since_mark)"

check "rmmod rxe_sr with both drivers' links up" modprobe -r rxe_sr
no_match -w src rdma link show || fail "src outlived its module"
rdma link show rxe9/1 2> /dev/null | grep -q 'state ACTIVE' || { rdma link show; fail "rdma_rxe's rxe9 did not survive rxe_sr's unload"; }
log "ok: rdma_rxe's rxe9 still registered and ACTIVE after rxe_sr's unload"
check "rdma link del rxe9" rdma link del rxe9
check "unload rdma_rxe" modprobe -r rdma_rxe

check "load rxe_sr alone" modprobe rxe_sr
check "rdma link add sr0 on eth0" rdma link add sr0 type rxe_sr netdev eth0
modprobe rdma_rxe 2> /tmp/err && fail "rdma_rxe loaded while rxe_sr holds the port"
log "ok: rdma_rxe refused while sr0 holds the port: $(cat /tmp/err)"
check "rdma link del sr0" rdma link del sr0
check "rdma_rxe loads once the port is free" modprobe rdma_rxe
check "unload both" modprobe -r rxe_sr rdma_rxe
# rxe_sr was unloaded twice (with both drivers' links up, then beside rdma_rxe): each
# unload's line must say that nothing was left.
left=$(dmesg_since_mark | grep -o 'rxe_sr: unloaded .*')
zero=$(grep -c 'objects left: 0 ucontexts, 0 PDs, 0 CQs, 0 MRs, 0 QPs, 0 AHs, 0 SRQs, 0 MWs)$' <<< "$left")
[ "$(grep -c . <<< "$left")" = 2 ] && [ "$zero" = 2 ] || fail "rxe_sr's two unloads, each with nothing left: $left"
log "ok: nothing left at either of rxe_sr's unloads"
# What the unloads freed (with kmemleak running: nothing unreferenced).
leak_check
# rdma_rxe's load failure logs its own error lines; nothing else may appear.
check "no oops or warning in the kernel log" dmesg_clean
