#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# guests: 1
# Exhaustion of the device's object limits, through the stock rxe
# provider (pyverbs, each guest on its own): rxe_sr loaded with max_objects=N reports
# max_qp, max_cq, max_srq, max_pd, max_mr, max_mw and max_ah of N; each kind is created until
# the device refuses one, which must be exactly at its limit (less what already exists,
# from `rdma resource`) and with ENOMEM. With every kind at its limit at once, a loopback RC
# pair made beforehand still carries SENDs, every byte checked; one object of a kind freed
# lets exactly one more be made. Everything freed, `rdma resource` is back where it began,
# the kernel log is clean and unload finds nothing left. Then the same with the default
# limits (max_objects=0): rdma_rxe's values are reported.
# CQEs, SRQ WRs and QP WRs at their limits: verbs_pd_cq.sh, srq_resize.sh, verbs_qp.sh;
# the SR pools: rc_sr_pool.sh.
. "$HOST_SHARE/selftests/lib/lib.sh"
N=${RXE_SR_LIMITS_N:-48}

modprobe -r rxe_sr rdma_rxe 2>/dev/null
dmesg_mark
check "load the verbs core" load_rdma_core
check "load rxe_sr max_objects=$N" modprobe rxe_sr max_objects="$N"
check "max_objects reads back" test "$(cat /sys/module/rxe_sr/parameters/max_objects)" = "$N"
check "rdma link add sr0" rdma link add sr0 type rxe_sr netdev eth0
check "port ACTIVE" wait_port_active sr0
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
res0=$(rdma resource show sr0)
log "rdma resource before: $res0"

out=$(GIDX=$gidx N=$N timeout 150 python3 - <<'PY' 2>&1
import json, os, subprocess, sys, time
sys.path.insert(0, os.environ["HOST_SHARE"] + "/selftests/lib")
from verbs_util import connect_rc, sends_checked
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR, MW
from pyverbs.srq import SRQ, SrqInitAttr, SrqAttr
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.wr import SendWR, RecvWR, SGE
from pyverbs.pyverbs_error import PyverbsRDMAError

gidx, N = int(os.environ["GIDX"]), int(os.environ["N"])
ctx = d.Context(name='sr0')
dev = ctx.query_device()
lims = {"qp": dev.max_qp, "cq": dev.max_cq, "srq": dev.max_srq, "pd": dev.max_pd,
        "mr": dev.max_mr, "mw": dev.max_mw, "ah": dev.max_ah}
print("reported: " + " ".join("%s %d" % kv for kv in sorted(lims.items())))
assert all(v == N for v in lims.values()), lims

def in_use(kind):
    """The device's objects of `kind` now (any process's and the kernel's own)."""
    r = json.loads(subprocess.check_output(["rdma", "-j", "resource", "show", "sr0"]))[0]
    return int(r.get(kind, 0))

# The pair that must keep working at the limits, made first.
pd = PD(ctx)
cq = CQ(ctx, 128)
SLOT, MSGS = 512, 16
mr = MR(pd, 2 * MSGS * SLOT, e.IBV_ACCESS_LOCAL_WRITE)
cap = QPCap(max_send_wr=MSGS, max_recv_wr=MSGS)
a_qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
b_qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
gid = ctx.query_gid(1, gidx)
gr = GlobalRoute(dgid=gid, sgid_index=gidx)

connect_rc(a_qp, b_qp.qp_num, 0, 0, gid, gidx)
connect_rc(b_qp, a_qp.qp_num, 0, 0, gid, gidx)

qp_cap = QPCap(max_send_wr=1, max_recv_wr=1)
makers = {
    "pd": lambda: PD(ctx),
    "cq": lambda: CQ(ctx, 1),
    "mr": lambda: MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE),
    "mw": lambda: MW(pd, e.IBV_MW_TYPE_1),
    "srq": lambda: SRQ(pd, SrqInitAttr(SrqAttr(max_wr=1, max_sge=1))),
    "qp": lambda: QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=qp_cap)),
    "ah": lambda: AH(pd, attr=AHAttr(gr=gr, is_global=1, port_num=1)),
}
# What exists of each kind before it is exhausted: what `rdma resource` counts (the
# kernel's own, and this script's pair); QPs count user QPs only (QP1 has a number of its
# own, outside the range max_qp bounds); MWs and AHs, none. MRs also count the DMA MR the
# verbs core asks for on each kernel PD (the device has no local DMA lkey), which `rdma
# resource` does not show: every PD but this script's is the kernel's.
kernel_pds = in_use("pd") - 1
held = {}
for kind in ("pd", "cq", "mr", "mw", "srq", "qp", "ah"):
    before = {"qp": 2, "mw": 0, "ah": 0}.get(kind)
    if before is None:
        before = in_use(kind) + (kernel_pds if kind == "mr" else 0)
    objs, err = [], None
    while len(objs) <= N:
        try:
            objs.append(makers[kind]())
        except PyverbsRDMAError as ex:
            err = ex.error_code
            break
    print("%s: %d existed, %d made, then errno %s" % (kind, before, len(objs), err))
    if before + len(objs) != N or err != 12:
        print("BAD: %s: refused at %d, not at its limit %d with ENOMEM" % (kind, before + len(objs), N))
    # One freed lets exactly one more be made.
    objs.pop().close()
    objs.append(makers[kind]())
    try:
        makers[kind]().close()
        print("BAD: %s: one past the limit after a free" % kind)
    except PyverbsRDMAError as ex:
        print("%s: one freed, one made, the next refused: errno %d" % (kind, ex.error_code))
    held[kind] = objs

# Every kind at its limit: the pair still works.
for i in range(MSGS):
    b_qp.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + i * SLOT, SLOT, mr.lkey)]))
sends_checked(a_qp, cq, mr, MSGS, SLOT, 13, 200)
print("at every limit: %d SENDs between the pair made before, every byte checked" % MSGS)
for kind in ("ah", "qp", "srq", "mw", "mr", "cq", "pd"):
    for o in held[kind]:
        o.close()
for o in (a_qp, b_qp, mr, cq, pd, ctx):
    o.close()
print("closed")
PY
)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "pyverbs script failed"
printf '%s\n' "$out" | grep -q '^BAD' && fail "a limit was not where the device reports it"
expect_grep "every limit reported as max_objects" "^reported: ah $N cq $N mr $N mw $N pd $N qp $N srq $N\$" "$out"
for k in pd cq mr mw srq qp ah; do
  expect_grep "$k refused at its limit with ENOMEM" "^$k: [0-9]+ existed, [0-9]+ made, then errno 12\$" "$out"
  expect_grep "$k: a free makes room for one" "^$k: one freed, one made, the next refused: errno 12\$" "$out"
done
expect_grep "the pair works with every kind at its limit" "^at every limit: 16 SENDs" "$out"
res1=$(rdma resource show sr0)
check "rdma resource back where it began ($res1)" test "$res1" = "$res0"
sr_down_clean

# The default: rdma_rxe's limits.
dmesg_mark
check "load rxe_sr (max_objects 0)" modprobe rxe_sr
check "rdma link add sr0" rdma link add sr0 type rxe_sr netdev eth0
check "port ACTIVE" wait_port_active sr0
out=$(python3 -c '
import pyverbs.device as d
a = d.Context(name="sr0").query_device()
print("reported: qp %d cq %d srq %d pd %d mr %d mw %d ah %d" % (a.max_qp, a.max_cq, a.max_srq, a.max_pd, a.max_mr, a.max_mw, a.max_ah))
' 2>&1)
printf '%s\n' "$out"
expect_grep "rdma_rxe's limits by default" '^reported: qp 1048560 cq 1048576 srq 917503 pd 1048576 mr 524287 mw 524288 ah 32767$' "$out"
sr_down_clean
