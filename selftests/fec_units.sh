#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# The FEC shim under losses chosen by packet, not by chance: each guest drops, as they
# arrive, the first transmissions of coded packets (BTH Resv7 = a coded mark) whose
# PSN's low byte matches a pattern, with a u32 filter on the clsact ingress hook (on the
# sender's egress the drop would be reported to it as a full queue). msg_check (64 KiB
# messages both ways, one coding block after another, every byte checked) passes in every
# case, and each guest's counters are set against the drops its filters counted:
# 1. N = 8, D = 1, two losses per 256 PSNs in different units: every loss rebuilt
#    (fec_rebuilt equals the drops) before the transport saw a gap, no unit given up, no
#    retransmission timeout; under gbn and fasr, and under gbn nothing resent at all
#    (fasr's tail-loss probe may still resend a packet that was only slow to be
#    answered).
# 2. N = 8, D = 1, two adjacent losses, in one unit: units given up (fec_unrepairable > 0),
#    fewer rebuilt than dropped, the transport recovered the rest.
# 3. N = 8, D = 4, a burst of four adjacent losses: interleaving puts each in its own
#    unit, and every one is rebuilt.
# 4. UC, N = 8, D = 1, the losses of case 1: each side's take answered the other's offer
#    (fec_takes_sent > 0; UC has no response to echo it), every loss was rebuilt, no unit
#    given up, and every message arrived: a UC message with a packet lost is dropped
#    whole, which msg_check would not survive.
# 5. READs both ways (msg_check --op read), N = 8, D = 1, the losses of case 1, which fall
#    on READ responses (a 64 KiB READ request stands for 64 PSNs, and its PSNs end in
#    0x00, 0x40, 0x80 or 0xc0): the requester rebuilt every lost response (the responder
#    codes the responses of coded requests), no unit given up, and under gbn the requester
#    asked for no READ again and timed out never (fasr's probes and timer may still fire
#    on a response that was only slow, as in case 1).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
trap 'log "counters at exit: $(rdma statistic show link sr0/1 2>/dev/null)"; tc qdisc del dev eth0 clsact 2>/dev/null' EXIT

ITERS=300

# drop_psns VALUE MASK...: drop arriving coded first transmissions (Resv7 0x7a to 0x7d, any
# epoch) of request packets and READ responses whose PSN low byte matches each VALUE/MASK pair. Offsets are
# from the IPv4 header: UDP at 20, BTH at 28, its Resv7 byte at 36 and PSN low byte at 39.
drop_psns() {
  tc qdisc del dev eth0 clsact 2>/dev/null
  check "clsact on eth0" tc qdisc add dev eth0 clsact
  while [ $# -ge 2 ]; do
    for mark in 0x7a 0x7c; do
      check "drop PSN low byte $1/$2, Resv7 $mark/0x7e" \
        tc filter add dev eth0 ingress protocol ip u32 \
        match ip protocol 17 0xff match ip dport 4791 0xffff \
        match u8 "$mark" 0x7e at 36 match u8 "$1" "$2" at 39 action drop
    done
    shift 2
  done
}
# dropped: packets the filters dropped on this guest's ingress so far.
dropped() {
  tc -s filter show dev eth0 ingress | grep -o 'dropped [0-9]*' | awk '{ n += $2 } END { print n + 0 }'
}
# run_case TAG SCHEME UNIT DEPTH VALUE MASK...: the module up with FEC N:D, the drops set,
# msg_check both ways (with the options in MSG_ARGS, if set); sets DROPS to what this guest's filters dropped and the counters
# R (rebuilt), U (units given up), G (gaps: requests past ePSN), and of the peer's
# requester S (resends of any kind) and T (retransmission timeouts).
run_case() {
  local tag=$1 scheme=$2 unit=$3 depth=$4 gidx peer; shift 4
  sr_up "$scheme" fec_unit="$unit" fec_depth="$depth"
  drop_psns "$@"
  gidx=$(roce_gid_index sr0) || fail "$tag: no RoCEv2 GID on sr0"
  sync_point "go-$tag"
  msg_check_pair sr0 "$gidx" "$tag" --iters $ITERS --size 65536 ${MSG_ARGS:-} || fail "$tag: msg_check"
  sync_point "done-$tag"
  DROPS=$(dropped)
  R=$(stat_of fec_rebuilt) U=$(stat_of fec_unrepairable) G=$(stat_of out_of_seq_request)
  share_put "resends-$tag" "$(( $(stat_of completer_retry_err) + $(stat_of sr_resent_pkts) )) $(stat_of local_ack_timeout_err)"
  sync_point "shared-$tag"
  if is_server; then peer=2; else peer=1; fi
  read -r S T <<< "$(share_get $peer "resends-$tag")"
  log "$tag: dropped $DROPS; rebuilt $R, units given up $U, gaps $G; the peer resent $S, timed out $T"
  log "$tag: $(rdma statistic show link sr0/1 | grep -o 'fec_[a-z_]* [0-9]*' | tr '\n' ' ')"
  [ "$DROPS" -ge 10 ] || fail "$tag: the filters dropped only '$DROPS' packets"
}
case_down() {
  tc qdisc del dev eth0 clsact 2>/dev/null
  sync_point "down-$1"
  sr_down_clean
}

for scheme in gbn fasr; do
  run_case "single-$scheme" "$scheme" 8 1 0x05 0xff 0x83 0xff
  [ "$R" = "$DROPS" ] || fail "single-$scheme: $DROPS lost, one per unit, but $R rebuilt"
  [ "$U" = 0 ] || fail "single-$scheme: $U units given up with one loss each"
  [ "$G" = 0 ] || fail "single-$scheme: the transport saw $G gaps, with every loss rebuilt"
  [ "$T" = 0 ] || fail "single-$scheme: $T retransmission timeouts, with every loss rebuilt"
  [ "$scheme" != gbn ] || [ "$S" = 0 ] || fail "single-$scheme: $S resends, with every loss rebuilt"
  log "ok: single-$scheme: all $R losses rebuilt, no gap, no timeout"
  case_down "single-$scheme"
done

run_case pair gbn 8 1 0x05 0xff 0x06 0xff
[ "$U" -ge 1 ] || fail "pair: two losses in a unit, yet no unit given up"
[ "$R" -lt "$DROPS" ] || fail "pair: $R of $DROPS losses rebuilt, two in each unit"
[ $((2 * U + R)) = "$DROPS" ] || fail "pair: $DROPS lost, $R rebuilt, $U units given up (two each)"
log "ok: pair: $U units given up, $R of $DROPS rebuilt, the transport recovered the rest"
case_down pair

run_case burst gbn 8 4 0x10 0xfc
[ "$R" = "$DROPS" ] || fail "burst: $DROPS lost in bursts of four over four units, but $R rebuilt"
[ "$U" = 0 ] || fail "burst: $U units given up, the bursts interleaved"
log "ok: burst: all $R losses rebuilt"
case_down burst

MSG_ARGS="--type uc" run_case uc gbn 8 1 0x05 0xff 0x83 0xff
takes=$(stat_of fec_takes_sent)
[ "$takes" -ge 1 ] || fail "uc: no take sent for the peer's offer"
[ "$R" = "$DROPS" ] || fail "uc: $DROPS lost, one per unit, but $R rebuilt"
[ "$U" = 0 ] || fail "uc: $U units given up with one loss each"
log "ok: uc: $takes takes sent, all $R losses rebuilt, every message arrived"
case_down uc

for scheme in gbn fasr; do
  MSG_ARGS="--op read" run_case "read-$scheme" "$scheme" 8 1 0x05 0xff 0x83 0xff
  own_s=$(( $(stat_of completer_retry_err) + $(stat_of sr_resent_pkts) ))
  own_t=$(stat_of local_ack_timeout_err)
  log "read-$scheme: this requester resent $own_s, timed out $own_t"
  [ "$R" = "$DROPS" ] || fail "read-$scheme: $DROPS READ responses lost, one per unit, but $R rebuilt"
  [ "$U" = 0 ] || fail "read-$scheme: $U units given up with one loss each"
  if [ "$scheme" = gbn ]; then
    [ "$own_t" = 0 ] || fail "read-$scheme: $own_t retransmission timeouts, with every loss rebuilt"
    [ "$own_s" = 0 ] || fail "read-$scheme: READs asked for again $own_s times, with every loss rebuilt"
  fi
  log "ok: read-$scheme: all $R lost READ responses rebuilt"
  case_down "read-$scheme"
done
