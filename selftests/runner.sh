#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest-side selftest runner: runs every test named in SHARE/tests.list, in order, in
# lockstep with the other guests (a barrier before and after each test), and writes TAP to
# OUT/tap. Each test's output goes to OUT/NAME.log.
. "$HOST_SHARE/selftests/lib.sh"

mapfile -t tests < "$HOST_SHARE/tests.list"
echo "TAP version 13" > "$OUT/tap"
echo "1..${#tests[@]}" >> "$OUT/tap"
i=0 peer_gone=
for t in "${tests[@]}"; do
  i=$((i + 1))
  f=$HOST_SHARE/selftests/$t
  if [ -n "$peer_gone" ]; then
    echo "not ok $i $t # not run: $peer_gone" >> "$OUT/tap"
    continue
  fi
  if ! barrier "start-$i" 600; then
    # The other guest did not come in 10 minutes (crashed, or stuck past its test's own
    # timeout): the tests after this one are not run either, rather than each waiting for
    # it again.
    peer_gone="the other guest stopped at test $i"
    echo "not ok $i $t # barrier: the other guest never came" >> "$OUT/tap"
    continue
  fi
  limit=$(sed -n 's/^# timeout: *\([0-9]*\).*/\1/p' "$f" | head -1)
  start=$SECONDS
  TEST_INDEX=$i timeout -k 5 "${limit:-120}" bash "$f" > "$OUT/$t.log" 2>&1 < /dev/null
  rc=$?
  took=$((SECONDS - start))
  case $rc in
    0) line="ok $i $t # ${took}s" ;;
    4) line="ok $i $t # SKIP" ;;
    124) line="not ok $i $t # timeout after ${limit:-120}s" ;;
    *) line="not ok $i $t # exit $rc after ${took}s" ;;
  esac
  echo "$line" >> "$OUT/tap"
  echo "g$GUEST: $line" > /dev/console
  case $rc in 0|4) ;; *) guest_reset >> "$OUT/$t.log" 2>&1 ;; esac
  barrier "end-$i" 600 || true
done
