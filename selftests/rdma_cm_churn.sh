#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# rdma-cm connections opened and closed by the thousand (rdma_rxe users
# saw a device stop answering after about 1000): rdma-core's cmtime, unmodified, g2
# connecting to g1 over sr0 (RC QPs through the CM's MADs on QP1, then disconnected and
# destroyed), 2 rounds of 1000 connections (200 in quick mode); every round must finish,
# and the CM's counters must show each connection's REQ (g1) and REP (g2) arrived exactly
# once (ib_cm counts every arrival in cm_rx_msgs, and a retransmitted one again in
# cm_rx_duplicates: arrivals less duplicates must equal the connections). Afterwards the device has no QP but QP1 and no CM
# ID left (`rdma resource`), a data-checked exchange still passes, the kernel log is clean
# kmemleak (the debug kernel) finds nothing leaked through rxe_sr or the RDMA core, and
# unload finds nothing left.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
conns=${RXE_SR_CM_CONNS:-1000} rounds=2
quick && conns=200
command -v cmtime > /dev/null || skip "no cmtime (rdmacm-utils)"
sr_up
pin_peer_neigh
leak_begin
res0=$(rdma resource show sr0)
log "rdma resource before: $res0"
# ib_cm's message counters: what arrived of one kind (req, rep, ...).
cm_rx() { cat "/sys/class/infiniband/sr0/ports/1/cm_rx_msgs/$1"; }
cm_dup() { cat "/sys/class/infiniband/sr0/ports/1/cm_rx_duplicates/$1"; }
if is_server; then kind=req; else kind=rep; fi
total=0
for r in $(seq "$rounds"); do
  rx0=$(cm_rx $kind) || fail "no ib_cm counters for sr0"
  dup0=$(cm_dup $kind) || fail "no ib_cm duplicate counters for sr0"
  sync_point "cm-$r" 120 || fail "the other guest did not come"
  # cmtime's server accepts until it is killed; the client connects CONNS, disconnects
  # them and prints the time of each step.
  if is_server; then
    timeout 200 cmtime -b 10.77.0.1 -p $((7470 + r)) > /tmp/cmtime.srv 2>&1 &
    pid=$!
    sync_point "cm-listen-$r" 60
    sync_point "cm-done-$r" 200 || { kill "$pid"; cat /tmp/cmtime.srv; fail "round $r: the client did not finish"; }
    kill "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    tail -5 /tmp/cmtime.srv
  else
    sync_point "cm-listen-$r" 60
    sleep 1
    out=$(timeout 180 cmtime -s 10.77.0.1 -b 10.77.0.2 -p $((7470 + r)) -c "$conns" 2>&1); rc=$?
    sync_point "cm-done-$r" 60
    printf '%s\n' "$out" | tail -25
    [ "$rc" = 0 ] || fail "round $r: cmtime exit $rc"
    expect_grep "round $r: the connect step completed" '^ *connect' "$out"
  fi
  rx=$(( $(cm_rx $kind) - rx0 )) dup=$(( $(cm_dup $kind) - dup0 ))
  log "round $r: $rx CM ${kind}s arrived, $dup of them duplicates"
  [ $((rx - dup)) = "$conns" ] || fail "round $r: $rx ${kind}s arrived, $dup duplicates, for $conns connections"
  total=$((total + conns))
done
log "ok: $total connections with QPs opened and closed"
sync_point "cm-done" 120 || fail "the other guest did not come"
res1=$(rdma resource show sr0)
log "rdma resource after: $res1"
check "no QP or CM ID left ($res1)" test "$res1" = "$res0"
rc_verify_pair sr0 "cm-churn" 1 > /tmp/cm-verify.out || { cat /tmp/cm-verify.out; fail "rc_verify after the churn"; }
log "ok: a data-checked exchange after the churn"
sync_point "cm-end" 120
sr_down_clean
