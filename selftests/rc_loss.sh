#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# rxe_sr <-> rxe_sr under impairment on both guests' egress: netem loss 1% and 5%,
# reordering, duplication. Under each: rc_verify.py (SEND, WRITE with immediate, READ and
# atomics both ways at once, 1 B to 200 KiB, every byte checked) passes, and
# ib_{write,read,send}_bw (20 messages of 64 KiB) finish with a positive goodput (at 5% also
# ib_atomic_bw, ib_write_bw -q 100 and UD ib_send_bw), and rping
# -V (50 rounds of 1000 B) connects through rdma-cm, whose CM MADs over the GSI QP are
# lost too and resent by ib_cm. Slow is fine here; wrong is not.
# (ibv_rc_pingpong is not used under loss: it destroys its QP as soon as its own count is
# done, so the peer's last ACK can be lost with no one left to resend it, on any driver.)
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
specs=(1 5 "delay 1ms reorder 10% 50%" "duplicate 5%")
# Quick (KASAN pass): 5% loss, reordering and duplication, each with one of the bw tools.
quick && specs=(5 "delay 1ms reorder 10% 50%" "duplicate 5%")
for spec in "${specs[@]}"; do
  name=$(printf '%s' "$spec" | tr -c 'A-Za-z0-9' '_')
  netem_set "$spec"
  sync_point "verify-$name"
  rc_verify_pair sr0 "loss-$name" 1 || fail "rc_verify under netem '$spec'"
  log "ok: rc_verify under netem '$spec': SEND, WRITE, READ, atomics both ways, every byte checked"
  out=$(rping_pair "loss-$name" -C 50 -S 1000) || fail "rping -V under netem '$spec'"
  log "ok: rping -V under netem '$spec'"
  netem_set 0
  tools=(ib_write_bw ib_read_bw ib_send_bw)
  if quick; then case $spec in 5) ;; delay*) tools=(ib_read_bw) ;; *) tools=(ib_send_bw) ;; esac; fi
  for t in "${tools[@]}"; do
    v=$(PERF_ITERS=20 perftest_pair sr0 "$t" "$spec" 30) || fail "$t under netem '$spec' failed"
    if is_client; then positive "$v" || fail "$t under netem '$spec': no goodput"; log "ok: $t under netem '$spec': $v Gb/s"; fi
  done
  if [ "$spec" = 5 ]; then
    # The rest of the perftest set, at the highest loss: atomics, 100 QPs at once, and UD
    # SENDs (unreliable: the server reports what arrived during the run).
    v=$(PERF_ITERS=200 PERF_SIZE=none perftest_pair sr0 ib_atomic_bw 5 30) || fail "ib_atomic_bw under 5% loss failed"
    if is_client; then positive "$v" || fail "ib_atomic_bw under 5% loss: no goodput"; log "ok: ib_atomic_bw under 5% loss: $v Gb/s"; fi
    v=$(PERF_ITERS=5 PERF_SIZE=4096 perftest_pair sr0 ib_write_bw 5 30 -q 100) || fail "ib_write_bw -q 100 under 5% loss failed"
    if is_client; then positive "$v" || fail "ib_write_bw -q 100 under 5% loss: no goodput"; log "ok: ib_write_bw -q 100 under 5% loss: $v Gb/s"; fi
    v=$(PERF_SIZE=1024 perftest_pair sr0 ib_send_bw 5 3 -c UD) || fail "ib_send_bw UD under 5% loss failed"
    if is_client; then positive "$v" || fail "ib_send_bw UD under 5% loss: nothing arrived"; log "ok: ib_send_bw UD under 5% loss: $v Gb/s received"; fi
  fi
done
log "counters: $(rdma statistic show link sr0/1)"
sync_point done
sr_down_clean
