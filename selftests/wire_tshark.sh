#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# rxe_sr's packets are standard RoCEv2: g1 captures its eth0 while the guests run
# rc_verify (RC SEND/WRITE/READ/atomics both ways), ibv_uc_pingpong and ibv_ud_pingpong,
# then Wireshark's dissector (tshark) reads every RoCEv2 datagram as InfiniBand with no
# malformed packet and no expert warning or error, and the capture holds the RC, UC and
# UD opcodes the exchange uses.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
command -v tshark >/dev/null || fail "tshark is not in the guest image"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
if is_server; then
  tcpdump -i eth0 -s 0 -w /tmp/roce.pcap udp port 4791 2>/tmp/tcpdump.err &
  cap=$!
  sleep 1
fi
sync_point capturing
rc_verify_pair sr0 wire 1 > /tmp/verify.out || fail "rc_verify: $(tail -3 /tmp/verify.out)"
out=$(pingpong_pair ibv_uc_pingpong -d sr0 -g "$gidx" -n 20 -s 2048 --chk) || fail "ibv_uc_pingpong: $out"
sync_point uc-done
out=$(pingpong_pair ibv_ud_pingpong -d sr0 -g "$gidx" -n 20 -s 512) || fail "ibv_ud_pingpong: $out"
sync_point done
if is_server; then
  # The payloads are test patterns: the dissector's payload guessing (an Ethertype, RPC
  # over RDMA) would read them as other protocols. Only the RoCEv2/InfiniBand headers are
  # under test here, so payloads stay raw data.
  ts() { tshark -o infiniband.identify_payload:FALSE --disable-protocol rpcordma "$@" 2>/dev/null; }
  sleep 1
  kill -INT $cap; wait $cap
  log "$(tail -2 /tmp/tcpdump.err | tr '\n' ' ')"
  total=$(ts -r /tmp/roce.pcap | wc -l)
  ib=$(ts -r /tmp/roce.pcap -Y infiniband | wc -l)
  log "captured $total RoCEv2 datagrams, $ib dissected as InfiniBand"
  [ "$total" -gt 500 ] || fail "too few packets captured ($total)"
  [ "$ib" = "$total" ] || fail "only $ib of $total datagrams dissect as InfiniBand"
  expert=$(ts -r /tmp/roce.pcap -q -z expert,warn)
  printf '%s\n' "$expert"
  if printf '%s\n' "$expert" | grep -Eq '^(Errors|Warns) \('; then fail "tshark reports warnings or errors"; fi
  bad=$(ts -r /tmp/roce.pcap -Y _ws.malformed | wc -l)
  [ "$bad" = 0 ] || fail "$bad malformed packets"
  log "ok: no malformed packet, no expert warning or error"
  ops=$(ts -r /tmp/roce.pcap -T fields -e infiniband.bth.opcode | sort -un | tr '\n' ' ')
  log "opcodes seen: $ops"
  # RC SEND first/middle/last/only (+imm), WRITE first/middle/last (+imm), READ request
  # and responses first/middle/last, ACK, atomic ACK, CMP_SWAP, FETCH_ADD; UC SEND
  # first/last; UD SEND only.
  for op in 0 1 2 3 4 5 6 7 8 9 12 13 14 15 17 18 19 20 32 34 100; do
    printf ' %s ' "$ops" | grep -q " $op " || fail "opcode $op not seen"
  done
  log "ok: every expected RC, UC and UD opcode was dissected"
fi
sync_point checked
sr_down_clean
