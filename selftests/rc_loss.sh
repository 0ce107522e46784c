#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# rxe_sr <-> rxe_sr under impairment on both guests' egress: netem loss 1% and 5%,
# reordering, duplication. Under each: rc_verify.py (SEND, WRITE with immediate, READ and
# atomics both ways at once, 1 B to 200 KiB, every byte checked) passes, and
# ib_{write,read,send}_bw (30 messages of 64 KiB) finish with a positive goodput, and rping
# -V (50 rounds of 1000 B) connects through rdma-cm, whose CM MADs over the GSI QP are
# lost too and resent by ib_cm. Slow is fine here; wrong is not.
# (ibv_rc_pingpong is not used under loss: it destroys its QP as soon as its own count is
# done, so the peer's last ACK can be lost with no one left to resend it, on any driver.)
. "$HOST_SHARE/selftests/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
for spec in 1 5 "delay 1ms reorder 10% 50%" "duplicate 5%"; do
  name=$(printf '%s' "$spec" | tr -c 'A-Za-z0-9' '_')
  netem_set "$spec"
  sync_point "verify-$name"
  rc_verify_pair sr0 "loss-$name" 1 || fail "rc_verify under netem '$spec'"
  log "ok: rc_verify under netem '$spec': SEND, WRITE, READ, atomics both ways, every byte checked"
  out=$(rping_pair "loss-$name" -C 50 -S 1000) || fail "rping -V under netem '$spec'"
  log "ok: rping -V under netem '$spec'"
  netem_set 0
  for t in ib_write_bw ib_read_bw ib_send_bw; do
    v=$(PERF_ITERS=30 perftest_pair sr0 "$t" "$spec" 30) || fail "$t under netem '$spec' failed"
    if is_client; then positive "$v" || fail "$t under netem '$spec': no goodput"; log "ok: $t under netem '$spec': $v Gb/s"; fi
  done
done
log "counters: $(rdma statistic show link sr0/1)"
sync_point done
sr_down_clean
