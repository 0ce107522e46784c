#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# A link's netdev changing under it, in one guest: namespaces nsa and
# nsb joined by a veth pair (vxa, vxb), an rxe_sr link on each.
# - While msg_check.py exchanges 3000 messages of 2 KiB each way (2000 in quick mode), every
#   byte checked, over an RC QP with ibv_rc_pingpong's settings (ACK timeout 67 ms, 7
#   retries): both
#   ends' MTU goes from 1500 to 9000 (the port's path MTU follows: 1024 to 4096), vxa is
#   taken down, renamed, given a new MAC address and brought up again in one go (the port
#   went DOWN, its link_downed counter says, and is ACTIVE again; `rdma link` names the new
#   netdev); the run completes, every byte checked.
# - Afterwards: 16 KiB messages at the 4096 path MTU (msg_check.py, checked); the MTU back to
#   1500 (path MTU 1024) and ibv_rc_pingpong asking for 4096 gets the port's 1024 (a smoke
#   test of the stock tool); an address replaced by another (its GID goes, the new one's
#   comes) and messages over the new one (checked); the renamed netdev is still refused a
#   second link.
# - Nothing left at unload, the kernel log clean.
. "$HOST_SHARE/selftests/lib/lib.sh"
netns_test_begin

netns_veth_pair
check "rdma link add sra on vxa" nsx nsa rdma link add sra type rxe_sr netdev vxa
check "rdma link add srb on vxb" nsx nsb rdma link add srb type rxe_sr netdev vxb
check "sra ACTIVE" wait_port_active sra
check "srb ACTIVE" wait_port_active srb
ga=$(roce_gid_index sra 10.88.0.1) || fail "no RoCEv2 GID for 10.88.0.1 on sra"
gb=$(roce_gid_index srb 10.88.0.2) || fail "no RoCEv2 GID for 10.88.0.2 on srb"
active_mtu() { ibv_devinfo -d "$1" | awk '/active_mtu/ { print $2; exit }'; }
[ "$(active_mtu sra)" = 1024 ] || fail "sra's path MTU is $(active_mtu sra) at the netdev MTU 1500, not 1024"

# pingpong_start ARGS...: ibv_rc_pingpong, server on sra (nsa), client on srb (nsb); the
# server's and client's output in /tmp/pp-s.out and /tmp/pp-c.out. pingpong_wait N: both
# finish, each having done N iterations.
pingpong_start() {
  nsx nsa timeout 300 ibv_rc_pingpong -d sra -g "$ga" "$@" > /tmp/pp-s.out 2>&1 &
  pp_s=$!
  sleep 1
  nsx nsb timeout 300 ibv_rc_pingpong -d srb -g "$gb" "$@" 10.88.0.1 > /tmp/pp-c.out 2>&1 &
  pp_c=$!
}
pingpong_wait() {
  local rc=0
  wait $pp_c || rc=1
  wait $pp_s || rc=1
  cat /tmp/pp-s.out /tmp/pp-c.out
  [ $rc = 0 ] && [ "$(cat /tmp/pp-s.out /tmp/pp-c.out | grep -c "^$1 iters in")" = 2 ]
}

# (Quick mode, for the debug kernel: 2000 rounds, which outlast the changes there.)
rounds=3000
quick && rounds=2000
msg_check_ns_start nsa sra "$ga" nsb srb "$gb" changes --iters $rounds --size 2048
# The changes land while the messages flow: wait for both sides' QPs to be ready to send.
connected() { grep -q '^connected' /tmp/mc-a.out && grep -q '^connected' /tmp/mc-b.out; }
for _ in $(seq 200); do connected && break; sleep 0.1; done
connected || { cat /tmp/mc-a.out /tmp/mc-b.out; fail "msg_check did not start"; }
check "MTU 9000 on both ends (traffic running)" ip -n nsa link set vxa mtu 9000
ip -n nsb link set vxb mtu 9000
[ "$(active_mtu sra)" = 4096 ] || fail "sra's path MTU is $(active_mtu sra) at 9000, not 4096"
log "ok: the path MTU followed to 4096"
# vxa down, renamed, a new MAC and up again in one `ip -batch`: the running exchange's QP
# gives up after 7 retries of a 67 ms ACK timeout (the stock tools' settings), and a check
# between the steps kept the link down past those retries on the debug kernel. The port
# went DOWN in between if its link_downed counter (IBTA PortCounters) went up.
link_downed() { cat /sys/class/infiniband/sra/ports/1/counters/link_downed; }
downed0=$(link_downed)
check "vxa down, renamed vxr, new MAC, up (one ip -batch)" ip -n nsa -batch - << 'EOF'
link set vxa down
link set vxa name vxr
link set vxr address 02:88:00:00:00:0a
link set vxr up
EOF
check "sra ACTIVE again" wait_port_active sra
[ "$(link_downed)" -gt "$downed0" ] || fail "sra's link_downed stayed at $downed0: the port did not go DOWN with vxa"
log "ok: sra's port went DOWN with vxa (link_downed $downed0 -> $(link_downed))"
ip -n nsa link show vxr | grep -q 'link/ether 02:88:00:00:00:0a' || fail "vxr has not the new MAC address"
# The netdev is named to callers in its own namespace.
expect_grep "rdma link names the renamed netdev" 'netdev vxr' "$(nsx nsa rdma link show sra/1)"
[ -e /proc/$MC_B ] || fail "msg_check ended before the changes were all made: nothing was tested under traffic"
msg_check_ns_wait || fail "the messages across the MTU change, rename and MAC change"
log "ok: $rounds messages of 2048 B each way checked across the MTU change, the rename and the new MAC"

# The MAC change made the core list vxr's GIDs again: the address's GID may have moved
# (the running exchange's QP held the old entry).
ga=$(roce_gid_index sra 10.88.0.1) || fail "no RoCEv2 GID for 10.88.0.1 on sra after the MAC change"
msg_check_ns_start nsa sra "$ga" nsb srb "$gb" mtu4096 --iters 100 --size 16384 --mtu 4096
msg_check_ns_wait || fail "messages at the 4096 path MTU"
log "ok: 100 messages of 16 KiB each way at the 4096 path MTU, checked"
check "MTU 1500 on both ends" ip -n nsa link set vxr mtu 1500
ip -n nsb link set vxb mtu 1500
[ "$(active_mtu sra)" = 1024 ] || fail "sra's path MTU is $(active_mtu sra) back at 1500, not 1024"
pingpong_start -n 100 -s 4096 -m 4096
pingpong_wait 100 || fail "pingpong asking for 4096 at the netdev MTU 1500"
log "ok: a pingpong asking for a 4096 path MTU ran at 1500 (the port's 1024)"

# (Deleted first: a primary address takes the secondaries of its subnet with it.)
check "replace 10.88.0.1 with 10.88.0.11 on vxr" ip -n nsa addr del 10.88.0.1/24 dev vxr
ip -n nsa addr add 10.88.0.11/24 dev vxr
gone=0
for _ in $(seq 100); do roce_gid_index sra 10.88.0.1 1 > /dev/null || { gone=1; break; }; sleep 0.1; done
[ $gone = 1 ] || fail "10.88.0.1's GID is still listed after the address went"
ga=$(roce_gid_index sra 10.88.0.11) || fail "no RoCEv2 GID for 10.88.0.11"
log "ok: the GID followed the address (10.88.0.11 at index $ga)"
msg_check_ns_start nsa sra "$ga" nsb srb "$gb" newaddr --iters 100 --size 4096
msg_check_ns_wait || fail "messages over the new address"
log "ok: 100 messages of 4 KiB each way over the new address, checked"
nsx nsa rdma link add sra2 type rxe_sr netdev vxr 2> /dev/null && fail "a second link on the renamed vxr was accepted"
log "ok: a second link on the renamed netdev is refused"

check "rdma link del sra" nsx nsa rdma link del sra
check "rdma link del srb" nsx nsb rdma link del srb
netns_test_end
