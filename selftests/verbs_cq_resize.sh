#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# guests: 1
# ibv_resize_cq through the stock rxe provider: completions not yet polled move to the new
# ring in order (the provider remaps it); a depth below the pending count, or above the
# device's limit, is refused and leaves the CQ as it was; the resized CQ keeps working.
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up

out=$(timeout 60 python3 - <<'PY' 2>&1
import errno
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.wr import RecvWR, SGE
from pyverbs.pyverbs_error import PyverbsRDMAError

ctx = d.Context(name="sr0")
pd = PD(ctx)
cq = CQ(ctx, 8)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)

def flushed_qp(first_wr_id, n):
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=8, max_recv_wr=16)))
    a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qp_access_flags = 0
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    for i in range(n):
        qp.post_recv(RecvWR(wr_id=first_wr_id + i, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
    a = QPAttr(); a.qp_state = e.IBV_QPS_ERR
    qp.modify(a, e.IBV_QP_STATE)
    return qp

qp1 = flushed_qp(100, 6)             # 6 completions pending in an 8-deep CQ
n, wcs = cq.poll(2)                  # consume 2: the ring's consumer is not at 0 any more
assert [w.wr_id for w in wcs] == [100, 101], [w.wr_id for w in wcs]
for bad in (3, 1 << 20):
    try:
        cq.resize(bad)
        print("BAD resize to %d accepted" % bad)
    except PyverbsRDMAError as ex:
        print("refused resize to %d: errno %d" % (bad, ex.error_code))
cq.resize(100)
print("resized to %d" % cq.cqe)
n, wcs = cq.poll(16)
assert [w.wr_id for w in wcs] == [102, 103, 104, 105], [w.wr_id for w in wcs]
assert all(w.status == e.IBV_WC_WR_FLUSH_ERR for w in wcs)
print("4 pending completions carried over in order")
qp2 = flushed_qp(200, 12)            # more than the old depth: the new ring is in use
n, wcs = cq.poll(32)
assert [w.wr_id for w in wcs] == list(range(200, 212)), [w.wr_id for w in wcs]
print("the resized CQ takes 12 more")
cq.resize(4)
print("shrunk to %d when empty" % cq.cqe)
# A resize moves pending completions in chunks of 256 (the lock dropped in between): 695
# pending (3 chunks) must all arrive, in order.
big = CQ(ctx, 1024)
qp3 = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=big, rcq=big, cap=QPCap(max_send_wr=8, max_recv_wr=700)))
a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qp_access_flags = 0
qp3.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
for i in range(700):
    qp3.post_recv(RecvWR(wr_id=1000 + i, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
a = QPAttr(); a.qp_state = e.IBV_QPS_ERR
qp3.modify(a, e.IBV_QP_STATE)
n, wcs = big.poll(5)
assert [w.wr_id for w in wcs] == list(range(1000, 1005)), [w.wr_id for w in wcs]
big.resize(2000)
got = []
while True:
    n, wcs = big.poll(64)
    if not n:
        break
    got += [w.wr_id for w in wcs[:n]]
assert got == list(range(1005, 1700)), (len(got), got[:3], got[-3:])
print("695 pending completions carried over in order by a chunked resize")
for o in (qp1, qp2, qp3, mr, cq, big, pd, ctx):
    o.close()
print("closed")
PY
)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "pyverbs script failed (exit $rc)"
[ "$(printf '%s\n' "$out" | grep -c '^refused resize')" = 2 ] || fail "bad resizes were not refused"
printf '%s\n' "$out" | grep -q '^BAD' && fail "a bad resize was accepted"
expect_grep "pending completions survive" '^4 pending completions carried over in order$' "$out"
expect_grep "new ring works" '^the resized CQ takes 12 more$' "$out"
expect_grep "a chunked resize keeps every completion" '^695 pending completions carried over in order by a chunked resize$' "$out"
expect_grep "closed" '^closed$' "$out"
sr_down_clean
