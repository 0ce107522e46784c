#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# guests: 1
# A hostile user-space writer. Two RC QPs on sr0 (loopback, recovery=fasr).
# While A posts RDMA WRITEs and SENDs through the stock provider, a second thread of the same
# process rewrites A's shared rings, found as the process's uverbs mappings: the SQ's
# producer and consumer indices, its WQEs (opcodes, flags, lengths, SGE counts and entries,
# inline lengths, remote addresses and keys: limit values and random words), the RQ's
# producer index and WQEs, and the CQ's consumer index, for 3 s. Each round is a process of
# its own with a fresh CQ and QP pair: the stock provider (librxe) trusts those indices
# and may itself crash on them (SIGSEGV in ibv_post_send), which ends the round the way a
# killed application does, leaving the kernel to tear everything down. Those are rounds
# 1, 4 (r % 3 == 1). Rounds 0, 3 have no such thread: A posts through the ibv_wr_* API, and
# every other work request has one field of its WQE garbled in the SQ (opcode, flags, remote
# address or key, length, SGE count, the SGE's address, length or key) after the provider
# wrote it and before ibv_wr_complete moves the producer index past it and rings the
# doorbell, so the kernel takes exactly that; when a garbled WQE fails A's QP, a new pair
# takes the next ones. Rounds 2 (an SRQ) and 5 (B's RQ) garble receive WQEs: B posts one
# receive at a time and every other one has a field (wr_id, lengths, SGE count and
# offsets, the SGE's address, length or key) rewritten in the ring after ibv_post_recv put
# it there and before A's SEND makes the kernel take it.
# Passes when: every round ends in time, finished or (rounds 1, 4) killed by SIGSEGV (a
# hang or any other exit fails: no system call or work item may spin; a QP may go to the
# error state); the garbling rounds run to their end, and their garbled WQEs end as error
# completions (the first error moves the QP to the error state, which flushes the rest),
# send and receive side each; the kernel log has no oops, KASAN, lockdep or warning report
# (sr_down_clean); and afterwards a new QP pair on the same device moves 32 SENDs and a
# WRITE with every byte checked, and the module unloads with no object left. Quick mode
# (KASAN pass) runs rounds 0-2.
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up fasr
leak_begin
gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
rounds=6
[ "$RXE_SR_QUICK" = 1 ] && rounds=3
cat > /tmp/hostile_rings.py <<'PY'
import ctypes, os, random, sys, threading, time
sys.path.insert(0, os.environ["HOST_SHARE"] + "/selftests/lib")
from verbs_util import connect_rc, v4_gid
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap, QPEx, QPInitAttrEx
from pyverbs.wr import SendWR, RecvWR, SGE
from pyverbs.srq import SRQ, SrqInitAttr, SrqAttr
from pyverbs.pyverbs_error import PyverbsError

gidx, ip, mode = int(os.environ["GIDX"]), os.environ["MYIP"], sys.argv[1]
dgid = v4_gid(ip)
ctx = d.Context(name="sr0")
pd = PD(ctx)
# struct rxe_queue_buf: log2_elem_size at 0, index_mask at 4, producer_index at 128,
# consumer_index at 256, slots from 384 (include/uapi/rdma/rdma_user_rxe.h).
PROD, CONS, DATA = 128, 256, 384
LIMITS = [0, 1, 2, 0x7f, 0x80, 0xff, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff]

def uverbs_maps():
    """The process's mappings of the uverbs device (its rings)."""
    out = set()
    with open("/proc/self/maps") as f:
        for line in f:
            if "/dev/infiniband/uverbs" in line:
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                out.add((lo, hi))
    return out

def u32(addr):
    return ctypes.c_uint32.from_address(addr)

class Ring:
    def __init__(self, span):
        self.lo, self.hi = span
        self.slot = 1 << u32(self.lo).value
        self.mask = u32(self.lo + 4).value
        assert DATA + (self.mask + 1) * self.slot <= self.hi - self.lo, "ring header does not fit its mapping"

def new_maps(make):
    before = uverbs_maps()
    obj = make()
    return obj, sorted(uverbs_maps() - before)

def word(rng):
    return rng.choice(LIMITS) if rng.random() < 0.6 else rng.getrandbits(32)

def hostile(rng, sq, rq, cq, stop, count):
    """Rewrites A's rings until stopped."""
    n = 0
    print("rewriting the rings", flush=True)
    while not stop.is_set():
        k = rng.randrange(10)
        if k == 0:
            u32(sq.lo + PROD).value = word(rng)
        elif k == 1:
            u32(sq.lo + CONS).value = word(rng)
        elif k in (2, 3, 4, 5):
            # A word of an SQ slot: the first 64 bytes (struct rxe_send_wr) most often.
            i = rng.randrange(sq.mask + 1)
            off = rng.randrange(0, 64 if rng.random() < 0.6 else sq.slot - 3, 4)
            u32(sq.lo + DATA + i * sq.slot + off).value = word(rng)
        elif k == 6:
            i = rng.randrange(sq.mask + 1)
            ctypes.memmove(sq.lo + DATA + i * sq.slot, os.urandom(sq.slot), sq.slot)
        elif k == 7:
            u32(rq.lo + PROD).value = word(rng)
        elif k == 8:
            i = rng.randrange(rq.mask + 1)
            u32(rq.lo + DATA + i * rq.slot + rng.randrange(0, rq.slot - 3, 4)).value = word(rng)
        else:
            u32(cq.lo + CONS).value = word(rng)
        n += 1
        if n % 64 == 0:
            time.sleep(0.0005)
    count[0] += n

# struct rxe_send_wqe: wr.opcode 12, wr.send_flags 16, wr.wr.rdma.remote_addr 24 and rkey 32,
# dma.length 184, dma.num_sge 196, dma.sge[0] 208 (addr), 216 (length), 220 (lkey).
WQE_FIELDS = [(12, 4), (16, 4), (24, 8), (32, 4), (184, 4), (196, 4), (208, 8), (216, 4), (220, 4)]

def garble(sq, rng, index, fields=WQE_FIELDS):
    """Rewrites one of `fields` (offset, size) of the WQE in slot `index` (modulo the
    ring's size)."""
    i = index & sq.mask
    off, size = rng.choice(fields)
    at = sq.lo + DATA + i * sq.slot + off
    if size == 8:
        ctypes.c_uint64.from_address(at).value = rng.choice([0, 1 << 63, (1 << 64) - 1, rng.getrandbits(64)])
    else:
        u32(at).value = word(rng)

stats = {"writes": 0, "posted": 0, "refused": 0, "ok": 0, "err": 0}
statuses = {}
def new_pair(cqa, cqb, mrb, psn, ex=False):
    """An RC QP pair on the two CQs, connected, B with 16 receives posted; A's SQ and RQ.
    With `ex`, A takes work requests through the ibv_wr_* API (QPEx): each is in the SQ
    before its doorbell rings, in ibv_wr_complete."""
    cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=2, max_recv_sge=1, max_inline_data=64)
    if ex:
        attr = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=cap, pd=pd,
                            comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                            send_ops_flags=e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_SEND)
        qa, qp_maps = new_maps(lambda: QPEx(ctx, attr))
    else:
        qa, qp_maps = new_maps(lambda: QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=cap)))
    qb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, cap=cap))
    assert len(qp_maps) == 2, "rings not found: QP %s" % qp_maps
    sq, rq = sorted((Ring(m) for m in qp_maps), key=lambda g: g.slot, reverse=True)
    # Few RNR retries: a garbled WQE may turn into a SEND that no receive awaits.
    connect_rc(qa, qb.qp_num, psn, psn + 0x100, dgid, gidx, access=0, rnr_retry=2)
    connect_rc(qb, qa.qp_num, psn + 0x100, psn, dgid, gidx, access=e.IBV_ACCESS_REMOTE_WRITE)
    for i in range(16):
        qb.post_recv(RecvWR(wr_id=1000 + i, num_sge=1, sg=[SGE(mrb.buf + 4096, 4096, mrb.lkey)]))
    return qa, qb, sq, rq

def post_plain(qa, mra, mrb, i):
    """A WRITE or a SEND through ibv_post_send."""
    if i % 2:
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mra.buf, 1024, mra.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(mrb.rkey, mrb.buf)
    else:
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mra.buf, 512, mra.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
    qa.post_send(wr)

def post_garbled(qa, sq, mra, mrb, i, rng, count):
    """A WRITE or a SEND through the ibv_wr_* API, every other one garbled in its slot
    before ibv_wr_complete moves the producer index past it and rings the doorbell."""
    qa.wr_start()
    qa.wr_id = i
    qa.wr_flags = e.IBV_SEND_SIGNALED
    if i % 2:
        qa.wr_rdma_write(mrb.rkey, mrb.buf)
        qa.wr_set_sge(SGE(mra.buf, 1024, mra.lkey))
    else:
        qa.wr_send()
        qa.wr_set_sge(SGE(mra.buf, 512, mra.lkey))
    if rng.random() < 0.5:
        garble(sq, rng, u32(sq.lo + PROD).value)
        count[0] += 1
    qa.wr_complete()

# struct rxe_recv_wqe: wr_id 0, reserved 8 (num_sge in old providers), dma.length 16,
# dma.resid 20, dma.cur_sge 24, dma.num_sge 28, dma.sge_offset 32, dma.sge[0] 40 (addr),
# 48 (length), 52 (lkey).
RECV_FIELDS = [(0, 8), (8, 4), (16, 4), (20, 4), (24, 4), (28, 4), (32, 4), (40, 8), (48, 4), (52, 4)]

def rx_pair(cqa, cqb, mrb, psn, srq):
    """An RC QP pair for the receive rounds: B takes its receives from `srq`, or from its
    own RQ (found among its mappings) when there is none; returns A, B and B's receive
    ring."""
    cap = QPCap(max_send_wr=16, max_recv_wr=0 if srq else 16, max_send_sge=1, max_recv_sge=1)
    qa = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=cap))
    if srq:
        qb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, srq=srq[0], cap=cap))
        ring = srq[1]
    else:
        qb, maps = new_maps(lambda: QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, cap=cap)))
        assert len(maps) == 2, "rings not found: QP %s" % maps
        ring = min((Ring(m) for m in maps), key=lambda g: g.slot)
    connect_rc(qa, qb.qp_num, psn, psn + 0x100, dgid, gidx, access=0, rnr_retry=1)
    connect_rc(qb, qa.qp_num, psn + 0x100, psn, dgid, gidx, access=0)
    return qa, qb, ring

def recv_round(r, srq_round):
    """B posts one receive at a time (from an SRQ or its RQ) and every other one has a
    field of its WQE garbled in the ring after ibv_post_recv put it there and before A's
    SEND makes the kernel take it; A then SENDs 512 bytes. A garbled receive must end as
    an error completion (or as a success when the garbage still describes a valid
    buffer), never a read beyond the ring or of a WQE half-rewritten."""
    rng = random.Random(r)
    cqa, cqb = CQ(ctx, 64), CQ(ctx, 64)
    mra = MR(pd, 8192, e.IBV_ACCESS_LOCAL_WRITE)
    mrb = MR(pd, 8192, e.IBV_ACCESS_LOCAL_WRITE)
    srq = None
    if srq_round:
        obj, maps = new_maps(lambda: SRQ(pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=1))))
        assert len(maps) == 1, "ring not found: SRQ %s" % maps
        srq = (obj, Ring(maps[0]))
    qa, qb, ring = rx_pair(cqa, cqb, mrb, 0x100, srq)
    pairs, garbled, posts = 1, 0, 0
    print("rewriting the rings (garbling posted %s WQEs)" % ("SRQ" if srq else "RQ"), flush=True)
    end = time.time() + 3
    while time.time() < end:
        wr = RecvWR(wr_id=posts, num_sge=1, sg=[SGE(mrb.buf + 4096, 4096, mrb.lkey)])
        try:
            (srq[0] if srq else qb).post_recv(wr)
            posted = True
        except PyverbsError:
            stats["refused"] += 1
            posted = False
        posts += posted
        if posted and rng.random() < 0.5:
            garble(ring, rng, u32(ring.lo + PROD).value - 1, RECV_FIELDS)
            garbled += 1
        try:
            qa.post_send(SendWR(wr_id=posts, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mra.buf, 512, mra.lkey)],
                                send_flags=e.IBV_SEND_SIGNALED))
        except PyverbsError:
            stats["refused"] += 1
        # This SEND's completion, and whatever B completed meanwhile.
        failed, deadline = False, time.time() + 10
        got_a = False
        while not got_a and time.time() < deadline:
            for cqx in (cqa, cqb):
                k, wcs = cqx.poll(16)
                for w in wcs[:k]:
                    statuses[w.status] = statuses.get(w.status, 0) + 1
                    stats["ok" if w.status == e.IBV_WC_SUCCESS else "err"] += 1
                    failed = failed or w.status not in (e.IBV_WC_SUCCESS, e.IBV_WC_WR_FLUSH_ERR)
                    got_a = got_a or cqx is cqa
            time.sleep(0.0005)
        if not got_a:
            sys.exit("round %d: the SEND got no completion in 10 s" % r)
        if failed:
            # A failed receive (or its SEND) put the pair in Error: a new pair goes on (the
            # SRQ stays; the old QPs are destroyed first, which flushes nothing of it).
            qa.close()
            qb.close()
            qa, qb, ring2 = rx_pair(cqa, cqb, mrb, 0x100 + pairs * 0x1000, srq)
            ring = ring2
            pairs += 1
    for o in (qa, qb) + ((srq[0],) if srq else ()) + (mra, mrb, cqa, cqb):
        o.close()
    print("round %d ended: %d QP pairs; %d receives posted, %d garbled; " % (r, pairs, posts, garbled)
          + "%(refused)d refused, completions %(ok)d successful and %(err)d in error" % stats,
          "by status", sorted(statuses.items()))
    pd.close()
    ctx.close()
    sys.exit(0)

if mode == "round" and int(sys.argv[2]) % 3 == 2:
    recv_round(int(sys.argv[2]), int(sys.argv[2]) % 6 == 2)

if mode == "round":
    r = int(sys.argv[2])
    cqa, cq_maps = new_maps(lambda: CQ(ctx, 64))
    cqb = CQ(ctx, 64)
    assert len(cq_maps) == 1, "ring not found: CQ %s" % cq_maps
    cq = Ring(cq_maps[0])
    mra = MR(pd, 8192, e.IBV_ACCESS_LOCAL_WRITE)
    mrb = MR(pd, 8192, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    garbling = r % 3 == 0
    qa, qb, sq, rq = new_pair(cqa, cqb, mrb, 0x100, garbling)
    pairs = 1
    stop, count = threading.Event(), [0]
    # Rounds 0, 3 garble WQEs the provider has posted and the kernel has yet to take (the
    # provider does not read them back): they run their 3 s and show what the kernel made
    # of them. Rounds 1, 4 rewrite everything from a thread.
    rng = random.Random(r)
    if garbling:
        print("rewriting the rings (garbling posted WQEs)", flush=True)
    else:
        t = threading.Thread(target=hostile, args=(rng, sq, rq, cq, stop, count))
        t.start()
    end = time.time() + 3
    i = 0
    while time.time() < end:
        i += 1
        try:
            if garbling:
                post_garbled(qa, sq, mra, mrb, i, rng, count)
            else:
                post_plain(qa, mra, mrb, i)
            stats["posted"] += 1
        except PyverbsError:
            stats["refused"] += 1
        for cqx in (cqa, cqb):
            try:
                k, wcs = cqx.poll(16)
            except PyverbsError:
                continue
            failed = False
            for w in wcs[:k]:
                statuses[w.status] = statuses.get(w.status, 0) + 1
                stats["ok" if w.status == e.IBV_WC_SUCCESS else "err"] += 1
                failed = failed or w.status not in (e.IBV_WC_SUCCESS, e.IBV_WC_WR_FLUSH_ERR)
                if cqx is cqb and w.status == e.IBV_WC_SUCCESS:
                    # B took a SEND: it gets a receive back.
                    try:
                        qb.post_recv(RecvWR(wr_id=1000, num_sge=1, sg=[SGE(mrb.buf + 4096, 4096, mrb.lkey)]))
                    except PyverbsError:
                        pass
            if garbling and failed and cqx is cqa:
                # A garbled WQE failed A's QP: a new pair takes the next ones.
                qa.close()
                qb.close()
                qa, qb, sq, rq = new_pair(cqa, cqb, mrb, 0x100 + pairs * 0x1000, True)
                pairs += 1
                break
    stop.set()
    if not garbling:
        t.join()
    stats["writes"] += count[0]
    for o in (qa, qb, mra, mrb, cqa, cqb):
        o.close()
    print("round %d ended: %d QP pairs; SQ %d slots of %d B, RQ %d of %d B, CQ %d of %d B; " % (
        r, pairs, sq.mask + 1, sq.slot, rq.mask + 1, rq.slot, cq.mask + 1, cq.slot)
          + "%(writes)d ring writes, %(posted)d posts taken, %(refused)d refused, " % stats
          + "completions %(ok)d successful and %(err)d in error" % stats, "by status", sorted(statuses.items()))
    pd.close()
    ctx.close()
    sys.exit(0)

# The same device afterwards: a new pair, every byte checked.
cqa, cqb = CQ(ctx, 64), CQ(ctx, 64)
cap = QPCap(max_send_wr=32, max_recv_wr=32, max_send_sge=1, max_recv_sge=1)
qa = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=cap))
qb = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, cap=cap))
mra = MR(pd, 65536, e.IBV_ACCESS_LOCAL_WRITE)
mrb = MR(pd, 65536, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
connect_rc(qa, qb.qp_num, 0x300, 0x400, dgid, gidx, access=0)
connect_rc(qb, qa.qp_num, 0x400, 0x300, dgid, gidx, access=e.IBV_ACCESS_REMOTE_WRITE)
data = bytes((i * 7 + 3) & 0xff for i in range(65536))
mra.write(data, len(data), 0)

def wait(cq, n, secs=30):
    got, end = [], time.time() + secs
    while len(got) < n and time.time() < end:
        k, wcs = cq.poll(n - len(got))
        got += [w for w in wcs[:k]]
        time.sleep(0.001)
    return got

for i in range(32):
    qb.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mrb.buf + i * 1024, 1024, mrb.lkey)]))
for i in range(32):
    qa.post_send(SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mra.buf + i * 1024, 1024, mra.lkey)],
                        send_flags=e.IBV_SEND_SIGNALED))
sa, rb = wait(cqa, 32), wait(cqb, 32)
assert len(sa) == 32 and all(w.status == e.IBV_WC_SUCCESS for w in sa), [(w.wr_id, w.status) for w in sa]
assert len(rb) == 32 and all(w.status == e.IBV_WC_SUCCESS and w.byte_len == 1024 for w in rb), \
    [(w.wr_id, w.status, w.byte_len) for w in rb]
assert mrb.read(32768, 0) == data[:32768], "SEND data differs"
wr = SendWR(wr_id=99, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mra.buf + 32768, 32768, mra.lkey)],
            send_flags=e.IBV_SEND_SIGNALED)
wr.set_wr_rdma(mrb.rkey, mrb.buf + 32768)
qa.post_send(wr)
sa = wait(cqa, 1)
assert [(w.wr_id, w.status) for w in sa] == [(99, e.IBV_WC_SUCCESS)], [(w.wr_id, w.status) for w in sa]
assert mrb.read(32768, 32768) == data[32768:], "WRITE data differs"
print("clean exchange after the hostile rounds: 32 SENDs and a WRITE, every byte checked")
for o in (qa, qb, mra, mrb, cqa, cqb, pd, ctx):
    o.close()
PY
ok=0 killed=0 sq_errors=0 rx_errors=0
for r in $(seq 0 $((rounds - 1))); do
  out=$(GIDX=$gidx MYIP=$MY_IP timeout 60 python3 -X faulthandler /tmp/hostile_rings.py round "$r" 2>&1)
  rc=$?
  printf '%s\n' "$out" | grep -v '^  File\|^Thread\|^Current thread\|^Extension\|^$' | tail -4
  printf '%s\n' "$out" | grep -q '^rewriting the rings' || fail "round $r: the rings were not rewritten (exit $rc)"
  n=$(printf '%s\n' "$out" | sed -n 's/.*successful and \([0-9]*\) in error.*/\1/p')
  case $((r % 3)):$rc in
    0:0) ok=$((ok + 1)); sq_errors=$((sq_errors + ${n:-0})) ;;
    2:0) ok=$((ok + 1)); rx_errors=$((rx_errors + ${n:-0})) ;;
    1:0) ok=$((ok + 1)) ;;
    1:139) killed=$((killed + 1)); log "round $r: the provider died of SIGSEGV on its rewritten rings" ;;
    *:124) fail "round $r: still running after 60 s" ;;
    *) fail "round $r: exit $rc" ;;
  esac
done
log "ok: $rounds hostile rounds, $ok ended, $killed killed by SIGSEGV; no hang"
# The rounds that garbled posted WQEs ran to their end, and the kernel turned the garbage
# into error completions (not silence, not a hang).
[ "$sq_errors" -ge 1 ] || fail "no error completion in the rounds that garbled posted send WQEs"
[ "$rx_errors" -ge 1 ] || fail "no error completion in the rounds that garbled posted receive WQEs"
log "ok: the garbling rounds ran to their end: $sq_errors error completions from garbled send WQEs, $rx_errors from receive WQEs"
out=$(GIDX=$gidx MYIP=$MY_IP timeout 60 python3 /tmp/hostile_rings.py check 2>&1)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "the exchange after the hostile rounds failed (exit $rc)"
expect_grep "the device works afterwards" '^clean exchange after the hostile rounds' "$out"
sr_down_clean
