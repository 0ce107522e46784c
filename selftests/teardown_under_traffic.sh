#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# Tearing rxe_sr down while RC traffic runs (ib_write_bw, 2 QPs with 4 WRITEs of 64 KiB
# each in flight), with the application still running: on g1 (the receiver) `rdma link
# del`, on g2 (the sender) at the same time `rmmod rxe_sr`. rxe_sr has disassociate_ucontext, so
# neither waits for the application (rdma_rxe's would wait, and its rmmod is refused while
# a process has the device open): the verbs core destroys the process's objects with work
# in flight and the process sees errors (EIO, IBV_EVENT_DEVICE_FATAL) from then on. Both
# return within 60 s while a process that holds a QP and ignores the device's errors (an
# ibv_rc_pingpong server waiting for a client that does not come) still runs: ib_write_bw
# may end on the errors first (on the debug kernel it did, during g2's rmmod). Once both
# are gone, the module unloads with no object left, counts the disassociated contexts, and
# the kernel log is clean.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
leak_begin
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
# --run_infinitely: the application runs until it is killed, so it still holds the device
# however slowly the guests reach the teardown (a fixed -D once ran out first on the
# KASAN kernel, before the teardown it was to run under). A small window (-q 2 -t 4):
# 8 QPs with perftest's default depth of 128 put 64 MiB in flight, more than a KASAN guest's
# receive path absorbs, and the retries ran out (retry_exceeded_err) before the teardown.
args=(-d sr0 -x "$gidx" -s 65536 -q 2 -t 4 --run_infinitely -D 2 -F --report_gbits)
qp_holder_start sr0 "$gidx"
if is_server; then
  timeout 180 ib_write_bw "${args[@]}" > /tmp/tt.out 2>&1 &
  app=$!
  sleep 1
  sync_point ready
else
  sync_point ready
  timeout 180 ib_write_bw "${args[@]}" "$SERVER_IP" > /tmp/tt.out 2>&1 &
  app=$!
fi
sleep 3
sync_point flowing
log "counters while flowing: $(rdma statistic show link sr0/1)"
kill -0 $app 2>/dev/null || fail "ib_write_bw ended before the teardown began: $(tail -3 /tmp/tt.out)"
# Both at once, so that each application is still running (the other side's teardown
# makes it fail, but only after its retries).
if is_server; then what="rdma link del sr0"; else what="rmmod rxe_sr"; fi
start=$SECONDS
timeout 60 $what || fail "$what failed or did not return within 60 s with ib_write_bw running"
log "ok: $what returned after $((SECONDS - start)) s, without waiting for the application"
kill -0 $app 2> /dev/null && alive=1 || alive=0
no_match -w sr0 ibv_devices || fail "sr0 is still listed"
qp_holder_stop "$what returned"
kill -TERM $app 2> /dev/null
wait $app
log "ib_write_bw exit status $? (alive after $what: $alive; errors allowed: the device went away)"
tail -n 3 /tmp/tt.out
sync_point deleted
leak_check
is_server && check "rmmod" rmmod rxe_sr
out=$(dmesg_since_mark)
expect_grep "nothing left at unload" 'objects left: 0 ucontexts, 0 PDs, 0 CQs, 0 MRs, 0 QPs, 0 AHs, 0 SRQs, 0 MWs' "$out"
expect_disassociated "$out"
check "no oops or warning in the kernel log" dmesg_clean
