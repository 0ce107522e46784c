#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# sr_window_psns: the SR window is a load parameter, and the SR state of each QP is sized
# for it. For irn and srnic (whose bitmaps are as long as the window) and fasr, both
# guests loaded with sr_window_psns=16384, then g1 with 16384 and g2 with the default 4096
# (each end keeps the smaller of the two): rc_verify passes under 5% loss on both egresses
# (every byte checked), the QPs agreed on the scheme and placed packets out of order, and
# the module unloads with nothing left.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
at_least() { # NAME MIN
  local v; v=$(stat_of "$1")
  [ -n "$v" ] && [ "$v" -ge "$2" ] || fail "$1 is '${v}', expected >= $2"
}
schemes=(irn srnic fasr)
quick && schemes=(irn srnic)
for scheme in "${schemes[@]}"; do
  for mine in 16384 mixed; do
    window=16384
    [ "$mine" = mixed ] && ! is_server && window=4096
    sr_up "$scheme" sr_window_psns=$window
    expect_grep "the window is in effect" "SR window: $window PSNs" "$(dmesg_since_mark)"
    netem_set 5
    sync_point "verify-$scheme-$mine"
    rc_verify_pair sr0 "win-$scheme-$mine" 1 || fail "$scheme, window $window ($mine): rc_verify under 5% loss"
    netem_set 0
    at_least sr_qps_negotiated 1
    at_least sr_ooo_placed 1
    log "ok: $scheme: window $window here ($mine), rc_verify under 5% loss, every byte checked"
    sync_point "down-$scheme-$mine"
    sr_down_clean
  done
done
