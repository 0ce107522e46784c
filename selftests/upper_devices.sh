#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# RoCE over upper devices of the bound netdev. sr0 is bound to eth0; first a VLAN
# (eth0.100), then an active-backup bond enslaving eth0, carry addresses of their own,
# which the verbs core lists in sr0's GID table. ibv_rc_pingpong (a smoke test) and
# msg_check.py (every byte checked both ways), addressed by those GIDs, must run: the packets leave by the upper device (tagged on the VLAN, as
# rdma_rxe sends from the GID's netdev) and arrive with skb->dev the upper device, which
# must lead back to sr0 (rdma_rxe follows a VLAN to its real device; rxe_sr any lower
# device). The VLAN device's own counters must show the traffic, so untagged packets to
# the VLAN's address do not pass for it. A link on the VLAN itself is refused.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
modprobe 8021q 2>/dev/null || skip "no VLAN support (8021q) in this kernel"
modprobe bonding max_bonds=0 2>/dev/null || skip "no bonding in this kernel"
# eth0's own address moves to the bond while eth0 is a slave (the side channel of the
# pingpong runs over it) and back afterwards.
uppers_down() {
  ip link del eth0.100 2>/dev/null
  if [ -e /sys/class/net/bond0 ]; then ip link del bond0; ip link set eth0 up; fi
  ip addr add "$MY_IP/24" dev eth0 2>/dev/null
  true
}
trap uppers_down EXIT
n=200
quick && n=50
sr_up

# --- a VLAN over eth0 ---------------------------------------------------------------------
vip=10.100.0.$GUEST
check "eth0.100 created" ip link add link eth0 name eth0.100 type vlan id 100
check "eth0.100 address" ip addr add "$vip/24" dev eth0.100
check "eth0.100 up" ip link set eth0.100 up
# A link on the VLAN itself is refused: RoCE belongs on the real device.
if rdma link add srvlan type rxe_sr netdev eth0.100 2>/dev/null; then
  rdma link delete srvlan
  fail "a link on the VLAN eth0.100 was accepted"
fi
expect_grep "the VLAN refused" "eth0.100: a VLAN device" "$(dmesg | tail -n 20)"
gidx=$(roce_gid_index sr0 "$vip") || fail "no RoCEv2 GID for the VLAN's $vip on sr0"
log "VLAN GID index $gidx"
rx0=$(cat /sys/class/net/eth0.100/statistics/rx_packets)
tx0=$(cat /sys/class/net/eth0.100/statistics/tx_packets)
out=$(pingpong_pair ibv_rc_pingpong -d sr0 -g "$gidx" -n $n -s 4096) || rc=1
printf '%s\n' "$out"
sync_point vlan-pingpong
[ "${rc:-0}" = 0 ] || fail "ibv_rc_pingpong over the VLAN failed"
expect_grep "$n iterations over the VLAN" "$n iters in" "$out"
msg_check_pair sr0 "$gidx" vlan --iters $n --size 4096 || fail "msg_check over the VLAN"
sync_point vlan-done
rx=$(( $(cat /sys/class/net/eth0.100/statistics/rx_packets) - rx0 ))
tx=$(( $(cat /sys/class/net/eth0.100/statistics/tx_packets) - tx0 ))
log "eth0.100 packets during the runs: rx $rx tx $tx (4 KiB messages: 4 packets each way per iteration, two runs)"
[ "$rx" -ge $((n * 8)) ] || fail "only $rx packets arrived by eth0.100 (at least $((n * 8)) expected): the traffic did not use the VLAN"
[ "$tx" -ge $((n * 8)) ] || fail "only $tx packets left by eth0.100 (at least $((n * 8)) expected): sent untagged"
ip link del eth0.100
sync_point vlan-gone

# --- an active-backup bond with eth0 as its slave ----------------------------------------
bip=10.101.0.$GUEST
bond_eth0 || fail "bonding"
check "bond0 RoCE address" ip addr add "$bip/24" dev bond0
check "port ACTIVE again" wait_port_active sr0
gidx=$(roce_gid_index sr0 "$bip") || fail "no RoCEv2 GID for the bond's $bip on sr0"
log "bond GID index $gidx"
sync_point bond-up
out=$(pingpong_pair ibv_rc_pingpong -d sr0 -g "$gidx" -n $n -s 4096) || rc=1
printf '%s\n' "$out"
sync_point bond-pingpong
[ "${rc:-0}" = 0 ] || fail "ibv_rc_pingpong over the bond failed"
expect_grep "$n iterations over the bond" "$n iters in" "$out"
msg_check_pair sr0 "$gidx" bond --iters $n --size 4096 || fail "msg_check over the bond"
sync_point bond-done
uppers_down
check "eth0 back" wait_port_active sr0
sync_point restored
sr_down_clean
