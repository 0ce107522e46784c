#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest-side selftest runner: runs every test named in SHARE/tests.list, in order, and
# writes TAP to OUT/tap. Each test's output goes to OUT/NAME.log.
#
# A test that uses both guests runs on both, in lockstep (a barrier before and after it).
# A test whose header says `# guests: 1` uses its own guest alone: it runs once, on the
# guest that claims it first (a directory made in the share: mkdir is atomic on the
# host), while the other guest goes on to the next one, so that a run of such tests is
# split between the two guests. The other guest's TAP names the test in a comment. When
# the guests boot different kernels (RXE_SR_PEER_VARIANT), such a test runs on both.
. "$HOST_SHARE/selftests/lib/lib.sh"

mapfile -t tests < "$HOST_SHARE/tests.list"
kernels=$(find "$HOST_SHARE/modules" -mindepth 1 -maxdepth 1 -type d 2> /dev/null | wc -l)
mkdir -p "$HOST_SHARE/claims"
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
  solo=0
  if [ "$GUESTS" -ge 2 ] && [ "$kernels" -le 1 ] &&
    [ "$(test_header "$f" guests)" = 1 ]; then
    solo=1
  fi
  if [ "$solo" = 1 ]; then
    if ! mkdir "$HOST_SHARE/claims/$i" 2> /dev/null; then
      echo "# $i $t: run by the other guest" >> "$OUT/tap"
      continue
    fi
  elif ! barrier "start-$i" 600; then
    # The other guest did not come in 10 minutes (crashed, or stuck past its test's own
    # timeout): the tests after this one are not run either, rather than each waiting for
    # it again.
    peer_gone="the other guest stopped at test $i"
    echo "not ok $i $t # barrier: the other guest never came" >> "$OUT/tap"
    continue
  fi
  limit=$(test_limit "$f")
  start=$SECONDS
  TEST_INDEX=$i timeout -k 5 "$limit" bash "$f" > "$OUT/$t.log" 2>&1 < /dev/null
  rc=$?
  took=$((SECONDS - start))
  case $rc in
    0) line="ok $i $t # ${took}s" ;;
    4) line="ok $i $t # SKIP" ;;
    124) line="not ok $i $t # timeout after ${limit}s" ;;
    *) line="not ok $i $t # exit $rc after ${took}s" ;;
  esac
  # A test that passed ends with its driver's checked unload: one still loaded after it
  # fails it (the next test's set-up would have unloaded it unseen).
  left=$(lsmod | awk '$1 == "rxe_sr" || $1 == "rdma_rxe" { printf "%s ", $1 }')
  if [ "$rc" = 0 ] && [ -n "$left" ]; then
    line="not ok $i $t # left ${left% } loaded: no checked unload"
    rc=5
  fi
  echo "$line" >> "$OUT/tap"
  echo "g$GUEST: $line" > /dev/console
  case $rc in 0) ;; *) guest_reset >> "$OUT/$t.log" 2>&1 ;; esac
  [ "$solo" = 1 ] || barrier "end-$i" 600 || true
done
# Both guests end together (the host gives the second one two minutes once the first has
# stopped), also when the last tests were one-guest tests that the other guest is still
# running.
[ -n "$peer_gone" ] || barrier finish 900 || true
