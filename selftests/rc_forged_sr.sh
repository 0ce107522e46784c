#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# One forged SR-format packet (BTH TVer 1: an RDMA WRITE with the valid R_Key) at a wrong
# PSN, sent from g2's address at g1's QP (rxe_sr), in three pairs (rc_forged_sr.py):
#  - g1 under fasr, rdma_rxe on g2, whose QP never offered the SR format, 5 PSNs ahead: g1
#    counts it in sr_refused and stays on standard RoCEv2 (no stale standard request);
#  - g1 under gbn, rdma_rxe on g2, 5 PSNs ahead: a QP without SR counts it in sr_refused;
#  - g1 and g2 under fasr (an SR QP pair), 100000 PSNs ahead: g1 counts it in
#    sr_out_of_window;
# in both the forged bytes never reach g1's memory, g1's QP stays in RTS, and 50 WRITE +
# READ rounds after it are checked byte for byte.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
if is_server; then side=a peer=10.77.0.2; else side=b peer=10.77.0.1; fi
for pair in rxe sr gbn; do
  # peer_drv: g2's driver; g1 runs gbn in the last pair, fasr in the others.
  if [ "$pair" = sr ]; then peer_drv=sr; else peer_drv=rxe; fi
  if is_server; then
    if [ "$pair" = gbn ]; then sr_up gbn; else sr_up fasr; fi
    dev=sr0
  elif [ "$peer_drv" = rxe ]; then
    check "rdma_rxe up as rxe0" rxe_ref_up
    dev=rxe0
  else
    sr_up fasr
    dev=sr0
  fi
  gidx=$(roce_gid_index "$dev") || fail "no RoCEv2 GID on $dev"
  if [ "$peer_drv" = rxe ]; then ahead=5; else ahead=100000; fi
  sync_point "up-$pair"
  out=$(timeout 240 python3 "$HOST_SHARE/selftests/lib/rc_forged_sr.py" "$side" "$dev" "$gidx" "$peer" \
    "t${TEST_INDEX:-0}-forged-sr-$pair" "$ahead" 2>&1) || { printf '%s\n' "$out"; fail "rc_forged_sr.py ($side, pair $pair)"; }
  printf '%s\n' "$out"
  if is_client; then
    expect_grep "the QP works after the forged packet" '^50 WRITE \+ READ rounds after the forged packet: OK$' "$out"
    if [ "$peer_drv" = sr ]; then
      [ "$(stat_of sr_qps_negotiated)" -ge 1 ] || fail "the SR pair did not negotiate the SR format"
    fi
  else
    expect_grep "g1's QP still in RTS" '^qp state 3$' "$out"
    expect_grep "the forged bytes never reached memory" '^forged bytes in memory: no$' "$out"
    refused=$(stat_of sr_refused); oow=$(stat_of sr_out_of_window); stale=$(stat_of sr_stale_standard)
    log "pair $pair: sr_refused $refused, sr_out_of_window $oow, sr_stale_standard $stale"
    if [ "$peer_drv" = rxe ]; then
      [ "$refused" = 1 ] && [ "$oow" = 0 ] || fail "pair $pair: the forged packet toward a standard QP: sr_refused $refused, sr_out_of_window $oow (want 1, 0)"
      [ "$stale" = 0 ] || fail "the QP switched to the SR format: $stale standard requests dropped as stale"
    else
      [ "$oow" = 1 ] && [ "$refused" = 0 ] || fail "the forged packet in the SR pair: sr_out_of_window $oow, sr_refused $refused (want 1, 0)"
    fi
    log "ok: pair $pair: the forged SR packet was counted and changed nothing"
  fi
  sync_point "done-$pair"
  if is_client && [ "$peer_drv" = rxe ]; then rxe_ref_down; else sr_down_clean; fi
done
