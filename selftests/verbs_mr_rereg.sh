#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# guests: 1
# Reregistering an MR in place (rereg_user_mr), over an RC QP pair on sr0
# looped back to itself. rdma-core's rxe provider has no ibv_rereg_mr, so the command goes
# to the kernel as uverbs' REREG_MR (verbs_util.rereg_mr); the MR keeps its keys.
# - Access: an MR without remote write refuses an RDMA WRITE (remote access error); given
#   remote write, the same WRITE lands. An MR pinned read-only and given write access is
#   pinned again for writing, and a WRITE reaches the process's memory.
# - PD: moved to another PD, the MR cannot be used by a QP of the first (local protection
#   error on a SEND naming it); moved back, it can.
# - Translation: moved onto another buffer, a WRITE to the new address lands there and one
#   to the old address is refused (remote access error).
# - On-demand paging: given IBV_ACCESS_ON_DEMAND, the MR is unpinned (VmPin) and a WRITE
#   lands; without it again, it is pinned again.
# - While a memory window is bound to it, reregistration is refused (EBUSY).
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up
dmesg_mark
leak_begin
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
out=$(GIDX=$gidx timeout 120 python3 - <<'PY' 2>&1
import errno, os, sys
sys.path.insert(0, os.environ["HOST_SHARE"] + "/selftests/lib")
from verbs_util import connect_rc, v4_gid, rereg_mr, REREG_TRANS, REREG_PD, REREG_ACCESS
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR, MW, MWBindInfo, MWBind
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.wr import RecvWR, SendWR, SGE

LW, RW, RR = e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE, e.IBV_ACCESS_REMOTE_READ
N = 4096
ctx = d.Context(name="sr0")
pd, pd2 = PD(ctx), PD(ctx)
cq = CQ(ctx, 64)
gid, gidx = v4_gid(os.environ["MY_IP"]), int(os.environ["GIDX"])
cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)

def pair(p):
    qa = QP(p, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
    qb = QP(p, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
    acc = LW | RW | RR | e.IBV_ACCESS_MW_BIND
    connect_rc(qa, qb.qp_num, 0, 0, gid, gidx, access=acc, timeout=10)
    connect_rc(qb, qa.qp_num, 0, 0, gid, gidx, access=acc, timeout=10)
    return qa, qb

def statuses(n):
    out = []
    while len(out) < n:
        k, wcs = cq.poll(n - len(out))
        out += [w.status for w in wcs[:k]]
    return out

def write(qa, src, rkey, addr):
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(src.buf, N, src.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(rkey, addr)
    qa.post_send(wr)
    return statuses(1)[0]

def flush():
    # A failed QP is in ERR: drain what it flushed.
    while cq.poll(16)[0]:
        pass

src = MR(pd, N, LW)
src.write(b"\xa5" * N, N)
# Access.
m = MR(pd, N, LW)
keys = (m.lkey, m.rkey)
qa, qb = pair(pd)
st = write(qa, src, m.rkey, m.buf)
assert st == e.IBV_WC_REM_ACCESS_ERR, "WRITE into an MR without remote write: status %d" % st
flush()
assert rereg_mr(ctx, m, REREG_ACCESS, access=LW | RW) == keys, "the keys changed"
qa, qb = pair(pd)
assert write(qa, src, m.rkey, m.buf) == e.IBV_WC_SUCCESS
assert m.read(N, 0) == b"\xa5" * N, "WRITE after the access change: data differ"
print("access: WRITE refused without remote write, landed once it was given; keys kept")
r = MR(pd, N, RR)
rereg_mr(ctx, r, REREG_ACCESS, access=LW | RW | RR)
src.write(b"\x3c" * N, N)
assert write(qa, src, r.rkey, r.buf) == e.IBV_WC_SUCCESS
assert r.read(N, 0) == b"\x3c" * N, "WRITE into an MR pinned read-only then made writable: data differ"
print("access: an MR pinned read-only, made writable, takes a WRITE in the process's memory")
# PD.
rereg_mr(ctx, m, REREG_PD, pd=pd2)
qa.post_send(SendWR(wr_id=2, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(m.buf, 64, m.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED))
st = statuses(1)[0]
assert st == e.IBV_WC_LOC_PROT_ERR, "SEND naming an MR of another PD: status %d" % st
flush()
rereg_mr(ctx, m, REREG_PD, pd=pd)
qa, qb = pair(pd)
qb.post_recv(RecvWR(wr_id=3, num_sge=1, sg=[SGE(src.buf, 64, src.lkey)]))
qa.post_send(SendWR(wr_id=4, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(m.buf, 64, m.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED))
assert statuses(2) == [e.IBV_WC_SUCCESS] * 2
print("PD: refused on the old PD's QP after the move, usable again once moved back")
# Translation.
other = MR(pd, N, LW)
old_buf = m.buf
rereg_mr(ctx, m, REREG_TRANS, addr=other.buf, length=N)
src.write(b"\x5a" * N, N)
assert write(qa, src, m.rkey, other.buf) == e.IBV_WC_SUCCESS
assert other.read(N, 0) == b"\x5a" * N, "WRITE after the move: not in the new buffer"
st = write(qa, src, m.rkey, old_buf)
assert st == e.IBV_WC_REM_ACCESS_ERR, "WRITE to the old address after the move: status %d" % st
flush()
print("translation: a WRITE lands in the new buffer, the old address is refused")
# On-demand paging: given IBV_ACCESS_ON_DEMAND, the MR's page is unpinned (VmPin drops by
# 4 kB) and a WRITE still lands in the process's memory; without it again, it is pinned.
def vm_pin():
    return int([l for l in open("/proc/self/status") if l.startswith("VmPin:")][0].split()[1])

p0 = vm_pin()
rereg_mr(ctx, r, REREG_ACCESS, access=LW | RW | RR | e.IBV_ACCESS_ON_DEMAND)
assert vm_pin() == p0 - N // 1024, "made ODP, VmPin went from %d to %d kB" % (p0, vm_pin())
src.write(b"\x77" * N, N)
qa, qb = pair(pd)
assert write(qa, src, r.rkey, r.buf) == e.IBV_WC_SUCCESS
assert r.read(N, 0) == b"\x77" * N, "WRITE into an MR made ODP: data differ"
rereg_mr(ctx, r, REREG_ACCESS, access=LW | RW | RR)
assert vm_pin() == p0, "made pinned again, VmPin %d kB, not %d" % (vm_pin(), p0)
print("on-demand paging: given ON_DEMAND, the page is unpinned and a WRITE lands; pinned again without")
# Bound window.
w = MR(pd, N, LW | RW | e.IBV_ACCESS_MW_BIND)
qa, qb = pair(pd)
mw = MW(pd, e.IBV_MW_TYPE_1)
qa.bind_mw(mw, MWBind(MWBindInfo(w, w.buf, N, RW), e.IBV_SEND_SIGNALED))
assert statuses(1) == [e.IBV_WC_SUCCESS]
try:
    rereg_mr(ctx, w, REREG_ACCESS, access=LW | RW)
    raise AssertionError("reregistered an MR with a window bound")
except OSError as ex:
    assert ex.errno == errno.EBUSY, "rereg with a window bound: %r" % ex
print("an MR with a window bound is not reregistered (EBUSY)")
mw.close()
PY
) || { printf '%s\n' "$out"; fail "MR reregistration"; }
printf '%s\n' "$out"
log "ok: rereg of access, PD and translation, in place, keys kept"
# The pages each change unpinned (with kmemleak running: none left unreferenced), and
# the checked unload.
sr_down_clean
