#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# Forged RC requests. g2 connects an RC QP to g1's, READs from it,
# then forges requests at g1's QP from a plain UDP socket (roce_forge.py):
#  - 40 duplicate READ requests 1000+ PSNs back, with g1's valid R_Key and range: g1 sends
#    no response (sent_pkts does not move) and counts each in dup_rd_atomic_dropped
#    (rdma_rxe answers none either: answered in full, each would be a flood of responses);
#  - 10 in-sequence WRITEs with a bad R_Key from an address that is not the QP's peer: g1
#    drops them (rcvd_addr_mismatch) and its QP stays in RTS;
# then a READ and a WRITE over the same QPs still succeed.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
tag="t${TEST_INDEX:-0}-forge"
vals=$HOST_SHARE/vals
rm -f "$vals/$tag-"*
if is_server; then side=a peer=10.77.0.2; else side=b peer=10.77.0.1; fi
is_client && { ip addr add 10.77.0.3/24 dev eth0 || fail "second address"; }
timeout 300 python3 "$HOST_SHARE/selftests/lib/roce_forge.py" "$side" sr0 "$gidx" "$peer" "$tag" > /tmp/forge.out 2>&1 &
pid=$!
wait_file() { for _ in $(seq 600); do [ -f "$vals/$tag-$1" ] && return 0; kill -0 $pid 2>/dev/null || break; sleep 0.1; done; return 1; }
if is_server; then
  # Let the packets of each phase land before reading the counters.
  settle() { sleep 2; }
  wait_file phase-read || { cat /tmp/forge.out; fail "g2's READ did not happen"; }
  sent0=$(stat_of sent_pkts); dup0=$(stat_of dup_rd_atomic_dropped); mis0=$(stat_of rcvd_addr_mismatch)
  echo 1 > "$vals/$tag-phase-read-seen"
  wait_file phase-dup || fail "g2 sent no forged duplicates"
  settle
  sent1=$(stat_of sent_pkts); dup1=$(stat_of dup_rd_atomic_dropped)
  log "forged duplicate READs: sent_pkts +$((sent1 - sent0)), dup_rd_atomic_dropped +$((dup1 - dup0))"
  [ $((dup1 - dup0)) = 40 ] || fail "dup_rd_atomic_dropped moved by $((dup1 - dup0)), not 40 (did the forged packets parse?)"
  [ $((sent1 - sent0)) = 0 ] || fail "g1 answered forged duplicate READs with $((sent1 - sent0)) packets"
  log "ok: no response to 40 forged duplicate READs"
  echo 1 > "$vals/$tag-phase-dup-seen"
  wait_file phase-spoof || fail "g2 sent no spoofed requests"
  settle
  mis1=$(stat_of rcvd_addr_mismatch); sent2=$(stat_of sent_pkts)
  log "spoofed WRITEs: rcvd_addr_mismatch +$((mis1 - mis0)), sent_pkts +$((sent2 - sent1))"
  [ $((mis1 - mis0)) = 10 ] || fail "rcvd_addr_mismatch moved by $((mis1 - mis0)), not 10"
  [ $((sent2 - sent1)) = 0 ] || fail "g1 answered spoofed requests ($((sent2 - sent1)) packets)"
  log "ok: spoofed requests dropped and counted"
  echo 1 > "$vals/$tag-phase-spoof-seen"
fi
wait $pid; rc=$?
cat /tmp/forge.out
[ $rc = 0 ] || fail "roce_forge.py ($side) exited $rc"
is_client && { expect_grep "QP still works" '^READ and WRITE after the forged packets: OK$' "$(cat /tmp/forge.out)"; ip addr del 10.77.0.3/24 dev eth0; }
is_server && expect_grep "g1's QP still in RTS" '^qp state 3$' "$(cat /tmp/forge.out)"
sync_point done
sr_down_clean
