#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# The device attribute /sys/class/infiniband/sr0/recovery: it reads the scheme recovery=
# gave at load; writing a scheme makes the RC QPs connected afterwards use it (a benchmark
# switches schemes without reloading); an unknown value is refused with EINVAL. Loaded with
# gbn, rc_verify's QPs stay standard; after writing fasr on both guests, the next
# rc_verify's QPs negotiate SR (sr_qps_negotiated grows), every byte checked.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
attr=/sys/class/infiniband/sr0/recovery
sr_up gbn
[ "$(cat $attr)" = gbn ] || fail "$attr reads '$(cat $attr)', not gbn"
rc_verify_pair sr0 sysfs-gbn 1 > /tmp/verify.out || fail "rc_verify with gbn: $(tail -3 /tmp/verify.out)"
[ "$(stat_of sr_qps_negotiated)" = 0 ] || fail "gbn QPs negotiated SR"
sync_point gbn-done
if echo bogus > $attr 2>/dev/null; then fail "writing bogus to $attr was accepted"; fi
[ "$(cat $attr)" = gbn ] || fail "a refused write changed $attr"
check "write fasr to $attr" sh -c "echo fasr > $attr"
[ "$(cat $attr)" = fasr ] || fail "$attr reads '$(cat $attr)' after writing fasr"
sync_point switched
rc_verify_pair sr0 sysfs-fasr 1 > /tmp/verify.out || fail "rc_verify with fasr: $(tail -3 /tmp/verify.out)"
n=$(stat_of sr_qps_negotiated)
[ "$n" -ge 1 ] || fail "no QP negotiated SR after the switch to fasr ($n)"
log "ok: after the write, $n QPs negotiated fasr; every byte checked"
sync_point fasr-done
sr_down_clean
