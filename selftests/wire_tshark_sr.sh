#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# rxe_sr's SR format field by field: for each recovery= scheme (quick: fasr; the format does
# not depend on the kernel's debug options, the default pass checks every scheme), g1
# captures its eth0 while the guests, both running the scheme, run rc_verify under 1% loss;
# then tshark with rxe_sr's Lua dissector (tools/wireshark/rxe_sr.lua) reads the capture:
# every RoCEv2 datagram is dissected with no malformed packet and no expert warning, the
# standard ones carry the capability probe or its echo (rxe_sr.cap) of SR wire version 4,
# the SR ones (BTH TVer 1) carry MSN-ETHs and SR-ACK-ETHs, each SR-ACK-ETH advertising the
# sender's 4096-PSN window (Window 12), and the scheme's own feedback is there: SACKs for
# fasr and irn, HOLE acknowledgments for srnic and melo.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
command -v tshark >/dev/null || fail "tshark is not in the guest image"
lua="$HOST_SHARE/tools/wireshark/rxe_sr.lua"
ts() { tshark -X lua_script:"$lua" -o infiniband.identify_payload:FALSE --disable-protocol rpcordma "$@" 2>/tmp/tshark.err; }
count() { ts -r /tmp/sr.pcap -Y "$1" | wc -l; }
schemes=(fasr srnic irn melo)
quick && schemes=(fasr)
for scheme in "${schemes[@]}"; do
  sr_up "$scheme"
  if is_server; then
    tcpdump -i eth0 -s 0 -w /tmp/sr.pcap udp port 4791 2>/tmp/tcpdump.err &
    cap=$!
    sleep 1
  fi
  sync_point "capturing-$scheme"
  netem_set 1
  rc_verify_pair sr0 "wire-$scheme" 1 > /tmp/verify.out || fail "$scheme: rc_verify: $(tail -3 /tmp/verify.out)"
  netem_set 0
  sync_point "done-$scheme"
  if is_server; then
    sleep 1
    kill -INT $cap; wait $cap
    # One dissection for the counts (tshark with the Lua dissector is slow): a line a
    # datagram, with its TVer, capability flag, MSN, SR-ACK kind, SR-ACK window and
    # capability version, each empty where the datagram has no such field.
    ts -r /tmp/sr.pcap -T fields -E separator=';' -e rxe_sr.bth.tver -e rxe_sr.cap \
      -e rxe_sr.msneth.msn -e rxe_sr.srack.kind -e rxe_sr.srack.window -e rxe_sr.cap.version \
      > /tmp/fields || fail "$scheme: tshark could not read the capture"
    total=$(wc -l < /tmp/fields)
    case $scheme in fasr|irn) kind=1 ;; *) kind=4 ;; esac
    want="rxe_sr.srack.kind == $kind"
    read -r sr caps msn acks fb win v3 < <(awk -F';' -v k=$kind '$1 == 1 { s++ } $2 != "" { c++ } $3 != "" { m++ }
      $4 != "" { a++ } $4 == k { f++ } $5 == 12 { w++ } $2 != "" && $6 == 4 { v++ }
      END { print s + 0, c + 0, m + 0, a + 0, f + 0, w + 0, v + 0 }' /tmp/fields)
    log "$scheme: $total datagrams: $sr in the SR format ($msn with an MSN-ETH, $acks SR ACKs, $win of them with Window 12, $fb of '$want'), $caps standard ones with the capability ($v3 of version 4)"
    [ "$total" -gt 300 ] || fail "$scheme: too few packets captured ($total)"
    [ "$sr" -gt 100 ] || fail "$scheme: only $sr SR-format packets"
    [ "$caps" -ge 2 ] || fail "$scheme: no capability probe and echo seen"
    [ "$v3" = "$caps" ] || fail "$scheme: $caps capability probes or echoes, $v3 of them of SR wire version 4"
    [ "$msn" -gt 0 ] && [ "$acks" -gt 0 ] || fail "$scheme: MSN-ETH or SR-ACK-ETH missing"
    [ "$win" = "$acks" ] || fail "$scheme: $acks SR ACKs, only $win of them advertising a 4096-PSN window (Window 12)"
    [ "$fb" -gt 0 ] || fail "$scheme: no '$want' in the capture"
    expert=$(ts -r /tmp/sr.pcap -q -z expert,warn)
    printf '%s\n' "$expert"
    if printf '%s\n' "$expert" | grep -Eq '^(Errors|Warns) \('; then fail "$scheme: tshark reports warnings or errors"; fi
    [ "$(count '_ws.malformed')" = 0 ] || fail "$scheme: malformed packets"
    # (tshark warns about running as root; anything else on stderr is the dissector's.)
    err=$(grep -v 'Running as user "root"' /tmp/tshark.err | grep . || true)
    [ -z "$err" ] || fail "$scheme: tshark: $(printf '%s\n' "$err" | head -3)"
  fi
  sync_point "checked-$scheme"
  sr_down_clean
done
