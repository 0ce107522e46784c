#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# One side of the message-completion-time measurement of the long-haul benchmark:
#   fct.py a|b DEV GID_INDEX TAG [--size BYTES] [--iters N] [--timeout T] [--stall SECS]
# Side b writes N messages of SIZE bytes (default 1 MiB), one at a time, with RDMA WRITE
# into side a's buffer over one RC QP, and times each from its post to its completion: the
# completion time of a message as its sender sees it (all of it acknowledged). It polls
# with short sleeps, so the guest's one CPU stays with the transport. Side a then checks
# every byte of its buffer against the last message. Side b prints one line
#   fct: n N p50_ms X p99_ms Y max_ms Z first_ms F
# where F is the first message's time, on the new QP (its requester has measured no round
# trip yet, and an SR scheme's offer is still unanswered), and the percentiles and the
# maximum are those of the N - 1 messages after it (all N when N is 1), then one line
# with every message's time in the order sent ("fct_each_ms: T1 T2 ..."). Both sides print
# "checked: OK" and exit 0 when every WRITE completed and the bytes matched.
# T is the QP's local ACK timeout exponent (4.096 us x 2^T).
import argparse, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import Share, fail, failures, pattern, connect_rc, e
import pyverbs.device as d
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap
from pyverbs.addr import GID
from pyverbs.wr import SendWR, SGE

p = argparse.ArgumentParser()
p.add_argument("role", choices=["a", "b"])
p.add_argument("dev")
p.add_argument("gidx", type=int)
p.add_argument("tag")
p.add_argument("--size", type=int, default=1 << 20)
p.add_argument("--iters", type=int, default=50)
p.add_argument("--timeout", type=int, default=16)
p.add_argument("--stall", type=int, default=120)
args = p.parse_args()
role, other = args.role, "b" if args.role == "a" else "a"
sh = Share(args.tag, role)


def on_exception(kind, value, tb):
    """A verb that failed ends this side: the peer is told, not left waiting for it."""
    try:
        sh.give_up()
    finally:
        sys.__excepthook__(kind, value, tb)


sys.excepthook = on_exception
ctx = d.Context(name=args.dev)
pd = PD(ctx)
cq = CQ(ctx, 16)
access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
mr = MR(pd, args.size, access)
cap = QPCap(max_send_wr=4, max_recv_wr=1, max_send_sge=1, max_recv_sge=1)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
data = pattern(7, args.size)


def percentile(v, q):
    """The q-quantile of the sorted list v, nearest rank."""
    return v[min(len(v) - 1, max(0, int(q * len(v) + 0.999999) - 1))]


def wait_send(i):
    """Polls until WRITE i completes; its status, or None after --stall seconds."""
    last = time.time()
    while True:
        k, wcs = cq.poll(1)
        if k:
            return wcs[0].status
        if time.time() - last > args.stall or sh.aborted():
            fail("WRITE %d: no completion for %d s" % (i, args.stall))
            return None
        time.sleep(0.0002)


gid = [int(w, 16) for w in ctx.query_gid(1, args.gidx).gid.split(":")]
psn = 0x100 if role == "a" else 0x200
sh.put("qp-" + role, [qp.qp_num, mr.buf, mr.rkey] + gid)
peer = sh.get("qp-" + other)
dgid = GID(":".join("%04x" % w for w in peer[3:]))
connect_rc(qp, peer[0], 0x300 - psn, psn, dgid, args.gidx, access, timeout=args.timeout)
if role == "a":
    mr.write(b"\xa5" * args.size, args.size, 0)
sh.barrier("up")
if role == "b":
    mr.write(data, args.size, 0)
    times = []
    for i in range(args.iters):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(mr.buf, args.size, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(peer[2], peer[1])
        t0 = time.perf_counter()
        qp.post_send(wr)
        status = wait_send(i)
        if status != e.IBV_WC_SUCCESS:
            if status is not None:
                fail("WRITE %d completed with status %d" % (i, status))
            break
        times.append((time.perf_counter() - t0) * 1000)
    sh.put("done", [len(times)])
    if len(times) == args.iters:
        v = sorted(times[1:] or times)
        print("fct: n %d p50_ms %.2f p99_ms %.2f max_ms %.2f first_ms %.2f"
              % (len(v), percentile(v, 0.5), percentile(v, 0.99), v[-1], times[0]), flush=True)
        print("fct_each_ms: " + " ".join("%.1f" % t for t in times), flush=True)
    ok = sh.get("checked-a")
    if ok != [1]:
        fail("side a found the bytes wrong")
else:
    n = sh.get("done", secs=args.iters * (args.stall + 10))[0]
    # The buffer was poisoned before side b started: a byte no WRITE placed differs.
    good = n == args.iters and mr.read(args.size, 0) == data
    if n == args.iters and not good:
        got = mr.read(args.size, 0)
        bad = [k for k in range(args.size) if got[k] != data[k]]
        fail("%d of %d bytes differ, the first at offset %d" % (len(bad), args.size, bad[0]))
    sh.put("checked-a", [1 if good else 0])
if failures:
    sys.exit(1)
print("checked: OK", flush=True)
