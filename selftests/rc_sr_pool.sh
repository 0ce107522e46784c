#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# FaSR at its limits, both guests loaded with recovery=fasr:
# 1. A tiny shared SR pool (2 units, 3 bitmap blocks) under 5% loss on both guests' egress,
#    with 8 rc_verify pairs at once (8 RC QPs each way, every byte checked) and then
#    ib_write_bw over 100 QPs: QPs that find the pool exhausted fall back to go-back-N
#    (sr_gbn_fallbacks and sr_pool_exhaustions count it), every check still passes, and once
#    the QPs are gone the pool is empty again.
# 2. The default pool under 10% loss: lost-cnt overflows (sr_lost_cnt_overflows), and
#    rc_verify passes.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
at_least() { # NAME MIN
  local v; v=$(stat_of "$1")
  [ -n "$v" ] && [ "$v" -ge "$2" ] || fail "counter $1 is '${v}', expected >= $2"
}
pairs=8
quick && pairs=2

# 1. Exhaustion.
modprobe -r rxe_sr rdma_rxe 2>/dev/null
dmesg_mark
check "load the verbs core" load_rdma_core
check "load rxe_sr with a tiny pool" modprobe rxe_sr recovery=fasr sr_pool_units=2 sr_pool_blocks=3
check "rdma link add sr0" rdma link add sr0 type rxe_sr netdev eth0
check "port ACTIVE" wait_port_active sr0
netem_set 5
sync_point verify-start
pids=()
for i in $(seq "$pairs"); do
  rc_verify_pair sr0 "pool-$i" 1 > "/tmp/verify-$i.out" 2>&1 &
  pids+=($!)
done
bad=0
for i in $(seq "$pairs"); do
  wait "${pids[$((i - 1))]}" || bad=$i
  cp "/tmp/verify-$i.out" "$OUT/rc_sr_pool.verify-$i.out"
done
if [ "$bad" != 0 ]; then
  log "counters: $(rdma statistic show link sr0/1)"
  fail "rc_verify pair $bad with a tiny pool: $(grep FAIL /tmp/verify-$bad.out | head -5)"
fi
log "ok: $pairs rc_verify pairs at once under 5% loss with a pool of 2 units, every byte checked"
netem_set 0
v=$(PERF_ITERS=5 PERF_SIZE=4096 perftest_pair sr0 ib_write_bw 5 30 -q 100) || fail "ib_write_bw -q 100 with a tiny pool failed"
if is_client; then positive "$v" || fail "ib_write_bw -q 100: no goodput"; log "ok: ib_write_bw -q 100 under 5% loss: $v Gb/s"; fi
sync_point exhausted
log "counters: $(rdma statistic show link sr0/1)"
at_least sr_gbn_fallbacks 1
at_least sr_pool_exhaustions 1
[ "$(stat_of sr_pool_units_peak)" -le 2 ] || fail "more units in use than the pool has"
for g in sr_pool_units sr_pool_blocks; do
  [ "$(stat_of $g)" = 0 ] || fail "$g is $(stat_of $g) with no QP left"
done
log "ok: the exhausted pool fell back to go-back-N ($(stat_of sr_gbn_fallbacks) times) and is empty again"
sync_point down-1
sr_down_clean

# 2. Heavy loss (10% on both guests' egress): more than 7 PSNs missing behind RCV-NXT
# overflow lost-cnt. Not netem's Gilbert-Elliott bursts (this test used them): that chain
# moves one state per packet, so a QP with one request left (the last atomic of a round,
# resent once per timeout) stays in the bad state for most of its retries, and 7 retries
# lost in a row end it in RETRY_EXC_ERR whatever the recovery scheme; blackouts in time
# (tc toggling loss 100%) mostly missed rc_verify's short bursts of traffic and
# overflowed nothing.
sr_up fasr
netem_set 10
sync_point burst-start
burst_bad=0
rc_verify_pair sr0 burst 2 > /tmp/verify.out || burst_bad=1
netem_set 0
[ "$burst_bad" = 0 ] || fail "rc_verify under 10% loss: $(tail -3 /tmp/verify.out)"
sync_point burst-done
log "counters: $(rdma statistic show link sr0/1)"
at_least sr_lost_cnt_overflows 1
log "ok: lost-cnt overflowed $(stat_of sr_lost_cnt_overflows) times under 10% loss; every byte checked"
sync_point down-2
sr_down_clean
