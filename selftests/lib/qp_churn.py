#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Object lifetimes under traffic, one side of a pair of guests.

usage: qp_churn.py ROLE(a|b) DEV GID_INDEX PEER_IP TAG ROUNDS QPS

ROUNDS rounds; in each, both sides make a CQ and QPS RC QPs, connect them to the peer's,
and post on each QP two 8 KiB RDMA WRITEs into the peer's target MR and one 8 KiB READ
from it, then tear down while the traffic is in flight (netem loss on the link, so that
retransmission timers are armed). How depends on the round (round % 4):
  0: the QPs are destroyed a third at once, a third after their first completion (or
     0.2 s), a third after being moved to Error and flushed;
  1: the target MR is deregistered as soon as the peer knows it (the peer's WRITEs and
     READs meet a key that is gone);
  2: the source and sink MRs of this side's WRITEs and READs are deregistered right after
     posting (READ responses arrive for memory deregistered);
  3: the CQ is closed with its QPs at once.
Prints what completed with which status; exits non-zero only if a verb that must work
failed or a step hung. The kernel log, leaks and the objects left are checked by the
caller.
"""

import sys
import time

import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

from verbs_util import Share, connect_rc, v4_gid

role, dev, gidx, peer, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
rounds, nqp = int(sys.argv[6]), int(sys.argv[7])
other = "b" if role == "a" else "a"
sh = Share(tag, role)
LEN = 8192
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ

ctx = d.Context(name=dev)
pd = PD(ctx)
statuses = {}
made = 0
refused_rts = [0]
t0 = time.time()


dgid = v4_gid(peer)


def drain(cq, secs):
    """Polls `cq` for `secs` (or until it is empty after something came)."""
    end = time.time() + secs
    got = 0
    while time.time() < end:
        n, wcs = cq.poll(64)
        for wc in wcs[:n]:
            statuses[wc.status] = statuses.get(wc.status, 0) + 1
        got += n
        if n == 0:
            if got:
                break
            time.sleep(0.005)
    return got


try:
    for r in range(rounds):
        mode = r % 4
        cq = CQ(ctx, nqp * 8 + 16)
        src = MR(pd, nqp * LEN, ACCESS)
        sink = MR(pd, nqp * LEN, ACCESS)
        target = MR(pd, nqp * 2 * LEN, ACCESS)
        qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                                 cap=QPCap(max_send_wr=4, max_recv_wr=1, max_send_sge=1, max_recv_sge=1)))
               for _ in range(nqp)]
        made += nqp
        sh.put("r%d-%s" % (r, role), [q.qp_num for q in qps] + [target.rkey, target.buf])
        vals = sh.get("r%d-%s" % (r, other), secs=300)
        rqpns, rkey, raddr = vals[:nqp], vals[nqp], vals[nqp + 1]
        if mode == 1:
            target.close()
        live = []
        for q, rq in zip(qps, rqpns):
            try:
                connect_rc(q, rq, 0, 0, dgid, gidx, access=ACCESS, max_rd=1, timeout=12)
                live.append(q)
            except PyverbsRDMAError:
                # Mode 1 only: a WRITE of the peer's reached this QP in RTR, found this
                # side's target MR gone, and failed the QP (RTS is then refused).
                if mode != 1:
                    raise
                refused_rts[0] += 1
        for i, q in enumerate(live):
            for k in range(2):
                wr = SendWR(wr_id=i * 4 + k, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                            sg=[SGE(src.buf + i * LEN, LEN, src.lkey)], send_flags=e.IBV_SEND_SIGNALED)
                wr.set_wr_rdma(rkey, raddr + (2 * i + k) * LEN)
                q.post_send(wr)
            wr = SendWR(wr_id=i * 4 + 2, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                        sg=[SGE(sink.buf + i * LEN, LEN, sink.lkey)], send_flags=e.IBV_SEND_SIGNALED)
            wr.set_wr_rdma(rkey, raddr + 2 * i * LEN)
            q.post_send(wr)
        if mode == 2:
            src.close()
            sink.close()
        if mode == 0:
            third = nqp // 3
            for q in qps[:third]:
                q.close()
            drain(cq, 0.2)
            for q in qps[third:2 * third]:
                q.close()
            for q in qps[2 * third:]:
                a = QPAttr()
                a.qp_state = e.IBV_QPS_ERR
                q.modify(a, e.IBV_QP_STATE)
            drain(cq, 2)
            for q in qps[2 * third:]:
                q.close()
        elif mode in (1, 2):
            drain(cq, 0.3)
            for q in qps:
                q.close()
        cq.close()
        for m in (src, sink, target):
            m.close()
        print("round %d (mode %d): %d QPs, %.1f s" % (r, mode, nqp, time.time() - t0), flush=True)
    sh.barrier("end")
except Exception:
    sh.give_up()
    raise
names = {getattr(e, n): n[7:] for n in dir(e)
         if n.startswith("IBV_WC_") and (n.endswith("_ERR") or n == "IBV_WC_SUCCESS")}
print("completions: " + ", ".join("%s %d" % (names.get(s, str(s)), n) for s, n in sorted(statuses.items())))
print("RTS refused to %d QPs a forbidden WRITE had failed in RTR (mode 1)" % refused_rts[0])
print("qps_made %d in %.1f s" % (made, time.time() - t0))
pd.close()
ctx.close()
