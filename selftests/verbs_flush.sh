#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# guests: 1
# A QP entering the Error state flushes its work queues (IBTA 10.3.1): receive WRs that user
# space wrote into the QP's receive ring complete on the receive CQ with WR_FLUSH_ERR, in
# order, with their wr_ids and the QPN; the armed completion channel fires. This drives the
# kernel's side of the shared rings: reading a user-produced ring with its index checked,
# writing CQEs and publishing the CQ's producer index, completion events.
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up

out=$(timeout 60 python3 - <<'PY' 2>&1
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ, CompChannel
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.wr import RecvWR, SGE

ctx = d.Context(name="sr0")
pd = PD(ctx)
cc = CompChannel(ctx)
rcq = CQ(ctx, 16, None, cc, 0)
scq = CQ(ctx, 16)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=scq, rcq=rcq, cap=QPCap(max_send_wr=8, max_recv_wr=8)))
a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qp_access_flags = 0
qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
for i in range(5):
    qp.post_recv(RecvWR(wr_id=1000 + i, num_sge=1, sg=[SGE(mr.buf + 64 * i, 64, mr.lkey)]))
n, wcs = rcq.poll(16)
assert n == 0, "completions before the flush: %d" % n
rcq.req_notify()
a = QPAttr(); a.qp_state = e.IBV_QPS_ERR
qp.modify(a, e.IBV_QP_STATE)
cc.get_cq_event(rcq)
rcq.ack_events(1)
print("completion event received")
n, wcs = rcq.poll(16)
print("polled %d: %s" % (n, [(w.wr_id, w.status, w.qp_num) for w in wcs]))
assert n == 5, n
assert [w.wr_id for w in wcs] == [1000, 1001, 1002, 1003, 1004], [w.wr_id for w in wcs]
assert all(w.status == e.IBV_WC_WR_FLUSH_ERR for w in wcs), [w.status for w in wcs]
assert all(w.qp_num == qp.qp_num for w in wcs)
n, _ = rcq.poll(16)
assert n == 0, "completions after the flush: %d" % n
n, _ = scq.poll(16)
assert n == 0, "send CQ got %d" % n
print("flushed 5 receives in order with WR_FLUSH_ERR")
qp.close(); mr.close(); scq.close(); rcq.close(); cc.close(); pd.close(); ctx.close()
print("closed")
PY
)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "pyverbs script failed (exit $rc)"
expect_grep "the armed channel fired" '^completion event received$' "$out"
expect_grep "receives flushed in order" '^flushed 5 receives in order with WR_FLUSH_ERR$' "$out"
expect_grep "closed" '^closed$' "$out"
sr_down_clean
