#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 660
# guests: 1
# The RDMA subsystem's netns modes with rxe_sr, in one guest, beside
# rdma_rxe; what Documentation/features.md says of them:
# - shared (the default): a link made in namespace nsa is visible from nsa and from the
#   initial namespace; moving it (`rdma dev set DEV netns nsa`) is refused, as the core
#   refuses every move in shared mode. Both drivers alike.
# - exclusive: rxe_sr registers a link's device in its netdev's namespace: a link made from
#   nsa is listed in nsa alone (ibv_devices and sysfs too), and traffic runs there
#   (ibv_rc_pingpong as a smoke test; msg_check.py and rping -V, data checked). nsa
#   deleted while a process in it holds a QP lives on until the process ends, then is
#   dismantled with the link live: the link goes with its veth, and no namespace lists it
#   after. rdma_rxe on 6.12 registers such a link in the initial namespace, which alone
#   lists it.
# - Moving a device to another namespace (`rdma dev set DEV netns nsb`, exclusive mode):
#   rxe_sr's moves while a process in nsa has a QP on it. The core disassociates the
#   process (its QP destroyed) and re-registers the device in nsb, which alone lists it;
#   ibv_rc_pingpong and msg_check.py run within it from nsb (its netdev stays in nsa).
#   nsb deleted, the core moves it to the initial namespace, and from there it moves back
#   to nsa.
#   rdma_rxe's move is refused, EOPNOTSUPP: it has no disassociate_ucontext. The mode goes
#   back to shared once the namespaces are gone.
. "$HOST_SHARE/selftests/lib/lib.sh"
netns_test_begin
# On the way out, shared mode again: the core takes it once the namespaces are dismantled,
# which happens after `ip netns del` returns.
back_to_shared() {
  ip -all netns delete 2> /dev/null
  for _ in $(seq 50); do rdma system set netns shared 2> /dev/null && return; sleep 0.2; done
}
trap back_to_shared EXIT
expect_grep "shared mode at start" 'netns shared' "$(rdma system show)"
check "load rdma_rxe beside rxe_sr" modprobe rdma_rxe

# nsa_link MODE TYPE DEV: namespace nsa with one end of a veth pair (vxa, 10.88.0.1/24; vxb
# stays in the initial namespace), and a link DEV of TYPE (rxe_sr or rxe) made on it from
# nsa.
nsa_link() {
  check "namespace nsa with a veth end ($1 mode, $2)" ip netns add nsa
  ip link add vxa type veth peer name vxb
  ip link set vxa netns nsa
  ip -n nsa addr add 10.88.0.1/24 dev vxa
  ip -n nsa link set lo up
  ip -n nsa link set vxa up
  ip link set vxb up
  check "rdma link add $3 type $2 from nsa ($1)" nsx nsa rdma link add "$3" type "$2" netdev vxa
}

# pingpong_in NS DEV SERVER: ibv_rc_pingpong in NS looping back within DEV through its
# GID for 10.88.0.1 (sets $gid), the pair meeting at SERVER, then msg_check.py the same
# way, 100 x 4096 B each way checked (20 in quick mode: with 100 and the move's steps, the
# KASAN + kmemleak pass ran out of time).
pingpong_in() {
  local ns=$1 dev=$2 srv n=100
  quick && n=20
  check "$dev ACTIVE in $ns" nsx "$ns" bash -c ". $HOST_SHARE/selftests/lib/lib.sh; wait_port_active $dev"
  gid=$(nsx "$ns" bash -c ". $HOST_SHARE/selftests/lib/lib.sh; roce_gid_index $dev 10.88.0.1") \
    || fail "no RoCEv2 GID for 10.88.0.1 on $dev in $ns"
  nsx "$ns" timeout 60 ibv_rc_pingpong -d "$dev" -g "$gid" -n $n -s 4096 > /tmp/pp-s.out 2>&1 &
  srv=$!
  retry 10 nsx "$ns" timeout 60 ibv_rc_pingpong -d "$dev" -g "$gid" -n $n -s 4096 "$3" \
    > /tmp/pp-c.out 2>&1 || { cat /tmp/pp-c.out; fail "ibv_rc_pingpong in $ns"; }
  wait $srv || { cat /tmp/pp-s.out; fail "ibv_rc_pingpong's server in $ns"; }
  grep -q "$n iters in" /tmp/pp-c.out || fail "ibv_rc_pingpong in $ns: no $n iterations"
  msg_check_ns "$ns" "$dev" "$gid" "$ns" "$dev" "$gid" "in-$ns-$dev" --iters $n --size 4096 \
    || fail "msg_check within $dev in $ns"
  log "ok: ibv_rc_pingpong and msg_check within $dev in $ns, $n x 4096 B each way checked"
}

# netns_mode MODE: `rdma system set netns MODE`. The core refuses a change of mode with
# EBUSY while any namespace other than the initial one exists, and `ip netns del` returns
# before the namespace is dismantled (a work item does it): so EBUSY is retried for up to
# 30 s, and any other error, or EBUSY for longer, fails.
netns_mode() {
  local out
  for _ in $(seq 150); do
    out=$(rdma system set netns "$1" 2>&1) && { log "ok: rdma system set netns $1 ($2)"; return; }
    case $out in *"Device or resource busy"*) sleep 0.2 ;; *) break ;; esac
  done
  fail "rdma system set netns $1 ($2): $out"
}

nsa_gone() {
  ip netns del nsa 2> /dev/null
  ip link del vxb 2> /dev/null
  true
}

# modes TYPE DEV: both modes' steps for one driver; the mode is shared when it starts and
# when it returns.
modes() {
  local type=$1 dev=$2 out
  nsa_link shared "$type" "$dev"
  expect_grep "nsa lists $dev" "^link $dev/1" "$(nsx nsa rdma link show)"
  expect_grep "the initial namespace lists $dev" "^link $dev/1" "$(rdma link show)"
  out=$(rdma dev set "$dev" netns nsa 2>&1) && fail "moving $dev in shared mode was accepted"
  log "ok: $type: moving a device in shared mode is refused: $out"
  check "rdma link del $dev" nsx nsa rdma link del "$dev"
  nsa_gone

  netns_mode exclusive "$type"
  nsa_link exclusive "$type" "$dev"
  ip netns add nsb
  if [ "$type" = rxe_sr ]; then
    expect_grep "nsa lists $dev" "^link $dev/1" "$(nsx nsa rdma link show)"
    no_match "^link $dev/1" rdma link show || fail "the initial namespace lists $dev, made from nsa in exclusive mode"
    [ -e "/sys/class/infiniband/$dev" ] && fail "the initial namespace's sysfs has $dev"
    expect_grep "ibv_devices in nsa lists $dev" "^ +$dev " "$(nsx nsa ibv_devices)"
    log "ok: $type: in exclusive mode a link made from nsa is in nsa only"
    # Traffic in nsa, looping back within the device.
    pingpong_in nsa "$dev" 10.88.0.1
    # rdma-cm in nsa: its address resolves to the one device nsa has.
    nsx nsa timeout 60 rping -s -a 10.88.0.1 -C 20 -S 1000 -V > /tmp/rp-s.out 2>&1 &
    srv=$!
    sleep 1
    retry 10 nsx nsa timeout 60 rping -c -a 10.88.0.1 -C 20 -S 1000 -V > /tmp/rp-c.out 2>&1 \
      || { tail -n 3 /tmp/rp-s.out /tmp/rp-c.out; fail "rping in nsa"; }
    wait $srv || { tail -n 3 /tmp/rp-s.out; fail "rping's server in nsa"; }
    log "ok: rping (rdma-cm) within nsa, 20 rounds of 1000 B data-checked"
    # The move to nsb, while a pingpong server in nsa holds a QP (made, waiting in accept()
    # for a client that does not come).
    ip netns exec nsa ibv_rc_pingpong -d "$dev" -g "$gid" > /dev/null 2>&1 &
    srv=$!
    for _ in $(seq 50); do nsx nsa rdma resource show qp | grep -q "comm ibv_rc_pingpong" && break; sleep 0.2; done
    expect_grep "nsa's pingpong server has a QP on $dev" "^link $dev/1 .*comm ibv_rc_pingpong" "$(nsx nsa rdma resource show qp)"
    check "rdma dev set $dev netns nsb, a QP open in nsa" nsx nsa rdma dev set "$dev" netns nsb
    expect_grep "nsb lists $dev" "^link $dev/1" "$(nsx nsb rdma link show)"
    no_match "^link $dev/1" nsx nsa rdma link show || fail "nsa still lists $dev after the move"
    expect_grep "ibv_devices in nsb lists $dev" "^ +$dev " "$(nsx nsb ibv_devices)"
    nsx nsb rdma resource show qp | grep -q "comm ibv_rc_pingpong" &&
      fail "the QP of nsa's pingpong server outlived the move: $(nsx nsb rdma resource show qp)"
    kill -0 $srv 2> /dev/null || fail "nsa's pingpong server ended with the move"
    log "ok: $type: moved to nsb, the QP of nsa's still running pingpong server destroyed"
    kill $srv; wait $srv 2> /dev/null
    # Traffic from nsb: the device's GIDs are still its netdev's (vxa, in nsa); the
    # pingpong pair meets over nsb's loopback.
    ip -n nsb link set lo up
    pingpong_in nsb "$dev" 127.0.0.1
    # nsb deleted with the device in it: the core moves it to the initial namespace.
    ip netns del nsb
    for _ in $(seq 150); do rdma link show | grep -q "^link $dev/1" && break; sleep 0.2; done
    expect_grep "$dev back in the initial namespace once nsb is gone" "^link $dev/1" "$(rdma link show)"
    check "rdma dev set $dev netns nsa (from the initial namespace)" rdma dev set "$dev" netns nsa
    expect_grep "nsa lists $dev again" "^link $dev/1" "$(nsx nsa rdma link show)"
    check "$dev ACTIVE in nsa again" nsx nsa bash -c ". $HOST_SHARE/selftests/lib/lib.sh; wait_port_active $dev"
    # nsa deleted while a pingpong server in it holds a QP (made, waiting for a client):
    # the namespace lives on until the server ends (`ip netns exec` runs it as $!), then
    # it is dismantled with the link live. Its veth goes (vxb, the peer in the initial
    # namespace, with it), and the link with the veth: were the device left, the core
    # would move it back to the initial namespace, which would list it.
    ip netns exec nsa ibv_rc_pingpong -d "$dev" -g "$gid" > /dev/null 2>&1 &
    srv=$!
    sleep 2
    kill -0 $srv 2> /dev/null || fail "the pingpong server in nsa did not start"
    ip netns del nsa
    sleep 1
    [ -e /sys/class/net/vxb ] || fail "nsa was dismantled while its pingpong server ran"
    kill $srv; wait $srv 2> /dev/null
    for _ in $(seq 150); do [ -e /sys/class/net/vxb ] || break; sleep 0.2; done
    [ -e /sys/class/net/vxb ] && fail "nsa not dismantled 30 s after its last process ended"
    sleep 1
    no_match "^link $dev/1" rdma link show || fail "$dev is left after nsa was dismantled"
    [ -e "/sys/class/infiniband/$dev" ] && fail "$dev is in sysfs after nsa was dismantled"
    log "ok: $type: nsa deleted with $dev live and a QP open: the link went with its veth"
  else
    expect_grep "the initial namespace lists $dev" "^link $dev/1" "$(rdma link show)"
    nsx nsa rdma link show | grep -q "^link $dev/1" \
      && fail "nsa lists $dev in exclusive mode: Documentation/features.md says it does not"
    log "ok: $type: in exclusive mode a link made from nsa is in the initial namespace only"
    out=$(rdma dev set "$dev" netns nsb 2>&1) && fail "moving $dev to nsb was accepted"
    expect_grep "$type: the move is refused as not supported" 'Operation not supported' "$out"
    check "rdma link del $dev" rdma link del "$dev"
  fi
  ip netns del nsb 2> /dev/null
  nsa_gone
  netns_mode shared "$type"
}

modes rxe_sr sra
modes rxe rxa
log "ok: both netns modes, rxe_sr and rdma_rxe"
check "unload rdma_rxe" modprobe -r rdma_rxe
netns_test_end
