#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# guests: 1
# Through the stock rdma-core rxe provider (pyverbs): open sr0, allocate PDs, create CQs
# (the provider mmaps each CQ ring and reads its header; one of 131071 entries, past
# rdma_rxe's max_cqe), arm completion events; depths of 0, below 0 and past the reported
# max_cqe are refused with an error; a process that exits with objects open leaves nothing
# behind (the module's live-object counters, reported at unload, are all zero). The
# max_pkeys ibv_devinfo reports is the size of the port's P_Key table (its pkey_tbl_len and
# the entries in sysfs), whose last entry reads back and whose next does not exist.
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up

out=$(python3 - <<'PY' 2>&1
import pyverbs.device as d
from pyverbs.pd import PD
from pyverbs.cq import CQ, CompChannel
from pyverbs.pyverbs_error import PyverbsRDMAError

ctx = d.Context(name='sr0')
pds = [PD(ctx) for _ in range(4)]
max_cqe = ctx.query_device().max_cqe
print("max_cqe %d" % max_cqe)
# 131071: perftest's default TX depth (128) over 1000 QPs in one CQ (more than rdma_rxe's
# 32767).
cqs = [CQ(ctx, n) for n in (1, 100, 4096, 32767, 131071)]
cc = CompChannel(ctx)
ev_cq = CQ(ctx, 16, None, cc, 0)
ev_cq.req_notify()
print("created: 4 PDs, 6 CQs, armed one")
for bad in (0, -5, max_cqe + 1, 1 << 30):
    try:
        CQ(ctx, bad)
        print("BAD: depth %d accepted" % bad)
    except PyverbsRDMAError as e:
        print("refused depth %d: errno %d" % (bad, e.error_code))
for o in cqs + [ev_cq]:
    o.close()
cc.close()
for p in pds:
    p.close()
ctx.close()
print("closed")
PY
)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "pyverbs script failed"
expect_grep "objects created through the stock provider" '^created: 4 PDs, 6 CQs, armed one$' "$out"
expect_grep "max_cqe reported" '^max_cqe 1048575$' "$out"
[ "$(printf '%s\n' "$out" | grep -c '^refused depth')" = 4 ] || fail "not every bad depth was refused"
printf '%s\n' "$out" | grep -q '^BAD' && fail "a bad depth was accepted"
expect_grep "closed cleanly" '^closed$' "$out"

info=$(ibv_devinfo -v -d sr0) || fail "ibv_devinfo -v -d sr0 failed"
max_pkeys=$(printf '%s\n' "$info" | awk '$1 == "max_pkeys:" { print $2; exit }')
tbl_len=$(printf '%s\n' "$info" | awk '$1 == "pkey_tbl_len:" { print $2; exit }')
pkeys=/sys/class/infiniband/sr0/ports/1/pkeys
entries=$(find "$pkeys" -mindepth 1 -maxdepth 1 | wc -l)
log "max_pkeys $max_pkeys, pkey_tbl_len $tbl_len, $entries P_Key entries in sysfs"
[ -n "$max_pkeys" ] && [ "$max_pkeys" -ge 1 ] || fail "no max_pkeys in ibv_devinfo -v"
[ "$max_pkeys" = "$tbl_len" ] && [ "$max_pkeys" = "$entries" ] \
  || fail "max_pkeys $max_pkeys is not the P_Key table's size (pkey_tbl_len $tbl_len, $entries entries)"
log "ok: max_pkeys is the P_Key table's size"
last=$(cat "$pkeys/$((max_pkeys - 1))") || fail "P_Key entry $((max_pkeys - 1)) (max_pkeys - 1) unreadable"
[ "$max_pkeys" != 1 ] || [ "$last" = 0xffff ] || fail "P_Key 0 reads $last, not the default 0xffff"
log "ok: P_Key entry $((max_pkeys - 1)) reads $last"
[ ! -e "$pkeys/$max_pkeys" ] || fail "a P_Key entry $max_pkeys (max_pkeys) exists"
log "ok: no P_Key entry $max_pkeys"

# A process that dies with objects open: uverbs tears them down.
python3 -c '
import os, pyverbs.device as d
from pyverbs.pd import PD
from pyverbs.cq import CQ
ctx = d.Context(name="sr0"); pd = PD(ctx); cqs = [CQ(ctx, 64) for _ in range(3)]
os._exit(0)' || fail "crashing process script failed"

sr_down_clean
