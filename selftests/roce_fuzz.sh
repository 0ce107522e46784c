#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1500
# The remote-input fuzzer against a live device under every recovery=
# scheme: roce_fuzz.py captures real RC/UC/UD traffic (SR format under an SR scheme), then
# g2 forges RXE_SR_FUZZ_PACKETS (default 100000) mutated datagrams at g1's UDP port 4791
# with a correct ICRC, paced by probe WRITEs so that g1's receive work parses every one.
# Checks on g1, per scheme: every forged datagram reached the device and was counted
# (rcvd_pkts), the counters that classify them moved; afterwards a data-checked exchange
# (rc_verify.py) over new QPs on the same devices passes, the kernel log has no oops,
# warning, KASAN or lockdep report, and unload finds no object left.
# RXE_SR_FUZZ_SEED picks the mutations (default 1; scheme k uses SEED + k); the long mode is
# RXE_SR_FUZZ_PACKETS=1000000 (see Documentation/testing.md, long modes).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
# make test runs it once, with g1 on the KASAN + lockdep kernel and g2 on the test kernel
# (RXE_SR_PEER_VARIANT=default; its own pass, scripts/test), at 15000 a scheme under all
# five: a KASAN g1 takes datagrams in so slowly that 100000 a scheme outlasts that pass,
# and a g2 on the KASAN kernel is a slow sender whatever it sends with (UDP, sendmmsg,
# AF_PACKET). Quick mode sends 10000 a scheme under gbn, fasr and srnic.
packets=${RXE_SR_FUZZ_PACKETS:-100000}
schemes="gbn fasr srnic irn melo"
if quick && [ -z "${RXE_SR_FUZZ_PACKETS:-}" ]; then packets=10000 schemes="gbn fasr srnic"; fi
schemes=${RXE_SR_FUZZ_SCHEMES:-$schemes}
seed=${RXE_SR_FUZZ_SEED:-1}
# How often g1 looks for a target a forged packet failed, in milliseconds.
check_ms=20
vals=$HOST_SHARE/vals
if is_server; then side=a peer=10.77.0.2; else side=b peer=10.77.0.1; fi
# The probe pair (the flood's pacing) runs from a second address of g2's, which the forged
# packets never come from.
is_client && { ip addr add 10.77.0.4/24 dev eth0 || fail "second address"; }
# A new target's path to the peer (modify to RTR) then needs no ARP exchange while g2 floods.
pin_peer_neigh
k=0
for scheme in $schemes; do
  k=$((k + 1))
  sr_up "$scheme"
  gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
  if is_server; then pgidx=$gidx ppeer=10.77.0.4; else
    pgidx=$(roce_gid_index sr0 10.77.0.4) || fail "no RoCEv2 GID for 10.77.0.4"; ppeer=10.77.0.1
  fi
  tag="t${TEST_INDEX:-0}-fuzz-$scheme"
  rm -f "$vals/$tag-"*
  sync_point "fuzz-up-$scheme"
  t0=$SECONDS
  before=$(rdma statistic show link sr0/1)
  rcvd0=$(stat_of rcvd_pkts)
  cpu0=$(cpu_ticks)
  out=$(RXE_SR_ACK_TIMEOUT=$(any_debug_kernel && echo 17 || echo 14) timeout 1200 python3 "$HOST_SHARE/selftests/lib/roce_fuzz.py" "$side" sr0 "$gidx" "$peer" "$tag" \
    "$packets" $((seed + k)) "$pgidx" "$ppeer" "$check_ms" 2>&1) || { printf '%s\n' "$out"; fail "roce_fuzz.py ($side, $scheme) failed"; }
  printf '%s\n' "$out"
  log "$scheme: this guest's CPU over the fuzz: $(cpu_share "$cpu0" "$(cpu_ticks)")"
  if is_server; then
    rcvd=$(( $(stat_of rcvd_pkts) - rcvd0 ))
    # Every forged datagram, plus the capture's traffic and the probes, reached the device
    # and was counted: none vanished before the count.
    [ "$rcvd" -ge "$packets" ] || fail "$scheme: rcvd_pkts moved by $rcvd, fewer than the $packets forged"
    moved=$(paste <(printf '%s\n' "$before" | tr ' ' '\n') <(rdma statistic show link sr0/1 | tr ' ' '\n') |
      awk 'NR > 2 { if (NR % 2 == 1) name = $1; else if ($2 != $1) printf "%s +%d ", name, $2 - $1 }')
    log "$scheme: rcvd_pkts +$rcvd; counters that moved: $moved"
    # Truncated packets and wrong ICRCs among them are dropped and counted; and the fuzz
    # reached the transport: at least one forged packet in 20 passed the ICRC and header
    # checks and was classified by a QP (out of sequence, duplicate, out of the SR window,
    # refused...), and no more than 3 in 4 were malformed.
    grep -q "rcvd_dropped +" <<< "$moved" || fail "$scheme: rcvd_dropped did not move"
    classified=$(awk '{ for (i = 1; i < NF; i += 2) if ($i ~ /^(out_of_seq_request|duplicate_request|dup_rd_atomic_dropped|rcvd_addr_mismatch|sr_out_of_window|sr_early_refused|sr_stale_standard|sr_refused)$/) n += $(i + 1) } END { print n + 0 }' <<< "$moved")
    malformed=$(awk '{ for (i = 1; i < NF; i += 2) if ($i == "rcvd_malformed") n += $(i + 1) } END { print n + 0 }' <<< "$moved")
    log "$scheme: $classified forged packets classified by a QP, $malformed malformed"
    [ $((classified * 20)) -ge "$packets" ] || fail "$scheme: only $classified of $packets forged packets reached a QP"
    [ $((malformed * 4)) -le $((packets * 3)) ] || fail "$scheme: $malformed of $packets forged packets were malformed"
    # The warnings a peer can cause are rate-limited (the kernel's default: 10 in 5 s):
    # each target a forged packet failed was one, and they come far faster than that.
    secs=$((SECONDS - t0))
    warns=$(dmesg_since_mark | grep -cE 'rxe_sr: qp 0x[0-9a-f]+: (refused request|retry exceeded)')
    held=$(dmesg_since_mark | sed -n 's/.*remote_warning_ratelimit: \([0-9]*\) callbacks suppressed.*/\1/p' |
      awk '{ n += $1 } END { print n + 0 }')
    failed=$(sed -n 's/^targets replaced.*: rc \([0-9]*\), uc \([0-9]*\), ud \([0-9]*\)$/\1 \2 \3/p' <<< "$out" |
      awk '{ print $1 + $2 + $3 }')
    log "$scheme: $warns remote-caused warnings printed in ${secs}s, $held held back; ${failed:-?} targets failed"
    # The share of the CPU g1's side of roce_fuzz.py had while awake under the flood is
    # printed, not checked: it depends on the host's speed.
    share=$(sed -n 's/^a: .* awake: \([0-9]*\)%$/\1/p' <<< "$out")
    log "$scheme: g1's side had ${share:-?}% of the CPU while awake"
    [ "$warns" -le $((10 * (secs / 5 + 2))) ] || fail "$scheme: $warns remote-caused warnings in ${secs}s: not rate-limited"
  else
    expect_grep "$scheme: every forged packet sent" "^forged_total $packets\$" "$out"
  fi
  rc_verify_pair sr0 "fuzz-$scheme-verify" 1 > /tmp/fuzz-verify.out ||
    { cat /tmp/fuzz-verify.out; fail "$scheme: the data-checked exchange after the fuzz failed"; }
  log "ok: $scheme: $packets forged packets, then a data-checked exchange passed"
  sync_point "fuzz-done-$scheme"
  sr_down_clean
done
if is_client; then ip addr del 10.77.0.4/24 dev eth0; fi
