#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# One side of rc_forged_requests.sh: an RC QP pair between the guests, and forged RoCEv2
# requests sent at g1's QP from g2 through a plain UDP socket (what any host on the path
# can do without RDMA hardware or rights):
#   roce_forge.py a|b DEV GID_INDEX PEER_IPV4 TAG
# Side a (g1) owns a 64 KiB MR with remote read/write rights and keeps its QP up until b is
# done. Side b (g2):
#   1. RDMA READs 4 KiB of a's MR (checked), so a keeps a READ resource;
#   2. sends 40 forged duplicate READ requests, 1000 to 1039 PSNs before the READ, with
#      a's valid R_Key and range (a must answer none of them);
#   3. from a second address on its link (10.77.0.3), sends 10 forged in-sequence requests
#      (RDMA WRITEs with a bad R_Key: had a taken one, its QP would be in Error);
#   4. RDMA READs again and WRITEs once (both must succeed: a's QP is still up).
# The shell side checks a's counters between the phases. ICRC is computed as RoCEv2 defines
# it (checked against real rdma_rxe captures), so the forged packets reach the transport.
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import connect_rc, v4_gid, forge, bth, reth
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap
from pyverbs.wr import SendWR, SGE

role, dev, gidx, peer, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
other = "b" if role == "a" else "a"
share = os.environ["HOST_SHARE"] + "/vals/"
os.makedirs(share, exist_ok=True)
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
MR_LEN = 65536

def put(name, vals):
    tmp = share + tag + "-" + name + ".tmp"
    open(tmp, "w").write(" ".join(str(v) for v in vals) + "\n")
    os.rename(tmp, share + tag + "-" + name)

def get(name, secs=120):
    end = time.time() + secs
    while time.time() < end:
        try:
            return [int(v) for v in open(share + tag + "-" + name).read().split()]
        except (FileNotFoundError, ValueError):
            time.sleep(0.05)
    sys.exit("timed out waiting for %s" % name)

ctx = d.Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 64)
mr = MR(pd, MR_LEN, ACCESS)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                       cap=QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)))
psn = 0x1000 if role == "a" else 0x8000
pattern = bytes((k * 7 + 3) % 251 for k in range(MR_LEN))
if role == "a":
    mr.write(pattern, MR_LEN)
put("qp-" + role, [qp.qp_num, psn, mr.rkey, mr.buf])
rqpn, rpsn, rkey, raddr = get("qp-" + other)

connect_rc(qp, rqpn, rpsn, psn, v4_gid(peer), gidx, access=ACCESS, max_rd=4, timeout=17)
put("rts-" + role, [1])
get("rts-" + other)

def complete(wr_id, what):
    end = time.time() + 60
    while time.time() < end:
        n, wcs = cq.poll(1)
        if n:
            w = wcs[0]
            if w.status != e.IBV_WC_SUCCESS or w.wr_id != wr_id:
                sys.exit("%s: completion wr_id %d status %d" % (what, w.wr_id, w.status))
            return
        time.sleep(0.001)
    sys.exit("%s: no completion" % what)

def read(off, n, wr_id):
    wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_READ, num_sge=1, sg=[SGE(mr.buf + off, n, mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(rkey, raddr + off)
    qp.post_send(wr)
    complete(wr_id, "READ")
    got = mr.read(n, off)
    if got != pattern[off:off + n]:
        sys.exit("READ %d bytes at %d: data differs" % (n, off))

if role == "a":
    get("done-b", 300)
    attr, _ = qp.query(e.IBV_QP_STATE)
    print("qp state %d" % attr.qp_state)
    sys.exit(0 if attr.qp_state == e.IBV_QPS_RTS else "a's QP left RTS: state %d" % attr.qp_state)

# Side b.
read_psn = qp.query(e.IBV_QP_SQ_PSN)[0].sq_psn
read(0x1000, 4096, 1)
print("READ of 4 KiB at psn %#x: data checked" % read_psn, flush=True)
put("phase-read", [1])
get("phase-read-seen")
for i in range(40):
    forge("10.77.0.2", 40000, peer,
          bth(0x0c, rqpn, read_psn - 1000 - i) + reth(raddr + 0x1000, rkey, 4096))
print("sent 40 forged duplicate READs", flush=True)
put("phase-dup", [1])
get("phase-dup-seen")
epsn = qp.query(e.IBV_QP_SQ_PSN)[0].sq_psn
for i in range(10):
    forge("10.77.0.3", 40001, peer, bth(0x0a, rqpn, epsn) + reth(raddr, rkey ^ 0x5a5a00, 16) + b"x" * 16)
print("sent 10 forged in-sequence WRITEs from 10.77.0.3", flush=True)
put("phase-spoof", [1])
get("phase-spoof-seen")
read(0x2000, 8192, 2)
wr = SendWR(wr_id=3, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)],
            send_flags=e.IBV_SEND_SIGNALED)
wr.set_wr_rdma(rkey, raddr + 0x8000)
qp.post_send(wr)
complete(3, "WRITE")
print("READ and WRITE after the forged packets: OK", flush=True)
put("done-b", [1])
