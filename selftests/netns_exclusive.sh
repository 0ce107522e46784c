#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# The RDMA subsystem's netns modes with rxe_sr (issue 14, item 1), in one guest; what the
# README says of them:
# - shared (the default): a link made in namespace nsa is visible from nsa and from the
#   initial namespace; moving it (`rdma dev set sra netns nsa`) is refused, as the core
#   refuses every move in shared mode.
# - exclusive: a link made from nsa registers in the initial namespace (6.12 gives a driver
#   no way to register elsewhere): the initial namespace lists it, nsa does not; moving it
#   to nsa is refused, EOPNOTSUPP, since rxe_sr has no disassociate_ucontext (nor has
#   rdma_rxe). The mode goes back to shared once the namespace is gone.
. "$HOST_SHARE/selftests/lib.sh"
netns_test_begin
trap 'ip -all netns delete 2> /dev/null; rdma system set netns shared 2> /dev/null' EXIT
expect_grep "shared mode at start" 'netns shared' "$(rdma system show)"

# nsa_link MODE: namespace nsa with one end of a veth pair (vxa, 10.88.0.1/24; vxb stays in
# the initial namespace), and rxe_sr link sra made on it from nsa.
nsa_link() {
  check "namespace nsa with a veth end ($1 mode)" ip netns add nsa
  ip link add vxa type veth peer name vxb
  ip link set vxa netns nsa
  ip -n nsa addr add 10.88.0.1/24 dev vxa
  ip -n nsa link set vxa up
  check "rdma link add sra from nsa ($1)" nsx nsa rdma link add sra type rxe_sr netdev vxa
}

nsa_link shared
expect_grep "nsa lists sra" '^link sra/1' "$(nsx nsa rdma link show)"
expect_grep "the initial namespace lists sra" '^link sra/1' "$(rdma link show)"
out=$(rdma dev set sra netns nsa 2>&1) && fail "moving sra in shared mode was accepted"
log "ok: moving a device in shared mode is refused: $out"
check "rdma link del sra" nsx nsa rdma link del sra
ip netns del nsa
ip link del vxb 2> /dev/null

check "rdma system set netns exclusive" rdma system set netns exclusive
nsa_link exclusive
expect_grep "the initial namespace lists sra" '^link sra/1' "$(rdma link show)"
nsx nsa rdma link show | grep -q '^link sra/1' && fail "nsa lists sra in exclusive mode: the README says it does not"
log "ok: in exclusive mode a link made from nsa is in the initial namespace only"
out=$(rdma dev set sra netns nsa 2>&1) && fail "moving sra to nsa in exclusive mode was accepted: the README says it is not"
expect_grep "the move is refused as not supported" 'Operation not supported' "$out"
check "rdma link del sra" rdma link del sra
ip netns del nsa
ip link del vxb 2> /dev/null
check "rdma system set netns shared" rdma system set netns shared
netns_test_end
