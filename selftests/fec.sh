#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1200
# The FEC shim (fec_unit, fec_depth) between two rxe_sr devices, and toward peers that do
# not run it. rc_verify.py (SEND, WRITE with immediate, READ and atomics both ways at
# once, every byte checked) passes in every case.
# 1. gbn and fasr, unit 8 depth 2, lossless: both guests' requesters had their offer
#    taken and sent repairs, each guest received repairs, nothing was rebuilt, nothing was
#    malformed.
# 2. The same under 2% loss on both egresses: losses were rebuilt (fec_rebuilt > 0).
# 3. gbn with a window of 1024 PSNs, unit 8 depth 4, under bursts (netem's Gilbert-Elliott
#    model): rebuilt too.
# 4. gbn, unit 32 depth 1, under 5% loss: units lost two or more packets
#    (fec_unrepairable > 0), which the transport recovered; each receiving side asked for
#    more redundancy and each requester took the ask.
# 5. A standard peer: g1 runs FEC with a go-back-N window of 1024 PSNs, g2 rdma_rxe (then
#    rxe_sr without FEC); rc_verify under 1% loss, then msg_check over UC (whose requests
#    carry the offer until a take comes, and none does): g1 sends no repair, and g2's
#    capture holds no datagram starting with 0x1F.
# 6. The device attribute `fec`: "8:2" written on a device loaded without FEC turns it on
#    for the QPs connected after (repairs sent and rebuilt under 2% loss), "off" off again;
#    it reads back what was written, and anything else is refused.
# 7. Devices set differently (fasr; g1 unit 8 depth 2, g2 unit 32 depth 4), under 2% loss
#    (three rounds, so that enough is coded after the asks are taken):
#    each guest's receiving side asked for its own setting (fec_asks_sent > 0), each
#    requester took the peer's ask (fec_asks_taken > 0), and losses were rebuilt.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
trap 'log "counters at exit: $(rdma statistic show link sr0/1 2>/dev/null)"' EXIT

# fec_up SCHEME UNIT DEPTH [PARAM=VALUE...]: rxe_sr as sr0 with the scheme, FEC
# parameters and any other module parameters.
fec_up() { sr_up "$1" fec_unit="$2" fec_depth="$3" "${@:4}"; }
at_least() { # NAME MIN WHAT
  local v; v=$(stat_of "$1")
  [ -n "$v" ] && [ "$v" -ge "$2" ] || fail "$3: counter $1 is '$v', expected >= $2"
}
is_zero() { # NAME WHAT
  [ "$(stat_of "$1")" = 0 ] || fail "$2: counter $1 is $(stat_of "$1"), expected 0"
}
# verify SPEC TAG [ROUNDS]: rc_verify (ROUNDS rounds, default 1) under the netem SPEC on
# both egresses.
verify() {
  netem_set "$1"
  sync_point "verify-$2"
  rc_verify_pair sr0 "fec-$2" "${3:-1}" || fail "$2: rc_verify under netem '$1'"
  netem_set 0
  log "ok: $2: rc_verify under netem '$1', every byte checked"
}

check "rejects a unit of 24" bash -c '! modprobe rxe_sr fec_unit=24 2>/dev/null'
for scheme in gbn fasr; do
  fec_up "$scheme" 8 2
  verify 0 "$scheme-lossless"
  sync_point "counted-$scheme-lossless"
  at_least fec_repairs_sent 1 "$scheme lossless"
  at_least fec_repairs_rcvd 1 "$scheme lossless"
  is_zero fec_rebuilt "$scheme lossless"
  is_zero rcvd_malformed "$scheme lossless"
  verify 2 "$scheme-loss"
  sync_point "counted-$scheme-loss"
  at_least fec_rebuilt 1 "$scheme at 2% loss"
  is_zero rcvd_malformed "$scheme at 2% loss"
  log "$scheme counters: $(rdma statistic show link sr0/1)"
  sync_point "down-$scheme"
  sr_down_clean
done

fec_up gbn 8 4 gbn_window_psns=1024
verify "loss gemodel 1% 30% 70% 0%" gbn-bursts
sync_point counted-bursts
at_least fec_rebuilt 1 "gbn under bursts"
sync_point down-bursts
sr_down_clean

fec_up gbn 32 1
verify 5 gbn-heavy 3
sync_point counted-heavy
at_least fec_unrepairable 1 "gbn, unit 32, 5% loss"
at_least fec_asks_sent 1 "gbn, unit 32, 5% loss: the receiving side asks for more redundancy"
at_least fec_asks_taken 1 "gbn, unit 32, 5% loss: the requester takes the ask"
log "heavy counters: $(rdma statistic show link sr0/1 | grep -o 'fec_[a-z_]* [0-9]*' | tr '\n' ' ')"
sync_point down-heavy
sr_down_clean

for peer in rdma_rxe plain; do
  if is_server; then
    fec_up gbn 8 2 gbn_window_psns=1024
    dev=sr0
  else
    if [ $peer = rdma_rxe ]; then
      check "rdma_rxe up as rxe0" rxe_ref_up
      dev=rxe0
    else
      sr_up gbn
      dev=sr0
    fi
    tcpdump -i eth0 -s 64 -w /tmp/fec.pcap 'udp port 4791 and udp[8] == 0x1f' 2>/tmp/tcpdump.err &
    cap=$!
    sleep 1
  fi
  sync_point "peer-$peer"
  netem_set 1
  rc_verify_pair "$dev" "fec-peer-$peer" 1 || fail "FEC <-> $peer: rc_verify under 1% loss"
  netem_set 0
  gidx=$(roce_gid_index "$dev") || fail "no RoCEv2 GID on $dev"
  msg_check_pair "$dev" "$gidx" "fec-peer-$peer-uc" --type uc --iters 200 --size 4096 ||
    fail "FEC <-> $peer: msg_check over UC"
  sync_point "peer-$peer-done"
  if is_server; then
    is_zero fec_repairs_sent "toward $peer"
  else
    sleep 1
    kill "$cap"
    wait "$cap" 2>/dev/null
    n=$(tcpdump -r /tmp/fec.pcap 2>/dev/null | wc -l)
    [ "$n" = 0 ] || fail "$peer received $n repair packets"
    log "ok: $peer: no repair packet reached it"
  fi
  sync_point "peer-$peer-down"
  if [ "$dev" = rxe0 ]; then rxe_ref_down; else sr_down_clean; fi
done

sr_up gbn
attr=/sys/class/infiniband/sr0/fec
check "fec reads off" test "$(cat $attr)" = off
check "fec=24:4 refused" bash -c "! echo 24:4 > $attr"
check "fec=on refused" bash -c "! echo on > $attr"
check "fec=8:2 taken" bash -c "echo 8:2 > $attr"
check "fec reads 8:2" test "$(cat $attr)" = 8:2
verify 2 sysfs-on
sync_point counted-sysfs-on
at_least fec_repairs_sent 1 "fec=8:2 in sysfs"
at_least fec_rebuilt 1 "fec=8:2 in sysfs, 2% loss"
sent=$(stat_of fec_repairs_sent)
check "fec=off taken" bash -c "echo off > $attr"
verify 0 sysfs-off
sync_point counted-sysfs-off
[ "$(stat_of fec_repairs_sent)" = "$sent" ] || fail "fec=off: repairs still sent ($sent, then $(stat_of fec_repairs_sent))"
log "ok: the device attribute fec turns FEC on and off for the QPs connected after it"
sync_point down-sysfs
sr_down_clean

if is_server; then fec_up fasr 8 2; else fec_up fasr 32 4; fi
verify 2 differently-set 3
sync_point counted-differently-set
at_least fec_asks_sent 1 "set differently: the receiving side asks for its setting"
at_least fec_asks_taken 1 "set differently: the requester takes the peer's ask"
at_least fec_rebuilt 1 "set differently, 2% loss"
is_zero rcvd_malformed "set differently"
log "ok: set differently: $(rdma statistic show link sr0/1 | grep -o 'fec_[a-z_]* [0-9]*' | tr '\n' ' ')"
sync_point down-differently-set
sr_down_clean
