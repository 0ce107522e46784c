#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# ud_post_list.sh's second half: one ibv_post_send of a chain of N UD SENDs (all signaled)
# to a QP number nobody owns on the peer. The send path sends at most a budget of them in
# the caller's context and leaves the rest to the QP's work, which the device counts
# (ud_send_deferred must move) instead of sending all N inside the call. All N must
# complete, successfully. The kernel CPU time the call itself used (this thread's system
# time) against the chain's is printed, not checked: it depends on the host's speed.
#   ud_chain.py DEV GID_INDEX PEER_IPV4 N
import os, resource, sys, time
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.wr import SendWR, SGE
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import ud_up, v4_gid

dev, gidx, peer, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
ctx = d.Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, n + 16)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq,
                       cap=QPCap(max_send_wr=n, max_recv_wr=1, max_send_sge=1, max_recv_sge=1)))
ud_up(qp, 0x1234)
ah = AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=v4_gid(peer), sgid_index=gidx), is_global=1, port_num=1))
# Built back to front so each WR can name its successor; the list keeps them alive.
wrs = []
nxt = None
for i in reversed(range(n)):
    w = SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)],
               send_flags=e.IBV_SEND_SIGNALED, next_wr=nxt)
    w.set_wr_ud(ah, 0xfffff0, 0x1234)
    wrs.append(w)
    nxt = w
stime = lambda: resource.getrusage(resource.RUSAGE_THREAD).ru_stime


def deferred():
    with open("/sys/class/infiniband/%s/ports/1/hw_counters/ud_send_deferred" % dev) as f:
        return int(f.read())


d0 = deferred()
t0, s0 = time.monotonic(), stime()
qp.post_send(nxt)
t_post, s_post = time.monotonic() - t0, stime() - s0
got = []
end = time.time() + 120
while len(got) < n and time.time() < end:
    k, wcs = cq.poll(n - len(got))
    got += wcs[:k]
    if not k:
        time.sleep(0.005)
t_all = time.monotonic() - t0
ok = sum(1 for w in got if w.status == e.IBV_WC_SUCCESS)
ids = sorted(w.wr_id for w in got)
print("chain of %d: post_send returned after %.3f s, %.3f s of it system time in this thread; "
      "all %d completions (%d successful) after %.3f s" % (n, t_post, s_post, len(got), ok, t_all))
handed = deferred() - d0
print("ud_send_deferred moved by %d" % handed)
if ok != n or ids != list(range(n)):
    sys.exit("not every request completed successfully")
if handed < 1:
    sys.exit("ud_send_deferred did not move: the call sent the whole chain itself")
print("ok: post_send handed the chain to the QP's work; every request completed")
