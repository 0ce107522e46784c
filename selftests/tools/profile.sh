#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of scripts/profile (not a test): one perftest cell between the guests under
# each scheme of PROF_SCHEME (rxe_sr's schemes, or rdma_rxe for the upstream driver; one
# or more, rxe_sr's switched through the device's recovery attribute, so several are
# profiled side by side in one boot) at PROF_LOSS% loss on both egresses, with perf sampling every CPU of each guest for the middle of each run. Each
# guest prints, per scheme, its time by command and DSO, its hottest symbols and the
# callers of the hottest few, and the packets it sent and received while sampling; with
# two or more schemes, a table of the symbols' samples per 1000 packets the guest handled,
# sent and received (a profile per packet, comparable between schemes that moved different
# amounts, and on the responder, which sends few, as on the requester).
. "$HOST_SHARE/selftests/lib/lib.sh"
TEST_INDEX=profile
read -ra schemes <<< "${PROF_SCHEME:-fasr}"
loss=${PROF_LOSS:-5} tool=${PROF_TOOL:-ib_write_bw} secs=${PROF_SECS:-6}
echo 0 > /proc/sys/kernel/kptr_restrict
echo -1 > /proc/sys/kernel/perf_event_paranoid
load_rdma_core || exit 1
# The device under test: rdma_rxe's rxe0 for the scheme name "rdma_rxe" (the reference,
# profiled the same way), rxe_sr's sr0 for the others; "SCHEME+fec=N:D" also sets the
# device's FEC shim (attribute fec), which is off otherwise; "SCHEME+tx_zero_copy=N" turns
# payloads by reference off (the parameter is writable; on otherwise).
dev=
use() {
  local fec=off zc=Y
  case $1 in *+fec=*) fec=${1##*+fec=} ;; esac
  case $1 in *+tx_zero_copy=*) zc=${1##*+tx_zero_copy=} ;; esac
  case $1 in
    rdma_rxe)
      [ "$dev" = rxe0 ] && return 0
      [ "$dev" = sr0 ] && { rdma link del sr0; modprobe -r rxe_sr; }
      rxe_ref_up && dev=rxe0 ;;
    *)
      if [ "$dev" != sr0 ]; then
        [ "$dev" = rxe0 ] && rxe_ref_down
        modprobe rxe_sr recovery="${1%%+*}" && rdma link add sr0 type rxe_sr netdev eth0 && wait_port_active sr0 && dev=sr0
      fi
      echo "${1%%+*}" > /sys/class/infiniband/sr0/recovery
      echo "$fec" > /sys/class/infiniband/sr0/fec
      echo "$zc" > /sys/module/rxe_sr/parameters/tx_zero_copy ;;
  esac
}
# moved: the packets the device's port sent and received (both drivers count them).
moved() { echo $(( $(stat_of sent_pkts "$dev") + $(stat_of rcvd_pkts "$dev") )); }
report() { perf report -i "$data" --stdio --no-children "$@" 2>/dev/null | grep -v '^#' | grep .; }
# A scheme may be named more than once (to see a boot's drift): each cell is named
# N-SCHEME, N its place in PROF_SCHEME.
cells=()
for i in "${!schemes[@]}"; do
  scheme=${schemes[$i]} cell=$((i + 1))-${schemes[$i]}
  cells+=("$cell")
  use "$scheme" || { log "profile: $scheme did not come up"; exit 1; }
  sync_point "profile-$cell"
  data=/tmp/profile-$cell.data
  # TCG guests have no PMU: the cpu-clock software event, with kernel stacks. The packets
  # sent and received while it samples are kept beside it. Sampling starts a second after
  # the traffic does (the port's packet counters move), so that the two guests sample the
  # same stretch: the server's perftest starts seconds before the client's connects.
  (
    p0=$(moved)
    for _ in $(seq 300); do
      [ "$(moved)" -gt $((p0 + 100)) ] && break
      sleep 0.2
    done
    sleep 1
    s0=$(stat_of sent_pkts "$dev") r0=$(stat_of rcvd_pkts "$dev")
    c0=$(cpu_ticks)
    # The host adds up its QEMU threads' time while this file names the cell.
    [ "$GUEST" = 1 ] && echo "$cell" > "$OUT/sampling"
    perf record -q -a -g -e cpu-clock -F 499 -o "$data" -- sleep $((secs - 3)) >/dev/null 2>&1
    echo "$(( $(stat_of sent_pkts "$dev") - s0 )) $(( $(stat_of rcvd_pkts "$dev") - r0 ))" > "/tmp/profile-$cell.pkts"
    [ "$GUEST" = 1 ] && rm -f "$OUT/sampling"
    cpu_share "$c0" "$(cpu_ticks)" > "/tmp/profile-$cell.cpu"
  ) &
  # shellcheck disable=SC2086 # PROF_ARGS: perftest options, split on spaces.
  bw=$(perftest_pair "$dev" "$tool" "$loss" "$secs" ${PROF_ARGS:-} 2>/dev/null) || bw=fail
  wait
  is_client && log "profile: $tool ${PROF_ARGS:-} (${PERF_SIZE:-65536} B) recovery=$scheme loss=$loss% goodput $bw Gb/s"
  read -r sent rcvd < "/tmp/profile-$cell.pkts"
  samples=$(report -n --sort comm -g none | awk '{ n += $2 } END { print n }')
  log "profile: $cell: while sampling $sent packets sent, $rcvd received, $samples samples (499 Hz)"
  log "profile: $cell: CPU by the kernel's accounting (/proc/stat) while sampling: $(cat "/tmp/profile-$cell.cpu")"
  # Every symbol with its sample count (kept in OUT for a later look).
  report -n --sort sym -g none > "$OUT/profile-$cell-symbols.txt"
  echo "$((sent + rcvd))" > "$OUT/profile-$cell-pkts"
  log "profile: $cell: time by command and DSO"
  report --sort comm,dso -g none | head -12
  log "profile: $cell: hottest symbols"
  report --sort sym -g none | head -40
  for s in $(report --sort sym -g none | awk '$2 == "[k]" { print $3 }' | head -4); do
    log "profile: $cell: callers of $s"
    report --symbols="$s" -g caller,0.5,callee,function,percent --percent-limit 0.5 | head -30
  done
done
if [ "${#schemes[@]}" -gt 1 ]; then
  log "profile: samples per 1000 packets sent and received: spread, then ${cells[*]}; the 30 symbols that differ most"
  for cell in "${cells[@]}"; do
    awk -v s="$cell" -v pkts="$(cat "$OUT/profile-$cell-pkts")" \
      '$1 ~ /%$/ { sym = $4; for (i = 5; i <= NF; i++) sym = sym " " $i; print s, pkts, $2, sym }' \
      "$OUT/profile-$cell-symbols.txt"
  done | awk -v order="${cells[*]}" '
    BEGIN { n = split(order, sc, " ") }
    {
      sym = $4; for (i = 5; i <= NF; i++) sym = sym " " $i
      x = 1000 * $3 / ($2 > 0 ? $2 : 1); v[sym, $1] += x; tot[$1] += x; seen[sym] = 1
    }
    END {
      printf "%9s", "spread"; for (i = 1; i <= n; i++) printf " %9s", sc[i]; printf "\n"
      printf "%9s", ""; for (i = 1; i <= n; i++) printf " %9.2f", tot[sc[i]]; printf "  (all symbols)\n"
      fflush()
      cmd = "sort -k1,1 -rn | head -30"
      for (k in seen) {
        lo = hi = v[k, sc[1]] + 0
        for (i = 2; i <= n; i++) { x = v[k, sc[i]] + 0; if (x < lo) lo = x; if (x > hi) hi = x }
        line = sprintf("%9.2f", hi - lo)
        for (i = 1; i <= n; i++) line = line sprintf(" %9.2f", v[k, sc[i]] + 0)
        print line "  " substr(k, 1, 100) | cmd
      }
      close(cmd)
    }'
fi
if [ "$dev" = rxe0 ]; then
  rxe_ref_down
else
  rdma link del sr0
  modprobe -r rxe_sr
fi
