#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# Port counters between the two guests: after msg_check.py's 200 messages of 4096 B each
# way (every byte checked) over the testbed's link, which loses nothing, what each guest's
# sr0 counted sent (port_xmit_data, port_xmit_packets, in IBTA units) the other's counted
# received (port_rcv_data, port_rcv_packets), to the word; and at least the messages' own
# bytes. A resend (a spurious timeout on a slow guest) is counted sent and received alike,
# so it does not excuse a difference: the check is never skipped.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
sync_point up
msg_check_pair sr0 "$gidx" counted --iters 200 --size 4096 || fail "msg_check between the guests"
# The last acknowledgments taken in before anyone reads.
sleep 1
sync_point traffic-done
cnt() { cat /sys/class/infiniband/sr0/ports/1/counters/"$1"; }
# Resends (after a timeout or NAK, or a stall probe), and eth0's own packet counts, to tell
# a packet the testbed dropped from one the driver miscounted.
resends=$(( $(stat_of completer_retry_err) + $(stat_of sr_stall_probes) ))
eth() { cat /sys/class/net/eth0/statistics/"$1"; }
share_put counters "$(cnt port_xmit_data) $(cnt port_rcv_data) $(cnt port_xmit_packets) $(cnt port_rcv_packets) $resends"
sync_point counted
peer=$((3 - GUEST))
read -r pxd prd pxp prp presends <<< "$(share_get $peer counters)"
xd=$(cnt port_xmit_data) rd=$(cnt port_rcv_data) xp=$(cnt port_xmit_packets) rp=$(cnt port_rcv_packets)
log "g$GUEST sent $xd words in $xp packets, received $rd words in $rp packets; g$peer sent $pxd words in $pxp packets, received $prd in $prp; resends $resends here, $presends there; eth0 tx $(eth tx_packets) rx $(eth rx_packets) rx_dropped $(eth rx_dropped)"
[ "$xd" = "$prd" ] || fail "g$GUEST sent $xd words, g$peer received $prd"
[ "$rd" = "$pxd" ] || fail "g$peer sent $pxd words, g$GUEST received $rd"
[ "$xp" = "$prp" ] || fail "g$GUEST sent $xp packets, g$peer received $prp"
[ "$rp" = "$pxp" ] || fail "g$peer sent $pxp packets, g$GUEST received $rp"
# 200 messages of 4096 B each way: at least 204800 words.
[ "$xd" -ge 204800 ] || fail "g$GUEST counted $xd words sent, fewer than the messages' 204800"
log "ok: what each guest sent, the other received, to the word and the packet"
sync_point checked
sr_down_clean
