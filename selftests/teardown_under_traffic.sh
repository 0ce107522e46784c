#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# Tearing rxe_sr down while RC traffic runs (ib_write_bw, 2 QPs with 4 WRITEs of 64 KiB
# each in flight): rmmod is refused while a process holds the device (as for rdma_rxe: the
# verbs core holds the module); `rdma link del` is started while the traffic still runs and
# completes once the application is killed (uverbs waits for its file to close, and the
# QPs are destroyed with work in flight), on both the receiving and the sending guest; then
# the module unloads with no object left and the kernel log is clean. The application may
# see errors: the other side's device disappears under it.
. "$HOST_SHARE/selftests/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
leak_begin
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
# --run_infinitely: the application runs until it is killed, so it still holds the device
# however slowly the guests reach the teardown (a fixed -D once ran out first on the
# KASAN kernel and left nothing for the rmmod check to refuse). A small window (-q 2 -t 4):
# 8 QPs with perftest's default depth of 128 put 64 MiB in flight, more than a KASAN guest's
# receive path absorbs, and the retries ran out (retry_exceeded_err) before the teardown.
args=(-d sr0 -x "$gidx" -s 65536 -q 2 -t 4 --run_infinitely -D 2 -F --report_gbits)
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
if rmmod rxe_sr 2>/tmp/rmmod.err; then
  fail "rmmod succeeded while ib_write_bw had the device open"
fi
log "ok: rmmod refused while in use: $(cat /tmp/rmmod.err)"
# The receiver (g1) deletes its link first, the sender 2 s later; each kills its own
# application 3 s into its `rdma link del`.
is_client && sleep 2
start=$(date +%s)
timeout 90 rdma link del sr0 &
del=$!
sleep 3
if kill -0 $del 2>/dev/null; then
  log "ok: rdma link del is waiting for the application"
else
  log "rdma link del returned before the application closed the device"
fi
kill -TERM $app 2>/dev/null
wait $app; log "ib_write_bw exit status $? (killed; errors allowed: the device went away)"
wait $del || fail "rdma link del sr0 failed or hung"
log "ok: rdma link del returned after $(( $(date +%s) - start )) s"
ibv_devices | grep -qw sr0 && fail "sr0 is still listed"
sync_point deleted
leak_check
check "rmmod" rmmod rxe_sr
expect_grep "nothing left at unload" 'objects left: 0 ucontexts, 0 PDs, 0 CQs, 0 MRs, 0 QPs, 0 AHs, 0 SRQs, 0 MWs' "$(dmesg_since_mark)"
check "no oops or warning in the kernel log" dmesg_clean
