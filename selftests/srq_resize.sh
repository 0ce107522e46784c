#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# guests: 1
# Resizing an SRQ through the stock rxe provider (pyverbs, one guest, an RC pair looped back
# on sr0): 10 receives posted at depth 16, the SRQ grown to 64 (the posted WQEs move to the
# new ring, which the provider maps in place of the old one), 40 more posted, then 50 SENDs
# arrive: every one lands in the right buffer, in posting order. Shrinking below the number
# posted is refused with EINVAL; the limit event is armed against the new depth. The device's
# SRQ limits: an SRQ of max_srq_sge SGEs is created, one of max_srq_sge + 1 refused; a depth
# of max_srq_wr + 1 is refused at create and at resize (the SRQ keeps its depth).
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"

out=$(GIDX=$gidx python3 - <<'PY' 2>&1
import errno, os, sys, time
sys.path.insert(0, os.environ["HOST_SHARE"] + "/selftests/lib")
from verbs_util import sends_checked
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.srq import SRQ, SrqInitAttr, SrqAttr
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.wr import SendWR, RecvWR, SGE
from pyverbs.pyverbs_error import PyverbsRDMAError

gidx = int(os.environ["GIDX"])
ctx = d.Context(name='sr0')
pd = PD(ctx)
cq = CQ(ctx, 256)
SLOT, N = 256, 50
mr = MR(pd, 2 * N * SLOT, e.IBV_ACCESS_LOCAL_WRITE)
srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=1)))
a_qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=64, max_recv_wr=1)))
b_qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, srq=srq, cap=QPCap(max_send_wr=1, max_recv_wr=0)))
gid = ctx.query_gid(1, gidx)

def connect(qp, peer):
    a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qp_access_flags = 0
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTR; a.path_mtu = e.IBV_MTU_1024; a.dest_qp_num = peer.qp_num
    a.rq_psn = 0; a.max_dest_rd_atomic = 1; a.min_rnr_timer = 1
    a.ah_attr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=gidx), is_global=1, port_num=1)
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
              | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTS; a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7
    a.sq_psn = 0; a.max_rd_atomic = 1
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY
              | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)

connect(a_qp, b_qp)
connect(b_qp, a_qp)

def post(i):
    srq.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + i * SLOT, SLOT, mr.lkey)]))

for i in range(10):
    post(i)
try:
    srq.modify(SrqAttr(max_wr=4), e.IBV_SRQ_MAX_WR)
    print("BAD: shrinking below the posted count was accepted")
except PyverbsRDMAError as ex:
    print("refused shrinking below the posted count: errno %d" % ex.error_code)
srq.modify(SrqAttr(max_wr=64), e.IBV_SRQ_MAX_WR)
q = srq.query()
print("resized: max_wr %d" % q.max_wr)
assert q.max_wr >= 64, q.max_wr
for i in range(10, N):
    post(i)
recvs = sends_checked(a_qp, cq, mr, N, SLOT, 7, 100)
assert [r[0] for r in recvs] == list(range(N)), "receives out of order: %r" % recvs
print("50 messages landed in order in the right buffers")
try:
    srq.modify(SrqAttr(max_wr=32, srq_limit=40), e.IBV_SRQ_MAX_WR | e.IBV_SRQ_LIMIT)
    print("BAD: a limit above the new depth was accepted")
except PyverbsRDMAError as ex:
    print("refused a limit above the new depth: errno %d" % ex.error_code)
srq.modify(SrqAttr(max_wr=32, srq_limit=8), e.IBV_SRQ_MAX_WR | e.IBV_SRQ_LIMIT)
q = srq.query()
print("shrunk: max_wr %d limit %d" % (q.max_wr, q.srq_limit))

dev = ctx.query_device()
print("device: max_srq_wr %d max_srq_sge %d" % (dev.max_srq_wr, dev.max_srq_sge))
def refused(desc, fn):
    try:
        fn()
    except PyverbsRDMAError as ex:
        print("refused %s: errno %d" % (desc, ex.error_code))
        return
    print("BAD: %s accepted" % desc)
big = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=4, max_sge=dev.max_srq_sge)))
got = big.query().max_sge
big.close()
assert got >= dev.max_srq_sge, got
print("created an SRQ of %d SGEs (max_srq_sge)" % got)
refused("%d SGEs (max_srq_sge + 1)" % (dev.max_srq_sge + 1),
        lambda: SRQ(pd, SrqInitAttr(SrqAttr(max_wr=4, max_sge=dev.max_srq_sge + 1))))
refused("depth %d at create (max_srq_wr + 1)" % (dev.max_srq_wr + 1),
        lambda: SRQ(pd, SrqInitAttr(SrqAttr(max_wr=dev.max_srq_wr + 1, max_sge=1))))
refused("depth %d at resize (max_srq_wr + 1)" % (dev.max_srq_wr + 1),
        lambda: srq.modify(SrqAttr(max_wr=dev.max_srq_wr + 1), e.IBV_SRQ_MAX_WR))
kept = srq.query().max_wr
assert kept == q.max_wr, (kept, q.max_wr)
print("the refused resize kept depth %d" % kept)
for o in (a_qp, b_qp, srq, mr, cq, pd, ctx):
    o.close()
print("closed")
PY
)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "pyverbs script failed"
printf '%s\n' "$out" | grep -q '^BAD' && fail "a bad resize or SRQ was accepted"
expect_grep "shrinking below the posted WQEs refused" '^refused shrinking below the posted count: errno 22$' "$out"
expect_grep "grown to 64" '^resized: max_wr (6[4-9]|[7-9][0-9]|[0-9]{3,})$' "$out"
expect_grep "posted WQEs survived the resize" '^50 messages landed in order in the right buffers$' "$out"
expect_grep "limit checked against the new depth" '^refused a limit above the new depth: errno 22$' "$out"
expect_grep "shrunk with a limit" '^shrunk: max_wr (3[2-9]|[4-9][0-9]) limit 8$' "$out"
expect_grep "an SRQ of max_srq_sge SGEs is accepted" '^created an SRQ of [0-9]+ SGEs \(max_srq_sge\)$' "$out"
expect_grep "max_srq_sge + 1 SGEs refused" '^refused [0-9]+ SGEs \(max_srq_sge \+ 1\): errno 22$' "$out"
expect_grep "max_srq_wr + 1 refused at create" '^refused depth [0-9]+ at create \(max_srq_wr \+ 1\): errno 22$' "$out"
expect_grep "max_srq_wr + 1 refused at resize" '^refused depth [0-9]+ at resize \(max_srq_wr \+ 1\): errno 22$' "$out"
expect_grep "the SRQ kept its depth" '^the refused resize kept depth [0-9]+$' "$out"
sr_down_clean
