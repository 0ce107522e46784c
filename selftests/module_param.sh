#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# guests: 1
# The `recovery` parameter is documented in modinfo, takes the five schemes, and an unknown
# value is rejected at load with a message; the SR pool sizes are documented, and a size out
# of 1..65534 is refused at load with a message naming it; so is an SR window that is not
# a power of two from 512 to 4194304 or is below the go-back-N window, a FaSR pipe past
# the SR window, and a go-back-N window outside 128..1024.
. "$HOST_SHARE/selftests/lib/lib.sh"
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
for s in fasr srnic irn melo; do
  check "load with recovery=$s" modprobe rxe_sr recovery=$s
  [ "$(cat /sys/module/rxe_sr/parameters/recovery)" = "$s" ] || fail "parameter does not read $s"
  check "unload after recovery=$s" modprobe -r rxe_sr
done
# refused PARAM VALUE: loading with PARAM=VALUE fails, leaves no module, and says why.
refused() {
  dmesg_mark
  if modprobe rxe_sr "$1=$2" 2>/dev/null; then
    modprobe -r rxe_sr
    fail "$1=$2 was accepted"
  fi
  [ ! -e /sys/module/rxe_sr ] || fail "module present after refusing $1=$2"
  expect_grep "$1=$2 refused with a reason" "$1: out of range" "$(dmesg_since_mark)"
}
for p in sr_pool_units sr_pool_blocks melo_pool_blocks; do
  expect_grep "modinfo documents $p" "^parm: +$p:.*1\.\.65534" "$info"
  for v in 0 65535; do
    refused "$p" "$v"
  done
done
expect_grep "modinfo documents sr_window_psns" "^parm: +sr_window_psns:.*power of two, 512\.\.4194304" "$info"
refused sr_window_psns 256
refused sr_window_psns 1000
refused sr_window_psns 8388608
dmesg_mark
if modprobe rxe_sr sr_window_psns=512 gbn_window_psns=1024 2>/dev/null; then
  modprobe -r rxe_sr
  fail "an SR window below the go-back-N window was accepted"
fi
expect_grep "sr_window_psns below gbn_window_psns refused" "sr_window_psns: out of range: 512" "$(dmesg_since_mark)"
check "load with a wide SR window" modprobe rxe_sr recovery=irn sr_window_psns=65536 sr_pipe_psns=8192
expect_grep "the window is in effect" "FaSR pipe: 8192 PSNs; SR window: 65536 PSNs" "$(dmesg | tail -n 5)"
modprobe -r rxe_sr
expect_grep "modinfo documents sr_pipe_psns" "^parm: +sr_pipe_psns:.*0 up to sr_window_psns" "$info"
refused sr_pipe_psns 4097
check "load with no FaSR pipe" modprobe rxe_sr recovery=fasr sr_pipe_psns=0
expect_grep "the pipe is in effect" "FaSR pipe: 0 PSNs" "$(dmesg | tail -n 5)"
modprobe -r rxe_sr
expect_grep "modinfo documents gbn_window_psns" "^parm: +gbn_window_psns:.*128\.\.1024" "$info"
refused gbn_window_psns 127
refused gbn_window_psns 1025
check "load with a long go-back-N window" modprobe rxe_sr gbn_window_psns=1024
expect_grep "the window is in effect" "go-back-N window: 1024 PSNs" "$(dmesg | tail -n 5)"
modprobe -r rxe_sr
expect_grep "modinfo documents dev_inflight_psns" "^parm: +dev_inflight_psns:.*0\.\.4194304" "$info"
refused dev_inflight_psns 4194305
check "load with no in-flight bound" modprobe rxe_sr dev_inflight_psns=0
expect_grep "the bound is in effect" "in flight per device: 0 PSNs" "$(dmesg | tail -n 5)"
modprobe -r rxe_sr
check "load with small pools" modprobe rxe_sr recovery=fasr sr_pool_units=2 sr_pool_blocks=3 melo_pool_blocks=4
expect_grep "the sizes are in effect" "SR pools: 2 units, 3 blocks; MELO pool: 4 blocks" "$(dmesg | tail -n 5)"
[ "$(cat /sys/module/rxe_sr/parameters/sr_pool_units)" = 2 ] || fail "sr_pool_units does not read 2"
modprobe -r rxe_sr
expect_grep "modinfo documents max_objects" "^parm: +max_objects:.*max_qp" "$info"
expect_grep "modinfo documents tx_zero_copy" "^parm: +tx_zero_copy:.*by reference.*may be changed at any time" "$info"
expect_grep "modinfo documents timer_hold" "^parm: +timer_hold:.*receive queue.*default Y" "$info"
check "load with deadlines not held" modprobe rxe_sr timer_hold=N
[ "$(cat /sys/module/rxe_sr/parameters/timer_hold)" = N ] || fail "timer_hold does not read N"
modprobe -r rxe_sr
check "default is gbn" modprobe rxe_sr
[ "$(cat /sys/module/rxe_sr/parameters/max_objects)" = 0 ] || fail "max_objects does not default to 0 (verbs_limits.sh checks its effect)"
[ "$(cat /sys/module/rxe_sr/parameters/recovery)" = gbn ] || fail "default is not gbn"
[ "$(cat /sys/module/rxe_sr/parameters/timer_hold)" = Y ] || fail "timer_hold is not on by default"
modprobe -r rxe_sr
check "no oops or warning in the kernel log" dmesg_clean
