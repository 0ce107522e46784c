# SPDX-License-Identifier: GPL-2.0
# Helpers for rxe_sr's guest selftests. Sourced by runner.sh and by every test.
# Environment (from qemu/guest-init): GUEST (1..GUESTS), GUESTS, MY_IP, HOST_SHARE, OUT.
# A test exits 0 for pass, 4 for skip (kselftest's KSFT_SKIP), anything else for fail.

: "${HOST_SHARE:=/mnt/host}" "${GUEST:=1}" "${GUESTS:=1}"
KSFT_SKIP=4
# RXE_SR_QUICK=1 (the KASAN pass of `make test`): the long tests keep every code path but
# move less data and run fewer impairment cases.
if [ -f "$HOST_SHARE/settings" ]; then . "$HOST_SHARE/settings"; fi
QUICK=${RXE_SR_QUICK:-0}
quick() { [ "$QUICK" = 1 ]; }
# The Python checks use `assert`: an optimising interpreter would drop them all.
unset PYTHONOPTIMIZE
SERVER_IP=10.77.0.1

log() { printf '[g%s %s] %s\n' "$GUEST" "$(date +%T)" "$*"; }
fail() {
  log "FAIL: $*"
  # What the kernel said meanwhile (below the console's log level, e.g. a QP's refused
  # request), for the diagnosis.
  local k
  k=$(dmesg_since_mark 2>/dev/null | grep -E 'rxe_sr|rxe[0-9]|sr[0-9]:' | tail -n 20) || true
  if [ -n "$k" ]; then printf 'kernel log since the test began:\n%s\n' "$k"; fi
  # Every RDMA link's counters that are not zero (timeouts, probes, resends, drops).
  k=$(timeout 5 rdma statistic show link 2>/dev/null | awk '{ printf "%s %s", $1, $2
    for (i = 3; i < NF; i += 2) if ($(i + 1) != 0) printf " %s %s", $i, $(i + 1); print "" }') || true
  if [ -n "$k" ]; then printf 'counters that are not zero:\n%s\n' "$k"; fi
  # Tell the other guests, so their barriers in this test give up at once.
  mkdir -p "$HOST_SHARE/sync" && : > "$HOST_SHARE/sync/abort-t${TEST_INDEX:-0}.g$GUEST"
  exit 1
}
skip() { log "SKIP: $*"; exit $KSFT_SKIP; }
is_server() { [ "$GUEST" = 1 ]; }
is_client() { [ "$GUEST" = 2 ]; }

# check DESCRIPTION COMMAND...: runs COMMAND, fails the test if it fails.
check() {
  local what=$1; shift
  if "$@"; then log "ok: $what"; else fail "$what (command: $*)"; fi
}

# expect_grep DESCRIPTION PATTERN TEXT: TEXT must match the extended regex PATTERN.
expect_grep() {
  if printf '%s\n' "$3" | grep -Eq -- "$2"; then log "ok: $1"; else
    printf '%s\n' "$3" | sed 's/^/    | /'
    fail "$1: no match for /$2/"
  fi
}

# no_match [-w] PATTERN CMD...: CMD succeeds and no line of its output matches the extended
# regex PATTERN (-w: as a word). A negative check that cannot pass because CMD failed:
# returns 1, saying why, when CMD fails or a line matches.
no_match() {
  local opt=-qE out
  [ "$1" = -w ] && { opt=-qwE; shift; }
  local pat=$1; shift
  out=$("$@") || { log "no_match: '$*' failed"; return 1; }
  if grep $opt -- "$pat" <<< "$out"; then
    printf '%s\n' "$out" | sed 's/^/    | /'
    return 1
  fi
}

# barrier NAME [TIMEOUT]: waits until every guest reached NAME (files in the 9p share).
barrier() {
  local name=$1 t=${2:-300} dir=$HOST_SHARE/sync n
  mkdir -p "$dir"
  : > "$dir/$name.g$GUEST"
  local end=$((SECONDS + t))
  while :; do
    n=$(find "$dir" -maxdepth 1 -name "$name.g*" | wc -l)
    [ "$n" -ge "$GUESTS" ] && return 0
    if [ -n "$(find "$dir" -maxdepth 1 -name "abort-t${TEST_INDEX:-0}.g*" 2>/dev/null)" ]; then
      log "barrier $name: another guest failed this test"; return 1
    fi
    [ "$SECONDS" -ge "$end" ] && { log "barrier $name: timed out after ${t}s ($n/$GUESTS)"; return 1; }
    sleep 0.2
  done
}

# test_header FILE KEY: the number on a test's `# KEY: N` header line (`# timeout: 300`,
# `# guests: 1`), empty if it has none.
test_header() { sed -n "s/^# $2: *\([0-9]*\).*/\1/p" "$1" | head -1; }

# test_limit FILE: the seconds a test may run: its `# timeout:` header line, or else the
# directory's default (selftests/settings' timeout=, as kselftest reads it).
test_limit() {
  local t
  t=$(test_header "$1" timeout)
  [ -n "$t" ] || t=$(sed -n 's/^timeout=\([0-9]*\)$/\1/p' "$HOST_SHARE/selftests/settings")
  printf '%s\n' "$t"
}

# sync_point NAME: a barrier private to the running test.
sync_point() { barrier "t${TEST_INDEX:-0}-$1" "${2:-300}"; }

# share_put NAME VALUE / share_get GUEST NAME: small values passed between guests. Each
# name is written once and whole (renamed into place): a 9p file rewritten while the other
# guest reads it can panic that guest (verbs_util.Share.put says how).
share_put() {
  local f=$HOST_SHARE/vals/t${TEST_INDEX:-0}-$1.g$GUEST
  mkdir -p "$HOST_SHARE/vals"
  [ -e "$f" ] && { log "share_put: $1 is written twice"; return 1; }
  printf '%s\n' "$2" > "$f.tmp" && mv "$f.tmp" "$f"
}
share_get() { cat "$HOST_SHARE/vals/t${TEST_INDEX:-0}-$2.g$1"; }

# dmesg_mark / dmesg_since_mark: the kernel log written since the mark.
# The mark is a line of its own in the kernel log (a count of lines stops moving once the
# ring buffer wraps, and the log since it then read as empty: a test that floods the log
# with refused requests hid its own unload message so). Were the mark itself overwritten,
# the whole buffer counts as since the mark.
dmesg_mark() {
  DMESG_MARK="rxe_sr selftest mark $$.$RANDOM.$(date +%s%N)"
  echo "<6>$DMESG_MARK" > /dev/kmsg
}
# (Non-zero when dmesg cannot be read: no caller may take that for a clean log.)
dmesg_since_mark() {
  local all
  all=$(dmesg) || { echo "dmesg_since_mark: dmesg failed" >&2; return 1; }
  printf '%s\n' "$all" | awk -v m="${DMESG_MARK:-}" 'm != "" && index($0, m) { n = 0; next } { line[++n] = $0 }
    END { for (i = 1; i <= n; i++) print line[i] }'
}
# dmesg_clean: no oops, BUG (soft lockups too), WARNING, RCU stall, hung task, or
# refcount/leak report since the mark.
dmesg_clean() {
  local bad log
  log=$(dmesg_since_mark) || return 1
  bad=$(printf '%s\n' "$log" | grep -E 'BUG:|WARNING:|Oops|general protection|refcount_t|leak|Call Trace|detected stalls|blocked for more than|rust_kernel:' || true)
  [ -z "$bad" ] || { printf '%s\n' "$bad" | sed 's/^/    | /'; return 1; }
}

# netem_set LOSS_PERCENT: loss on this guest's eth0 egress (0 removes it).
# netem_set SPEC: egress impairment on eth0: a number is a loss percentage, 0 clears,
# anything else is passed to netem as is (e.g. "delay 2ms reorder 10% 50%", "duplicate 2%").
netem_set() {
  tc qdisc del dev eth0 root 2>/dev/null || true
  [ "$1" = 0 ] || pin_peer_neigh
  case "$1" in
    0) ;;
    *[!0-9.]*) tc qdisc add dev eth0 root netem $1 ;;
    *) tc qdisc add dev eth0 root netem loss "$1%" ;;
  esac
}

# wan_spec RTT_MS LOSS: the netem spec of the long-haul profile on one guest's egress: half
# the round trip as delay, the link rate WAN_RATE (default 100mbit, so the bandwidth-delay
# product is defined) with a queue long enough never to drop, and LOSS: 0, a loss
# percentage (Bernoulli), or geH: LoWAR's two-state burst model (Gilbert-Elliott: no loss
# in the good state, H% in the bad one, WAN_GE_P% chance a packet moves from good to bad,
# default 0.01, and WAN_GE_R% from bad to good, default 10).
wan_spec() {
  local rtt=$1 loss=$2 spec
  spec="rate ${WAN_RATE:-100mbit} limit 100000"
  [ "$rtt" = 0 ] || spec="delay $((rtt / 2))ms $spec"
  case "$loss" in
    0) ;;
    ge*) spec="$spec loss gemodel ${WAN_GE_P:-0.01}% ${WAN_GE_R:-10}% ${loss#ge}% 0%" ;;
    *) spec="$spec loss $loss%" ;;
  esac
  echo "$spec"
}

# pin_peer_neigh: the other guest's ARP entry, resolved now and made permanent. Under netem
# an ARP exchange can be lost, and the verbs core's resolution of a QP's path (modify to
# RTR) then fails with ETIMEDOUT: seen with 8 rc_verify pairs set up at once under 5% loss.
# Resolved by a UDP datagram to the discard port, not a ping: testbed_link_clean.sh counts
# the echo requests the peer receives.
pin_peer_neigh() {
  local peer=10.77.0.$((3 - GUEST)) mac i
  [ "$GUESTS" = 2 ] || return 0
  for i in $(seq 30); do
    mac=$(ip neigh show "$peer" dev eth0 | awk '/lladdr/ { print $3; exit }')
    [ -n "$mac" ] && break
    [ "$i" = 1 ] && { echo > "/dev/udp/$peer/9"; } 2> /dev/null
    sleep 0.1
  done
  [ -n "$mac" ] && ip neigh replace "$peer" lladdr "$mac" dev eth0 nud permanent
  return 0
}

# guest_reset: what a failed or timed-out test may have left behind goes, so that the next
# test starts from a clean guest (the runner calls it; one hung test must not fail the rest):
# the test programs, netem, every RDMA link, both drivers. Prints what it removed.
guest_reset() {
  local l
  pkill -KILL -f 'rc_verify.py|msg_check.py|ud_msgs.py|ib_(send|write|read|atomic)_(bw|lat)|ibv_(rc|uc|ud|srq)_pingpong|rping|tcpdump' \
    && echo "reset: killed leftover test programs"
  sleep 0.5
  tc qdisc del dev eth0 root 2>/dev/null && echo "reset: netem removed"
  # upper_devices.sh's VLAN and bond over eth0.
  ip link del eth0.100 2>/dev/null && echo "reset: eth0.100 removed"
  if [ -e /sys/class/net/bond0 ]; then
    ip link del bond0 && ip link set eth0 up && echo "reset: bond0 removed, eth0 up"
    ip addr add "$MY_IP/24" dev eth0 2>/dev/null
  fi
  # netns_veth.sh's and rdma_rxe_conflict.sh's namespaces and veth pairs.
  if [ -n "$(ip netns list 2>/dev/null)" ]; then
    ip -all netns delete && echo "reset: network namespaces deleted"
  fi
  ip link del vxi 2>/dev/null && echo "reset: vxi removed"
  for l in $(rdma link show 2>/dev/null | awk '$1 == "link" { sub("/.*", "", $2); print $2 }' | sort -u); do
    rdma link del "$l" && echo "reset: rdma link del $l"
  done
  if lsmod | grep -qE '^(rxe_sr|rdma_rxe) '; then
    modprobe -r rxe_sr rdma_rxe 2>&1 && echo "reset: rxe_sr and rdma_rxe unloaded"
  fi
  return 0
}

# load_rdma_core: the verbs core and the user-space access modules (no udev here to do it).
load_rdma_core() { modprobe ib_uverbs && modprobe rdma_ucm; }

# roce_gid_index DEV [ADDR] [TRIES]: index of DEV's RoCEv2 GID for the IPv4 or IPv6 address
# ADDR (default: this guest's test address), looked for TRIES times 0.1 s apart (default
# 100: the core lists a new address soon after it is added).
roce_gid_index() {
  local want addr=${2:-$MY_IP}
  case $addr in
    *:*) want=$(python3 -c 'import ipaddress, sys
print(ipaddress.IPv6Address(sys.argv[1]).exploded)' "$addr") ;;
    # IPv4 in the shell: no interpreter to start for the common case (slow under TCG).
    *) want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${addr//./ }) ;;
  esac
  local gids=/sys/class/infiniband/$1/ports/1/gids
  for _ in $(seq "${3:-100}"); do
    # The first 32 entries, where the core puts a netdev's few addresses, then all 1024
    # (one grep over them: about 12 s on the debug kernel under TCG, and a process per
    # entry would take longer still).
    roce_v2_gid_in "$1" "$want" "$gids"/{0..31} && return 0
    roce_v2_gid_in "$1" "$want" "$gids"/* && return 0
    sleep 0.1
  done
  return 1
}

# roce_v2_gid_in DEV GID FILE...: prints the index of the first of DEV's GID FILEs that
# holds GID as a RoCE v2 entry.
roce_v2_gid_in() {
  local dev=$1 want=$2 f i
  shift 2
  for f in $(grep -lx "$want" "$@" 2> /dev/null); do
    i=${f##*/}
    [ "$(cat /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/"$i" 2> /dev/null)" = "RoCE v2" ] \
      && { echo "$i"; return 0; }
  done
  return 1
}

# netns_test_begin: the start of a test that builds its own namespaces: skips without
# network namespaces; no rxe_sr, rdma_rxe or namespace left from before; the verbs core
# and rxe_sr loaded (no link), the kernel log marked and the leak check armed.
netns_test_begin() {
  ip netns add rxe_sr_probe 2> /dev/null || skip "no network namespaces in this kernel"
  ip netns del rxe_sr_probe
  modprobe -r rxe_sr rdma_rxe 2> /dev/null
  ip -all netns delete 2> /dev/null
  dmesg_mark
  check "load the verbs core" load_rdma_core
  check "load rxe_sr" modprobe rxe_sr
  leak_begin
}

# netns_veth_pair: namespaces nsa and nsb joined by a veth pair, vxa (nsa, 10.88.0.1/24 and
# fd88::1/64) and vxb (nsb, 10.88.0.2/24 and fd88::2/64), all up.
netns_veth_pair() {
  local s ns dev n
  check "namespaces nsa and nsb" ip netns add nsa
  ip netns add nsb
  check "veth pair vxa (nsa) - vxb (nsb)" ip link add vxa type veth peer name vxb
  ip link set vxa netns nsa
  ip link set vxb netns nsb
  for s in a:1 b:2; do
    ns=ns${s%:*} dev=vx${s%:*} n=${s#*:}
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "10.88.0.$n/24" dev "$dev"
    ip -n "$ns" addr add "fd88::$n/64" dev "$dev" nodad
    ip -n "$ns" link set "$dev" up
  done
}

# netns_test_end: the end of a test netns_test_begin began: its namespaces go (nsa, nsb), no
# leak, rxe_sr unloads with no object left, and the kernel log is clean.
netns_test_end() {
  ip netns del nsa 2> /dev/null
  ip netns del nsb 2> /dev/null
  leak_check
  check "rmmod" rmmod rxe_sr
  expect_grep "nothing left at unload" 'objects left: 0 ucontexts, 0 PDs, 0 CQs, 0 MRs, 0 QPs, 0 AHs, 0 SRQs, 0 MWs' "$(dmesg_since_mark)"
  check "no oops or warning in the kernel log" dmesg_clean
}

# nsx NS CMD...: CMD in network namespace NS ("" for the initial one).
nsx() {
  local ns=$1; shift
  if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

# wait_port_active DEV: the port reaches ACTIVE within 10 s.
wait_port_active() {
  for _ in $(seq 100); do
    rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
    sleep 0.1
  done
  return 1
}

# rxe_ref_up: rdma_rxe (the reference peer) as rxe0 on eth0.
rxe_ref_up() {
  modprobe -r rxe_sr 2>/dev/null || true
  load_rdma_core && modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0 && wait_port_active rxe0
}
rxe_ref_down() {
  rdma link del rxe0 2>/dev/null || true
  modprobe -r rdma_rxe 2>/dev/null || true
}

# bench_driver_up DRIVER: rdma_rxe as rxe0, or rxe_sr as sr0 with the recovery= scheme and
# module parameters DRIVER names (SCHEME or SCHEME+PARAM=VALUE+...), both guests alike;
# prints the device. bench_driver_down DEV: the device and its driver gone.
bench_driver_up() {
  local -a params
  modprobe -r rxe_sr rdma_rxe 2>/dev/null
  if [ "$1" = rdma_rxe ]; then
    rxe_ref_up >&2 && echo rxe0
  else
    read -ra params <<< "$(printf '%s' "$1" | tr '+' ' ')"
    load_rdma_core && modprobe rxe_sr recovery="${params[0]}" "${params[@]:1}" \
      && rdma link add sr0 type rxe_sr netdev eth0 && wait_port_active sr0 && echo sr0
  fi
}
bench_driver_down() {
  rdma link del "$1" 2>/dev/null
  modprobe -r rxe_sr rdma_rxe 2>/dev/null
}

# retry N CMD...: runs CMD until it succeeds, N tries, 1 s apart (clients racing servers
# that a slow guest starts late). An attempt that ran 10 s or more got past connecting: its
# failure is final.
retry() {
  local n=$1 i t0; shift
  for i in $(seq "$n"); do
    t0=$SECONDS
    "$@" && return 0
    [ $((SECONDS - t0)) -ge 10 ] && return 1
    sleep 1
  done
  return 1
}

# perf_call_tag TEXT: a tag unique to this call of a perftest helper within the running test
# (a counter kept in a file: the helpers run in command substitutions), so that its barriers
# and shared values are not met by a repetition's leftovers. Both guests make the same calls.
perf_call_tag() {
  local f=/tmp/perf_seq.t${TEST_INDEX:-0} n
  n=$(( $(cat "$f" 2>/dev/null || echo 0) + 1 ))
  echo "$n" > "$f"
  printf '%s' "$n $*" | tr -c 'A-Za-z0-9.' '_'
}

# perf_clock_agreed TAG TEXT: both guests tell each other whether their perftest could measure
# its clock; false if either could not. perftest samples the TSC against gettimeofday and,
# when the samples do not fit a line (r^2 < 0.9: a TCG guest preempted while sampling), runs
# with a clock of 0 MHz and reports 0 Gb/s (or an infinite latency) for a run that moved data:
# such a run measured nothing, and is run again.
perf_clock_agreed() {
  local bad=0 g
  printf '%s\n' "$2" | grep -q 'Correlation coefficient' && bad=1
  share_put "$1-clock" "$bad"
  sync_point "$1-clock" 300 || return 0
  for g in 1 2; do [ "$(share_get "$g" "$1-clock" 2>/dev/null)" = 0 ] || return 1; done
}

# perftest_pair DEV TOOL LOSS SECONDS [ARGS...]: TOOL (ib_write_bw, ib_send_bw, ib_read_bw)
# between g1 (server) and g2 (client), netem LOSS% on both guests' egress, SECONDS long,
# messages of PERF_SIZE bytes (default 65536). Prints the average Gb/s on the client (empty
# if it failed): the client's figure for RC, the receiving server's for UD (lost datagrams
# are not retransmitted, so only the receiver sees the goodput). Non-zero on failure. A run
# whose perftest could not measure its clock (perf_clock_agreed) is run again, up to 3 times.
perftest_pair() { perf_clock_retry perftest_once "$@"; }

# perf_clock_retry ONCE DEV TOOL ...: runs ONCE (perftest_once, perflat_once) until its
# perftest could measure its clock (ONCE returns 3 when not), up to 3 times.
perf_clock_retry() {
  local once=$1 attempt rc; shift
  for attempt in 1 2 3; do
    "$once" "$@"; rc=$?
    [ "$rc" = 3 ] || return "$rc"
    # To stderr: the callers read the figure from stdout.
    log "perftest $2: no clock measurement in attempt $attempt (perftest's r^2 < 0.9), again" >&2
  done
  return 1
}

# perftest_once: one run of perftest_pair; 3 if either guest's perftest had no clock.
perftest_once() {
  local dev=$1 tool=$2 loss=$3 secs=$4; shift 4
  local gidx rc=0 out ud=0 a tag
  for a in "$@"; do [ "$a" = UD ] && ud=1; done
  tag=$(perf_call_tag "$loss $*")
  gidx=$(roce_gid_index "$dev") || { log "no RoCEv2 GID on $dev"; return 1; }
  netem_set "$loss"
  # PERF_ITERS=N: N iterations (per QP) instead of SECS seconds.
  local common=(-d "$dev" -x "$gidx" -F --report_gbits "$@")
  if [ -n "${PERF_ITERS:-}" ]; then common+=(-n "$PERF_ITERS"); else common+=(-D "$secs"); fi
  [ "${PERF_SIZE:-65536}" = none ] || common+=(-s "${PERF_SIZE:-65536}")
  # perftest's result row: bytes iterations BW-peak BW-average MsgRate
  local avg='/#bytes/ { getline; if (NF >= 5) print $4 }'
  if is_server; then
    timeout $((secs * 6 + 60)) "$tool" "${common[@]}" > /tmp/perf.srv 2>&1 &
    local pid=$!
    sleep 1
    sync_point "$tool-$tag-ready" 120 || rc=1
    wait "$pid" || rc=1
    out=$(cat /tmp/perf.srv)
    printf '%s\n' "$out" >&2
    share_put "$tool-$tag-srv" "$(awk "$avg" /tmp/perf.srv | tail -1)"
  else
    sync_point "$tool-$tag-ready" 120 || rc=1
    out=$(retry 20 timeout $((secs * 6 + 60)) "$tool" "${common[@]}" "$SERVER_IP" 2>&1) || rc=1
    printf '%s\n' "$out" >&2
  fi
  netem_set 0
  sync_point "$tool-$tag-done" 300 || rc=1
  perf_clock_agreed "$tool-$tag" "$out" || return 3
  if is_client; then
    if [ "$ud" = 1 ]; then share_get 1 "$tool-$tag-srv"; else printf '%s\n' "$out" | awk "$avg" | tail -1; fi
  fi
  return $rc
}

# perflat_pair DEV TOOL ITERS [ARGS...]: a perftest latency tool (ib_*_lat) between the
# guests, ITERS iterations; the client prints t_avg in microseconds. Run again, up to 3
# times, when a guest's perftest could not measure its clock (perf_clock_agreed).
perflat_pair() { perf_clock_retry perflat_once "$@"; }

perflat_once() {
  local dev=$1 tool=$2 iters=$3; shift 3
  local gidx rc=0 out tag
  gidx=$(roce_gid_index "$dev") || { log "no RoCEv2 GID on $dev"; return 1; }
  tag=$(perf_call_tag "$tool $*")
  local common=(-d "$dev" -x "$gidx" -n "$iters" -F "$@")
  # perftest's latency row: bytes iterations t_min t_max t_typical t_avg ...
  local avg='/#bytes/ { getline; if (NF >= 6) print $6 }'
  if is_server; then
    timeout 150 "$tool" "${common[@]}" > /tmp/lat.srv 2>&1 &
    local pid=$!
    sleep 1
    sync_point "$tag-ready" 120 || rc=1
    wait "$pid" || rc=1
    out=$(cat /tmp/lat.srv)
    printf '%s\n' "$out" >&2
  else
    sync_point "$tag-ready" 120 || rc=1
    out=$(retry 20 timeout 150 "$tool" "${common[@]}" "$SERVER_IP" 2>&1) || rc=1
    printf '%s\n' "$out" >&2
  fi
  sync_point "$tag-done" 300 || rc=1
  perf_clock_agreed "$tag" "$out" || return 3
  if is_client; then printf '%s\n' "$out" | awk "$avg" | tail -1; fi
  return $rc
}

# positive X: X is a number above zero.
positive() { awk -v v="$1" 'BEGIN { exit !(v + 0 > 0) }'; }

# rc_perf_suite DEV: the RC perftest set between the guests on DEV (rxe_sr or rdma_rxe in
# either guest): SEND/WRITE/READ bandwidth (100 messages of 64 KiB), atomic bandwidth (500),
# WRITE bandwidth over 100 QPs (10 messages each), and the four latency tools (300).
# Every run must finish with a positive figure.
rc_perf_suite() {
  local dev=$1 t v
  # Counted iterations, not seconds: on the slow KASAN kernel a 2-second run can end
  # before the first completion.
  local iters=100 atomics=500 lat=300
  if quick; then iters=30 atomics=100 lat=100; fi
  for t in ib_send_bw ib_write_bw ib_read_bw; do
    v=$(PERF_ITERS=$iters perftest_pair "$dev" "$t" 0 30) || fail "$t failed"
    if is_client; then positive "$v" || fail "$t: no bandwidth"; log "ok: $t $v Gb/s"; fi
  done
  v=$(PERF_ITERS=$atomics PERF_SIZE=none perftest_pair "$dev" ib_atomic_bw 0 30) || fail "ib_atomic_bw failed"
  if is_client; then positive "$v" || fail "ib_atomic_bw: no bandwidth"; log "ok: ib_atomic_bw $v Gb/s"; fi
  # 100 QPs at once: what is under test is the QP count, so the messages are small.
  v=$(PERF_ITERS=10 PERF_SIZE=4096 perftest_pair "$dev" ib_write_bw 0 20 -q 100) || fail "ib_write_bw -q 100 failed"
  if is_client; then positive "$v" || fail "ib_write_bw -q 100: no bandwidth"; log "ok: ib_write_bw -q 100 $v Gb/s"; fi
  for t in ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat; do
    v=$(perflat_pair "$dev" "$t" $lat) || fail "$t failed"
    if is_client; then positive "$v" || fail "$t: no latency figure"; log "ok: $t t_avg $v usec"; fi
  done
}

# any_debug_kernel: true when a guest of this run boots the debug (KASAN) kernel (the share
# holds the modules of every guest's kernel): such a peer answers slowly, whatever kernel
# this guest runs.
any_debug_kernel() { compgen -G "$HOST_SHARE/modules/*-debug" > /dev/null; }

# rc_verify_pair DEV TAG [ROUNDS]: rc_verify.py between the guests (g1 side a, g2 side b)
# on DEV: SEND, WRITE (+imm), READ and atomics both ways at once, every byte checked.
# Prints the script's output; fails (returns 1) unless it verified everything. The local
# ACK timeout is 14 (67 ms), 17 (0.5 s) on the KASAN kernel, or RC_VERIFY_TMO's.
#
# Why not 67 ms everywhere: rdma_rxe's requester (6.12) can send a message it already
# sent a second time, under a new PSN, after a timeout. An ACK for the last PSN of its
# oldest WQE that arrives while that WQE is being resent (state "processing") moves
# comp.psn past the WQE without completing it (rxe_comp.c: COMPST_WRITE_SEND goes to
# COMPST_UPDATE_COMP); at the next timeout req_retry skips all of the WQE's packets
# (npsn = comp.psn - first_psn) and sends it once more as an empty SEND/WRITE ONLY at
# comp.psn, so every packet after it goes one PSN late. The responder then meets packets
# at ePSN that are not the message it has open (a Last with none open, more Middles than
# the receive buffer holds) and ends the QP with an invalid-request NAK, as rdma_rxe's own
# responder does (check_op_seq, or the length check). Captured on the KASAN kernel with
# rxe_sr as the responder: a 0-byte SEND ONLY at the PSN after a 64-packet SEND, then the
# next message's 200 packets each one PSN late. It needs a timeout, and on the KASAN
# kernel an ACK often takes longer than 67 ms (at 67 ms it had struck 4 of 57 runs of 3
# rounds with rdma_rxe as a requester against rxe_sr), so the timeout is 0.5 s there.
rc_verify_pair() {
  local dev=$1 tag=$2 rounds=${3:-1} gidx side peer out rc=0 tmo=14
  gidx=$(roce_gid_index "$dev") || { log "no RoCEv2 GID on $dev"; return 1; }
  if is_server; then side=a peer=10.77.0.2; else side=b peer=10.77.0.1; fi
  any_debug_kernel && tmo=17
  tmo=${RC_VERIFY_TMO:-$tmo}
  out=$(RC_VERIFY_TIMEOUT=$tmo timeout 600 python3 "$HOST_SHARE/selftests/lib/rc_verify.py" "$side" "$dev" "$gidx" "$peer" "$tag" "$rounds" 2>&1) || rc=1
  printf '%s\n' "$out"
  printf '%s\n' "$out" | grep -q '^verified: OK' || rc=1
  return $rc
}

# msg_check_pair DEV GIDX TAG ARGS...: msg_check.py between the guests on DEV, from its
# GID index GIDX (g1 side a, g2 side b; ARGS are its options): messages both ways, every
# byte checked. Prints its output; returns 1 unless it checked everything.
msg_check_pair() {
  local dev=$1 gidx=$2 tag=$3 side out rc=0; shift 3
  if is_server; then side=a; else side=b; fi
  out=$(timeout 300 python3 "$HOST_SHARE/selftests/lib/msg_check.py" "$side" "$dev" "$gidx" "t${TEST_INDEX:-0}-$tag" "$@" 2>&1) || rc=1
  printf '%s\n' "$out"
  printf '%s\n' "$out" | grep -q '^checked: OK' || rc=1
  return $rc
}

# fct_pair DEV SPEC TAG ITERS [ARGS...]: fct.py between the guests on DEV (g2 writes, g1
# receives) under the netem SPEC on both egresses, ITERS messages; the client prints
# "P50_MS P99_MS FIRST_MS": the completion times' p50 and p99 after the first message, and
# the first's. Non-zero unless every message completed and every byte was checked.
fct_pair() {
  local dev=$1 spec=$2 tag=$3 iters=$4 gidx side out rc=0; shift 4
  gidx=$(roce_gid_index "$dev") || { log "no RoCEv2 GID on $dev"; return 1; }
  if is_server; then side=a; else side=b; fi
  netem_set "$spec"
  sync_point "fct-$tag-ready" 120 || rc=1
  out=$(timeout $((iters * 30 + 120)) python3 "$HOST_SHARE/selftests/lib/fct.py" "$side" "$dev" "$gidx" "t${TEST_INDEX:-0}-fct-$tag" --iters "$iters" "$@" 2>&1) || rc=1
  netem_set 0
  sync_point "fct-$tag-done" 300 || rc=1
  printf '%s\n' "$out" >&2
  printf '%s\n' "$out" | grep -q '^checked: OK' || rc=1
  is_client && printf '%s\n' "$out" | awk '/^fct:/ { print $5, $7, $11 }'
  return $rc
}

# msg_check_ns NS_A DEV_A GID_A NS_B DEV_B GID_B TAG ARGS...: msg_check.py within this
# guest, side a on DEV_A in namespace NS_A, side b on DEV_B in NS_B ("" for the initial
# namespace), every byte checked both ways. Prints both sides' output; returns 1 unless
# both checked everything. msg_check_ns_start (same arguments) starts both sides in the
# background (their PIDs in MC_A and MC_B, their output in /tmp/mc-a.out and /tmp/mc-b.out);
# msg_check_ns_wait then waits for them and checks as msg_check_ns does.
msg_check_ns() { msg_check_ns_start "$@" && msg_check_ns_wait; }
msg_check_ns_start() {
  local na=$1 da=$2 ga=$3 nb=$4 db=$5 gb=$6 tag=t${TEST_INDEX:-0}-g$GUEST-$7; shift 7
  nsx "$na" timeout 400 python3 "$HOST_SHARE/selftests/lib/msg_check.py" a "$da" "$ga" "$tag" "$@" > /tmp/mc-a.out 2>&1 &
  MC_A=$!
  nsx "$nb" timeout 400 python3 "$HOST_SHARE/selftests/lib/msg_check.py" b "$db" "$gb" "$tag" "$@" > /tmp/mc-b.out 2>&1 &
  MC_B=$!
}
msg_check_ns_wait() {
  local rc=0
  wait "$MC_A" || rc=1
  wait "$MC_B" || rc=1
  cat /tmp/mc-a.out /tmp/mc-b.out
  [ "$(cat /tmp/mc-a.out /tmp/mc-b.out | grep -c '^checked: OK')" = 2 ] || rc=1
  return $rc
}

# rc_interop SR_ROLE: rxe_sr in the guest playing SR_ROLE (server: g1, client: g2) and
# rdma_rxe in the other, then RC and UC between them: ibv_rc_pingpong (a smoke test),
# rc_verify (RC data checked), rping -V, ibv_uc_pingpong and msg_check.py over UC (data
# checked), and the RC perftest set (rc_perf_suite).
rc_interop() {
  local sr_role=$1 dev gidx out rc=0 size tmo=
  if { [ "$sr_role" = server ] && is_server; } || { [ "$sr_role" = client ] && is_client; }; then
    mixed_up sr
  else
    mixed_up rxe
  fi
  dev=$DEV
  gidx=$(roce_gid_index "$dev") || fail "no RoCEv2 GID"
  for size in 4096 65536; do
    out=$(pingpong_pair ibv_rc_pingpong -d "$dev" -g "$gidx" -n 200 -s "$size") || rc=1
    printf '%s\n' "$out"
    sync_point "rc-$size"
    [ $rc = 0 ] || fail "ibv_rc_pingpong $size B failed"
    expect_grep "ibv_rc_pingpong $size B" '200 iters in' "$out"
  done
  sync_point verify-start
  # Lossless, with rdma_rxe as one requester: on the KASAN kernel 0.5 s still let some
  # spurious timeouts through (7 in one run that hit the bug above rc_verify_pair), and
  # a longer timeout costs nothing without loss.
  any_debug_kernel && tmo=19
  RC_VERIFY_TMO=$tmo rc_verify_pair "$dev" interop-$sr_role 2 || fail "rc_verify: RC data checks (SEND, WRITE, READ, atomics both ways)"
  log "ok: rc_verify: SEND, WRITE with immediate, READ, atomics, both ways, every byte checked"
  out=$(rping_pair "interop-$sr_role" -C 100 -S 1000) || rc=1
  printf '%s\n' "$out"
  sync_point rping
  [ $rc = 0 ] || fail "rping -V (rdma-cm) failed"
  log "ok: rping -V, 100 rounds of 1000 B through rdma-cm"
  out=$(pingpong_pair ibv_uc_pingpong -d "$dev" -g "$gidx" -n 200 -s 4096) || rc=1
  printf '%s\n' "$out"
  sync_point uc
  [ $rc = 0 ] || fail "ibv_uc_pingpong failed"
  expect_grep "ibv_uc_pingpong 4096 B" '200 iters in' "$out"
  msg_check_pair "$dev" "$gidx" interop-uc --type uc --iters 200 --size 4096 || fail "msg_check over UC"
  log "ok: UC, 200 messages of 4 KiB each way, every byte checked"
  sync_point uc-checked
  rc_perf_suite "$dev"
  sync_point done
  if [ "$dev" = sr0 ]; then sr_down_clean; fi
}

# rping_pair TAG -C COUNT [ARGS...]: librdmacm's rping with its data check (-V) between g1
# (server) and g2 (client), connected through rdma-cm (CM MADs over the GSI QP), on
# whichever RDMA device holds each guest's address. Both sides check every round's data;
# the client exits 0 only if all COUNT rounds passed, the server logs each round (-v).
# Under loss the server may wait forever for a lost DREQ: ib_cm sends it once and cancels
# the retries when the client destroys its id right after rdma_disconnect (rping's own
# teardown, on any driver). So the server passes once it has checked all COUNT rounds and
# the client has exited 0; it is then given 20 s to see the disconnect before it is stopped.
rping_pair() {
  local rc=0 pid tag=$1 count n i; shift
  count=$(printf '%s\n' "$@" | awk 'p { print; exit } $0 == "-C" { p = 1 }')
  if is_server; then
    # Line-buffered: a server stopped below must not lose the rounds it logged.
    timeout 200 stdbuf -oL rping -s -a "$SERVER_IP" -v -V "$@" > /tmp/rping.out 2>&1 &
    pid=$!
    sleep 1
    sync_point "rping-$tag-ready"
    sync_point "rping-$tag-client-done" 300
    [ "$(share_get 2 "rping-$tag-rc")" = 0 ] || rc=1
    for i in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    if kill -0 $pid 2>/dev/null; then
      kill $pid; wait $pid
      n=$(grep -c '^server ping data: ' /tmp/rping.out)
      log "rping server: $n of $count rounds checked; no disconnect seen (a lost DREQ), stopped"
      [ "$n" = "$count" ] || rc=1
    else
      wait $pid || rc=1
    fi
    grep -v '^server ping data: ' /tmp/rping.out
  else
    sync_point "rping-$tag-ready"
    retry 20 timeout 200 rping -c -a "$SERVER_IP" -V "$@" 2>&1 || rc=1
    share_put "rping-$tag-rc" "$rc"
    sync_point "rping-$tag-client-done" 300
  fi
  return $rc
}

# sr_up [SCHEME [PARAM=VALUE...]]: a fresh rxe_sr device sr0 on eth0 (module reloaded with
# recovery=SCHEME, else RXE_SR_RECOVERY's, else the default go-back-N, and any other module
# parameters given; kernel log marked).
sr_up() {
  local scheme=${1:-${RXE_SR_RECOVERY:-}} m
  # A driver an earlier step left loaded goes first, and its unload is checked.
  for m in rxe_sr rdma_rxe; do
    if [ -d "/sys/module/$m" ]; then check "unload $m, loaded before" modprobe -r "$m"; fi
  done
  dmesg_mark
  check "load the verbs core" load_rdma_core
  check "load rxe_sr${scheme:+ recovery=$scheme}${2:+ ${*:2}}" modprobe rxe_sr ${scheme:+recovery=$scheme} "${@:2}"
  check "rdma link add sr0" rdma link add sr0 type rxe_sr netdev eth0
  check "port ACTIVE" wait_port_active sr0
}

# sunreclaim: the kernel's unreclaimable slab (SUnreclaim), in kB, read after every cache
# is shrunk: its empty slabs go back to the page allocator and, on the KASAN kernel, the
# freed objects its quarantine holds (still counted in their slabs: in CI rx_flood's freed
# skbs showed there as 1456 kB) are released (kmem_cache_shrink calls kasan_cache_shrink).
# Fails (prints nothing) on a kernel without the shrink files.
sunreclaim() {
  [ -e /sys/kernel/slab/kmalloc-64/shrink ] || return 1
  local f
  for f in /sys/kernel/slab/*/shrink; do echo 1 > "$f"; done 2> /dev/null
  awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

# stat_of NAME [DEV]: one counter of DEV's port 1 (default sr0), as `rdma statistic` shows it.
stat_of() { rdma statistic show link "${2:-sr0}/1" | tr ' ' '\n' | awk -v k="$1" 'p { print; exit } $0 == k { p = 1 }'; }

# cpu_read: sets CPU_TICKS to this guest's CPU time so far, from /proc/stat's cpu line, in
# USER_HZ ticks: (user system softirq+irq idle+iowait), nice counted as user, steal and
# guest left out. No process is started (cpu_watch calls it every 0.1 s).
cpu_read() {
  local _cpu user nice system idle iowait irq softirq _
  read -r _cpu user nice system idle iowait irq softirq _ < /proc/stat
  CPU_TICKS=($((user + nice)) "$system" $((irq + softirq)) $((idle + iowait)))
}

# cpu_ticks: cpu_read's figures, space-separated.
cpu_ticks() { cpu_read; echo "${CPU_TICKS[*]}"; }

# cpu_watch DEV OUT STOP: measures this guest's CPU over DEV's traffic, for a benchmark
# run that starts after it: polls every 0.1 s (shell builtins only: no process started per
# poll) until the file STOP exists, and writes to OUT "SECONDS BUSY KERNEL PACKETS": from
# the first poll that saw DEV's port move packets (sent + received, by its hw_counters) to
# the last one that did, the elapsed seconds, the busy ticks (all but idle and iowait, in
# USER_HZ) and of them the kernel's (system, irq, softirq), and the packets moved. The
# setup before the traffic (QP creation, perftest's TCP exchange) and the teardown after
# it are left out. "0 0 0 0" when no traffic was seen.
cpu_watch() {
  local hw=/sys/class/infiniband/$1/ports/1/hw_counters out=$2 stop=$3
  local s r up _ fd
  local -a now first last
  # snap: now=(uptime in centiseconds, busy ticks, kernel ticks, packets).
  snap() {
    read -r s < "$hw/sent_pkts"; read -r r < "$hw/rcvd_pkts"
    cpu_read
    read -r up _ < /proc/uptime
    local k=$((CPU_TICKS[1] + CPU_TICKS[2]))
    now=("${up/./}" $((CPU_TICKS[0] + k)) "$k" $((s + r)))
  }
  # A pipe nobody writes to: `read -t` on it is a sleep without a process.
  exec {fd}<> <(:)
  snap
  local p0=${now[3]}
  while [ ! -e "$stop" ]; do
    read -rt 0.1 -u "$fd" _
    snap
    if [ "${now[3]}" != "$p0" ]; then
      [ "${#first[@]}" -gt 0 ] || first=("${now[@]}")
      last=("${now[@]}")
      p0=${now[3]}
    fi
  done
  exec {fd}<&-
  if [ "${#first[@]}" = 0 ] || [ "${first[0]}" = "${last[0]}" ]; then
    echo "0 0 0 0" > "$out"
    return
  fi
  local cs=$((10#${last[0]} - 10#${first[0]}))
  printf '%d.%02d %d %d %d\n' $((cs / 100)) $((cs % 100)) $((last[1] - first[1])) \
    $((last[2] - first[2])) $((last[3] - first[3])) > "$out"
}

# cpu_share BEFORE AFTER: the shares of CPU time between two cpu_ticks readings, e.g.
# "user 12% system 40% irq 8% idle 40% (of 900 ticks)".
cpu_share() {
  local -a a=($1) b=($2)
  local u=$((b[0] - a[0])) s=$((b[1] - a[1])) q=$((b[2] - a[2])) i=$((b[3] - a[3]))
  local t=$((u + s + q + i))
  [ "$t" -gt 0 ] || { echo "no ticks"; return; }
  echo "user $((100 * u / t))% system $((100 * s / t))% irq $((100 * q / t))% idle $((100 * i / t))% (of $t ticks)"
}

# bond_eth0: an active-backup bond0 enslaving eth0, with eth0's address ($MY_IP) moved to
# it (the caller puts eth0 back: delete bond0, eth0 up, the address back on eth0).
bond_eth0() {
  modprobe bonding max_bonds=0 2> /dev/null || return 1
  check "bond0" ip link add bond0 type bond mode active-backup miimon 100
  ip link set eth0 down
  ip addr flush dev eth0
  check "eth0 enslaved to bond0" ip link set eth0 master bond0
  check "bond0 up" ip link set bond0 up
  check "bond0 address" ip addr add "$MY_IP/24" dev bond0
}

# qp_holder_start DEV GIDX: an ibv_rc_pingpong server on DEV that holds a QP and waits for a
# client that does not come, ignoring the device's errors (its own TCP port: ib_write_bw
# takes 18515); sets $holder. qp_holder_stop WHEN: fails unless it still runs, then ends it.
qp_holder_start() {
  timeout 240 ibv_rc_pingpong -d "$1" -g "$2" -p 18600 > /dev/null 2>&1 &
  holder=$!
}
qp_holder_stop() {
  kill -0 "$holder" 2> /dev/null || fail "the QP holder ended before $1"
  log "ok: the QP holder still ran after $1"
  kill -TERM "$holder" 2> /dev/null
  wait "$holder"
}

# expect_disassociated LOG: the unload message in LOG counts disassociated user contexts.
expect_disassociated() {
  expect_grep "the QP holder's context was disassociated" '[1-9][0-9]* user contexts were disassociated' "$1"
}

# leak_begin / leak_check: on a kernel with kmemleak (the debug kernel), what the test
# leaked. leak_begin scans and forgets what is unreferenced so far (kmemleak's `clear`
# only greys what a scan reported); leak_check, which sr_down_clean calls after `rdma link
# del` and before rmmod (so that rxe_sr's frames still have names), scans again after
# kmemleak's minimum age of 5 s and fails on an unreferenced object whose allocation
# backtrace passes through rxe_sr or the RDMA core. Elsewhere both do nothing.
kmemleak_ready() {
  [ -e /sys/kernel/debug/kmemleak ] || mount -t debugfs none /sys/kernel/debug 2> /dev/null
  [ -w /sys/kernel/debug/kmemleak ]
}
leak_begin() {
  LEAK_CHECK=
  if ! kmemleak_ready || ! echo scan 2> /dev/null > /sys/kernel/debug/kmemleak; then
    [ "${RXE_SR_LEAKS:-0}" = 1 ] && fail "RXE_SR_LEAKS=1 but kmemleak is not running in this kernel"
    return 0
  fi
  echo clear > /sys/kernel/debug/kmemleak
  LEAK_CHECK=1
  log "kmemleak: scanned and cleared"
}
leak_check() {
  if [ "${LEAK_CHECK:-}" != 1 ]; then
    # A pass that asks for leak checks gets one from every test it runs.
    [ "${RXE_SR_LEAKS:-0}" = 1 ] && fail "leak_check without leak_begin: nothing was checked"
    return 0
  fi
  local rep n ours
  # kmemleak reports an object only once it is 5 s old; under TCG a scan 6 s after an
  # object's allocation still missed it (kmemleak_check.sh: found by a second scan 2 s
  # later), so scan twice.
  # An object whose last reference lingered (a stale stack slot) shows in a later scan
  # still (kmemleak_check.sh once saw 2 of its 3 leaks, the third in the next test): scan
  # again until two scans agree, at most four.
  sleep 6
  echo scan > /sys/kernel/debug/kmemleak
  sleep 2
  echo scan > /sys/kernel/debug/kmemleak
  rep=$(cat /sys/kernel/debug/kmemleak)
  n=$(grep -c '^unreferenced object' <<< "$rep")
  local i rep2 n2
  for i in 1 2; do
    sleep 2
    echo scan > /sys/kernel/debug/kmemleak
    rep2=$(cat /sys/kernel/debug/kmemleak)
    n2=$(grep -c '^unreferenced object' <<< "$rep2")
    rep=$rep2
    [ "$n2" = "$n" ] && break
    n=$n2
  done
  ours=$(awk -v re='rxe_sr|uverbs|[] ](ib|rdma)_' '/^unreferenced object/ { if (b ~ re) k++; b = "" }
              { b = b $0 "\n" } END { if (b ~ re) k++; print k + 0 }' <<< "$rep")
  log "kmemleak: $n unreferenced objects since leak_begin, $ours allocated through rxe_sr or the RDMA core"
  [ "$ours" = 0 ] || { printf '%s\n' "$rep" | head -80; fail "kmemleak: $ours objects leaked"; }
}

# sr_down_clean: removes sr0 and the module; its unload report must count no live object
# and the kernel log no oops or warning. Run under RXE_SR_RECOVERY (sr_apps.sh), the QPs
# must also have agreed on that scheme with their peers (sr_qps_negotiated).
sr_down_clean() {
  if [ -n "${RXE_SR_RECOVERY:-}" ] && [ "$RXE_SR_RECOVERY" != gbn ]; then
    local n
    n=$(stat_of sr_qps_negotiated)
    [ "${n:-0}" -ge 1 ] || fail "no QP negotiated recovery=$RXE_SR_RECOVERY"
    log "ok: $n QPs negotiated recovery=$RXE_SR_RECOVERY"
  fi
  check "rdma link del" rdma link del sr0
  leak_check
  check "rmmod" rmmod rxe_sr
  expect_grep "nothing left at unload" 'objects left: 0 ucontexts, 0 PDs, 0 CQs, 0 MRs, 0 QPs, 0 AHs, 0 SRQs, 0 MWs' "$(dmesg_since_mark)"
  check "no oops or warning in the kernel log" dmesg_clean
}

# The guest image's second root (scripts/build-image): Debian forky's rdma-core, whose stock
# rxe provider has ibv_advise_mr, FLUSH and ATOMIC WRITE.
FORKY=/opt/forky
# chroot_enter ROOT / chroot_leave ROOT: /proc, /sys, /dev and the share bound into ROOT, so
# that commands chrooted there reach the RDMA devices and the share; chroot_leave undoes it.
chroot_enter() {
  local d
  [ -x "$1/usr/bin/python3" ] || { log "no root file system at $1 (scripts/build-image makes it)"; return 1; }
  for d in /proc /sys /dev "$HOST_SHARE"; do
    mkdir -p "$1$d" && mount --bind "$d" "$1$d" || return 1
  done
}
chroot_leave() {
  local d
  for d in "$HOST_SHARE" /dev /sys /proc; do umount "$1$d" 2> /dev/null || true; done
}

# mixed_up sr|rxe: this guest's side of a mixed pair: rxe_sr as sr0, or rdma_rxe as rxe0
# (taken down again at exit). Sets DEV.
mixed_up() {
  if [ "$1" = sr ]; then
    sr_up
    DEV=sr0
  else
    trap rxe_ref_down EXIT
    check "rdma_rxe up as rxe0" rxe_ref_up
    DEV=rxe0
  fi
}

# ud_interop send|recv: 16 verified UD messages between rxe_sr (g1) and rdma_rxe (g2), with
# rxe_sr sending or receiving (ud_msgs.py does each side). Fails the test on any mismatch;
# on g1, also checks the counters and that nothing is left at unload.
ud_interop() {
  local sr_role=$1 rxe_role n=16 qkey=$((0x1234567)) dev gidx out rc
  if [ "$sr_role" = send ]; then rxe_role=recv; else rxe_role=send; fi
  if is_server; then mixed_up sr; else mixed_up rxe; fi
  dev=$DEV
  gidx=$(roce_gid_index $dev) || fail "no RoCEv2 GID"
  mkdir -p "$HOST_SHARE/vals"
  rm -f "$HOST_SHARE/vals/ud-recv-qpn" "$HOST_SHARE/vals/ud-send-qpn"
  sync_point start
  if is_server; then
    out=$(timeout 90 python3 "$HOST_SHARE/selftests/lib/ud_msgs.py" "$sr_role" sr0 "$gidx" $n $qkey 10.77.0.2 2>&1); rc=$?
  else
    out=$(timeout 90 python3 "$HOST_SHARE/selftests/lib/ud_msgs.py" "$rxe_role" rxe0 "$gidx" $n $qkey 10.77.0.1 2>&1); rc=$?
  fi
  printf '%s\n' "$out"
  sync_point done
  [ $rc = 0 ] || fail "the UD exchange failed (exit $rc)"
  local role=$rxe_role who=rdma_rxe
  is_server && role=$sr_role who=rxe_sr
  if [ "$role" = recv ]; then
    expect_grep "$who received and verified every message" "^verified $n of $n$" "$out"
  else
    expect_grep "$who: every send completed successfully" "^send completions: $n, successful: $n" "$out"
  fi
  if is_server; then
    log "counters: $(rdma statistic show link sr0/1)"
    if [ "$sr_role" = send ]; then
      expect_grep "sent_pkts counts them" "sent_pkts $n rdma_sends $n" "$(rdma statistic show link sr0/1)"
    else
      expect_grep "rdma_recvs counts them" "rdma_recvs $n" "$(rdma statistic show link sr0/1)"
    fi
    sr_down_clean
  fi
}

# pingpong_pair TOOL ARGS...: an rdma-core pingpong (ibv_rc_pingpong, ibv_ud_pingpong...)
# with g1 as server and g2 as client. Prints its output; non-zero if either side failed.
pingpong_pair() {
  local tool=$1 rc=0 pid; shift
  if is_server; then
    timeout 150 "$tool" "$@" > /tmp/pp.out 2>&1 &
    pid=$!
    sleep 1
    sync_point "$tool-ready"
    wait $pid || rc=1
    cat /tmp/pp.out
  else
    sync_point "$tool-ready"
    retry 20 timeout 150 "$tool" "$@" "$SERVER_IP" 2>&1 || rc=1
  fi
  return $rc
}
