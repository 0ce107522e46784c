#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# One side of rc_guarantee.sh: RC's promise under loss, duplication and reordering, with a
# receiver that is short of receives:
#   rc_guarantee.py send|recv DEV GID_INDEX PEER_IPV4 TAG [COUNT]
# send (g2): COUNT SENDs, message i of size(i) bytes (1 B .. 8 KiB) with pattern seed i,
#   at most 32 in flight, each completion checked (status, order); then COUNT FETCH_ADDs
#   of 1 to the receiver's counter, at most 4 in flight: the k-th must return k (each
#   ran once, in order).
# recv (g1): two receives posted; each completion is checked (its wr_id in order, its
#   length and every byte of its message), and its receive posted again only after a
#   pause, so the sender meets RNR NAKs again and again. At the end its counter must be
#   COUNT: every FETCH_ADD ran exactly once.
# Prints "guarantee: OK" and exits 0 when every check passed.
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import Share, connect_rc, v4_gid, fail, failures, pattern
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap
from pyverbs.wr import SendWR, RecvWR, SGE

role, dev, gidx, peer, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
count = int(sys.argv[6]) if len(sys.argv) > 6 else 200
side = "a" if role == "recv" else "b"
SLOT = 8192
RECVS = 2                              # receives posted at once
MR_LEN = 64 * SLOT + 4096              # 32 send slots, receive slots, the counter
COUNTER = 64 * SLOT
RESULTS = 64 * SLOT + 8                # the sender's FETCH_ADD results, 8 bytes each
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_ATOMIC
STALL = 120


def size(i):
    return 1 + (i * 2654435761) % SLOT


ctx = d.Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 256)
mr = MR(pd, MR_LEN, ACCESS)
mr.write(bytes(8), 8, COUNTER)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                       cap=QPCap(max_send_wr=64, max_recv_wr=RECVS, max_send_sge=1, max_recv_sge=1)))
psn = 0x3000 if side == "a" else 0x9000
sh = Share(tag, side)
sh.put("qp-" + side, [qp.qp_num, psn, mr.rkey, mr.buf])
rqpn, rpsn, rkey, raddr = sh.get("qp-" + sh.other)
connect_rc(qp, rqpn, rpsn, psn, v4_gid(peer), gidx, access=ACCESS, max_rd=4, timeout=14)


def poll_one():
    """The next completion, or exits when none comes for STALL seconds."""
    end = time.time() + STALL
    while time.time() < end:
        n, wcs = cq.poll(1)
        if n:
            return wcs[0]
        time.sleep(0.0005)
    sh.give_up()
    sys.exit("no completion for %d s" % STALL)


def post_recv(k):
    slot = 32 + k % RECVS
    qp.post_recv(RecvWR(wr_id=k, num_sge=1, sg=[SGE(mr.buf + slot * SLOT, SLOT, mr.lkey)]))


def receiver():
    for k in range(RECVS):
        post_recv(k)
    sh.barrier("posted")
    for k in range(count):
        wc = poll_one()
        if wc.status != e.IBV_WC_SUCCESS or wc.wr_id != k:
            fail("receive %d: wr_id %d status %d" % (k, wc.wr_id, wc.status))
            break
        slot = 32 + k % RECVS
        if wc.byte_len != size(k) or mr.read(size(k), slot * SLOT) != pattern(k, size(k)):
            fail("receive %d: %d bytes, or not the bytes message %d had" % (k, wc.byte_len, k))
        if k + RECVS < count:
            time.sleep(0.002)          # slow to post again: the sender meets RNR NAKs
            post_recv(k + RECVS)
    sh.get("atomics-done")
    got = int.from_bytes(mr.read(8, COUNTER), "little")
    if got != count:
        fail("the counter is %d after %d FETCH_ADDs" % (got, count))
    sh.put("recv-done", [len(failures)])


def sender():
    sh.barrier("posted")
    posted = done = 0
    while done < count:
        while posted < count and posted - done < 32:
            slot = posted % 32
            data = pattern(posted, size(posted))
            mr.write(data, len(data), slot * SLOT)
            qp.post_send(SendWR(wr_id=posted, opcode=e.IBV_WR_SEND, num_sge=1,
                                sg=[SGE(mr.buf + slot * SLOT, len(data), mr.lkey)],
                                send_flags=e.IBV_SEND_SIGNALED))
            posted += 1
        wc = poll_one()
        if wc.status != e.IBV_WC_SUCCESS or wc.wr_id != done:
            fail("SEND %d: wr_id %d status %d" % (done, wc.wr_id, wc.status))
            break
        done += 1
    posted = done = 0
    while done < count and not failures:
        while posted < count and posted - done < 4:
            wr = SendWR(wr_id=posted, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                        sg=[SGE(mr.buf + RESULTS + 8 * (posted % 4), 8, mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED)
            wr.set_wr_atomic(rkey, raddr + COUNTER, 1, 0)
            qp.post_send(wr)
            posted += 1
        wc = poll_one()
        if wc.status != e.IBV_WC_SUCCESS or wc.wr_id != done:
            fail("FETCH_ADD %d: wr_id %d status %d" % (done, wc.wr_id, wc.status))
            break
        got = int.from_bytes(mr.read(8, RESULTS + 8 * (done % 4)), "little")
        if got != done:
            fail("FETCH_ADD %d returned %d" % (done, got))
        done += 1
    sh.put("atomics-done", [1])
    sh.get("recv-done")


try:
    receiver() if side == "a" else sender()
except SystemExit:
    raise
except BaseException:
    sh.give_up()
    raise
if failures:
    sys.exit(1)
print("guarantee: OK", flush=True)
