#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# IBTA 1.5 FLUSH and ATOMIC WRITE on the wire, both ways at once (rc_flush.py, run with
# rdma-core 65's pyverbs and stock rxe provider from the image's forky root): first
# rdma_rxe (g1) with rxe_sr (g2), then rxe_sr with rxe_sr. Each side's WRITE, ATOMIC WRITE
# and two FLUSHes (a range, the whole MR) complete in order with their opcodes, the bytes
# are in the peer's memory, and a FLUSH to persistence, which no MR of either driver
# grants, completes with a remote access error. rdma_rxe answers FLUSH and ATOMIC WRITE
# with an empty RDMA READ response, rxe_sr with an ACK: each requester takes the other's.
# rdma_rxe's FLUSH carries its own ICRC, which rxe_sr takes; rdma_rxe drops a FLUSH with
# the IBTA ICRC, so rxe_sr sends it none (noflush).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
dmesg_mark
if is_server; then side=a peer=10.77.0.2; else side=b peer=10.77.0.1; fi

# flush_pass TAG flush|noflush: rc_flush.py on this guest's device ($DEV) against the
# other guest's.
flush_pass() {
  local gidx out rc=0
  gidx=$(roce_gid_index "$DEV") || fail "no RoCEv2 GID on $DEV"
  sync_point "$1-up"
  out=$(timeout 120 chroot $FORKY python3 "$HOST_SHARE/selftests/lib/rc_flush.py" $side "$DEV" "$gidx" $peer "flush-$1-t${TEST_INDEX:-0}" "$2" 2>&1) || rc=1
  printf '%s\n' "$out"
  printf '%s\n' "$out" | grep -q '^flush: OK' || rc=1
  [ $rc = 0 ] || fail "rc_flush.py ($1)"
  log "ok: FLUSH and ATOMIC WRITE, $1: every check passed"
  sync_point "$1-done"
}

if is_server; then mixed_up rxe; out=flush; else mixed_up sr; out=noflush; fi
trap 'chroot_leave $FORKY; is_server && rxe_ref_down' EXIT
check "/proc, /sys, /dev and the share bound into $FORKY" chroot_enter $FORKY
flush_pass rdma_rxe-rxe_sr $out
if is_server; then rxe_ref_down; fi
check "no oops or warning in the kernel log" dmesg_clean
is_client && sr_down_clean
sync_point mixed-down

mixed_up sr
flush_pass rxe_sr-rxe_sr flush
sr_down_clean
