#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of scripts/profile (not a test): one perftest cell between the guests under
# PROF_SCHEME at PROF_LOSS% loss on both egresses, with perf sampling every CPU of each
# guest for the middle of the run; each guest prints its time by command and DSO, its
# hottest symbols, and the callers of the hottest few.
. "$HOST_SHARE/selftests/lib.sh"
TEST_INDEX=profile
scheme=${PROF_SCHEME:-fasr} loss=${PROF_LOSS:-5} tool=${PROF_TOOL:-ib_write_bw} secs=${PROF_SECS:-6}
echo 0 > /proc/sys/kernel/kptr_restrict
echo -1 > /proc/sys/kernel/perf_event_paranoid
load_rdma_core || exit 1
modprobe rxe_sr recovery="$scheme" && rdma link add sr0 type rxe_sr netdev eth0 && wait_port_active sr0 || exit 1
sync_point "profile-up"
data=/tmp/profile.data
# TCG guests have no PMU: the cpu-clock software event, with kernel stacks.
( sleep 2; perf record -q -a -g -e cpu-clock -F 499 -o "$data" -- sleep $((secs - 3)) >/dev/null 2>&1 ) &
bw=$(perftest_pair sr0 "$tool" "$loss" "$secs" 2>/dev/null) || bw=fail
wait
is_client && log "profile: $tool recovery=$scheme loss=$loss% goodput $bw Gb/s"
report() { perf report -i "$data" --stdio --no-children "$@" 2>/dev/null | grep -v '^#' | grep .; }
log "profile: time by command and DSO"
report --sort comm,dso -g none | head -12
log "profile: hottest symbols"
report --sort sym -g none | head -40
for s in $(report --sort sym -g none | awk '$2 == "[k]" { print $3 }' | head -4); do
  log "profile: callers of $s"
  report --symbols="$s" -g caller,0.5,callee,function,percent --percent-limit 0.5 | head -30
done
rdma link del sr0
modprobe -r rxe_sr
