#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# rxe_sr running an SR scheme (g1) <-> rdma_rxe (g2): the QPs stay standard RoCEv2. For each
# of fasr, srnic, irn and melo (quick: fasr and srnic), rc_verify.py (SEND, WRITE with
# immediate, READ and atomics both ways at once, every byte checked) passes under 1% loss
# on both guests' egress, while g2 captures what rxe_sr sends it: no packet has BTH TVer
# != 0 (rxe_sr's SR format never reaches rdma_rxe), some carry the capability probe in BTH
# Resv7 (rdma_rxe ignores it and answers without an echo), and rxe_sr counts its QPs as
# standard (sr_qps_standard > 0, sr_qps_negotiated 0).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
schemes=(fasr srnic irn melo)
quick && schemes=(fasr srnic)
for scheme in "${schemes[@]}"; do
  if is_server; then
    sr_up "$scheme"
    dev=sr0
  else
    check "rdma_rxe up as rxe0" rxe_ref_up
    dev=rxe0
    tcpdump -i eth0 -s 128 -w /tmp/interop.pcap udp port 4791 2>/tmp/tcpdump.err &
    cap=$!
    sleep 1
  fi
  sync_point "up-$scheme"
  netem_set 1
  rc_verify_pair "$dev" "interop-$scheme" 1 || fail "$scheme <-> rdma_rxe: rc_verify under 1% loss"
  netem_set 0
  log "ok: $scheme <-> rdma_rxe: rc_verify under 1% loss, every byte checked"
  sync_point "verified-$scheme"
  if is_server; then
    log "counters: $(rdma statistic show link sr0/1)"
    [ "$(stat_of sr_qps_negotiated)" = 0 ] || fail "$scheme: a QP negotiated SR with rdma_rxe"
    [ "$(stat_of sr_qps_standard)" -ge 1 ] || fail "$scheme: no QP counted as standard"
    sync_point "down-$scheme"
    sr_down_clean
  else
    sleep 1
    kill -INT $cap; wait $cap
    marks=$(python3 "$HOST_SHARE/selftests/lib/bth_marks.py" /tmp/interop.pcap 10.77.0.1)
    log "$scheme: from rxe_sr: $marks"
    read -r _ total _ tver _ resv7 <<< "$marks"
    [ "$total" -gt 100 ] || fail "$scheme: too few packets captured ($total)"
    [ "$tver" = 0 ] || fail "$scheme: $tver packets with BTH TVer != 0 reached rdma_rxe"
    [ "$resv7" -ge 1 ] || fail "$scheme: no capability probe seen (the check could not fail)"
    sync_point "down-$scheme"
    rxe_ref_down
  fi
done
