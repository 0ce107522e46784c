#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# One side of srq_give_back.sh: a receive WQE an SR QP took ahead from its SRQ, and holds
# no byte of, goes back to the SRQ when the QP enters the Error state:
#   srq_give_back.py a|b DEV GID_INDEX PEER_IPV4 TAG
# Side a (g1): an SRQ with three receives (wr_ids 0, 1: 4 KiB; 2: 1 KiB) and two RC QPs on
# it, each connected to one of b's. Side b (g2):
#   1. SENDs 64 B twice on its first QP (the second in the SR format), taking receives 0, 1;
#   2. forges, from its own address, the last packet of an SR SEND on that QP at 2 PSNs
#      past its next PSN, message 2, packet offset 2: a takes receive 2 for it and refuses
#      it past RCV-NXT (the bytes fall outside the 1 KiB buffer), placing nothing;
#   3. once a moved that QP to the Error state, SENDs 64 B on its second QP.
# a checks that the Error flush of the first QP did not complete receive 2 and that the
# second QP's SEND landed in receive 2; it prints "give back: OK".
import os, sys, time, struct
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import Share, connect_rc, v4_gid, forge, bth, fail, failures
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.srq import SRQ, SrqInitAttr, SrqAttr
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.wr import SendWR, RecvWR, SGE

role, dev, gidx, peer, tag = sys.argv[1:6]
gidx = int(gidx)
ACCESS = e.IBV_ACCESS_LOCAL_WRITE
ctx = d.Context(name=dev)
pd = PD(ctx)
mr = MR(pd, 64 * 1024, ACCESS)
cqs = [CQ(ctx, 64), CQ(ctx, 64)]
srq = None
if role == "a":
    srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=1)))
    for wr_id, length in ((0, 4096), (1, 4096), (2, 1024)):
        srq.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[SGE(mr.buf + wr_id * 4096, length, mr.lkey)]))


def make_qp(cq):
    cap = QPCap(max_send_wr=16, max_recv_wr=0 if srq else 16, max_send_sge=1, max_recv_sge=1)
    if srq:
        return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, srq=srq, cap=cap))
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))


qps = [make_qp(cqs[0]), make_qp(cqs[1])]
sh = Share(tag, role)
mine = [[q.qp_num, 0x4000 + 0x1000 * k] for k, q in enumerate(qps)]
sh.put("qps-" + role, [v for m in mine for v in m])
theirs = sh.get("qps-" + sh.other)
for k, q in enumerate(qps):
    connect_rc(q, theirs[2 * k], theirs[2 * k + 1], mine[k][1], v4_gid(peer), gidx, max_rd=1, timeout=14)
sh.barrier("rts")


def poll(cq, secs):
    """The next completion on `cq`, or None after `secs` seconds."""
    end = time.time() + secs
    while time.time() < end:
        n, wcs = cq.poll(1)
        if n:
            return wcs[0]
        time.sleep(0.0005)
    return None


def send(q, cq, wr_id):
    q.post_send(SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, num_sge=1,
                       sg=[SGE(mr.buf, 64, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED))
    wc = poll(cq, 30)
    if wc is None or wc.status != e.IBV_WC_SUCCESS:
        sh.give_up()
        sys.exit("SEND %d: %s" % (wr_id, "no completion" if wc is None else "status %d" % wc.status))


if role == "b":
    send(qps[0], cqs[0], 1)
    send(qps[0], cqs[0], 2)
    at = (qps[0].query(e.IBV_QP_SQ_PSN)[0].sq_psn + 2) & 0xffffff
    msn_eth = struct.pack(">II", 2, 2)          # MSN 2 (the third receive), packet offset 2
    forge(os.environ.get("MY_IP", "10.77.0.2"), 40003, peer,
          bth(0x02, theirs[0], at, tver=1) + msn_eth + b"g" * 16)
    print("forged one SR SEND LAST at psn %#x, message 2, offset 2" % at, flush=True)
    sh.put("forged", [1])
    sh.get("a-error")
    send(qps[1], cqs[1], 3)
    print("the second QP's SEND completed", flush=True)
    sh.put("done-b", [1])
    sys.exit(0)

got = [poll(cqs[0], 30), poll(cqs[0], 30)]
if [w and (w.wr_id, w.status) for w in got] != [(0, e.IBV_WC_SUCCESS), (1, e.IBV_WC_SUCCESS)]:
    fail("the two SENDs: %s" % [w and (w.wr_id, w.status) for w in got])
sh.get("forged")
time.sleep(1)
qps[0].modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
flushed = []
while True:
    w = poll(cqs[0], 1)
    if w is None:
        break
    flushed.append((w.wr_id, w.status))
print("first QP's flush: %s" % flushed, flush=True)
if any(wr_id == 2 for wr_id, _ in flushed):
    fail("receive 2, taken ahead and unused, was flushed to the failed QP")
sh.put("a-error", [1])
w = poll(cqs[1], 60)
if w is None or (w.wr_id, w.status, w.byte_len) != (2, e.IBV_WC_SUCCESS, 64):
    fail("the second QP's SEND: %s" % (w and (w.wr_id, w.status, w.byte_len)))
sh.get("done-b")
if failures:
    sys.exit(1)
print("give back: OK")
