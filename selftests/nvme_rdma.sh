#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# A kernel ULP over rxe_sr's kernel verbs: NVMe over Fabrics on RDMA. g1 exports a
# memory-backed null_blk disk through the kernel target (nvmet-rdma), g2 connects the
# kernel host (nvme-rdma) through rdma-cm. nvme-rdma runs RC QPs from the kernel, registers
# I/O buffers with fast-registration MRs (REG_MR, then LOCAL_INV or SEND with invalidate)
# and the target (receiving through a kernel SRQ) moves the data with RDMA READ and WRITE.
# g2 writes 4 MiB (2 in the quick pass) of random data with O_DIRECT and reads it back, also 4 KiB blocks at
# scattered offsets, clean and under netem loss 1%: every byte must match. Then everything
# is torn down and the module unloads with no object left.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
sr_up
nqn=rxesr-nvme-test
cfg=/sys/kernel/config/nvmet
if is_server; then
  mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
  check "null_blk (memory-backed, 1 GiB)" modprobe null_blk nr_devices=1 memory_backed=1 gb=1
  # The target takes its receives from a kernel SRQ; the host, from its QPs.
  check "nvmet-rdma (use_srq=1)" modprobe nvmet-rdma use_srq=1
  mkdir "$cfg/subsystems/$nqn" && echo 1 > "$cfg/subsystems/$nqn/attr_allow_any_host" &&
    mkdir "$cfg/subsystems/$nqn/namespaces/1" &&
    echo -n /dev/nullb0 > "$cfg/subsystems/$nqn/namespaces/1/device_path" &&
    echo 1 > "$cfg/subsystems/$nqn/namespaces/1/enable" &&
    mkdir "$cfg/ports/1" && echo rdma > "$cfg/ports/1/addr_trtype" && echo ipv4 > "$cfg/ports/1/addr_adrfam" &&
    echo "$SERVER_IP" > "$cfg/ports/1/addr_traddr" && echo 4420 > "$cfg/ports/1/addr_trsvcid" &&
    ln -s "$cfg/subsystems/$nqn" "$cfg/ports/1/subsystems/$nqn" || fail "nvmet configuration"
  log "ok: target exports /dev/nullb0 as $nqn on rdma $SERVER_IP:4420"
  sync_point target-ready
  sync_point host-done 300
  rm "$cfg/ports/1/subsystems/$nqn" && rmdir "$cfg/ports/1" &&
    echo 0 > "$cfg/subsystems/$nqn/namespaces/1/enable" && rmdir "$cfg/subsystems/$nqn/namespaces/1" &&
    rmdir "$cfg/subsystems/$nqn" || fail "nvmet teardown"
  check "unload nvmet-rdma" modprobe -r nvmet-rdma nvmet
  check "unload null_blk" modprobe -r null_blk
  # On the lockdep kernel, removing the port trips lockdep inside nvmet itself (upstream
  # 6.12, any RDMA driver): port removal takes nvmet_config_sem then rdma_cm's
  # handler_mutex, a connect took them the other way. Exactly that report is accepted;
  # anything else in the log still fails the test. (The test runs last: lockdep is off for
  # the rest of the boot after a report.)
  klog=$(dmesg_since_mark) || fail "the kernel log could not be read"
  if grep -q 'possible circular locking dependency' <<< "$klog"; then
    report=$(printf '%s\n' "$klog" | sed -n '/possible circular locking dependency/,/<\/TASK>/p')
    printf '%s\n' "$report" | grep -q 'nvmet_config_sem' && printf '%s\n' "$report" | grep -q 'id_priv->handler_mutex' ||
      fail "a lockdep report other than nvmet's known one"
    other=$(printf '%s\n' "$klog" | sed '/possible circular locking dependency/,/<\/TASK>/d' |
      grep -E 'BUG:|WARNING:|Oops|general protection|refcount_t|leak|Call Trace' || true)
    [ -z "$other" ] || fail "kernel warnings besides nvmet's known lockdep report: $other"
    log "ok: only nvmet's known lockdep report (nvmet_config_sem vs handler_mutex at port removal)"
    dmesg_mark
  fi
else
  check "nvme-rdma" modprobe nvme-rdma
  sync_point target-ready
  connected=0
  for _ in 1 2 3 4 5; do
    if echo "transport=rdma,traddr=$SERVER_IP,trsvcid=4420,nqn=$nqn" > /dev/nvme-fabrics; then connected=1; break; fi
    sleep 1
  done
  [ $connected = 1 ] || fail "nvme connect over rdma"
  dev=
  for _ in $(seq 100); do
    dev=$(ls /sys/class/nvme/*/ 2>/dev/null | grep -m1 -E '^nvme[0-9]+n[0-9]+$' || true)
    [ -n "$dev" ] && [ -b "/dev/$dev" ] && break
    sleep 0.1
  done
  [ -n "$dev" ] && [ -b "/dev/$dev" ] || fail "no namespace block device appeared"
  log "ok: connected: /dev/$dev ($(cat /sys/class/nvme/nvme*/transport 2>/dev/null | head -1), $(cat /sys/block/$dev/size) sectors)"
  io_check() {
    local what=$1
    head -c $((mib << 20)) /dev/urandom > /tmp/pat
    dd if=/tmp/pat of="/dev/$dev" bs=1M oflag=direct status=none || return 1
    dd if="/dev/$dev" of=/tmp/back bs=1M count=$mib iflag=direct status=none || return 1
    cmp -s /tmp/pat /tmp/back || { log "$mib MiB read back differs ($what)"; return 1; }
    local off
    for off in 4099 17 200000 65535 123457 1 250001 99999; do
      head -c 4096 /dev/urandom > /tmp/blk
      dd if=/tmp/blk of="/dev/$dev" bs=4096 seek=$off oflag=direct status=none || return 1
      dd if="/dev/$dev" of=/tmp/blk.back bs=4096 skip=$off count=1 iflag=direct status=none || return 1
      cmp -s /tmp/blk /tmp/blk.back || { log "4 KiB block at $off differs ($what)"; return 1; }
    done
  }
  mib=4
  quick && mib=2
  check "$mib MiB and 8 scattered 4 KiB blocks written and read back, clean" io_check clean
  netem_set 1
  check "the same under netem loss 1%" io_check "loss 1%"
  netem_set 0
  echo 1 > /sys/class/nvme/"${dev%n*}"/delete_controller || fail "nvme disconnect"
  check "unload nvme-rdma" modprobe -r nvme-rdma
  sync_point host-done 300
fi
sync_point done
sr_down_clean
