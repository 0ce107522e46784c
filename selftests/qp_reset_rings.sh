#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# guests: 1
# Reset empties a QP's rings (IBTA 10.3.1). Two RC QPs on sr0 (loopback):
# A posts a receive (wr_id 101) and a SEND ("old") that B cannot take (no receive: RNR
# NAKs, retried forever; the device's rcvd_rnr_err counts them, and A's SEND has not
# completed after the first). A goes to RESET, which completes nothing, and back to RTS at B's
# PSNs. Then A's new SEND ("new") must be the only message B receives, and B's SEND back
# must land in the receive A posted after the reset (wr_id 102), not the one before it.
# Also: a modify_qp whose IB_QP_CUR_STATE disagrees with the QP's state is refused.
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(GIDX=$gidx MYIP=$MY_IP timeout 90 python3 - <<'PY' 2>&1
import os, sys, time
sys.path.insert(0, os.environ["HOST_SHARE"] + "/selftests/lib")
from verbs_util import connect_rc, v4_gid
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.wr import SendWR, RecvWR, SGE
from pyverbs.pyverbs_error import PyverbsRDMAError

gidx = int(os.environ["GIDX"])
ip = os.environ["MYIP"]
ctx = d.Context(name="sr0")
pd = PD(ctx)
cqa, cqb = CQ(ctx, 32), CQ(ctx, 32)
mra = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
mrb = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
qa = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=cap))
qb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, cap=cap))
dgid = v4_gid(ip)

def up(qp, rqpn, rq_psn, sq_psn):
    connect_rc(qp, rqpn, rq_psn, sq_psn, dgid, gidx)

def send(qp, mr, off, text, wr_id):
    mr.write(text, len(text), off)
    qp.post_send(SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf + off, len(text), mr.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED))

def recv(qp, mr, off, wr_id):
    qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[SGE(mr.buf + off, 64, mr.lkey)]))

def rnr_naks():
    with open("/sys/class/infiniband/sr0/ports/1/hw_counters/rcvd_rnr_err") as f:
        return int(f.read())

def wait(cq, n, secs=20):
    got, end = [], time.time() + secs
    while len(got) < n and time.time() < end:
        k, wcs = cq.poll(n - len(got))
        got += [(w.wr_id, w.status, w.opcode, w.byte_len) for w in wcs[:k]]
        time.sleep(0.001)
    return got

up(qa, qb.qp_num, 0x100, 0x200)
up(qb, qa.qp_num, 0x200, 0x100)
recv(qa, mra, 2048, 101)
rnr0 = rnr_naks()
send(qa, mra, 0, b"old", 1)
end = time.time() + 20
while rnr_naks() == rnr0 and time.time() < end:
    time.sleep(0.01)
assert rnr_naks() > rnr0, "no RNR NAK for a SEND to a QP without a receive"
assert cqa.poll(1)[0] == 0, "the SEND completed without a receive"
print("A's SEND drew an RNR NAK and did not complete")
a = QPAttr(); a.qp_state = e.IBV_QPS_RESET
qa.modify(a, e.IBV_QP_STATE)
print("A reset with a SEND outstanding and a receive posted")
time.sleep(0.2)
assert wait(cqa, 1, 0.2) == [], "RESET completed a work request"
# A's stale claim of being in RTS (it is in RESET) is refused.
a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.cur_qp_state = e.IBV_QPS_RTS; a.pkey_index = 0; a.port_num = 1
a.qp_access_flags = 0
try:
    qa.modify(a, e.IBV_QP_STATE | e.IBV_QP_CUR_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    raise SystemExit("a wrong IB_QP_CUR_STATE was believed")
except PyverbsRDMAError as x:
    print("wrong current state refused: %s" % x)
b_attr, _ = qb.query(e.IBV_QP_RQ_PSN | e.IBV_QP_SQ_PSN)
up(qa, qb.qp_num, b_attr.sq_psn, b_attr.rq_psn)
recv(qb, mrb, 0, 201)
recv(qa, mra, 3072, 102)
send(qa, mra, 64, b"new", 2)
sa = wait(cqa, 1)
rb = wait(cqb, 1)
print("A send completions %s, B receive completions %s" % (sa, rb))
assert [(w, s) for w, s, _, _ in sa] == [(2, e.IBV_WC_SUCCESS)], sa
assert [(w, s, n) for w, s, _, n in rb] == [(201, e.IBV_WC_SUCCESS, 3)], rb
got = mrb.read(3, 0)
assert got == b"new", "B received %r" % got
time.sleep(0.3)
assert wait(cqb, 1, 0.2) == [], "B received a second message"
send(qb, mrb, 128, b"back", 3)
rb, ra = wait(cqb, 1), wait(cqa, 1)
print("B send %s, A receive %s" % (rb, ra))
assert [(w, s) for w, s, _, _ in ra] == [(102, e.IBV_WC_SUCCESS)], ra
assert mra.read(4, 3072) == b"back"
print("reset emptied both rings")
for o in (qa, qb, mra, mrb, cqa, cqb, pd, ctx):
    o.close()
PY
)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "pyverbs script failed (exit $rc)"
expect_grep "stale current state refused" '^wrong current state refused' "$out"
expect_grep "only the new SEND and the new receive ran" '^reset emptied both rings$' "$out"
sr_down_clean
