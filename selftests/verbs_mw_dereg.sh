#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# Memory windows keep their region (issue 9, item 9): an MR with a bound window cannot be
# deregistered (EBUSY; rdma_rxe refuses too), for a type 1 window bound with ibv_bind_mw
# and a type 2 window bound by a BIND_MW work request; once the window is unbound (type 1:
# a bind of length 0) or invalidated (type 2: LOCAL_INV), deregistration succeeds. Two RC
# QPs on sr0 (loopback) carry the binds.
. "$HOST_SHARE/selftests/lib.sh"
sr_up
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(GIDX=$gidx MYIP=$MY_IP timeout 90 python3 - <<'PY' 2>&1
import errno, os, time
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR, MW, MWBindInfo, MWBind
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute, GID
from pyverbs.wr import SendWR
from pyverbs.pyverbs_error import PyverbsRDMAError

gidx = int(os.environ["GIDX"])
ip = os.environ["MYIP"]
ctx = d.Context(name="sr0")
pd = PD(ctx)
cq = CQ(ctx, 32)
cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
qa = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
qb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
dgid = GID("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(int(x) for x in ip.split(".")))
ACC = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ

def up(qp, rqpn, rq_psn, sq_psn):
    a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qp_access_flags = ACC
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTR; a.path_mtu = e.IBV_MTU_1024; a.dest_qp_num = rqpn
    a.rq_psn = rq_psn; a.max_dest_rd_atomic = 1; a.min_rnr_timer = 12
    a.ah_attr = AHAttr(gr=GlobalRoute(dgid=dgid, sgid_index=gidx), is_global=1, port_num=1)
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
              | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTS; a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7
    a.sq_psn = sq_psn; a.max_rd_atomic = 1
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY
              | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)

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
for t in 1 2; do
  expect_grep "type $t: refused while bound" "^type $t window bound: deregistration refused \(EBUSY\)$" "$out"
  expect_grep "type $t: deregistered once unbound" "^type $t window unbound: region deregistered$" "$out"
done
sr_down_clean
