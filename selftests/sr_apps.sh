#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1800
# The applications' tests again, with both guests' rxe_sr loaded with recovery=fasr and then
# recovery=srnic (sr_up takes RXE_SR_RECOVERY): rc_pingpong.sh (ibv_rc_pingpong, msg_check.py),
# rping.sh (rping -V), srq_pingpong.sh, rc_perftest.sh (the perftest matrix), rdma_core_suite.sh
# (rdma-core's suite, rxe_sr looping back within its device, against rdma_rxe's results in
# the same run) and nvme_rdma.sh (NVMe over RDMA, host and target). Each must pass as it does
# with go-back-N, and its QPs must have agreed on the scheme (sr_down_clean checks
# sr_qps_negotiated). Quick (the KASAN pass): rc_pingpong and rping under both; the rest
# under the SR schemes runs in the full pass (on the KASAN kernel rc_perftest and the
# rdma-core suite are slow; rc_sr and rc_sr_pool carry SR traffic there).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
tests=(rc_pingpong.sh rping.sh srq_pingpong.sh rc_perftest.sh rdma_core_suite.sh nvme_rdma.sh)
quick && tests=(rc_pingpong.sh rping.sh)
for scheme in fasr srnic; do
  run=("${tests[@]}")
  for t in "${run[@]}"; do
    f=$HOST_SHARE/selftests/$t
    limit=$(test_limit "$f")
    log "$t under recovery=$scheme"
    sync_point "start-$scheme-${t%.sh}" 600
    if ! RXE_SR_RECOVERY=$scheme TEST_INDEX="${TEST_INDEX:-0}-$scheme-${t%.sh}" \
        timeout -k 5 "$limit" bash "$f" > "$OUT/sr_apps.$scheme.$t.log" 2>&1 < /dev/null; then
      tail -25 "$OUT/sr_apps.$scheme.$t.log"
      fail "$t under recovery=$scheme (log: sr_apps.$scheme.$t.log)"
    fi
    grep -h "ok: .* QPs negotiated" "$OUT/sr_apps.$scheme.$t.log" | tail -1
    log "ok: $t under recovery=$scheme"
  done
done
