#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# Memory taken away under packets sent by reference: one process drives RC QP pairs from
# sra (nsa) to srb (nsb) across a veth pair whose nsa end delays every packet (netem), so
# that the datagrams sra sent by reference wait in the qdisc, holding the pages of the
# memory they were read from, while the memory is taken away:
#   tx_zc_races.py GIDX_A GIDX_B MODE [--rounds N] [--copied]
# MODE:
#   dereg   K WRITEs posted from a region, which is deregistered and freed at once;
#   rereg   the region is moved onto another buffer (REREG_MR, translation) at once;
#   close   the sending process's device context (QP, region and all) is closed at once;
#   mw_inval  srb READs through a type 2 window of sra's; sra invalidates the window
#           (LOCAL_INV), deregisters and frees the region while its READ responses wait.
# After each, fresh memory is allocated and written over (to reuse freed pages), then the
# completions are reaped: each work request that completed successfully must have moved
# its bytes exactly (the destination compared with the source's pattern, every byte);
# others may fail (the memory was gone). Prints "MODE: N ok, M failed, by reference P"
# per round; P is the packets sra sent by reference in it (sent_by_ref_pkts).
import argparse, mmap, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import connect_rc, v4_gid, rereg_mr, pattern, fail, failures, e
import pyverbs.device as d
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR, MW, MWBindInfo
from pyverbs.qp import QP, QPInitAttr, QPCap
from pyverbs.wr import SendWR, SGE

REREG_TRANS = 1
p = argparse.ArgumentParser()
p.add_argument("gidx_a", type=int)
p.add_argument("gidx_b", type=int)
p.add_argument("mode", choices=["dereg", "rereg", "close", "mw_inval"])
p.add_argument("--rounds", type=int, default=2)
p.add_argument("--copied", action="store_true", help="tx_zero_copy is off: expect no packet by reference")
args = p.parse_args()

K, S = 16, 65536          # work requests per round, bytes each
N = K * S
LW, RW, RR = e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE, e.IBV_ACCESS_REMOTE_READ
GA, GB = v4_gid("10.88.0.1"), v4_gid("10.88.0.2")
cap = QPCap(max_send_wr=K + 4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)


def by_ref():
    with open("/sys/class/infiniband/sra/ports/1/hw_counters/sent_by_ref_pkts") as f:
        return int(f.read())


def pair(ctx_a, ctx_b, pd_a, pd_b):
    """An RC QP on sra and one on srb, connected (1 s timeout: the path delays 200 ms)."""
    cqa, cqb = CQ(ctx_a, 2 * K + 8), CQ(ctx_b, 2 * K + 8)
    qa = QP(pd_a, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=cap))
    qb = QP(pd_b, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, cap=cap))
    acc = LW | RW | RR | e.IBV_ACCESS_MW_BIND
    connect_rc(qa, qb.qp_num, 0, 0, GB, args.gidx_a, access=acc, max_rd=16, timeout=18)
    connect_rc(qb, qa.qp_num, 0, 0, GA, args.gidx_b, access=acc, max_rd=16, timeout=18)
    return qa, qb, cqa, cqb


def churn():
    """Allocates and writes 64 MiB, then frees it: pages freed just before are reused."""
    m = mmap.mmap(-1, 64 << 20)
    for off in range(0, 64 << 20, 4096):
        m[off:off + 8] = b"\xa5" * 8
    m.close()


def reap(cq, n, secs=60):
    """(wr_id, status) of `n` completions (or as many as came in `secs`)."""
    out, end = [], time.time() + secs
    while len(out) < n and time.time() < end:
        k, wcs = cq.poll(n - len(out))
        out += [(w.wr_id, w.status) for w in wcs[:k]]
        if not k:
            time.sleep(0.01)
    return out


def checked(dst, src_pat, done, what):
    """Every WR that succeeded moved its S bytes exactly."""
    ok = [i for i, s in done if s == e.IBV_WC_SUCCESS]
    for i in ok:
        got = dst.read(S, i * S)
        if got != src_pat[i * S:(i + 1) * S]:
            bad = next(j for j in range(S) if got[j] != src_pat[i * S + j])
            fail("%s: WR %d completed successfully but byte %d differs" % (what, i, bad))
    return len(ok), len(done) - len(ok)


def write_round(r):
    ctx_a, ctx_b = d.Context(name="sra"), d.Context(name="srb")
    pd_a, pd_b = PD(ctx_a), PD(ctx_b)
    qa, qb, cqa, cqb = pair(ctx_a, ctx_b, pd_a, pd_b)
    pat = pattern(r + 1, N)
    src = MR(pd_a, N, LW)
    src.write(pat, N, 0)
    dst = MR(pd_b, N, LW | RW)
    dst.write(b"\x5a" * N, N, 0)
    before = by_ref()
    for i in range(K):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[SGE(src.buf + i * S, S, src.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(dst.rkey, dst.buf + i * S)
        qa.post_send(wr)
    time.sleep(0.05)
    keep = None
    if args.mode == "dereg":
        src.close()
    elif args.mode == "rereg":
        keep = mmap.mmap(-1, N)
        keep.write(pattern(r + 101, N))
        import ctypes
        addr = ctypes.addressof(ctypes.c_char.from_buffer(keep))
        rereg_mr(ctx_a, src, REREG_TRANS, addr=addr, length=N, access=LW)
    churn()
    sent = by_ref() - before
    if args.mode == "close":
        ctx_a.close()
        time.sleep(0.5)
        ok, failed = 0, 0
    else:
        ok, failed = checked(dst, pat, reap(cqa, K), args.mode)
    print("%s: %d ok, %d failed, by reference %d" % (args.mode, ok, failed, sent), flush=True)
    if args.mode != "close":
        ctx_a.close()
    ctx_b.close()
    if keep is not None:
        keep.close()
    return sent


def mw_round(r):
    ctx_a, ctx_b = d.Context(name="sra"), d.Context(name="srb")
    pd_a, pd_b = PD(ctx_a), PD(ctx_b)
    qa, qb, cqa, cqb = pair(ctx_a, ctx_b, pd_a, pd_b)
    pat = pattern(r + 51, N)
    mem = MR(pd_a, N, LW | RR | e.IBV_ACCESS_MW_BIND)
    mem.write(pat, N, 0)
    mw = MW(pd_a, e.IBV_MW_TYPE_2)
    bind = SendWR(wr_id=100, opcode=e.IBV_WR_BIND_MW, send_flags=e.IBV_SEND_SIGNALED)
    bind.set_bind_wr(mw, MWBindInfo(mem, mem.buf, N, RR))
    qa.post_send(bind)
    if [s for _, s in reap(cqa, 1)] != [e.IBV_WC_SUCCESS]:
        fail("mw_inval: the window was not bound")
    rkey = bind.rkey
    dst = MR(pd_b, N, LW)
    dst.write(b"\x5a" * N, N, 0)
    before = by_ref()
    for i in range(K):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                    sg=[SGE(dst.buf + i * S, S, dst.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(rkey, mem.buf + i * S)
        qb.post_send(wr)
    time.sleep(0.05)
    inv = SendWR(wr_id=101, opcode=e.IBV_WR_LOCAL_INV, send_flags=e.IBV_SEND_SIGNALED)
    inv.imm_data = rkey
    qa.post_send(inv)
    if [s for _, s in reap(cqa, 1)] != [e.IBV_WC_SUCCESS]:
        fail("mw_inval: the window was not invalidated")
    mem.close()
    churn()
    sent = by_ref() - before
    ok, failed = checked(dst, pat, reap(cqb, K), "mw_inval")
    print("mw_inval: %d ok, %d failed, by reference %d" % (ok, failed, sent), flush=True)
    mw.close()
    ctx_a.close()
    ctx_b.close()
    return sent


total = 0
for r in range(args.rounds):
    total += (mw_round if args.mode == "mw_inval" else write_round)(r)
if args.copied and total:
    fail("%s: sra sent %d packets by reference with tx_zero_copy off" % (args.mode, total))
elif not args.copied and not total:
    fail("%s: sra sent nothing by reference" % args.mode)
time.sleep(1)
sys.exit(1 if failures else 0)
