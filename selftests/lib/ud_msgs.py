#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# One side of a verified UD exchange, for the ud_*_interop selftests (either driver):
#   ud_msgs.py recv|send DEV GID_INDEX COUNT QKEY PEER_IPV4
# The receiver posts COUNT receives and checks every message (bytes, length with the GRH
# area, source QP, immediate data); the sender sends COUNT messages (two-SGE gather, inline,
# with immediate) through an AH to the peer and checks every send completion. QPNs are
# exchanged through the 9p share.
import os, sys, time
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap
from pyverbs.addr import AH, AHAttr, GlobalRoute, GID
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import ud_up
from pyverbs.wr import SendWR, RecvWR, SGE

role, dev, gidx, n, qkey, peer = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
share = os.environ["HOST_SHARE"] + "/vals/"
ctx = d.Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 64)
mr = MR(pd, 1 << 16, e.IBV_ACCESS_LOCAL_WRITE)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq,
                       cap=QPCap(max_send_wr=32, max_recv_wr=32, max_send_sge=2, max_recv_sge=1, max_inline_data=128)))
ud_up(qp, qkey)

def msg(i):
    return bytes((i * 7 + k) % 251 for k in range(100 + 37 * i))

def wait_file(name):
    for _ in range(600):
        if os.path.exists(share + name):
            return open(share + name).read().split()
        time.sleep(0.1)
    sys.exit("timed out waiting for " + name)

def poll(count, secs=30):
    got, end = [], time.time() + secs
    while len(got) < count and time.time() < end:
        k, wcs = cq.poll(count - len(got))
        got += wcs[:k]
        if not k:
            time.sleep(0.01)
    return got

if role == "recv":
    for i in range(n):
        qp.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + 4096 * i, 40 + 4096, mr.lkey)]))
    open(share + "ud-recv-qpn", "w").write("%d\n" % qp.qp_num)
    src = int(wait_file("ud-send-qpn")[0])
    wcs = poll(n)
    print("received %d of %d" % (len(wcs), n))
    ok = 0
    for wc in wcs:
        i = wc.wr_id
        data = mr.read(len(msg(i)), 4096 * i + 40)
        good = (wc.status == e.IBV_WC_SUCCESS and wc.byte_len == 40 + len(msg(i)) and data == msg(i)
                and wc.src_qp == src and (i % 4 != 3 or (wc.wc_flags & e.IBV_WC_WITH_IMM and wc.imm_data == 0xabc0 + i)))
        ok += good
        if not good:
            print("bad wc %d: status %d len %d src %d flags %#x imm %#x" % (i, wc.status, wc.byte_len, wc.src_qp, wc.wc_flags, wc.imm_data))
    print("verified %d of %d" % (ok, n))
    sys.exit(0 if ok == n else 1)
else:
    rqpn = int(wait_file("ud-recv-qpn")[0])
    open(share + "ud-send-qpn", "w").write("%d\n" % qp.qp_num)
    ah = AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=GID("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(int(x) for x in peer.split("."))), sgid_index=gidx),
                            is_global=1, port_num=1))
    for i in range(n):
        m = msg(i)
        mr.write(m, len(m), 4096 * i)
        half = len(m) // 2
        if i % 4 == 1 and len(m) <= 128:
            wr = SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf + 4096 * i, len(m), mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE)
        elif i % 4 == 3:
            wr = SendWR(wr_id=i, opcode=e.IBV_WR_SEND_WITH_IMM, num_sge=1, sg=[SGE(mr.buf + 4096 * i, len(m), mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED, imm_data=0xabc0 + i)
        else:
            wr = SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=2,
                        sg=[SGE(mr.buf + 4096 * i, half, mr.lkey), SGE(mr.buf + 4096 * i + half, len(m) - half, mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_ud(ah, rqpn, qkey)
        qp.post_send(wr)
        time.sleep(0.01)
    wcs = poll(n)
    good = [wc for wc in wcs if wc.status == e.IBV_WC_SUCCESS]
    print("send completions: %d, successful: %d, wr_ids %s" % (len(wcs), len(good), sorted(wc.wr_id for wc in wcs)))
    sys.exit(0 if len(good) == n and sorted(wc.wr_id for wc in wcs) == list(range(n)) else 1)
