#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# guests: 1
# Ring memory is charged to the caller's memory cgroup: a process in
# its own cgroup creates a QP whose send and receive rings hold 16384 WQEs of 32 SGEs each
# (at least 16 MiB), then a CQ of 32767 entries; memory.current must rise by at least the
# SGE arrays' size while they exist, and fall back once they are destroyed. (Charged
# memory counts against memory.max, so a container cannot pin host memory through rings.)
. "$HOST_SHARE/selftests/lib/lib.sh"
cg=/sys/fs/cgroup
grep -qw cgroup2 /proc/filesystems || skip "no cgroup v2 in this kernel"
if ! grep -q " $cg cgroup2 " /proc/mounts; then
  mkdir -p $cg && check "mount cgroup2" mount -t cgroup2 none $cg
fi
grep -qw memory $cg/cgroup.controllers || skip "no memory controller (CONFIG_MEMCG)"
check "enable the memory controller" sh -c "echo +memory > $cg/cgroup.subtree_control"
mkdir -p $cg/rxe_sr_t
trap 'rmdir $cg/rxe_sr_t 2>/dev/null' EXIT
sr_up
cat > /tmp/memcg.py <<'PY'
import sys
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.qp import QP, QPInitAttr, QPCap
cur = lambda: int(open("/sys/fs/cgroup/rxe_sr_t/memory.current").read())
ctx = d.Context(name="sr0")
pd = PD(ctx)
small = CQ(ctx, 16)
wr, sge = 16384, 32
base = cur()
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=small, rcq=small,
                       cap=QPCap(max_send_wr=wr, max_recv_wr=wr, max_send_sge=sge, max_recv_sge=sge)))
with_qp = cur()
cq = CQ(ctx, 32767)
with_cq = cur()
qp.close(); cq.close()
after = cur()
need = 2 * wr * sge * 16
print("memory.current: base %d, QP +%d (its SGE arrays alone: %d), CQ +%d, after destroy +%d"
      % (base, with_qp - base, need, with_cq - with_qp, after - base))
ok = with_qp - base >= need and with_cq - with_qp >= 32767 * 32 and after - base < need // 4
print("charged and uncharged: %s" % ("yes" if ok else "NO"))
sys.exit(0 if ok else 1)
PY
out=$(sh -c "echo \$\$ > $cg/rxe_sr_t/cgroup.procs && exec timeout 60 python3 /tmp/memcg.py" 2>&1); rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "ring memory not charged to the cgroup, or not uncharged (exit $rc)"
expect_grep "rings charged, then uncharged" '^charged and uncharged: yes$' "$out"
sr_down_clean
