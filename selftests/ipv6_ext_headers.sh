#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 150
# IPv6 RoCEv2 packets with extension headers. Both guests take an IPv6
# address (fd00:77::N); g2 forges three UD SENDs to a UD QP on g1's sr0 from a plain UDP
# socket (roce_v6_ext.py): one without extension headers (the control), one with a
# destination options header, one with hop-by-hop and destination options headers. All
# three must complete on g1 with their payload, source QPN and GRH (a receive path that
# takes UDP only as the IPv6 next header drops the last two).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
tag="t${TEST_INDEX:-0}-v6ext"
rm -f "$HOST_SHARE/vals/$tag-"*
v6=fd00:77::$GUEST
check "IPv6 address $v6" ip -6 addr add "$v6/64" dev eth0 nodad
trap 'ip -6 addr del "$v6/64" dev eth0 2>/dev/null' EXIT
sr_up
if is_server; then
  out=$(timeout 90 python3 "$HOST_SHARE/selftests/lib/roce_v6_ext.py" recv sr0 "$tag" 2>&1); rc=$?
else
  # g1's address must answer neighbour discovery before the first message goes.
  for _ in $(seq 50); do ping -6 -c1 -W1 fd00:77::1 >/dev/null 2>&1 && break; sleep 0.2; done
  out=$(timeout 90 python3 "$HOST_SHARE/selftests/lib/roce_v6_ext.py" send "$v6" fd00:77::1 "$tag" 2>&1); rc=$?
fi
printf '%s\n' "$out"
sync_point done
[ $rc = 0 ] || fail "roce_v6_ext.py exited $rc"
is_server && expect_grep "all three messages received and verified" '^received 3 of 3, verified 3$' "$out"
sr_down_clean
