#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# guests: 1
# MRs over huge pages, in one guest: with 2 MiB huge pages reserved
# (hugetlbfs), two 4 MiB MRs on MAP_HUGETLB memory (pyverbs' IBV_ACCESS_HUGETLB), and an RC
# QP pair on sr0 looped back to itself. RDMA WRITEs and READs of 64 KiB that cross the 2 MiB
# huge-page boundary in the middle of each MR, and a SEND into a receive buffer that does,
# land byte for byte (checked against what the other MR holds); the huge pages are given
# back once the MRs are deregistered (HugePages_Free returns to its value before).
. "$HOST_SHARE/selftests/lib/lib.sh"
[ -d /sys/kernel/mm/hugepages/hugepages-2048kB ] || skip "no 2 MiB huge pages in this kernel"
sr_up
dmesg_mark
echo 8 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
free_huge() { awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo; }
before=$(free_huge)
[ "$before" -ge 4 ] || fail "only $before huge pages could be reserved"
log "huge pages free before: $before"
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"

out=$(GIDX=$gidx MY_IP=$MY_IP HUGE_FREE=$before timeout 120 python3 - <<'PY' 2>&1
import os, sys
sys.path.insert(0, os.environ["HOST_SHARE"] + "/selftests/lib")
from verbs_util import connect_rc, v4_gid
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap
from pyverbs.wr import RecvWR, SendWR, SGE

def free_huge():
    for l in open("/proc/meminfo"):
        if l.startswith("HugePages_Free:"):
            return int(l.split()[1])

SIZE, HALF, CHUNK = 4 << 20, 2 << 20, 64 << 10
acc = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
ctx = d.Context(name="sr0")
pd = PD(ctx)
cq = CQ(ctx, 64)
a = MR(pd, SIZE, acc | e.IBV_ACCESS_HUGETLB)
b = MR(pd, SIZE, acc | e.IBV_ACCESS_HUGETLB)
used = int(os.environ["HUGE_FREE"]) - free_huge()
assert used >= 4, "the two MRs took %d huge pages, not 4: not on huge pages" % used
print("two 4 MiB MRs on %d huge pages" % used)
cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
qa = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
qb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
gid, gidx = v4_gid(os.environ["MY_IP"]), int(os.environ["GIDX"])
connect_rc(qa, qb.qp_num, 0, 0, gid, gidx, access=acc, max_rd=4)
connect_rc(qb, qa.qp_num, 0, 0, gid, gidx, access=acc, max_rd=4)

def wait(n):
    got = 0
    while got < n:
        npoll, wcs = cq.poll(n - got)
        for wc in wcs[:npoll]:
            assert wc.status == e.IBV_WC_SUCCESS, "completion status %d (opcode %d)" % (wc.status, wc.opcode)
        got += npoll

def pattern(seed, n):
    return bytes((seed * 131 + i * 7 + (i >> 9)) & 0xff for i in range(n))

off = HALF - CHUNK // 2          # 32 KiB each side of the huge-page boundary

def rdma(qp, op, local, remote, seed):
    wr = SendWR(wr_id=seed, opcode=op, num_sge=1, sg=[SGE(local.buf + off, CHUNK, local.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(remote.rkey, remote.buf + off)
    qp.post_send(wr)
    wait(1)

# RDMA WRITE a -> b across the boundary of both.
a.write(pattern(1, CHUNK), CHUNK, off)
rdma(qa, e.IBV_WR_RDMA_WRITE, a, b, 1)
assert b.read(CHUNK, off) == pattern(1, CHUNK), "RDMA WRITE across the huge-page boundary: data differ"
print("RDMA WRITE of 64 KiB across the 2 MiB boundary: data equal")
# RDMA READ b -> a after b changes.
b.write(pattern(2, CHUNK), CHUNK, off)
rdma(qa, e.IBV_WR_RDMA_READ, a, b, 2)
assert a.read(CHUNK, off) == pattern(2, CHUNK), "RDMA READ across the huge-page boundary: data differ"
print("RDMA READ of 64 KiB across the 2 MiB boundary: data equal")
# SEND a -> b into a receive buffer across the boundary.
a.write(pattern(3, CHUNK), CHUNK, off)
qb.post_recv(RecvWR(wr_id=3, num_sge=1, sg=[SGE(b.buf + off, CHUNK, b.lkey)]))
qa.post_send(SendWR(wr_id=4, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(a.buf + off, CHUNK, a.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED))
wait(2)
assert b.read(CHUNK, off) == pattern(3, CHUNK), "SEND across the huge-page boundary: data differ"
print("SEND of 64 KiB into a receive buffer across the 2 MiB boundary: data equal")
for o in (qa, qb, a, b):
    o.close()
print("huge pages free after the MRs went: %d" % free_huge())
PY
) || { printf '%s\n' "$out"; fail "data over huge-page MRs"; }
printf '%s\n' "$out"
after=$(free_huge)
[ "$after" = "$before" ] || fail "$after huge pages free after the MRs went, $before before: pages still held"
log "ok: huge-page MRs carried RDMA WRITE, READ and SEND across the 2 MiB boundary; all $before huge pages free again"
echo 0 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
sr_down_clean
