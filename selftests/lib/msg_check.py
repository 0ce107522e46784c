#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# One side of a message exchange in which every byte is checked, the data check behind the
# pingpong-style selftests (rdma-core's pingpongs check one byte per page, on one side, and
# still exit 0 on a mismatch):
#   msg_check.py a|b DEV GID_INDEX TAG [--type rc|uc|ud|srq] [--qps N] [--iters N] [--size S]
#                [--mtu 1024|4096] [--stall SECS] [--op send|read]
# Side a sends message i on QP i mod N; side b checks it and answers with its own message i;
# side a checks the answer before it sends message i + 1 (so a UC sender never outruns the
# receives). Each message is S bytes: an 8-byte header (role, iteration) then a pattern
# seeded by role and iteration; odd iterations go as SEND with immediate (the iteration)
# and the immediate is checked too. Receive buffers are poisoned before they are posted,
# so a receive that completes without its bytes written is caught. `srq` puts every QP's
# receives on one shared receive queue on both sides (RC); `ud` sends through an address
# handle (a message of at most one path MTU) and also checks the sender's QPN. Each side takes its own GID at
# GID_INDEX and the peer's from the share, so IPv4 and IPv6 GIDs both work, within one
# guest (two namespaces) or between guests.
# With --op read (RC), each side instead RDMA READs message i mod 4 of the peer's, which the
# peer wrote into its memory at the start, into a poisoned buffer and checks every byte;
# both sides read at once, so each QP is requester and responder.
# Prints "connected: ..." once both sides' QPs are ready to send, and "checked: OK ..." and
# exits 0 when every message and answer was right.
import argparse, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import Share, fail, failures, pattern, ud_up, e
import pyverbs.device as d
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.srq import SRQ, SrqInitAttr, SrqAttr
from pyverbs.addr import AH, AHAttr, GlobalRoute, GID
from pyverbs.wr import SendWR, RecvWR, SGE

p = argparse.ArgumentParser()
p.add_argument("role", choices=["a", "b"])
p.add_argument("dev")
p.add_argument("gidx", type=int)
p.add_argument("tag")
p.add_argument("--type", default="rc", choices=["rc", "uc", "ud", "srq"])
p.add_argument("--qps", type=int, default=1)
p.add_argument("--iters", type=int, default=100)
p.add_argument("--size", type=int, default=4096)
p.add_argument("--mtu", type=int, default=1024, choices=[1024, 4096])
p.add_argument("--stall", type=int, default=60)
p.add_argument("--op", default="send", choices=["send", "read"])
args = p.parse_args()
READ = args.op == "read"
if READ and args.type not in ("rc", "srq"):
    sys.exit("msg_check: --op read needs an RC QP")
role, other = args.role, "b" if args.role == "a" else "a"
size, nqp = max(args.size, 8), args.qps
RECVS = 4                    # receives posted per QP (per SRQ: 4 per QP)
POISON = 0xA5
SLOTS = RECVS * nqp          # receive slots, then one send slot
MTU = {1024: e.IBV_MTU_1024, 4096: e.IBV_MTU_4096}[args.mtu]
UD = args.type == "ud"
GRH = 40 if UD else 0        # a UD receive starts with the 40-byte GRH area
SLOT = GRH + size
QKEY = 0x11111111

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
cq = CQ(ctx, 2 * SLOTS + 16)
SOURCES = 4                  # --op read: the messages the peer reads, one after another
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | (e.IBV_ACCESS_REMOTE_READ if READ else 0)
mr = MR(pd, (SLOTS + 1 + SOURCES) * SLOT, ACCESS)
srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=SLOTS, max_sge=1))) if args.type == "srq" else None
qpt = {"uc": e.IBV_QPT_UC, "ud": e.IBV_QPT_UD}.get(args.type, e.IBV_QPT_RC)
cap = QPCap(max_send_wr=4, max_recv_wr=0 if srq else RECVS, max_send_sge=1, max_recv_sge=1)
qps = [QP(pd, QPInitAttr(qp_type=qpt, scq=cq, rcq=cq, srq=srq, cap=cap) if srq
          else QPInitAttr(qp_type=qpt, scq=cq, rcq=cq, cap=cap)) for _ in range(nqp)]
by_num = {qp.qp_num: k for k, qp in enumerate(qps)}
SEND_OFF = SLOTS * SLOT
SRC_OFF = SEND_OFF + SLOT    # --op read: the messages the peer reads
ah, peer_qpns = None, []     # UD: the address handle of the peer and its QPNs


def gid_words(gidx):
    """This side's GID at `gidx` as eight 16-bit words, for the share."""
    return [int(w, 16) for w in ctx.query_gid(1, gidx).gid.split(":")]


def connect(qp, rqpn, psn, rpsn, dgid):
    """RESET -> INIT -> RTR -> RTS towards QP `rqpn` (RC or UC) at `dgid`."""
    a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1
    a.qp_access_flags = ACCESS
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTR; a.path_mtu = MTU; a.dest_qp_num = rqpn; a.rq_psn = rpsn
    a.ah_attr = AHAttr(gr=GlobalRoute(dgid=dgid, sgid_index=args.gidx), is_global=1, port_num=1)
    mask = e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
    if qpt == e.IBV_QPT_RC:
        a.max_dest_rd_atomic = 1; a.min_rnr_timer = 12
        mask |= e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER
    qp.modify(a, mask)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTS; a.sq_psn = psn
    mask = e.IBV_QP_STATE | e.IBV_QP_SQ_PSN
    if qpt == e.IBV_QPT_RC:
        a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7; a.max_rd_atomic = 1
        mask |= e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_MAX_QP_RD_ATOMIC
    qp.modify(a, mask)


def message(r, i):
    """Message i of role r: the header (role, iteration), then the pattern of (r, i)."""
    head = bytes([ord(r)]) + b"\0\0\0" + i.to_bytes(4, "little")
    return head + pattern(ord(r) * 7 + i, size - 8)


def post_recv(slot):
    """Poisons receive slot `slot` and posts it (to the SRQ, or to its QP)."""
    mr.write(bytes([POISON]) * SLOT, SLOT, slot * SLOT)
    wr = RecvWR(wr_id=slot, num_sge=1, sg=[SGE(mr.buf + slot * SLOT, SLOT, mr.lkey)])
    if srq:
        srq.post_recv(wr)
    else:
        qps[slot // RECVS].post_recv(wr)


def send(i):
    qp = qps[i % nqp]
    data = message(role, i)
    mr.write(data, size, SEND_OFF)
    kw = {"imm_data": i} if i % 2 else {}
    op = e.IBV_WR_SEND_WITH_IMM if i % 2 else e.IBV_WR_SEND
    wr = SendWR(wr_id=1 << 32 | i, opcode=op, num_sge=1, sg=[SGE(mr.buf + SEND_OFF, size, mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED, **kw)
    if UD:
        wr.set_wr_ud(ah, peer_qpns[i % nqp], QKEY)
    qp.post_send(wr)


def read(i):
    """READs the peer's message i mod SOURCES into the poisoned first slot and checks it."""
    mr.write(bytes([POISON]) * size, size, 0)
    wr = SendWR(wr_id=1 << 32 | i, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                sg=[SGE(mr.buf, size, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(peer_rkey, peer_addr + SRC_OFF + (i % SOURCES) * SLOT)
    qps[i % nqp].post_send(wr)
    if not poll_until(lambda: i in sends, "READ %d" % i):
        return False
    got, want = mr.read(size, 0), message(other, i % SOURCES)
    if got != want:
        bad = [k for k in range(size) if got[k] != want[k]]
        return fail("READ %d: %d of %d bytes differ, the first at offset %d (%#x, want %#x)"
                    % (i, len(bad), size, bad[0], got[bad[0]], want[bad[0]]))
    return True


sends, recvs = set(), []   # send iterations completed; receive completions, oldest first


def poll_until(want, what):
    """Polls the CQ until want() holds; False (a failure noted) on an error completion or
    after --stall seconds without a completion."""
    last = peeked = time.time()
    while not want():
        k, wcs = cq.poll(8)
        if not k:
            now = time.time()
            if now - last > args.stall:
                return fail("%s: no completion for %d s" % (what, args.stall))
            if now - peeked > 1:
                peeked = now
                if sh.aborted():
                    return fail("%s: side %s gave up" % (what, other))
            continue
        last = time.time()
        for wc in wcs[:k]:
            if wc.status != e.IBV_WC_SUCCESS:
                return fail("%s: wr_id %#x completed with status %d" % (what, wc.wr_id, wc.status))
            if wc.wr_id >> 32:
                sends.add(wc.wr_id & 0xffffffff)
            else:
                recvs.append(wc)
    return True


def take(i):
    """Waits for the peer's message i and checks it."""
    if not poll_until(lambda: recvs, "message %d" % i):
        return False
    return check(i, recvs.pop(0))


def check(i, wc):
    """The receive of the peer's message i: its QP, length, immediate and every byte."""
    before = len(failures)
    if by_num.get(wc.qp_num) != i % nqp:
        fail("message %d arrived on QP %#x, not QP %d" % (i, wc.qp_num, i % nqp))
    if wc.byte_len != GRH + size:
        fail("message %d: byte_len %d, want %d" % (i, wc.byte_len, GRH + size))
    if UD and wc.src_qp != peer_qpns[i % nqp]:
        fail("message %d: from QP %#x, want %#x" % (i, wc.src_qp, peer_qpns[i % nqp]))
    with_imm = bool(wc.wc_flags & e.IBV_WC_WITH_IMM)
    if with_imm != bool(i % 2) or (with_imm and wc.imm_data != i):
        fail("message %d: immediate flag %s, value %#x" % (i, with_imm, wc.imm_data))
    got, want = mr.read(size, wc.wr_id * SLOT + GRH), message(other, i)
    if got != want:
        bad = [k for k in range(size) if got[k] != want[k]]
        fail("message %d: %d of %d bytes differ, the first at offset %d (%#x, want %#x)"
             % (i, len(bad), size, bad[0], got[bad[0]], want[bad[0]]))
    post_recv(wc.wr_id)
    return len(failures) == before


psn = 0x1000 if role == "a" else 0x2000
for k in range(SOURCES):
    mr.write(message(role, k), size, SRC_OFF + k * SLOT)
sh.put("qps-" + role, [qp.qp_num for qp in qps] + gid_words(args.gidx) + [mr.buf, mr.rkey])
peer = sh.get("qps-" + other)
dgid = GID(":".join("%04x" % w for w in peer[nqp:nqp + 8]))
peer_qpns, (peer_addr, peer_rkey) = peer[:nqp], peer[nqp + 8:nqp + 10]
if UD:
    ah = AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=dgid, sgid_index=args.gidx), is_global=1, port_num=1))
    for qp in qps:
        ud_up(qp, QKEY)
else:
    for qp, rqpn in zip(qps, peer_qpns):
        connect(qp, rqpn, psn, 0x3000 - psn, dgid)
for slot in range(SLOTS):     # (a QP takes receives from INIT on)
    post_recv(slot)
sh.barrier("ready")
print("connected: QPs %s" % " ".join("%#x" % qp.qp_num for qp in qps), flush=True)

start, done = time.time(), 0
for i in range(args.iters):
    if READ:
        ok = read(i)
    elif role == "a":
        send(i)
        ok = take(i) and poll_until(lambda: i in sends, "send %d" % i)
    else:
        # The one send buffer is written again only once the answer before has completed.
        ok = take(i) and (i == 0 or poll_until(lambda: i - 1 in sends, "send %d" % (i - 1)))
        if ok:
            send(i)
    if not ok:
        break
    done += 1
if done == args.iters and role == "b" and not READ:
    poll_until(lambda: len(sends) == args.iters, "the last answer's send")
if len(sends) != done:
    fail("%d sends completed, %d iterations done" % (len(sends), done))
if recvs:
    fail("%d receives completed with no message due" % len(recvs))
secs = time.time() - start
if failures:
    sh.give_up()
else:
    sh.barrier("done")        # the QPs stay up until both sides have every completion
print("checked: %s (%d of %d iterations of %d B on %d %s QP(s)%s in %.1f s)"
      % ("OK" if not failures else "%d failures" % len(failures), done, args.iters, size, nqp,
         args.type, " by READ" if READ else "", secs), flush=True)
for obj in qps + [srq, ah, mr, cq, pd, ctx]:
    if obj is not None:
        obj.close()
sys.exit(0 if not failures else 1)
