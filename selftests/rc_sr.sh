#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1200
# Selective retransmission in the kernel, rxe_sr <-> rxe_sr, both guests loaded with the same
# recovery= scheme, for each of fasr, srnic, irn and melo. Under netem loss on both guests'
# egress (1% and 5%; quick: 5%), rc_verify.py (SEND, WRITE with immediate, READ and atomics
# both ways at once, 1 B to 200 KiB, every byte checked) passes, and ib_write_bw and
# ib_send_bw finish with a positive goodput (quick: fasr and srnic only); fasr and srnic
# also pass rc_verify under netem
# reordering and duplication. The counters then show that the QPs agreed on
# the scheme (sr_qps_negotiated > 0, sr_qps_standard 0), that packets were placed out of
# order (sr_ooo_placed), that losses were repaired one packet at a time (sr_resent_pkts) with
# the scheme's own feedback (SACKs for fasr and irn, with AACKs and FNACKs, a lost
# retransmission's report, for fasr; hole lists for srnic and melo), and, once every QP is
# gone, that the device's pools are empty again.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
at_least() { # NAME MIN: the counter NAME is at least MIN
  local v; v=$(stat_of "$1")
  [ -n "$v" ] && [ "$v" -ge "$2" ] || fail "$scheme: counter $1 is '${v}', expected >= $2"
}
# fnack_pair: the FNACKs both guests sent and received, summed; with none sent and received
# yet, rc_verify rounds under 10% loss (at most 3) until there are; fails if there are none.
fnack_pair() {
  local round sent rcvd g
  for round in 0 1 2 3; do
    share_put "fnacks-$round" "$(stat_of sr_fnacks_sent) $(stat_of sr_fnacks_rcvd)"
    sync_point "fnacks-$round"
    sent=0 rcvd=0
    for g in 1 2; do
      set -- $(share_get "$g" "fnacks-$round")
      sent=$((sent + $1)) rcvd=$((rcvd + $2))
    done
    log "fasr: FNACKs sent $sent, received $rcvd (both guests, after $round extra rounds)"
    [ "$sent" -ge 1 ] && [ "$rcvd" -ge 1 ] && return 0
    [ "$round" = 3 ] && break
    netem_set 10
    sync_point "fnack-loss-$round"
    rc_verify_pair sr0 "sr-fasr-fnack-$round" 1 || fail "fasr: rc_verify under 10% loss"
    netem_set 0
  done
  fail "fasr: no FNACK both sent and received in the pair"
}
trap 'log "counters at exit: $(rdma statistic show link sr0/1 2>/dev/null)"' EXIT
losses=(1 5)
quick && losses=(5)
for scheme in fasr srnic irn melo; do
  sr_up "$scheme"
  for loss in "${losses[@]}"; do
    netem_set "$loss"
    sync_point "verify-$scheme-$loss"
    rc_verify_pair sr0 "sr-$scheme-$loss" 1 || fail "$scheme: rc_verify under $loss% loss"
    log "ok: $scheme: rc_verify under $loss% loss, every byte checked"
    netem_set 0
    # Quick: the comparators' goodput runs are left to the full pass (rc_verify covers them).
    quick && case $scheme in irn|melo) continue ;; esac
    for t in ib_write_bw ib_send_bw; do
      v=$(PERF_ITERS=20 perftest_pair sr0 "$t" "$loss" 30) || fail "$scheme: $t under $loss% loss failed"
      if is_client; then positive "$v" || fail "$scheme: $t under $loss% loss: no goodput"; log "ok: $scheme: $t under $loss% loss: $v Gb/s"; fi
    done
  done
  case $scheme in
    fasr|srnic)
      # Reordering and duplication on the wire, with the SR format in use.
      for spec in "delay 1ms reorder 10% 50%" "duplicate 5%"; do
        name=$(printf '%s' "$spec" | tr -c 'A-Za-z0-9' '_')
        netem_set "$spec"
        sync_point "impair-$scheme-$name"
        rc_verify_pair sr0 "sr-$scheme-$name" 1 || fail "$scheme: rc_verify under netem '$spec'"
        netem_set 0
        log "ok: $scheme: rc_verify under netem '$spec', every byte checked"
      done ;;
  esac
  sync_point "counters-$scheme"
  log "$scheme counters: $(rdma statistic show link sr0/1)"
  at_least sr_qps_negotiated 1
  [ "$(stat_of sr_qps_standard)" = 0 ] || fail "$scheme: QPs stayed standard between two rxe_sr $scheme devices"
  at_least sr_ooo_placed 1
  at_least sr_resent_pkts 1
  case $scheme in
    fasr) at_least sr_sacks_sent 1; at_least sr_sacks_rcvd 1; at_least sr_aacks_sent 1; at_least sr_aacks_rcvd 1
      # The responder holds back SACKs that only move sack-high (64 KiB messages: most).
      at_least sr_sacks_coalesced 1
      log "fasr: SACKs sent $(stat_of sr_sacks_sent), held back $(stat_of sr_sacks_coalesced), lost resends sent again $(stat_of sr_lost_resends)"
      # An FNACK comes from a responder that saw a lost retransmission, which loss makes
      # likely but not certain, and the FNACK itself can be lost: so the pair's counters
      # are summed, and if the pair has not both sent and received one yet, more data
      # goes under 10% loss (a few rounds at most) until it has.
      fnack_pair ;;
    irn) at_least sr_sacks_sent 1; at_least sr_sacks_rcvd 1
      [ "$(stat_of sr_sacks_coalesced)" = 0 ] || fail "irn: SACKs held back (IRN's requester needs each)" ;;
    srnic) at_least sr_holes_sent 1; at_least sr_holes_rcvd 1; at_least sr_onload_served 1; at_least sr_onload_queue_peak 1
      at_least sr_aacks_sent 1; at_least sr_aacks_rcvd 1
      log "srnic: slow path served $(stat_of sr_onload_served) entries, $(stat_of sr_onload_delay_us) us of queueing in all, queue peak $(stat_of sr_onload_queue_peak)" ;;
    melo) at_least sr_holes_sent 1; at_least sr_holes_rcvd 1 ;;
  esac
  for g in sr_pool_units sr_pool_blocks melo_pool_blocks; do
    [ "$(stat_of $g)" = 0 ] || fail "$scheme: $g is $(stat_of $g) with no QP left"
  done
  case $scheme in
    fasr) at_least sr_pool_units_peak 1 ;;
    melo) at_least melo_pool_blocks_peak 1 ;;
  esac
  log "ok: $scheme: negotiated, placed out of order, resent selectively, pools empty again"
  sync_point "down-$scheme"
  sr_down_clean
done
