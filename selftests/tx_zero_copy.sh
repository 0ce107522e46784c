#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# guests: 1
# Payloads sent by reference (tx_zero_copy, Documentation/transmit.md) outlive the memory
# they came from. In one guest, sra (nsa) and srb (nsb) are joined by a veth pair whose nsa
# end delays every packet by 200 ms (netem), so the datagrams sra sends by reference wait in
# the qdisc with the pages of the memory region they were read from; meanwhile the sending
# process takes the memory away (lib/tx_zc_races.py): deregisters and frees the region,
# moves it onto another buffer (REREG_MR), closes its device context, or invalidates the
# memory window a peer READs through and frees the region. Each round then writes over 64
# MiB of fresh memory. Checked:
#  - each work request that completed successfully moved its bytes exactly (every byte);
#  - packets did go by reference (sra's sent_by_ref_pkts grew in every mode), and with
#    tx_zero_copy=N none does, and the same transfers still complete with their bytes;
#  - nothing leaks, rxe_sr unloads with no object left, and the kernel log is clean: a page
#    freed under a datagram would show as a bad page state or, on the KASAN kernel, a
#    use-after-free when srb's receive path reads the fragments.
. "$HOST_SHARE/selftests/lib/lib.sh"
netns_test_begin
netns_veth_pair
check "rdma link add sra in nsa" nsx nsa rdma link add sra type rxe_sr netdev vxa
check "rdma link add srb in nsb" nsx nsb rdma link add srb type rxe_sr netdev vxb
check "sra ACTIVE" wait_port_active sra
check "srb ACTIVE" wait_port_active srb
check "200 ms delay on vxa (nsa's end)" nsx nsa tc qdisc add dev vxa root netem delay 200ms limit 10000
ga=$(roce_gid_index sra 10.88.0.1) || fail "no RoCEv2 GID for 10.88.0.1 on sra"
gb=$(roce_gid_index srb 10.88.0.2) || fail "no RoCEv2 GID for 10.88.0.2 on srb"
[ "$(cat /sys/module/rxe_sr/parameters/tx_zero_copy)" = Y ] || fail "tx_zero_copy is not on by default"

# races MODE: the Python side's rounds in MODE, its output checked.
races() {
  local out rc=0
  out=$(timeout 150 python3 "$HOST_SHARE/selftests/lib/tx_zc_races.py" "$ga" "$gb" "$1" 2>&1) || rc=$?
  printf '%s\n' "$out"
  [ $rc = 0 ] || fail "$1: the races script failed (exit $rc)"
  expect_grep "$1: rounds ran, packets went by reference" "^$1: [0-9]+ ok, [0-9]+ failed, by reference [1-9][0-9]*$" "$out"
}
for m in dereg rereg close mw_inval; do
  races "$m"
done

# Copied instead: nothing goes by reference, the same checks hold.
echo N > /sys/module/rxe_sr/parameters/tx_zero_copy
rc=0
out=$(timeout 150 python3 "$HOST_SHARE/selftests/lib/tx_zc_races.py" "$ga" "$gb" dereg --rounds 1 --copied 2>&1) || rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "tx_zero_copy=N: the races script failed (exit $rc)"
expect_grep "tx_zero_copy=N: nothing by reference" '^dereg: [0-9]+ ok, [0-9]+ failed, by reference 0$' "$out"
echo Y > /sys/module/rxe_sr/parameters/tx_zero_copy
nsx nsa tc qdisc del dev vxa root
check "rdma link delete srb" rdma link delete srb
check "rdma link delete sra" rdma link delete sra
netns_test_end
