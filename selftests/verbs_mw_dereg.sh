#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# guests: 1
# Memory windows keep their region: an MR with a bound window cannot be
# deregistered (EBUSY; rdma_rxe refuses too), for a type 1 window bound with ibv_bind_mw
# and a type 2 window bound by a BIND_MW work request; once the window is unbound (type 1:
# a bind of length 0) or invalidated (type 2: LOCAL_INV), deregistration succeeds. Two RC
# QPs on sr0 (loopback) carry the binds. The device reports a max_mw above 0 (rxe_sr offers
# windows of both types, allocated here).
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(GIDX=$gidx MYIP=$MY_IP timeout 90 python3 - <<'PY' 2>&1
import errno, os, sys, time
sys.path.insert(0, os.environ["HOST_SHARE"] + "/selftests/lib")
from verbs_util import connect_rc, v4_gid
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR, MW, MWBindInfo, MWBind
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.wr import SendWR
from pyverbs.pyverbs_error import PyverbsRDMAError

gidx = int(os.environ["GIDX"])
ip = os.environ["MYIP"]
ctx = d.Context(name="sr0")
print("max_mw %d" % ctx.query_device().max_mw)
pd = PD(ctx)
cq = CQ(ctx, 32)
cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
qa = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
qb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
dgid = v4_gid(ip)
ACC = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ

def up(qp, rqpn, rq_psn, sq_psn):
    connect_rc(qp, rqpn, rq_psn, sq_psn, dgid, gidx, access=ACC)

def done(what):
    end = time.time() + 20
    while time.time() < end:
        n, wcs = cq.poll(1)
        if n:
            assert wcs[0].status == e.IBV_WC_SUCCESS, "%s: status %d" % (what, wcs[0].status)
            return
        time.sleep(0.001)
    raise SystemExit("%s: no completion" % what)

def dereg_refused(mr, what):
    try:
        mr.close()
    except PyverbsRDMAError as x:
        assert x.error_code == errno.EBUSY, "%s: errno %d" % (what, x.error_code)
        print("%s: deregistration refused (EBUSY)" % what)
        return
    raise SystemExit("%s: an MR with a bound window was deregistered" % what)

up(qa, qb.qp_num, 0x100, 0x200)
up(qb, qa.qp_num, 0x200, 0x100)
for mw_type in (e.IBV_MW_TYPE_1, e.IBV_MW_TYPE_2):
    mr = MR(pd, 4096, ACC | e.IBV_ACCESS_MW_BIND)
    mw = MW(pd, mw_type)
    info = MWBindInfo(mr, mr.buf, 4096, e.IBV_ACCESS_REMOTE_WRITE)
    if mw_type == e.IBV_MW_TYPE_1:
        qa.bind_mw(mw, MWBind(info, e.IBV_SEND_SIGNALED))
    else:
        wr = SendWR(wr_id=1, opcode=e.IBV_WR_BIND_MW, send_flags=e.IBV_SEND_SIGNALED)
        wr.set_bind_wr(mw, info)
        qa.post_send(wr)
        bound_rkey = wr.rkey
    done("bind type %d" % mw_type)
    dereg_refused(mr, "type %d window bound" % mw_type)
    if mw_type == e.IBV_MW_TYPE_1:
        qa.bind_mw(mw, MWBind(MWBindInfo(mr, mr.buf, 0, 0), e.IBV_SEND_SIGNALED))
    else:
        wr = SendWR(wr_id=2, opcode=e.IBV_WR_LOCAL_INV, send_flags=e.IBV_SEND_SIGNALED)
        wr.imm_data = bound_rkey
        qa.post_send(wr)
    done("unbind type %d" % mw_type)
    mr.close()
    print("type %d window unbound: region deregistered" % mw_type)
    mw.close()
for o in (qa, qb, cq, pd, ctx):
    o.close()
PY
)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "pyverbs script failed (exit $rc)"
expect_grep "the device reports memory windows (max_mw above 0)" '^max_mw [1-9][0-9]*$' "$out"
for t in 1 2; do
  expect_grep "type $t: refused while bound" "^type $t window bound: deregistration refused \(EBUSY\)$" "$out"
  expect_grep "type $t: deregistered once unbound" "^type $t window unbound: region deregistered$" "$out"
done
sr_down_clean
