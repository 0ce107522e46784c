#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 150
# guests: 1
# The RDMA subsystem's netns modes with rxe_sr (issue 14, item 1), in one guest, and the
# same steps with rdma_rxe, which must behave the same; what the README says of them:
# - shared (the default): a link made in namespace nsa is visible from nsa and from the
#   initial namespace; moving it (`rdma dev set DEV netns nsa`) is refused, as the core
#   refuses every move in shared mode.
# - exclusive: a link made from nsa registers in the initial namespace (6.12 gives a driver
#   no way to register elsewhere, and the link command passes none): the initial namespace
#   lists it, nsa does not; moving it to nsa is refused, EOPNOTSUPP, since neither rxe_sr
#   nor rdma_rxe has disassociate_ucontext. The mode goes back to shared once the namespace
#   is gone.
. "$HOST_SHARE/selftests/lib.sh"
netns_test_begin
trap 'ip -all netns delete 2> /dev/null; rdma system set netns shared 2> /dev/null' EXIT
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
  ip -n nsa link set vxa up
  check "rdma link add $3 type $2 from nsa ($1)" nsx nsa rdma link add "$3" type "$2" netdev vxa
}

nsa_gone() {
  ip netns del nsa
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

  check "rdma system set netns exclusive ($type)" rdma system set netns exclusive
  nsa_link exclusive "$type" "$dev"
  expect_grep "the initial namespace lists $dev" "^link $dev/1" "$(rdma link show)"
  nsx nsa rdma link show | grep -q "^link $dev/1" \
    && fail "nsa lists $dev in exclusive mode: the README says it does not"
  log "ok: $type: in exclusive mode a link made from nsa is in the initial namespace only"
  out=$(rdma dev set "$dev" netns nsa 2>&1) \
    && fail "moving $dev to nsa in exclusive mode was accepted: the README says it is not"
  expect_grep "$type: the move is refused as not supported" 'Operation not supported' "$out"
  check "rdma link del $dev" rdma link del "$dev"
  nsa_gone
  check "rdma system set netns shared ($type)" rdma system set netns shared
}

modes rxe_sr sra
modes rxe rxa
log "ok: rxe_sr and rdma_rxe behave the same in both netns modes"
check "unload rdma_rxe" modprobe -r rdma_rxe
netns_test_end
