#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# The device's in-flight budget (dev_inflight_psns), in gbn and in fasr, both guests
# loaded with a budget of 64 PSNs:
# 1. ib_write_bw over 50 QPs (4 KiB, 16 deep: 3200 PSNs posted at once; 48 WRITEs each, a
#    multiple of perftest's completion moderation of 16: with 40, perftest at 1% loss
#    waited for ever with every WRITE sent and acknowledged, with and without a budget) at
#    1% loss on both egresses completes; the WRITEs' requester (g2) waited for room (inflight_waits)
#    and never had more in flight than the budget and one message (63 + 4: a message is
#    admitted whole while fewer than 64 are out), the budget being the largest it stood at
#    (inflight_budget_peak: a path allowance past 64 stretches it); with the QPs gone
#    nothing is held (inflight_psns 0 on both guests).
# 2. rc_verify (SENDs up to 200 KiB, WRITEs, READs, atomics; every byte checked) under
#    the same budget.
# 3. The same ib_write_bw with no budget (dev_inflight_psns=0): nobody waits, and the
#    peak passes the bound of 1, which is what held it there. In quick mode lossless over
#    10 QPs (640 PSNs posted at once): on the KASAN kernel, with no budget, the 50 QPs'
#    3200 PSNs did not end within the test's time at 1% loss, and lossless every QP ran
#    out of retries in the backlog (what the budget is for).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
budget=64
bound=$((budget - 1 + 4)) # raised to the largest bound the budget, as it stood, gave

# run_point SCHEME BUDGET [LOSS [QPS]]: loads rxe_sr with SCHEME and BUDGET, runs ib_write_bw
# over QPS QPs (50) at LOSS% loss (1); the client's inflight_waits and inflight_peak go to
# /tmp/inflight.
run_point() {
  modprobe -r rxe_sr rdma_rxe 2>/dev/null
  dmesg_mark
  check "load the verbs core" load_rdma_core
  check "load rxe_sr recovery=$1 dev_inflight_psns=$2" modprobe rxe_sr recovery="$1" dev_inflight_psns="$2"
  check "rdma link add sr0" rdma link add sr0 type rxe_sr netdev eth0
  check "port ACTIVE" wait_port_active sr0
  local v loss=${3:-1} qps=${4:-50}
  v=$(PERF_ITERS=48 PERF_SIZE=4096 perftest_pair sr0 ib_write_bw "$loss" 30 -q "$qps" -t 16) \
    || fail "$1, budget $2: ib_write_bw -q $qps failed"
  if is_client; then
    positive "$v" || fail "$1, budget $2: ib_write_bw -q $qps: no goodput"
    log "ok: $1, budget $2: ib_write_bw -q $qps -t 16 at $loss% loss: $v Gb/s"
  fi
  sync_point "bw-$1-$2"
  log "counters: $(rdma statistic show link sr0/1)"
  [ "$(stat_of inflight_psns)" = 0 ] || fail "$1, budget $2: inflight_psns is $(stat_of inflight_psns) with no QP left"
  echo "$(stat_of inflight_waits) $(stat_of inflight_peak) $(stat_of inflight_budget_peak)" > /tmp/inflight
}

for scheme in gbn fasr; do
  run_point "$scheme" "$budget"
  read -r waits peak stood < /tmp/inflight
  if is_client; then
    [ "$waits" -ge 1 ] || fail "$scheme: no message waited for room under a budget of $budget"
    [ "$stood" -ge "$budget" ] || fail "$scheme: inflight_budget_peak $stood under a budget of $budget"
    [ "$peak" -le $((stood - 1 + 4)) ] \
      || fail "$scheme: $peak PSNs in flight at once under a budget of $budget that stood at most at $stood (bound $((stood - 1 + 4)))"
    [ $((stood - 1 + 4)) -le "$bound" ] || bound=$((stood - 1 + 4))
    log "ok: $scheme: $waits waits for room; at most $peak PSNs in flight (budget $budget, stood at most at $stood)"
  fi
  sync_point "verify-$scheme"
  rc_verify_pair sr0 "inflight-$scheme" 1 > /tmp/verify.out 2>&1 \
    || fail "$scheme: rc_verify under a budget of $budget: $(grep FAIL /tmp/verify.out | head -3)"
  cp /tmp/verify.out "$OUT/rc_inflight.verify-$scheme.out"
  log "ok: $scheme: rc_verify under a budget of $budget, every byte checked"
  [ "$(stat_of inflight_psns)" = 0 ] || fail "$scheme: inflight_psns is $(stat_of inflight_psns) after rc_verify"
  sync_point "down-$scheme"
  sr_down_clean
done

if quick; then run_point fasr 0 0 10; else run_point fasr 0 1 50; fi
read -r waits peak stood < /tmp/inflight
if is_client; then
  [ "$waits" = 0 ] || fail "no budget, yet $waits messages waited"
  [ "$stood" = 0 ] || fail "no budget, yet inflight_budget_peak is $stood"
  [ "$peak" -gt "$bound" ] || fail "no budget, and still at most $peak PSNs in flight: the bound above proves nothing"
  log "ok: no budget: nobody waited; $peak PSNs in flight at once"
fi
sync_point down-unbounded
sr_down_clean
