#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 90
# guests: 1
# rxe_sr loads (pulling ib_core and udp_tunnel), unloads, and does so repeatedly, leaving
# nothing behind.
. "$HOST_SHARE/selftests/lib/lib.sh"
dmesg_mark
for i in 1 2 3; do
  check "load #$i" modprobe rxe_sr
  [ -d /sys/module/rxe_sr ] || fail "/sys/module/rxe_sr missing after load"
  lsmod | grep -q '^ib_core' || fail "ib_core was not pulled in"
  check "unload #$i" rmmod rxe_sr
  [ ! -e /sys/module/rxe_sr ] || fail "/sys/module/rxe_sr left after rmmod"
done
expect_grep "load message" 'rxe_sr: loaded \(recovery=gbn; SR pools: 20 units, 326 blocks; MELO pool: 128 blocks; FaSR pipe: 256 PSNs; SR window: 4096 PSNs; go-back-N window: 128 PSNs; in flight per device: 256 PSNs; FEC: off; ICRC: crc32-generic\)' "$(dmesg_since_mark)"
expect_grep "unload message, nothing left" 'rxe_sr: unloaded \(0 devices were created, 0 are left;' "$(dmesg_since_mark)"
check "no oops or warning in the kernel log" dmesg_clean
