#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 60
# The `recovery` parameter is documented in modinfo, takes the five schemes, and an unknown
# value is rejected at load with a message.
. "$HOST_SHARE/selftests/lib.sh"
modprobe -r rxe_sr 2>/dev/null
dmesg_mark

info=$(modinfo rxe_sr)
expect_grep "modinfo documents recovery" '^parm: +recovery:.*gbn.*fasr.*srnic.*irn.*melo' "$info"
expect_grep "modinfo has the GPL license" '^license: +GPL' "$info"
expect_grep "modinfo has the rdma link alias" '^alias: +rdma-link-rxe_sr' "$info"

if modprobe rxe_sr recovery=bogus 2>/tmp/err; then
  modprobe -r rxe_sr
  fail "recovery=bogus was accepted"
fi
log "ok: recovery=bogus refused: $(cat /tmp/err)"
[ ! -e /sys/module/rxe_sr ] || fail "module present after a refused load"
expect_grep "kernel log names the bad value" "recovery=bogus: unknown scheme" "$(dmesg_since_mark)"

check "load with recovery=gbn" modprobe rxe_sr recovery=gbn
[ "$(cat /sys/module/rxe_sr/parameters/recovery)" = gbn ] || fail "parameter does not read gbn"
check "unload" modprobe -r rxe_sr
# The selective-repeat schemes are not in the kernel transport yet: refused, never a no-op.
for s in fasr srnic irn melo; do
  dmesg_mark
  if modprobe rxe_sr recovery=$s 2>/dev/null; then
    modprobe -r rxe_sr
    fail "recovery=$s was accepted, but the kernel transport runs go-back-N only"
  fi
  [ ! -e /sys/module/rxe_sr ] || fail "module present after refusing recovery=$s"
  expect_grep "recovery=$s refused with a reason" "recovery=$s: not in the kernel transport yet" "$(dmesg_since_mark)"
done
check "default is gbn" modprobe rxe_sr
[ "$(cat /sys/module/rxe_sr/parameters/recovery)" = gbn ] || fail "default is not gbn"
modprobe -r rxe_sr
check "no oops or warning in the kernel log" dmesg_clean
