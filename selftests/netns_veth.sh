#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# rxe_sr links in network namespaces, in one guest: namespaces nsa and
# nsb joined by a veth pair, an rxe_sr link in each.
# - UDP 4791 (IPv4 and IPv6) is bound in a namespace exactly while it has an rxe_sr link
#   (`ss -ulna` in it): none at load, not even in the initial namespace; opened with the
#   first link, closed with the last, reopened with a new one.
# - A link's GIDs are its own namespace's addresses only.
# - rping (rdma-cm, data checked with -V), ibv_rc_pingpong (a smoke test) and msg_check.py
#   (every byte checked both ways) between nsb and nsa, over IPv4 and over IPv6.
# - Port counters (sysfs counters/, IBTA units): what each end sent, the other received.
# - Both namespaces are deleted with their links in them and an RC QP open on nsb's device
#   (from the initial namespace, where the shared-mode device is visible too): the QP's
#   process is told (IBV_EVENT_PORT_ERR, or IBV_EVENT_DEVICE_FATAL when the core
#   disassociates it) and closes the device, both devices go, nothing is left at unload
#   and the kernel log is clean.
. "$HOST_SHARE/selftests/lib/lib.sh"
netns_test_begin

# port_socks NS: how many sockets are bound to UDP 4791 in NS (2 with a link: IPv4, IPv6).
port_socks() { nsx "$1" ss -Hulna | awk '$4 ~ /:4791$/' | wc -l; }
expect_socks() {
  local n
  n=$(port_socks "$1")
  [ "$n" = "$2" ] || { nsx "$1" ss -ulna; fail "$3: $n sockets on UDP 4791 in ${1:-the initial namespace}, not $2"; }
  log "ok: $3 ($n sockets on UDP 4791 in ${1:-the initial namespace})"
}
expect_socks "" 0 "no RoCEv2 socket at load"
netns_veth_pair

check "rdma link add sra in nsa" nsx nsa rdma link add sra type rxe_sr netdev vxa
expect_socks nsa 2 "nsa's first link opened its sockets"
expect_socks nsb 0 "nsb has none"
expect_socks "" 0 "the initial namespace has none"
check "rdma link add srb in nsb" nsx nsb rdma link add srb type rxe_sr netdev vxb
expect_socks nsb 2 "nsb's first link opened its sockets"
check "sra ACTIVE" wait_port_active sra
check "srb ACTIVE" wait_port_active srb

ga4=$(roce_gid_index sra 10.88.0.1) || fail "no RoCEv2 GID for 10.88.0.1 on sra"
gb4=$(roce_gid_index srb 10.88.0.2) || fail "no RoCEv2 GID for 10.88.0.2 on srb"
ga6=$(roce_gid_index sra fd88::1) || fail "no RoCEv2 GID for fd88::1 on sra"
gb6=$(roce_gid_index srb fd88::2) || fail "no RoCEv2 GID for fd88::2 on srb"
log "GIDs: sra $ga4 (IPv4) $ga6 (IPv6), srb $gb4 $gb6"
roce_gid_index sra "$MY_IP" 1 > /dev/null 2>&1 && fail "sra lists $MY_IP, an address of the initial namespace"
roce_gid_index srb 10.88.0.1 1 > /dev/null 2>&1 && fail "srb lists 10.88.0.1, nsa's address"
log "ok: each link's GIDs are its namespace's addresses"

# rping_ns ADDR: rping from nsb to nsa's ADDR, 50 rounds of 1000 bytes, data checked.
rping_ns() {
  local rc=0 s
  nsx nsa timeout 120 rping -s -a "$1" -C 50 -S 1000 -V > /tmp/rp-s.out 2>&1 &
  s=$!
  sleep 1
  retry 10 nsx nsb timeout 120 rping -c -a "$1" -C 50 -S 1000 -V > /tmp/rp-c.out 2>&1 || rc=1
  wait $s || rc=1
  tail -n 3 /tmp/rp-s.out /tmp/rp-c.out
  return $rc
}
# pingpong_ns GIDA GIDB ADDR: ibv_rc_pingpong, server sra in nsa, client srb in nsb.
pingpong_ns() {
  local rc=0 s
  nsx nsa timeout 120 ibv_rc_pingpong -d sra -g "$1" -n 200 -s 4096 > /tmp/pp-s.out 2>&1 &
  s=$!
  sleep 1
  retry 10 nsx nsb timeout 120 ibv_rc_pingpong -d srb -g "$2" -n 200 -s 4096 "$3" > /tmp/pp-c.out 2>&1 || rc=1
  wait $s || rc=1
  cat /tmp/pp-s.out /tmp/pp-c.out
  return $rc
}
for v in 4 6; do
  if [ $v = 4 ]; then addr=10.88.0.1 ga=$ga4 gb=$gb4; else addr=fd88::1 ga=$ga6 gb=$gb6; fi
  out=$(rping_ns $addr) || { printf '%s\n' "$out"; fail "rping over IPv$v between the namespaces"; }
  printf '%s\n' "$out"
  log "ok: rping over IPv$v, nsb -> nsa, 50 rounds data-checked"
  # ibv_rc_pingpong's server listens for the out-of-band exchange on IPv4 only; the RDMA
  # traffic takes the GIDs' IP version.
  out=$(pingpong_ns "$ga" "$gb" 10.88.0.1) || { printf '%s\n' "$out"; fail "ibv_rc_pingpong over IPv$v between the namespaces"; }
  printf '%s\n' "$out"
  [ "$(printf '%s\n' "$out" | grep -c '200 iters in')" = 2 ] || fail "ibv_rc_pingpong over IPv$v: both sides must report 200 iterations"
  msg_check_ns nsa sra "$ga" nsb srb "$gb" v$v --iters 200 --size 4096 || fail "msg_check over IPv$v between the namespaces"
  log "ok: ibv_rc_pingpong and msg_check over IPv$v, 200 x 4096 B each way checked"
done

# Port counters: what one end sent the other received, in IBTA units
# (data in 4-octet words); the veth loses nothing and the traffic is over (the last ACKs
# given a moment to be taken in).
sleep 1
cnt() { cat /sys/class/infiniband/"$1"/ports/1/counters/"$2"; }
for pair in "sra srb" "srb sra"; do
  set -- $pair
  x=$(cnt "$1" port_xmit_data) r=$(cnt "$2" port_rcv_data)
  xp=$(cnt "$1" port_xmit_packets) rp=$(cnt "$2" port_rcv_packets)
  log "$1 -> $2: port_xmit_data $x, port_rcv_data $r; port_xmit_packets $xp, port_rcv_packets $rp"
  [ "$x" = "$r" ] || fail "$1 sent $x words, $2 received $r"
  [ "$xp" = "$rp" ] || fail "$1 sent $xp packets, $2 received $rp"
  # At least the messages: 2 x (pingpong + msg_check) x 200 x 4096 B = 819200 words.
  [ "$x" -ge 819200 ] || fail "$1 counted $x words sent, fewer than the messages' 819200"
  sb=$(stat_of sent_bytes "$1")
  [ "$sb" = $((4 * x)) ] || fail "$1: rdma statistic's sent_bytes $sb is not 4 x port_xmit_data ($x)"
done
log "ok: each end's port_xmit_data and port_xmit_packets equal the other's port_rcv_data and port_rcv_packets"

check "rdma link del sra" nsx nsa rdma link del sra
expect_socks nsa 0 "nsa's last link closed its sockets"
expect_socks nsb 2 "nsb's stay open"
check "rdma link add sra again" nsx nsa rdma link add sra type rxe_sr netdev vxa
expect_socks nsa 2 "reopened with the new link"
check "sra ACTIVE again" wait_port_active sra

# A QP on srb held from the initial namespace while both namespaces go.
ga4=$(roce_gid_index sra 10.88.0.1) || fail "no RoCEv2 GID for 10.88.0.1 on sra"
GIDX=$gb4 DGID=10.88.0.1 timeout 120 python3 - > /tmp/holder.out 2>&1 <<'PY' &
import os, sys
sys.path.insert(0, os.environ["HOST_SHARE"] + "/selftests/lib")
from verbs_util import connect_rc, v4_gid
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap
from pyverbs.wr import RecvWR, SGE

ctx = d.Context(name="srb")
pd = PD(ctx)
cq = CQ(ctx, 16)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                       cap=QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)))
connect_rc(qp, 0x12, 0, 0, v4_gid(os.environ["DGID"]), int(os.environ["GIDX"]))
qp.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(mr.buf, 4096, mr.lkey)]))
print("holding QP", qp.qp_num, "in RTS", flush=True)
# The namespace's addresses go first (GID changes), then the port: the application's cue
# to close the device (the core does not wait for it: it disassociates the process, which
# then gets IBV_EVENT_DEVICE_FATAL).
for _ in range(64):
    ev = ctx.get_async_event()
    gone = ev.event_type in (e.IBV_EVENT_PORT_ERR, e.IBV_EVENT_DEVICE_FATAL)
    print("async event", ev.event_type, "device going" if gone else "", flush=True)
    ev.ack()
    if gone:
        break
# The kernel closes the device with the process; Python's own teardown of objects whose
# device is gone is not what this checks.
os._exit(0)
PY
holder=$!
for _ in $(seq 100); do grep -q "holding QP" /tmp/holder.out && break; sleep 0.2; done
grep -q "holding QP" /tmp/holder.out || { cat /tmp/holder.out; fail "the QP holder did not start"; }
log "$(head -1 /tmp/holder.out)"
check "ip netns del nsa nsb (links and a QP live)" ip netns del nsa
ip netns del nsb
wait $holder || { cat /tmp/holder.out; fail "the QP holder failed"; }
expect_grep "the QP's process was told its device is going" 'device going' "$(cat /tmp/holder.out)"
log "the holder's events: $(grep 'async event' /tmp/holder.out | tr '\n' ';')"
for _ in $(seq 60); do rdma link show | grep -qwE 'sra|srb' || break; sleep 0.5; done
rdma link show | grep -qwE 'sra|srb' && fail "a device is still registered 30 s after its namespace went"
log "ok: both devices went with their namespaces"
expect_socks "" 0 "still none in the initial namespace"
leak_check
check "rmmod" rmmod rxe_sr
expect_grep "nothing left at unload" 'objects left: 0 ucontexts, 0 PDs, 0 CQs, 0 MRs, 0 QPs, 0 AHs, 0 SRQs, 0 MWs' "$(dmesg_since_mark)"
no_match "sockets open with no device left" dmesg_since_mark || fail "sockets were left open at unload"
check "no oops or warning in the kernel log" dmesg_clean
