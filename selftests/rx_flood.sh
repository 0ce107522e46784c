#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# A flood at the RoCEv2 port: g2 sends 1000-byte UDP datagrams of zeros
# to g1's port 4791 as fast as it can for 10 s. Every datagram that reaches the device is
# counted on arrival (rcvd_pkts) and dropped and counted (rcvd_dropped: none parses).
# Meanwhile g1 runs a SCHED_FIFO busy loop for 6 s, and three at nice -20 beside it: the
# device's receive work (a kworker) gets a quarter of the 50 ms a second that 6.12's fair
# server leaves normal tasks, or less once it drops to nice 0, while the NIC's softirq
# keeps queueing, so the receive queue (4096 datagrams) fills, even from a slow sender
# (with the FIFO loop alone, the work kept up with such a sender). The datagrams that
# find it full are dropped and counted apart (rcvd_queue_full > 0) instead of queued
# without bound. g1's unreclaimable slab is back within 1 MiB of where it was once the
# flood is over, and a data-checked exchange then passes. A sender too slow to send more
# than the queue holds (as on the KASAN + lockdep kernel, where make test does not run
# this test) fails the test: the queue-full check is what it is for.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
p0=$(stat_of rcvd_pkts) d0=$(stat_of rcvd_dropped) q0=$(stat_of rcvd_queue_full)
s0=$(sunreclaim) || fail "no /sys/kernel/slab/*/shrink to read the slab with"
sync_point "flood" 60 || fail "the other guest did not come"
if is_client; then
  sent=$(timeout 30 python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect(("10.77.0.1", 4791))
p, n, end = bytes(1000), 0, time.time() + 10
while time.time() < end:
    for _ in range(64):
        try:
            s.send(p)
        except ConnectionRefusedError:
            pass
    n += 64
print(n)
') || fail "the flood did not run"
  share_put sent "$sent"
fi
if is_server; then
  [ "$(cat /proc/sys/kernel/sched_rt_runtime_us)" -gt 0 ] || fail "RT throttling is off: the busy loop would stall this guest"
  sleep 1
  # The loops end themselves: a timeout(1) at their priority would never run again (FIFO
  # does not preempt its equal), and one at nice 0 only in what they leave.
  busy='end=$((SECONDS + 6)); while [ $SECONDS -lt $end ]; do :; done'
  hogs=()
  for _ in 1 2 3; do
    timeout -s KILL 30 nice -n -20 bash -c "$busy" &
    hogs+=($!)
  done
  timeout -s KILL 30 chrt -f 10 bash -c "$busy" || fail "the SCHED_FIFO busy loop did not run"
  wait "${hogs[@]}" || fail "a nice -20 busy loop did not run"
fi
sync_point "flood-done" 60 || fail "the other guest did not finish"
if is_server; then
  sent=$(share_get 2 sent)
  # The receive work may still be draining the queue (up to 4096 datagrams, each holding
  # its skb, counted in the slab): wait until the counters stand still and every datagram
  # that arrived has been dropped, at most 30 s.
  last=-1
  for _ in $(seq 60); do
    p=$(( $(stat_of rcvd_pkts) - p0 )) d=$(( $(stat_of rcvd_dropped) - d0 ))
    [ "$p" = "$last" ] && [ "$d" -ge "$p" ] && break
    last=$p
    sleep 0.5
  done
  q=$(( $(stat_of rcvd_queue_full) - q0 ))
  s1=$(sunreclaim) || fail "the slab could not be read"
  log "flood: $sent datagrams sent, $p reached the device, $d dropped, $q of them at a full receive queue; unreclaimable slab ${s0} kB before, ${s1} kB after"
  [ "$p" -gt 0 ] || fail "no datagram of the flood reached the device"
  [ "$p" -le "$sent" ] || fail "the device counted $p datagrams of $sent sent"
  [ "$d" = "$p" ] || fail "$p datagrams arrived but $d were dropped: the rest were taken for RoCE"
  # A sender that sent no more than the queue holds (RXE_SR_RX_QUEUE_MAX in include/rxe_sr_glue.h) cannot
  # fill it, starved or not: a KASAN + lockdep g2 sends too slowly to get past it.
  [ "$sent" -gt 4096 ] || fail "only $sent datagrams sent, fewer than the 4096 the queue holds: it cannot fill"
  [ "$q" -gt 0 ] || fail "the receive queue never filled while its work was starved"
  [ $((s1 - s0)) -le 1024 ] || fail "the unreclaimable slab grew by $((s1 - s0)) kB"
fi
rc_verify_pair sr0 "flood-verify" 1 > /tmp/flood-verify.out ||
  { cat /tmp/flood-verify.out; fail "the data-checked exchange after the flood failed"; }
log "ok: a data-checked exchange after the flood"
sync_point "flood-end" 60
sr_down_clean
