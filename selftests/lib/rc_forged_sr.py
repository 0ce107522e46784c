#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# One side of rc_forged_sr.sh: an RC QP pair, and one forged SR-format (BTH TVer 1) RDMA
# WRITE sent at g1's QP from g2's address through a plain UDP socket:
#   rc_forged_sr.py a|b DEV GID_INDEX PEER_IPV4 TAG AHEAD
# Side a (g1, rxe_sr) owns a 256 KiB MR with remote read/write rights and keeps its QP up
# until b is done; then prints its QP state and whether the forged bytes reached its
# memory. Side b (g2, rdma_rxe or rxe_sr):
#   1. WRITEs 64 KiB (so an SR pair has switched to the SR format);
#   2. forges one TVer 1 WRITE ONLY of 16 bytes at AHEAD PSNs past its next PSN, with a's
#      valid R_Key;
#   3. WRITEs and READs back 16 KiB 50 times, every byte checked.
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import Share, connect_rc, v4_gid, forge, bth, reth, pattern
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap
from pyverbs.wr import SendWR, SGE

role, dev, gidx, peer, tag, ahead = sys.argv[1:7]
gidx, ahead = int(gidx), int(ahead)
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
MR_LEN = 256 * 1024
FORGED_AT = 0x30000                    # where the forged WRITE aims in a's memory
FORGED = b"forged-by-g2-now"

ctx = d.Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 64)
mr = MR(pd, MR_LEN, ACCESS)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                       cap=QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)))
psn = 0x2000 if role == "a" else 0xa000
sh = Share(tag, role)
sh.put("qp-" + role, [qp.qp_num, psn, mr.rkey, mr.buf])
rqpn, rpsn, rkey, raddr = sh.get("qp-" + sh.other)
connect_rc(qp, rqpn, rpsn, psn, v4_gid(peer), gidx, access=ACCESS, max_rd=4, timeout=14)
sh.barrier("rts")

if role == "a":
    sh.get("done-b")
    attr, _ = qp.query(e.IBV_QP_STATE)
    print("qp state %d" % attr.qp_state)
    print("forged bytes in memory: %s" % ("yes" if mr.read(len(FORGED), FORGED_AT) == FORGED else "no"))
    sys.exit(0)


def rdma(opcode, off, n, wr_id):
    wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[SGE(mr.buf + off, n, mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(rkey, raddr + off)
    qp.post_send(wr)
    end = time.time() + 60
    while time.time() < end:
        k, wcs = cq.poll(1)
        if k:
            if wcs[0].status != e.IBV_WC_SUCCESS or wcs[0].wr_id != wr_id:
                sh.give_up()
                sys.exit("wr_id %d: completion wr_id %d status %d" % (wr_id, wcs[0].wr_id, wcs[0].status))
            return
        time.sleep(0.0005)
    sh.give_up()
    sys.exit("wr_id %d: no completion" % wr_id)


mr.write(pattern(1, 65536), 65536, 0)
rdma(e.IBV_WR_RDMA_WRITE, 0, 65536, 1)
at = (qp.query(e.IBV_QP_SQ_PSN)[0].sq_psn + ahead) & 0xffffff
forge(os.environ.get("MY_IP", "10.77.0.2"), 40002, peer,
      bth(0x0a, rqpn, at, tver=1) + reth(raddr + FORGED_AT, rkey, len(FORGED)) + FORGED)
print("forged one TVer 1 WRITE at psn %#x (%d ahead)" % (at, ahead), flush=True)
for i in range(50):
    data = pattern(2 + i, 16384)
    mr.write(data, len(data), 0x10000)
    rdma(e.IBV_WR_RDMA_WRITE, 0x10000, 16384, 10 + 2 * i)
    mr.write(bytes(16384), 16384, 0x10000)
    rdma(e.IBV_WR_RDMA_READ, 0x10000, 16384, 11 + 2 * i)
    if mr.read(16384, 0x10000) != data:
        sh.give_up()
        sys.exit("round %d: the READ did not return what the WRITE wrote" % i)
print("50 WRITE + READ rounds after the forged packet: OK", flush=True)
sh.put("done-b", [1])
