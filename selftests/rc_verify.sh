#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# rxe_sr <-> rxe_sr: rc_verify.py, lossless, two rounds: SEND (1 B .. 200 KiB, two-SGE
# gathers, inline, with immediate), RDMA WRITE and WRITE with immediate, RDMA READ into two
# SGEs, FETCH_ADD and COMPARE_SWAP, both directions at once, every byte and every returned
# value checked. (No count of retries is asserted: on the KASAN kernel a first timeout,
# before any RTT sample, can fire spuriously.)
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
rc_verify_pair sr0 clean 2 || fail "rc_verify"
log "ok: rc_verify: every check passed"
log "counters: $(rdma statistic show link sr0/1)"
sync_point done
sr_down_clean
