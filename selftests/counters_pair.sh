#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# Port counters between the two guests (issue 14, item 5): after an ibv_rc_pingpong of 200
# data-checked rounds of 4096 B over the testbed's link (which loses nothing), what each
# guest's sr0 counted sent (port_xmit_data, port_xmit_packets, in IBTA units) the other's
# counted received (port_rcv_data, port_rcv_packets), to the word; and at least the
# pingpong's own bytes.
. "$HOST_SHARE/selftests/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
sync_point up
out=$(pingpong_pair ibv_rc_pingpong -d sr0 -g "$gidx" -n 200 -s 4096 -c) || { printf '%s\n' "$out"; fail "ibv_rc_pingpong between the guests"; }
printf '%s\n' "$out" | tail -2
# The last acknowledgments taken in before anyone reads.
sleep 1
sync_point traffic-done
cnt() { cat /sys/class/infiniband/sr0/ports/1/counters/"$1"; }
# Resends (after a timeout or NAK, or a stall probe) would mean a packet the host's link
# dropped: it counts sent twice and received once.
resends=$(( $(stat_of completer_retry_err) + $(stat_of sr_stall_probes) ))
share_put counters "$(cnt port_xmit_data) $(cnt port_rcv_data) $(cnt port_xmit_packets) $(cnt port_rcv_packets) $resends"
sync_point counted
peer=$((3 - GUEST))
read -r pxd prd pxp prp presends <<< "$(share_get $peer counters)"
xd=$(cnt port_xmit_data) rd=$(cnt port_rcv_data) xp=$(cnt port_xmit_packets) rp=$(cnt port_rcv_packets)
log "g$GUEST sent $xd words in $xp packets, received $rd words in $rp packets; g$peer sent $pxd words in $pxp packets, received $prd in $prp; resends $resends here, $presends there"
[ "$resends" = 0 ] && [ "$presends" = 0 ] || skip "a packet was resent (the host's link dropped one): the counts cannot agree"
[ "$xd" = "$prd" ] || fail "g$GUEST sent $xd words, g$peer received $prd"
[ "$rd" = "$pxd" ] || fail "g$peer sent $pxd words, g$GUEST received $rd"
[ "$xp" = "$prp" ] || fail "g$GUEST sent $xp packets, g$peer received $prp"
[ "$rp" = "$pxp" ] || fail "g$peer sent $pxp packets, g$GUEST received $rp"
# 200 rounds of 4096 B each way: at least 204800 words.
[ "$xd" -ge 204800 ] || fail "g$GUEST counted $xd words sent, fewer than the pingpong's 204800"
log "ok: what each guest sent, the other received, to the word and the packet"
sync_point checked
sr_down_clean
