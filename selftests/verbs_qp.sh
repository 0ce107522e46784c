#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# guests: 1
# Queue pairs through the stock rxe provider (pyverbs), which maps each QP's send and
# receive rings: RC, UC and UD QPs are created with at least the capabilities asked for
# and QPNs from 16; RC goes RESET -> INIT -> RTR -> RTS with a RoCEv2 address and query_qp
# reports what was set; illegal transitions and out-of-range values are refused; each limit
# the device reports (max_sge, max_qp_wr, max_qp_rd_atom, max_qp_init_rd_atom; and the 512
# inline bytes rdma_rxe allows, which no attribute reports) is accepted at its value and
# refused one past it; a SEND posted to a peer that is not there is destroyed with its QP;
# nothing is left at unload.
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"

out=$(GIDX=$gidx python3 - <<'PY' 2>&1
import errno, os
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.pyverbs_error import PyverbsRDMAError, PyverbsError

gidx = int(os.environ["GIDX"])
ctx = d.Context(name="sr0")
pd = PD(ctx)
cq = CQ(ctx, 256)

def init_attr(t, **kw):
    cap = QPCap(max_send_wr=kw.get("swr", 64), max_recv_wr=kw.get("rwr", 64),
                max_send_sge=kw.get("ssge", 2), max_recv_sge=kw.get("rsge", 2),
                max_inline_data=kw.get("inl", 64))
    return QPInitAttr(qp_type=t, scq=cq, rcq=cq, cap=cap)

def refused(desc, fn, want=(errno.EINVAL,)):
    try:
        fn()
    except (PyverbsRDMAError, PyverbsError) as ex:
        code = getattr(ex, "error_code", None)
        print("%s %s: errno %s" % ("refused" if code in want else "BAD", desc, code))
        return
    print("BAD %s: accepted" % desc)

def accepted(desc, fn):
    try:
        fn()
    except (PyverbsRDMAError, PyverbsError) as ex:
        print("BAD %s: refused (errno %s)" % (desc, getattr(ex, "error_code", ex)))
        return
    print("accepted %s" % desc)

dev = ctx.query_device()
print("device: max_sge %d max_qp_wr %d max_qp_rd_atom %d max_qp_init_rd_atom %d" % (
      dev.max_sge, dev.max_qp_wr, dev.max_qp_rd_atom, dev.max_qp_init_rd_atom))

qps = {}
for name, t in (("RC", e.IBV_QPT_RC), ("UC", e.IBV_QPT_UC), ("UD", e.IBV_QPT_UD)):
    qp = QP(pd, init_attr(t))
    attr, ia = qp.query(e.IBV_QP_STATE | e.IBV_QP_CAP)
    assert qp.qp_num >= 16, qp.qp_num
    assert attr.qp_state == e.IBV_QPS_RESET, attr.qp_state
    assert ia.cap.max_send_wr >= 64 and ia.cap.max_recv_wr >= 64, (ia.cap.max_send_wr, ia.cap.max_recv_wr)
    assert ia.cap.max_inline_data >= 64 and ia.cap.max_send_sge >= 2, (ia.cap.max_inline_data, ia.cap.max_send_sge)
    qps[name] = qp
    print("%s QP %d in RESET, caps swr=%d rwr=%d sge=%d inline=%d" % (name, qp.qp_num, ia.cap.max_send_wr,
          ia.cap.max_recv_wr, ia.cap.max_send_sge, ia.cap.max_inline_data))
assert len({q.qp_num for q in qps.values()}) == 3

rc = qps["RC"]
a = QPAttr()
a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1
a.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
rc.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
gid = ctx.query_gid(1, gidx)
ah = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=gidx), is_global=1, port_num=1)
a = QPAttr()
a.qp_state = e.IBV_QPS_RTR; a.path_mtu = e.IBV_MTU_1024; a.dest_qp_num = 0x123456
a.rq_psn = 0xabcdef; a.max_dest_rd_atomic = 16; a.min_rnr_timer = 12; a.ah_attr = ah
rc.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN |
          e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
a = QPAttr()
a.qp_state = e.IBV_QPS_RTS; a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7
a.sq_psn = 0x1234567; a.max_rd_atomic = 16
rc.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY |
          e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)
q, _ = rc.query(e.IBV_QP_STATE | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN |
                e.IBV_QP_SQ_PSN | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_AV)
assert q.qp_state == e.IBV_QPS_RTS, q.qp_state
assert q.path_mtu == e.IBV_MTU_1024 and q.dest_qp_num == 0x123456, (q.path_mtu, q.dest_qp_num)
assert q.rq_psn == 0xabcdef and q.sq_psn == 0x234567, (hex(q.rq_psn), hex(q.sq_psn))
assert q.timeout == 14 and q.retry_cnt == 7, (q.timeout, q.retry_cnt)
print("RC QP %d reached RTS; query_qp agrees (sq_psn masked to 24 bits: %#x)" % (rc.qp_num, q.sq_psn))

ud = qps["UD"]
a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qkey = 0x11111111
ud.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)
a = QPAttr(); a.qp_state = e.IBV_QPS_RTR
ud.modify(a, e.IBV_QP_STATE)
a = QPAttr(); a.qp_state = e.IBV_QPS_RTS; a.sq_psn = 0
ud.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
print("UD QP %d reached RTS" % ud.qp_num)

uc = qps["UC"]
def reset_to_rts():
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTS
    uc.modify(a, e.IBV_QP_STATE)
refused("RESET -> RTS", reset_to_rts)
def bad_port():
    a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 2; a.qp_access_flags = 0
    uc.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
refused("port 2", bad_port)
def bad_timeout():
    a = QPAttr(); a.timeout = 32
    rc.modify(a, e.IBV_QP_TIMEOUT)
refused("timeout 32", bad_timeout)

# The device's limits: each accepted at its value, refused one past it.
MAX_INLINE = 512  # rdma_rxe's RXE_MAX_INLINE_DATA; no device attribute reports it
def create_caps(check, **kw):
    qp = QP(pd, init_attr(e.IBV_QPT_RC, **kw))
    _, ia = qp.query(e.IBV_QP_CAP)
    qp.close()
    assert check(ia.cap), "caps got: swr=%d rwr=%d ssge=%d rsge=%d inline=%d" % (
        ia.cap.max_send_wr, ia.cap.max_recv_wr, ia.cap.max_send_sge, ia.cap.max_recv_sge, ia.cap.max_inline_data)
m = dev.max_sge
accepted("%d send and receive SGEs (max_sge)" % m, lambda: create_caps(
    lambda c: c.max_send_sge >= m and c.max_recv_sge >= m, swr=4, rwr=4, ssge=m, rsge=m, inl=0))
refused("%d send SGEs (max_sge + 1)" % (m + 1), lambda: QP(pd, init_attr(e.IBV_QPT_RC, ssge=m + 1, inl=0)))
refused("%d receive SGEs (max_sge + 1)" % (m + 1), lambda: QP(pd, init_attr(e.IBV_QPT_RC, rsge=m + 1)))
accepted("%d inline bytes" % MAX_INLINE, lambda: create_caps(
    lambda c: c.max_inline_data >= MAX_INLINE, swr=4, rwr=4, ssge=1, inl=MAX_INLINE))
refused("%d inline bytes" % (MAX_INLINE + 1), lambda: QP(pd, init_attr(e.IBV_QPT_RC, ssge=1, inl=MAX_INLINE + 1)))
w = dev.max_qp_wr
refused("%d send WRs (max_qp_wr + 1)" % (w + 1), lambda: QP(pd, init_attr(e.IBV_QPT_RC, swr=w + 1, ssge=1, rsge=1, inl=0)))
refused("%d receive WRs (max_qp_wr + 1)" % (w + 1), lambda: QP(pd, init_attr(e.IBV_QPT_RC, rwr=w + 1, ssge=1, rsge=1, inl=0)))

# max_qp_rd_atom bounds max_dest_rd_atomic (RTR), max_qp_init_rd_atom max_rd_atomic (RTS);
# both are 8-bit fields, so max + 1 must still fit.
dst_max, init_max = dev.max_qp_rd_atom, dev.max_qp_init_rd_atom
assert 0 < dst_max < 255 and 0 < init_max < 255, (dst_max, init_max)
ra = QP(pd, init_attr(e.IBV_QPT_RC, swr=4, rwr=4))
a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qp_access_flags = 0
ra.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
def to_rtr(n):
    a = QPAttr()
    a.qp_state = e.IBV_QPS_RTR; a.path_mtu = e.IBV_MTU_1024; a.dest_qp_num = 0x123457
    a.rq_psn = 0; a.max_dest_rd_atomic = n; a.min_rnr_timer = 12; a.ah_attr = ah
    ra.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN |
              e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
def to_rts(n):
    a = QPAttr()
    a.qp_state = e.IBV_QPS_RTS; a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7
    a.sq_psn = 0; a.max_rd_atomic = n
    ra.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY |
              e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)
refused("RTR with max_dest_rd_atomic %d (max_qp_rd_atom + 1)" % (dst_max + 1), lambda: to_rtr(dst_max + 1))
accepted("RTR with max_dest_rd_atomic %d (max_qp_rd_atom)" % dst_max, lambda: to_rtr(dst_max))
refused("RTS with max_rd_atomic %d (max_qp_init_rd_atom + 1)" % (init_max + 1), lambda: to_rts(init_max + 1))
accepted("RTS with max_rd_atomic %d (max_qp_init_rd_atom)" % init_max, lambda: to_rts(init_max))
q, _ = ra.query(e.IBV_QP_STATE | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MAX_QP_RD_ATOMIC)
assert q.qp_state == e.IBV_QPS_RTS, q.qp_state
assert q.max_dest_rd_atomic == dst_max and q.max_rd_atomic == init_max, (q.max_dest_rd_atomic, q.max_rd_atomic)
print("query_qp: max_dest_rd_atomic %d, max_rd_atomic %d" % (q.max_dest_rd_atomic, q.max_rd_atomic))
ra.close()

from pyverbs.wr import SendWR, SGE
from pyverbs.mr import MR
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
# A SEND to a peer that does not exist: posted, in flight when the QP is destroyed below
# (destroy with work outstanding must clean up).
try:
    rc.post_send(SendWR(num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
    print("post_send accepted on the RTS QP")
except (PyverbsRDMAError, PyverbsError) as ex:
    print("BAD post_send refused on an RTS QP: %s" % getattr(ex, "error_code", ex))

for qp in qps.values():
    qp.close()
mr.close(); cq.close(); pd.close(); ctx.close()
print("closed")
PY
)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "pyverbs script failed"
[ "$(printf '%s\n' "$out" | grep -c ' QP [0-9]* in RESET, caps')" = 3 ] || fail "RC, UC and UD QPs were not all created"
expect_grep "RC QP reaches RTS and queries back" '^RC QP [0-9]+ reached RTS; query_qp agrees' "$out"
expect_grep "UD QP reaches RTS" '^UD QP [0-9]+ reached RTS$' "$out"
[ "$(printf '%s\n' "$out" | grep -c '^refused')" = 10 ] || fail "not every bad request was refused as expected"
[ "$(printf '%s\n' "$out" | grep -c '^accepted')" = 4 ] || fail "not every request at a device limit was accepted"
printf '%s\n' "$out" | grep -q '^BAD' && fail "a request was accepted or refused wrongly"
expect_grep "the device reports its limits" '^device: max_sge [0-9]+ max_qp_wr [0-9]+ max_qp_rd_atom [0-9]+ max_qp_init_rd_atom [0-9]+$' "$out"
expect_grep "query_qp reports the read/atomic depths at their maximum" '^query_qp: max_dest_rd_atomic [0-9]+, max_rd_atomic [0-9]+$' "$out"
expect_grep "post_send works on the RTS QP" '^post_send accepted on the RTS QP' "$out"
expect_grep "closed" '^closed$' "$out"

python3 -c '
import os, pyverbs.device as d, pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.qp import QP, QPInitAttr, QPCap
ctx = d.Context(name="sr0"); pd = PD(ctx); cq = CQ(ctx, 64)
qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=16, max_recv_wr=16))) for _ in range(4)]
os._exit(0)' || fail "crashing process script failed"

sr_down_clean
