#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# guests: 1
# `rdma link add sr0 type rxe_sr netdev eth0` makes an ib_device that rdma, ibv_devices and
# ibv_devinfo show: port ACTIVE, Ethernet link layer, RoCEv2 GIDs from eth0's addresses, the
# path MTU from eth0's MTU (and following it), port state following eth0; a second link on
# eth0 is refused, so is one whose registration fails (its name taken), and what it had
# built is freed; `rdma link del` and rmmod leave nothing behind.
. "$HOST_SHARE/selftests/lib/lib.sh"
modprobe -r rxe_sr rdma_rxe 2>/dev/null
dmesg_mark
check "load the verbs core" load_rdma_core
check "rdma link add autoloads rxe_sr" rdma link add sr0 type rxe_sr netdev eth0
check "port becomes ACTIVE" wait_port_active sr0

expect_grep "rdma link shows sr0 on eth0" '^link sr0/1 state ACTIVE physical_state LINK_UP netdev eth0' "$(rdma link show sr0/1)"
expect_grep "ibv_devices lists sr0" '^[[:space:]]+sr0[[:space:]]+[0-9a-f]{16}$' "$(ibv_devices)"
mac=$(cat /sys/class/net/eth0/address)
guid=$(ibv_devices | awk '$1 == "sr0" { print $2 }')
IFS=: read -r m0 m1 m2 m3 m4 m5 <<< "$mac"
want=$(printf '%02x%s%sfffe%s%s%s' $(( 0x$m0 ^ 2 )) "$m1" "$m2" "$m3" "$m4" "$m5")
[ "$guid" = "$want" ] || fail "node GUID $guid is not the EUI-64 of $mac ($want)"
log "ok: node GUID $guid from $mac"

gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID for $MY_IP"
log "ok: RoCEv2 GID for $MY_IP at index $gidx"
info=$(ibv_devinfo -v -d sr0)
expect_grep "ibv_devinfo: port active" 'state:[[:space:]]+PORT_ACTIVE \(4\)' "$info"
expect_grep "ibv_devinfo: Ethernet link layer" 'link_layer:[[:space:]]+Ethernet' "$info"
expect_grep "ibv_devinfo: path MTU from eth0's 1500" 'active_mtu:[[:space:]]+1024 \(3\)' "$info"
expect_grep "ibv_devinfo: max MTU" 'max_mtu:[[:space:]]+4096 \(5\)' "$info"
expect_grep "ibv_devinfo: RoCEv2 GID of eth0's IPv4 address" "GID\[ *$gidx\]:.*::ffff:$MY_IP, RoCE v2" "$info"
expect_grep "ibv_devinfo: rxe's vendor id" 'vendor_id:[[:space:]]+0xffffff' "$info"
expect_grep "ibv_devinfo: max_qp_wr" 'max_qp_wr:[[:space:]]+1048576' "$info"
expect_grep "uverbs device exists (the stock rxe provider bound)" 'transport:[[:space:]]+InfiniBand' "$info"

ip link set eth0 mtu 9000
expect_grep "path MTU follows eth0 to 9000" 'active_mtu:[[:space:]]+4096 \(5\)' "$(ibv_devinfo -d sr0)"
ip link set eth0 mtu 1500
expect_grep "and back to 1500" 'active_mtu:[[:space:]]+1024 \(3\)' "$(ibv_devinfo -d sr0)"

ip link set eth0 down
expect_grep "port DOWN with eth0 down" 'state DOWN' "$(rdma link show sr0/1)"
ip link set eth0 up
ip addr add "$MY_IP/24" dev eth0 2>/dev/null
check "port ACTIVE again with eth0 up" wait_port_active sr0

if rdma link add sr1 type rxe_sr netdev eth0 2>/tmp/err; then
  fail "a second rxe_sr link on eth0 was accepted"
fi
log "ok: second link on eth0 refused: $(cat /tmp/err)"
# A link whose registration fails (the name is taken; lo has no rxe_sr device yet): the
# half-built device is freed, once, and leaves nothing counted (the unload line below).
if rdma link add sr0 type rxe_sr netdev lo 2>/tmp/err; then
  fail "a second link named sr0 was accepted"
fi
log "ok: a link named like an existing one is refused: $(cat /tmp/err)"
[ "$(ls /sys/class/infiniband/)" = sr0 ] || fail "devices after the refused link: $(ls /sys/class/infiniband/)"

check "rdma link del" rdma link del sr0
[ -z "$(rdma link show 2>/dev/null | grep sr0)" ] || fail "sr0 still listed after del"
[ -z "$(ls /sys/class/infiniband/)" ] || fail "left in /sys/class/infiniband: $(ls /sys/class/infiniband)"
check "rmmod rxe_sr" rmmod rxe_sr
expect_grep "unload: every device freed" 'rxe_sr: unloaded \(1 devices were created, 0 are left;' "$(dmesg_since_mark)"

# Unload with a live link: the module removes its devices itself.
check "link again" rdma link add sr0 type rxe_sr netdev eth0
check "rmmod with a live link" rmmod rxe_sr
[ -z "$(ls /sys/class/infiniband/)" ] || fail "device left after rmmod"
check "no oops or warning in the kernel log" dmesg_clean
