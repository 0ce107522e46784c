#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# guests: 1
# On-demand paging MRs, in one guest, on sr0 looped back to itself:
# - the device reports explicit ODP (rc: send, recv, write, read, atomic, SRQ recv);
# - registering 1 MiB ODP MRs pins nothing (VmPin unchanged, while a pinned MR of the same
#   size adds 1024 kB) and faults nothing in (mincore: no page resident);
# - an RDMA WRITE into untouched ODP memory lands, and faults in exactly the 16 pages it
#   wrote; after MADV_DONTNEED drops them (the MMU notifier invalidates the MR's pages), an
#   RDMA READ returns the zeros the process now sees, not the old data, and READ and WRITE
#   then follow what the process writes and reads;
# - SEND into an ODP receive buffer; FETCH_AND_ADD and CMP_AND_SWP on a dropped page;
# - uverbs' ADVISE_MR (sent by hand: the rxe provider has no advise_mr): PREFETCH_WRITE
#   faults the range in, PREFETCH_NO_FAULT faults nothing, and bad requests get EINVAL,
#   EPERM or EOPNOTSUPP;
# - 400 WRITEs and READs (100 in the KASAN pass) complete while another thread drops the
#   MRs' pages over and over;
# - an RDMA WRITE into a part of an ODP MR the process has unmapped completes with a remote
#   access error, with no kernel warning;
# - ibv_rc_pingpong -o (ODP buffers) runs: a smoke test of a stock application (the data
#   over ODP MRs is checked above).
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up
dmesg_mark
leak_begin
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"

# The KASAN pass (RXE_SR_QUICK=1) races 100 accesses against the drops, not 400.
races=400
quick && races=100
out=$(GIDX=$gidx MY_IP=$MY_IP RACES=$races timeout 180 python3 - <<'PY' 2>&1
import ctypes, errno, os, struct, sys
sys.path.insert(0, os.environ["HOST_SHARE"] + "/selftests/lib")
from verbs_util import (connect_rc, v4_gid, advise_mr, ADVISE_PREFETCH, ADVISE_PREFETCH_WRITE,
                        ADVISE_PREFETCH_NO_FAULT, ADVISE_FLUSH)
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap
from pyverbs.wr import RecvWR, SendWR, SGE

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
PAGE, SIZE, CHUNK = 4096, 1 << 20, 64 << 10
MADV_DONTNEED = 4

def anon(n):
    addr = libc.mmap(None, n, 3, 0x22, -1, 0)          # PROT_READ|WRITE, PRIVATE|ANONYMOUS
    assert addr not in (None, ctypes.c_void_p(-1).value), "mmap failed"
    return addr

def resident(addr, n):
    vec = ctypes.create_string_buffer(n // PAGE)
    assert libc.mincore(addr, n, vec) == 0, "mincore: errno %d" % ctypes.get_errno()
    return sum(b & 1 for b in vec.raw[:n // PAGE])

def drop(addr, n):
    assert libc.madvise(addr, n, MADV_DONTNEED) == 0
    assert resident(addr, n) == 0, "MADV_DONTNEED left pages resident"

def vm_pin():
    for l in open("/proc/self/status"):
        if l.startswith("VmPin:"):
            return int(l.split()[1])

def put(addr, data):
    ctypes.memmove(addr, data, len(data))

def get(addr, n):
    return ctypes.string_at(addr, n)

def pattern(seed, n):
    return bytes((seed * 131 + i * 7 + (i >> 9)) & 0xff for i in range(n))

ctx = d.Context(name="sr0")
caps = ctx.query_device_ex().odp_caps
want_rc = (e.IBV_ODP_SUPPORT_SEND | e.IBV_ODP_SUPPORT_RECV | e.IBV_ODP_SUPPORT_WRITE |
           e.IBV_ODP_SUPPORT_READ | e.IBV_ODP_SUPPORT_ATOMIC | e.IBV_ODP_SUPPORT_SRQ_RECV)
assert caps.general_caps & e.IBV_ODP_SUPPORT, "no IBV_ODP_SUPPORT: %#x" % caps.general_caps
assert not caps.general_caps & e.IBV_ODP_SUPPORT_IMPLICIT, "implicit ODP claimed"
assert caps.rc_odp_caps & want_rc == want_rc, "rc ODP caps %#x" % caps.rc_odp_caps
print("ODP caps: general %#x, rc %#x, uc %#x, ud %#x" % (caps.general_caps, caps.rc_odp_caps,
                                                        caps.uc_odp_caps, caps.ud_odp_caps))

pd = PD(ctx)
cq = CQ(ctx, 64)
acc = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ | \
      e.IBV_ACCESS_REMOTE_ATOMIC
A, B = anon(SIZE), anon(SIZE)
pin0 = vm_pin()
pinned = MR(pd, SIZE, acc)
pin_pinned = vm_pin() - pin0
pinned.close()
assert pin_pinned == SIZE // 1024, "a pinned 1 MiB MR added %d kB to VmPin" % pin_pinned
ma = MR(pd, SIZE, acc | e.IBV_ACCESS_ON_DEMAND, address=A)
mb = MR(pd, SIZE, acc | e.IBV_ACCESS_ON_DEMAND, address=B)
assert vm_pin() == pin0, "ODP MRs pinned %d kB" % (vm_pin() - pin0)
assert resident(A, SIZE) == 0 and resident(B, SIZE) == 0, "registration faulted pages in"
print("two 1 MiB ODP MRs: nothing pinned (a pinned MR adds %d kB), nothing resident" % pin_pinned)

cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
qa = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
qb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
gid, gidx = v4_gid(os.environ["MY_IP"]), int(os.environ["GIDX"])
connect_rc(qa, qb.qp_num, 0, 0, gid, gidx, access=acc, max_rd=4, timeout=10, rnr_retry=7)
connect_rc(qb, qa.qp_num, 0, 0, gid, gidx, access=acc, max_rd=4, timeout=10, rnr_retry=7)

def wait(n, want=e.IBV_WC_SUCCESS):
    got, wcs_all = 0, []
    while got < n:
        npoll, wcs = cq.poll(n - got)
        for wc in wcs[:npoll]:
            assert wc.status == want, "completion status %d, not %d (opcode %d)" % (wc.status, want, wc.opcode)
            wcs_all.append(wc)
        got += npoll
    return wcs_all

def rdma(op, local, lmr, remote, rmr, n=CHUNK, want=e.IBV_WC_SUCCESS):
    wr = SendWR(wr_id=1, opcode=op, num_sge=1, sg=[SGE(local, n, lmr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(rmr.rkey, remote)
    qa.post_send(wr)
    wait(1, want)

off = 3 * CHUNK
put(A + off, pattern(1, CHUNK))
rdma(e.IBV_WR_RDMA_WRITE, A + off, ma, B + off, mb)
assert get(B + off, CHUNK) == pattern(1, CHUNK), "RDMA WRITE into untouched ODP memory: data differ"
n = resident(B, SIZE)
assert n == CHUNK // PAGE, "the WRITE left %d pages of B resident, not %d" % (n, CHUNK // PAGE)
print("RDMA WRITE of 64 KiB into untouched ODP memory: data equal, %d pages faulted in" % n)

drop(B, SIZE)
rdma(e.IBV_WR_RDMA_READ, A + off, ma, B + off, mb)
assert get(A + off, CHUNK) == bytes(CHUNK), "RDMA READ after MADV_DONTNEED returned stale data"
put(B + off, pattern(2, CHUNK))
rdma(e.IBV_WR_RDMA_READ, A + off, ma, B + off, mb)
assert get(A + off, CHUNK) == pattern(2, CHUNK), "RDMA READ of what the process wrote: data differ"
drop(B, SIZE)
put(A + off, pattern(3, CHUNK))
rdma(e.IBV_WR_RDMA_WRITE, A + off, ma, B + off, mb)
assert get(B + off, CHUNK) == pattern(3, CHUNK), "RDMA WRITE after MADV_DONTNEED: the process does not see it"
print("after MADV_DONTNEED: READ returns zeros, then what the process wrote; WRITE reaches the process")

drop(A, SIZE)
drop(B, SIZE)
put(A + off, pattern(4, CHUNK))
qb.post_recv(RecvWR(wr_id=2, num_sge=1, sg=[SGE(B + off + 100, CHUNK, mb.lkey)]))
qa.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(A + off, CHUNK, ma.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED))
wait(2)
assert get(B + off + 100, CHUNK) == pattern(4, CHUNK), "SEND into an ODP receive buffer: data differ"
print("SEND of 64 KiB into a dropped ODP receive buffer: data equal")

def atomic(op, target, add_or_cmp, swap=0):
    drop(A, PAGE)
    wr = SendWR(wr_id=4, opcode=op, num_sge=1, sg=[SGE(A + 64, 8, ma.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_atomic(mb.rkey, target, add_or_cmp, swap)
    qa.post_send(wr)
    wait(1)
    return struct.unpack("<Q", get(A + 64, 8))[0]

word = B + 5 * PAGE + 8
drop(B, SIZE)
orig = atomic(e.IBV_WR_ATOMIC_FETCH_AND_ADD, word, 7)
assert orig == 0 and struct.unpack("<Q", get(word, 8))[0] == 7, "FETCH_AND_ADD on a dropped page"
orig = atomic(e.IBV_WR_ATOMIC_CMP_AND_SWP, word, 7, 99)
assert orig == 7 and struct.unpack("<Q", get(word, 8))[0] == 99, "CMP_AND_SWP on an ODP page"
print("FETCH_AND_ADD and CMP_AND_SWP on ODP memory (the target page dropped first): results right")

C = anon(256 << 10)
mc = MR(pd, 256 << 10, acc | e.IBV_ACCESS_ON_DEMAND, address=C)
advise_mr(ctx, pd, ADVISE_PREFETCH_NO_FAULT, ADVISE_FLUSH, [(C, 256 << 10, mc.lkey)])
assert resident(C, 256 << 10) == 0, "PREFETCH_NO_FAULT faulted pages in"
advise_mr(ctx, pd, ADVISE_PREFETCH_WRITE, ADVISE_FLUSH, [(C, 128 << 10, mc.lkey),
                                                           (C + (192 << 10), 64 << 10, mc.lkey)])
n = resident(C, 256 << 10)
assert n == 48, "PREFETCH_WRITE of 192 KiB left %d pages resident, not 48" % n
advise_mr(ctx, pd, ADVISE_PREFETCH, 0, [(C, 256 << 10, mc.lkey)])
mro = MR(pd, PAGE, e.IBV_ACCESS_ON_DEMAND | e.IBV_ACCESS_REMOTE_READ, address=C)
plain = MR(pd, PAGE, acc)
bad = [("a pinned MR", ADVISE_PREFETCH, [(plain.buf, PAGE, plain.lkey)], errno.EINVAL),
       ("past the MR's end", ADVISE_PREFETCH, [(C + (252 << 10), 8192, mc.lkey)], errno.EINVAL),
       ("a stale key", ADVISE_PREFETCH, [(C, PAGE, mc.lkey ^ 0x80)], errno.EINVAL),
       ("PREFETCH_WRITE on a read-only ODP MR", ADVISE_PREFETCH_WRITE, [(C, PAGE, mro.lkey)],
        errno.EPERM),
       ("an unknown advice", 7, [(C, PAGE, mc.lkey)], errno.EOPNOTSUPP)]
for what, adv, sges, want in bad:
    try:
        advise_mr(ctx, pd, adv, ADVISE_FLUSH, sges)
        raise AssertionError("ADVISE_MR on %s succeeded" % what)
    except OSError as ex:
        assert ex.errno == want, "ADVISE_MR on %s: errno %d, not %d" % (what, ex.errno, want)
print("ADVISE_MR: NO_FAULT faulted nothing, PREFETCH_WRITE faulted 48 pages in; %d bad requests refused"
      % len(bad))
put(A, pattern(5, CHUNK))
rdma(e.IBV_WR_RDMA_WRITE, A, ma, C + CHUNK, mc)
assert get(C + CHUNK, CHUNK) == pattern(5, CHUNK), "RDMA WRITE into prefetched ODP memory"

# Invalidations racing the data path: a thread drops A and B over and over while RACES RDMA
# WRITEs and READs of 16 KiB run between them; every one completes successfully.
import threading
stop = threading.Event()
def dropper():
    while not stop.is_set():
        libc.madvise(A, SIZE, MADV_DONTNEED)
        libc.madvise(B, SIZE, MADV_DONTNEED)
t = threading.Thread(target=dropper)
t.start()
try:
    for i in range(int(os.environ["RACES"])):
        op = e.IBV_WR_RDMA_WRITE if i % 2 == 0 else e.IBV_WR_RDMA_READ
        at = (i * 16384) % (SIZE // 2)
        rdma(op, A + at, ma, B + SIZE // 2 + at, mb, n=16384)
finally:
    stop.set()
    t.join()
print("%s RDMA WRITEs and READs of 16 KiB while another thread dropped both MRs' pages: all succeeded"
      % os.environ["RACES"])

# The process unmaps the last 256 KiB of B: a WRITE there cannot be placed.
assert libc.munmap(B + SIZE - (256 << 10), 256 << 10) == 0
rdma(e.IBV_WR_RDMA_WRITE, A, ma, B + SIZE - CHUNK, mb, want=e.IBV_WC_REM_ACCESS_ERR)
print("RDMA WRITE into an unmapped part of an ODP MR: remote access error")
for o in (qa, qb, ma, mb, mc, mro, plain):
    o.close()
PY
) || { printf '%s\n' "$out"; fail "ODP MRs"; }
printf '%s\n' "$out"
log "ok: ODP MRs carried WRITE, READ, SEND and atomics with data checked, followed invalidations, and ADVISE_MR prefetched"

# A stock application: ibv_rc_pingpong -o registers its buffers for on-demand paging.
ibv_rc_pingpong -d sr0 -g "$gidx" -o -n 200 -s 8192 > /tmp/odp_srv.log 2>&1 &
srv=$!
sleep 1
ibv_rc_pingpong -d sr0 -g "$gidx" -o -n 200 -s 8192 "$MY_IP" > /tmp/odp_cli.log 2>&1 \
  || { cat /tmp/odp_cli.log /tmp/odp_srv.log; fail "ibv_rc_pingpong -o"; }
wait $srv || { cat /tmp/odp_srv.log; fail "ibv_rc_pingpong -o (server)"; }
grep -q "200 iters" /tmp/odp_cli.log || { cat /tmp/odp_cli.log; fail "ibv_rc_pingpong -o did not finish 200 iterations"; }
log "ok: ibv_rc_pingpong -o: 200 rounds of 8 KiB over ODP buffers"
# The ODP umems and their page lists went with their MRs (with kmemleak running), and
# the checked unload.
sr_down_clean
