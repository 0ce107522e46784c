#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# Through the stock rdma-core rxe provider (pyverbs): open sr0, allocate PDs, create CQs
# (the provider mmaps each CQ ring and reads its header; one of 131071 entries, past
# rdma_rxe's max_cqe), arm completion events; depths of 0, below 0 and past the reported
# max_cqe are refused with an error; a process that exits with objects open leaves nothing
# behind (the module's live-object counters, reported at unload, are all zero).
. "$HOST_SHARE/selftests/lib.sh"
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

# A process that dies with objects open: uverbs tears them down.
python3 -c '
import os, pyverbs.device as d
from pyverbs.pd import PD
from pyverbs.cq import CQ
ctx = d.Context(name="sr0"); pd = PD(ctx); cqs = [CQ(ctx, 64) for _ in range(3)]
os._exit(0)' || fail "crashing process script failed"

sr_down_clean
