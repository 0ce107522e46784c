#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 60
# rxe_sr and rdma_rxe share UDP port 4791 and the driver id: with rdma_rxe loaded, rxe_sr
# refuses to load, with a message saying why; once rdma_rxe is gone it loads.
. "$HOST_SHARE/selftests/lib.sh"
modprobe -r rxe_sr 2>/dev/null
dmesg_mark
check "load rdma_rxe" modprobe rdma_rxe
if modprobe rxe_sr 2>/tmp/err; then
  modprobe -r rxe_sr rdma_rxe
  fail "rxe_sr loaded beside rdma_rxe"
fi
log "ok: refused: $(cat /tmp/err)"
expect_grep "message names rdma_rxe" 'rxe_sr: UDP port 4791 is taken: is rdma_rxe loaded' "$(dmesg_since_mark)"
check "unload rdma_rxe" modprobe -r rdma_rxe
check "rxe_sr loads now" modprobe rxe_sr
check "unload rxe_sr" modprobe -r rxe_sr
check "no oops or warning in the kernel log" dmesg_clean
