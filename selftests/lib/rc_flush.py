#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# One side of an RDMA FLUSH and ATOMIC WRITE exchange (IBTA 1.5), either driver:
#   rc_flush.py a|b DEV GID_INDEX PEER_IPV4 TAG flush|noflush
# Needs rdma-core 65's pyverbs and stock rxe provider (the guest image's forky root: run
# chrooted there); bookworm's provider has neither operation.
# Each side has two RC QPs: on the first it is the requester towards the peer's second,
# so both drivers take both roles at once. Each side's MR grants REMOTE_WRITE and
# FLUSH_GLOBAL. As the requester, each side:
#   1. RDMA WRITEs 100 KiB of a pattern, ATOMIC WRITEs 8 bytes after it, then FLUSHes the
#      range of both (global visibility) and then the whole MR (its RETH names a range far
#      past the MR, which a whole-MR FLUSH does not look at): four completions, in order,
#      successful, with the opcodes RDMA_WRITE, ATOMIC_WRITE, FLUSH and FLUSH;
#   2. after a barrier the peer checks its memory (the pattern and the 8 bytes);
#   3. FLUSHes to persistence, which the MR does not grant: the completion must be a
#      remote access error.
# With "noflush" this side sends no FLUSH (steps 1 and 3 without them): rdma_rxe (6.12)
# drops every FLUSH that carries the IBTA ICRC, rxe_sr's among them (Documentation/features.md, FLUSH).
# Prints "flush: OK" and exits 0 when every check passed.
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import Share, connect_rc, e, fail, failures, pattern, v4_gid
import pyverbs.device as d
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QPEx, QPInitAttrEx, QPCap
from pyverbs.wr import SGE

role, dev, gidx, peer, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
flush_out = sys.argv[6] == "flush"
other = "b" if role == "a" else "a"
seed = 1 if role == "a" else 2

LEN = 100 * 1024
AW_OFF = LEN                   # the 8 bytes of the ATOMIC WRITE
SRC_OFF = 128 * 1024           # this side's source bytes
MR_LEN = 256 * 1024
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_FLUSH_GLOBAL
QP_ACCESS = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_FLUSH_GLOBAL | e.IBV_ACCESS_FLUSH_PERSISTENT


def aw_value(s):
    return bytes(0x10 * s + k for k in range(8))


sh = Share(tag, role)
ctx = d.Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 64)
mr = MR(pd, MR_LEN, ACCESS)
mr.write(pattern(seed, LEN), LEN, SRC_OFF)
ops = (e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_ATOMIC_WRITE | e.IBV_QP_EX_WITH_FLUSH)
qps = []
for _ in range(2):
    qia = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, pd=pd, send_ops_flags=ops,
                       cap=QPCap(max_send_wr=16, max_recv_wr=1, max_send_sge=1, max_recv_sge=1),
                       comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
    qps.append(QPEx(ctx, qia))
out_qp, in_qp = qps
sq_psn = (0x2345 * seed) & 0xffffff
sh.put("qp-" + role, [out_qp.qp_num, in_qp.qp_num, sq_psn, mr.rkey, mr.buf])
p_out, p_in, p_psn, p_rkey, p_buf = sh.get("qp-" + other)
dgid = v4_gid(peer)
# This side's out_qp talks to the peer's in_qp, and its in_qp answers the peer's out_qp.
connect_rc(out_qp, p_in, p_psn + 1, sq_psn, dgid, gidx, access=QP_ACCESS)
connect_rc(in_qp, p_out, p_psn, sq_psn + 1, dgid, gidx, access=QP_ACCESS)
sh.barrier("up")


def completions(n, secs=30):
    got, end = [], time.time() + secs
    while len(got) < n and time.time() < end:
        k, wcs = cq.poll(n - len(got))
        got += wcs[:k]
        if not k:
            time.sleep(0.001)
    return got


def post(kind, wr_id, **kw):
    out_qp.wr_start()
    out_qp.wr_id = wr_id
    out_qp.wr_flags = e.IBV_SEND_SIGNALED
    if kind == "write":
        out_qp.wr_rdma_write(p_rkey, p_buf)
        out_qp.wr_set_sge(SGE(mr.buf + SRC_OFF, LEN, mr.lkey))
    elif kind == "atomic_write":
        out_qp.wr_atomic_write(p_rkey, p_buf + AW_OFF, aw_value(seed))
    else:
        out_qp.wr_flush(p_rkey, kw["addr"], kw["length"], kw["ptype"], kw["level"])
    out_qp.wr_complete()


# 1. WRITE, ATOMIC WRITE, FLUSH of the range, FLUSH of the whole MR.
post("write", 1)
post("atomic_write", 2)
want = [(1, e.IBV_WC_RDMA_WRITE), (2, e.IBV_WC_ATOMIC_WRITE)]
if flush_out:
    post("flush", 3, addr=p_buf, length=LEN + 8, ptype=e.IBV_FLUSH_GLOBAL,
         level=e.IBV_FLUSH_RANGE)
    post("flush", 4, addr=p_buf + (1 << 40), length=12345678, ptype=e.IBV_FLUSH_GLOBAL,
         level=e.IBV_FLUSH_MR)
    want += [(3, e.IBV_WC_FLUSH), (4, e.IBV_WC_FLUSH)]
got = completions(len(want))
seen = [(w.wr_id, w.opcode, w.status) for w in got]
if [(i, o, e.IBV_WC_SUCCESS) for i, o in want] != seen:
    fail("requester completions %s, expected %s, all successful" % (seen, want))
else:
    print("ok: %s completed in order" % ", ".join(getattr(o, "name", str(o)) for _, o in want),
          flush=True)
sh.barrier("done1")

# 2. The peer's requests landed here.
if mr.read(LEN, 0) != pattern(3 - seed, LEN):
    fail("the peer's RDMA WRITE is not in memory")
elif mr.read(8, AW_OFF) != aw_value(3 - seed):
    fail("the peer's ATOMIC WRITE is not in memory: %s" % mr.read(8, AW_OFF).hex())
else:
    print("ok: the peer's WRITE and ATOMIC WRITE are in memory", flush=True)
sh.barrier("checked")

# 3. Persistence is not granted: a remote access error (and the QPs of this pair go to
# the error state, which ends the exchange).
if flush_out:
    post("flush", 5, addr=p_buf, length=64, ptype=e.IBV_FLUSH_PERSISTENT,
         level=e.IBV_FLUSH_RANGE)
    got = completions(1)
    if not got or got[0].wr_id != 5 or got[0].status != e.IBV_WC_REM_ACCESS_ERR:
        fail("FLUSH to persistence: %s, expected a remote access error"
             % [(w.wr_id, w.status) for w in got])
    else:
        print("ok: FLUSH to persistence refused with a remote access error", flush=True)
sh.barrier("done")
if failures:
    sys.exit(1)
print("flush: OK", flush=True)
