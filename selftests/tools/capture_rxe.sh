#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Not a test: the guest side of scripts/capture-rxe. Runs a little of every RoCEv2 packet
# kind between two rdma_rxe guests and captures it on g1 (tcpdump, full frames, both
# directions) into OUT/rdma_rxe.pcap: the golden vectors of tests/wire_rxe_capture.rs.
. "$HOST_SHARE/selftests/lib/lib.sh"
TEST_INDEX=capture
rxe_ref_up || { echo "rdma_rxe did not come up"; exit 1; }
gidx=$(roce_gid_index rxe0)
if is_server; then
  tcpdump -i eth0 -s 0 -U -w "$OUT/rdma_rxe.pcap" udp port 4791 > /tmp/tcpdump.log 2>&1 &
  tdpid=$!
  sleep 2
fi
sync_point capture-on

# pair NAME SERVER-CMD...: the command on g1, then the same with the server address on g2.
pair() {
  local name=$1; shift
  if is_server; then
    timeout 60 "$@" > "$OUT/$name.srv.log" 2>&1 &
    local pid=$!
    sleep 1
    sync_point "$name-ready"
    wait $pid; echo "$name server exit $?"
  else
    sync_point "$name-ready"
    retry 5 timeout 60 "$@" "$SERVER_IP" > "$OUT/$name.cli.log" 2>&1; echo "$name client exit $?"
  fi
  sync_point "$name-done"
}

# SEND (first/middle/last with the 1024-byte path MTU), with the received data checked.
pair rc_send ibv_rc_pingpong -d rxe0 -g "$gidx" -n 3 -s 2500 --chk
# UD SEND (DETH), single packets.
pair ud_send ibv_ud_pingpong -d rxe0 -g "$gidx" -n 3 -s 512
# RDMA WRITE first/middle/last/only and ACKs; RDMA READ requests and responses.
pair write ib_write_bw -d rxe0 -x "$gidx" -n 8 -s 2600 -F
pair read ib_read_bw -d rxe0 -x "$gidx" -n 8 -s 2600 -F
# Atomics: compare-and-swap and fetch-and-add (AtomicETH, AtomicAckETH).
pair cas ib_atomic_bw -d rxe0 -x "$gidx" -n 8 -A CMP_AND_SWAP -F
pair faa ib_atomic_bw -d rxe0 -x "$gidx" -n 8 -A FETCH_AND_ADD -F
# Loss on the client's egress: NAKs (PSN sequence error) and retransmissions.
is_client && netem_set 30
pair lossy ib_write_bw -d rxe0 -x "$gidx" -n 20 -s 4096 -F
netem_set 0

if is_server; then
  sleep 1
  kill -INT "$tdpid"; wait "$tdpid"
  cat /tmp/tcpdump.log
fi
rxe_ref_down
