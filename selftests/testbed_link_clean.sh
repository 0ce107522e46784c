#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# The virtual link adds no loss of its own. g1 sends ICMP echo requests to g2, with netem 0%
# and then 2% on g1's egress; counted at both ends (ping and the qdisc on g1, the ICMP MIB on
# g2): every reply came back, and every missing request is one netem dropped. netem also
# drops g1's own background frames (ARP, IPv6 ND/MLD), so its drop count may exceed the lost
# requests by at most the background frames it was offered (its Sent + dropped, less the
# requests).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
# The test bed only, no rxe_sr code: the default pass covers it; the KASAN passes (quick)
# leave it out.
quick && skip "quick mode: no rxe_sr code under test"

COUNT=1500
# Echo requests received (IcmpMsg InType8; the MIB lists a type only once it has been seen).
in_echos() {
  awk '/^IcmpMsg:/ { if (!h) { split($0, k); h = 1 } else { for (i = 2; i <= NF; i++) if (k[i] == "InType8") n = $i } }
       END { print n + 0 }' /proc/net/snmp
}

for loss in 0 2; do
  sync_point "l$loss-begin"
  is_client && share_put "l$loss-before" "$(in_echos)"
  sync_point "l$loss-ready"
  if is_server; then
    netem_set "$loss"
    ping -q -c "$COUNT" -i 0.002 -s 1000 -W 1 10.77.0.2 > /tmp/ping.out 2>&1
    cat /tmp/ping.out
    # " Sent B bytes P pkt (dropped D, overlimits ...)": frames netem passed and dropped.
    read -r passed dropped < <(tc -s qdisc show dev eth0 | awk '/Sent/ { for (i = 1; i < NF; i++) { if ($i == "pkt") p = $(i - 1); if ($i ~ /dropped$/) { d = $(i + 1); gsub(",", "", d) } } print p + 0, d + 0; exit }')
    netem_set 0
    sent=$(awk '/packets transmitted/ { print $1 }' /tmp/ping.out)
    replies=$(awk '/packets transmitted/ { print $4 }' /tmp/ping.out)
    share_put "l$loss-ping" "${sent:-0} ${replies:-0} ${dropped:-0} ${passed:-0}"
  fi
  sleep 1
  sync_point "l$loss-sent"
  is_client && share_put "l$loss-after" "$(in_echos)"
  sync_point "l$loss-end"
  if is_client; then
    read -r sent replies dropped passed < <(share_get 1 "l$loss-ping")
    got=$(( $(share_get 2 "l$loss-after") - $(share_get 2 "l$loss-before") ))
    lost=$((sent - got))
    background=$((passed + dropped - sent))
    log "netem ${loss}%: g1 sent $sent echo requests, its netem dropped $dropped of $((passed + dropped)) frames ($background background), g2 received $got, g1 got $replies replies"
    [ "$sent" -eq "$COUNT" ] || fail "ping sent $sent of $COUNT"
    [ "$lost" -le "$dropped" ] || fail "the link lost $((lost - dropped)) requests by itself"
    [ "$lost" -ge $((dropped - background)) ] || fail "netem counted $dropped drops but only $lost requests are missing and $background background frames were offered"
    [ "$replies" -eq "$got" ] || fail "the link lost $((got - replies)) replies by itself"
    if [ "$loss" = 0 ]; then
      [ "$dropped" -eq 0 ] || fail "netem dropped $dropped with 0% loss"
    else
      # 2% of 1500: expect ~30; far from zero and far below 10%.
      [ "$dropped" -gt 5 ] && [ "$dropped" -lt $((COUNT / 10)) ] || fail "netem ${loss}% dropped $dropped of $COUNT"
    fi
  fi
done
log "the link is clean: all loss is netem's"
