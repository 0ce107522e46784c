#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# rxe_sr <-> rxe_sr: rdma-core's ibv_srq_pingpong, unmodified, as a smoke test: 16 RC QPs
# receiving from one shared receive queue, 300 iterations of 4 KiB. Then msg_check.py with
# the same shape (16 QPs, one SRQ on each side, 300 messages of 4 KiB each way), every
# byte checked and every message on the QP it was sent on.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(pingpong_pair ibv_srq_pingpong -d sr0 -g "$gidx" -q 16 -n 300 -s 4096) || rc=1
printf '%s\n' "$out"
sync_point pingpong
[ "${rc:-0}" = 0 ] || fail "ibv_srq_pingpong failed"
expect_grep "300 iterations over 16 QPs on one SRQ" '300 iters in' "$out"
msg_check_pair sr0 "$gidx" srq --type srq --qps 16 --iters 300 --size 4096 || fail "msg_check, 16 QPs on one SRQ"
log "ok: 16 QPs on one SRQ, 300 messages of 4 KiB each way, every byte checked"
sync_point done
sr_down_clean
