#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# guests: 1
# rxe_sr links on layer-3 netdevs, in one guest: namespaces nsa and nsb,
# each with a tun device (tna, tnb: no MAC address, no neighbour resolution) whose IP
# packets tun_relay.py copies to the other, and an rxe_sr link on each.
# - Both links come up ACTIVE, with node GUIDs that are nonzero and differ.
# - The GIDs are the tun devices' addresses, IPv4 and IPv6; an address added after the
#   link gets its GID, a deleted one loses it (the verbs core follows addresses on
#   Ethernet devices only: rxe_sr does it for the others).
# - ibv_rc_pingpong from nsb to nsa over IPv4 and IPv6, and ibv_ud_pingpong (smoke tests of
#   the stock tools), then msg_check.py over RC on both and over UD, every byte checked both
#   ways; port counters agree end to end. (Not rdma-cm: 6.12's
#   cma_validate_port looks for an InfiniBand/RoCE v1 GID on any netdev but Ethernet; the
#   core learned RoCE v2 on tun for rdma_rxe's driver id in 6.15.)
# - The relay exits: its tun devices go with their file descriptors (NETDEV_UNREGISTER
#   under the live links), and both links go with them; nothing is left at unload.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ -c /dev/net/tun ] || skip "no /dev/net/tun in this kernel"
netns_test_begin

python3 "$HOST_SHARE/selftests/lib/tun_relay.py" tna tnb > /tmp/relay.out 2> /tmp/relay.err &
relay=$!
for _ in $(seq 100); do grep -q ready /tmp/relay.out && break; sleep 0.1; done
grep -q ready /tmp/relay.out || { cat /tmp/relay.err; fail "tun_relay.py did not start"; }
check "namespaces nsa and nsb" ip netns add nsa
ip netns add nsb
for s in a:1 b:2; do
  ns=ns${s%:*} dev=tn${s%:*} n=${s#*:}
  ip link set "$dev" netns "$ns"
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "10.89.0.$n/24" dev "$dev"
  ip -n "$ns" addr add "fd89::$n/64" dev "$dev" nodad
  ip -n "$ns" link set "$dev" up
done
log "$(ip -n nsa -d link show tna | head -2 | tr -s ' ' | tr '\n' ' ')"
[ "$(cat "/sys/class/net/tna/type" 2> /dev/null || ip netns exec nsa cat /sys/class/net/tna/type)" = 65534 ] \
  || fail "tna is not an ARPHRD_NONE (layer-3) device"
check "IP over the tun pair" nsx nsb ping -c 1 -W 10 10.89.0.1

check "rdma link add sra on tna (nsa)" nsx nsa rdma link add sra type rxe_sr netdev tna
check "rdma link add srb on tnb (nsb)" nsx nsb rdma link add srb type rxe_sr netdev tnb
check "sra ACTIVE" wait_port_active sra
check "srb ACTIVE" wait_port_active srb
guid_a=$(cat /sys/class/infiniband/sra/node_guid) guid_b=$(cat /sys/class/infiniband/srb/node_guid)
log "node GUIDs: sra $guid_a, srb $guid_b"
[ "${guid_a//[0:]/}" != "" ] || fail "sra's node GUID is zero"
[ "$guid_a" != "$guid_b" ] || fail "the two links on tun devices got the same node GUID $guid_a"

ga4=$(roce_gid_index sra 10.89.0.1) || fail "no RoCEv2 GID for 10.89.0.1 on sra"
gb4=$(roce_gid_index srb 10.89.0.2) || fail "no RoCEv2 GID for 10.89.0.2 on srb"
ga6=$(roce_gid_index sra fd89::1) || fail "no RoCEv2 GID for fd89::1 on sra"
gb6=$(roce_gid_index srb fd89::2) || fail "no RoCEv2 GID for fd89::2 on srb"
log "ok: GIDs from the tun addresses: sra $ga4 (IPv4) $ga6 (IPv6), srb $gb4 $gb6"

# Addresses that come and go after the link.
check "add 10.89.1.1 and fd89:1::1 to tna" ip -n nsa addr add 10.89.1.1/24 dev tna
ip -n nsa addr add fd89:1::1/64 dev tna nodad
roce_gid_index sra 10.89.1.1 > /dev/null || fail "no GID for 10.89.1.1, added to tna after the link"
roce_gid_index sra fd89:1::1 > /dev/null || fail "no GID for fd89:1::1, added to tna after the link"
log "ok: addresses added after the link have their GIDs"
check "delete 10.89.1.1 and fd89:1::1 from tna" ip -n nsa addr del 10.89.1.1/24 dev tna
ip -n nsa addr del fd89:1::1/64 dev tna
gone=0
for _ in $(seq 100); do
  roce_gid_index sra 10.89.1.1 1 > /dev/null || roce_gid_index sra fd89:1::1 1 > /dev/null || { gone=1; break; }
  sleep 0.1
done
[ $gone = 1 ] || fail "the GIDs of deleted addresses are still listed on sra 20 s later"
# The addresses that stayed keep their GIDs.
roce_gid_index sra 10.89.0.1 1 > /dev/null || fail "10.89.0.1's GID went with another address"
roce_gid_index sra fd89::1 1 > /dev/null || fail "fd89::1's GID went with another address"
log "ok: deleted addresses lost their GIDs; the others kept theirs"
ga4=$(roce_gid_index sra 10.89.0.1) ga6=$(roce_gid_index sra fd89::1)

# pingpong_tun TOOL GIDA GIDB ARGS...: an rdma-core pingpong, server sra (nsa), client srb
# (nsb); both must report their iterations.
pingpong_tun() {
  local tool=$1 ga=$2 gb=$3 s n
  shift 3
  n=$(sed -n 's/.*-n \([0-9]*\).*/\1/p' <<< "$*")
  nsx nsa timeout 120 "$tool" -d sra -g "$ga" "$@" > /tmp/pp-s.out 2>&1 &
  s=$!
  sleep 1
  retry 10 nsx nsb timeout 120 "$tool" -d srb -g "$gb" "$@" 10.89.0.1 > /tmp/pp-c.out 2>&1 \
    || { cat /tmp/pp-s.out /tmp/pp-c.out; return 1; }
  wait $s || { cat /tmp/pp-s.out; return 1; }
  [ "$(cat /tmp/pp-s.out /tmp/pp-c.out | grep -c "^$n iters in")" = 2 ] \
    || { cat /tmp/pp-s.out /tmp/pp-c.out; return 1; }
}
for v in 4 6; do
  if [ $v = 4 ]; then ga=$ga4 gb=$gb4; else ga=$ga6 gb=$gb6; fi
  # ibv_rc_pingpong's own exchange goes over IPv4; the RDMA traffic takes the GIDs' version.
  pingpong_tun ibv_rc_pingpong "$ga" "$gb" -n 100 -s 4096 || fail "ibv_rc_pingpong over IPv$v on tun"
  msg_check_ns nsa sra "$ga" nsb srb "$gb" rc$v --iters 100 --size 4096 || fail "msg_check over RC, IPv$v on tun"
  log "ok: ibv_rc_pingpong over IPv$v on tun; 100 x 4096 B each way checked"
done
pingpong_tun ibv_ud_pingpong "$ga4" "$gb4" -n 100 -s 1024 || fail "ibv_ud_pingpong on tun"
msg_check_ns nsa sra "$ga4" nsb srb "$gb4" ud --type ud --iters 100 --size 1024 || fail "msg_check over UD on tun"
log "ok: ibv_ud_pingpong on tun; 100 x 1024 B each way over UD checked"

sleep 1
cnt() { cat /sys/class/infiniband/"$1"/ports/1/counters/"$2"; }
for pair in "sra srb" "srb sra"; do
  set -- $pair
  x=$(cnt "$1" port_xmit_data) r=$(cnt "$2" port_rcv_data)
  log "$1 -> $2: port_xmit_data $x, port_rcv_data $r"
  [ "$x" = "$r" ] || fail "$1 sent $x words, $2 received $r"
  [ "$x" -ge 204800 ] || fail "$1 counted $x words sent, fewer than the RC pingpongs' 204800"
done
log "ok: port data counters agree end to end"

# The relay goes: its tun devices are deleted with their last file descriptor.
kill $relay
wait $relay
cat /tmp/relay.err
for _ in $(seq 60); do rdma link show | grep -qwE 'sra|srb' || break; sleep 0.5; done
rdma link show | grep -qwE 'sra|srb' && fail "a link is still there 30 s after its tun device went"
log "ok: both links went with their tun devices"
netns_test_end
