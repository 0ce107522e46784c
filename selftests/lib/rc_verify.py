#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# One side of a verified RC exchange (either driver, both directions at once):
#   rc_verify.py a|b DEV GID_INDEX PEER_IPV4 TAG [ROUNDS]
# Each side, in each round:
#   1. SENDs messages of many sizes (1 B .. 200 KiB; two-SGE gathers, inline, with
#      immediate) and checks every message it receives, byte for byte;
#   2. RDMA WRITEs a pattern into the peer's memory, then a WRITE with immediate as the
#      marker: the peer checks its memory when the marker's completion arrives;
#   3. RDMA READs the peer's pattern and checks it;
#   4. FETCH_ADDs 1 to the peer's counter 8 times and COMPARE_SWAPs a word: after a barrier
#      each side checks its own counter and word.
# Everything is exchanged and synchronised through files in the 9p share ($HOST_SHARE/vals),
# and the QP stays up until both sides are done (a late ACK is never lost to a destroyed QP).
# Prints "verified: OK" and exits 0 when every check passed.
# A side that sees no completion for STALL seconds while it waits prints what it still
# waits for, the device's counters, its QP's state and a short capture of the RoCEv2
# traffic on eth0 (whatever the two drivers are still saying to each other), then gives
# up; the peer sees its abort file and gives up too.
import os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import Share, fail, failures, pattern
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute, GID
from pyverbs.wr import SendWR, RecvWR, SGE

role, dev, gidx, peer, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 1
other = "b" if role == "a" else "a"
seed = 1 if role == "a" else 2

SIZES = [1, 7, 100, 1023, 1024, 1025, 4096, 5000, 65536, 204800, 0, 333]
SLOT = 256 * 1024                      # receive / send buffer slot
RECV_OFF, SEND_OFF = 0, 16 * SLOT      # 16 receive slots, 16 send slots
WRITE_OFF = 32 * SLOT                  # the peer writes here (256 KiB)
READ_OFF = 33 * SLOT                   # the peer reads from here (256 KiB)
ATOM_OFF = 34 * SLOT                   # counter at +0, swap word at +8
MR_LEN = 35 * SLOT
ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
          | e.IBV_ACCESS_REMOTE_ATOMIC)

ctx = d.Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 1024)
mr = MR(pd, MR_LEN, ACCESS)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                       cap=QPCap(max_send_wr=64, max_recv_wr=64, max_send_sge=2, max_recv_sge=2,
                                 max_inline_data=64)))
psn = (0x12345 * seed) & 0xffffff
# The local ACK timeout (4.096 us * 2^TIMEOUT): 14 (67 ms), as ibv_rc_pingpong and perftest
# use; rc_verify_pair raises it on the KASAN kernel (see there).
TIMEOUT = int(os.environ.get("RC_VERIFY_TIMEOUT", "14"))

# The peer gave up: this side's counters, for the diagnosis (`run` is defined below).
sh = Share(tag, role, on_abort=lambda: print(run(["rdma", "statistic", "show", "link", dev + "/1"]), end=""))
put, get, barrier = sh.put, sh.get, sh.barrier

def on_exception(kind, value, tb):
    """A verb that failed while the QPs are set up ends this side: the peer is told, not
    left waiting for it."""
    try:
        sh.give_up()
    finally:
        sys.__excepthook__(kind, value, tb)

sys.excepthook = on_exception

put("qp-" + role, [qp.qp_num, psn, mr.rkey, mr.buf])
rqpn, rpsn, rkey, raddr = get("qp-" + other)

a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qp_access_flags = ACCESS
qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
a = QPAttr(); a.qp_state = e.IBV_QPS_RTR; a.path_mtu = e.IBV_MTU_1024; a.dest_qp_num = rqpn
a.rq_psn = rpsn; a.max_dest_rd_atomic = 4; a.min_rnr_timer = 12
a.ah_attr = AHAttr(gr=GlobalRoute(dgid=GID("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x"
                                           % tuple(int(x) for x in peer.split("."))), sgid_index=gidx),
                   is_global=1, port_num=1)
qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
          | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
a = QPAttr(); a.qp_state = e.IBV_QPS_RTS; a.timeout = TIMEOUT; a.retry_cnt = 7; a.rnr_retry = 7
a.sq_psn = psn; a.max_rd_atomic = 4
qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY
          | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)
sys.excepthook = sys.__excepthook__

pending = {}   # wr_id -> completion, filled by poll
posted = set()  # wr_ids posted and not yet completed
STALL = 90      # seconds without any completion: the exchange is stuck

def run(cmd, secs=20):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=secs)
        return r.stdout + r.stderr
    except (OSError, subprocess.SubprocessError) as x:
        return "%s: %s\n" % (cmd[0], x)

def stalled(what):
    """Prints what this side knows about a stuck exchange, tells the peer, exits 1."""
    fail("%s: no completion for %d s; still waiting for wr_ids %s"
         % (what, STALL, " ".join("%#x" % w for w in sorted(posted))))
    try:
        attr, _ = qp.query(e.IBV_QP_STATE | e.IBV_QP_SQ_PSN | e.IBV_QP_RQ_PSN)
        print("qp %#x: state %d, sq_psn %#x, rq_psn %#x" % (qp.qp_num, attr.qp_state, attr.sq_psn, attr.rq_psn))
    except Exception as x:  # the diagnosis must not hide the failure
        print("qp query failed: %s" % x)
    print(run(["rdma", "statistic", "show", "link", dev + "/1"]), end="")
    print("RoCEv2 traffic on eth0 for 5 s (time, source, opcode, PSN, AETH syndrome, MSN):")
    run(["timeout", "5", "tcpdump", "-i", "eth0", "-s", "128", "-c", "80", "-w", "/tmp/stall.pcap",
         "udp port 4791"])
    print(run(["tshark", "-r", "/tmp/stall.pcap", "-T", "fields", "-o", "infiniband.identify_payload:FALSE",
               "-e", "frame.time_relative", "-e", "ip.src", "-e", "infiniband.bth.opcode",
               "-e", "infiniband.bth.psn", "-e", "infiniband.aeth.syndrome", "-e", "infiniband.aeth.msn"],
              60), end="", flush=True)
    sh.give_up()
    sys.exit(1)

def poll_until(want, what, secs=300):
    end = time.time() + secs
    last = time.time()
    while not want() and time.time() < end:
        k, wcs = cq.poll(64)
        for wc in wcs[:k]:
            if wc.status != e.IBV_WC_SUCCESS:
                fail("wr_id %#x: completion status %d (opcode %d)" % (wc.wr_id, wc.status, wc.opcode))
            pending[wc.wr_id] = wc
            posted.discard(wc.wr_id)
        if k:
            last = time.time()
        elif time.time() - last > STALL:
            stalled(what)
        else:
            time.sleep(0.002)
    return want()

def send(wr):
    qp.post_send(wr)
    posted.add(wr.wr_id)

def post_send(wr_id, opcode, off, n, flags=e.IBV_SEND_SIGNALED, two=False, **kw):
    if two and n > 1:
        h = n // 2
        sg = [SGE(mr.buf + off, h, mr.lkey), SGE(mr.buf + off + h, n - h, mr.lkey)]
    else:
        sg = [SGE(mr.buf + off, n, mr.lkey)]
    wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=len(sg), sg=sg, send_flags=flags, **kw)
    send(wr)

for rnd in range(rounds):
    base = 0x1000 * (rnd + 1)
    # Receives for the peer's SENDs and its WRITE_WITH_IMM marker.
    for i in range(len(SIZES) + 1):
        qp.post_recv(RecvWR(wr_id=base + 0x800 + i, num_sge=1,
                            sg=[SGE(mr.buf + RECV_OFF + (i % 16) * SLOT if i < 16 else mr.buf, SLOT, mr.lkey)]))
        posted.add(base + 0x800 + i)
    mr.write(pattern(seed * 10 + rnd, SLOT), SLOT, READ_OFF)
    barrier("r%d-posted" % rnd)
    # 1. SENDs.
    for i, n in enumerate(SIZES):
        mr.write(pattern(seed * 100 + rnd * 16 + i, n) if n else b"", n, SEND_OFF + (i % 16) * SLOT)
        if i % 4 == 1 and n <= 64:
            flags = e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE
            post_send(base + i, e.IBV_WR_SEND, SEND_OFF + (i % 16) * SLOT, n, flags)
        elif i % 4 == 3:
            post_send(base + i, e.IBV_WR_SEND_WITH_IMM, SEND_OFF + (i % 16) * SLOT, n, imm_data=0x5000 + i)
        else:
            post_send(base + i, e.IBV_WR_SEND, SEND_OFF + (i % 16) * SLOT, n, two=True)
    sends = [base + i for i in range(len(SIZES))]
    recvs = [base + 0x800 + i for i in range(len(SIZES))]
    if not poll_until(lambda: all(w in pending for w in sends + recvs), "round %d SENDs" % rnd):
        fail("round %d: SEND phase incomplete" % rnd)
    pseed = (3 - seed) * 100 + rnd * 16
    for i, n in enumerate(SIZES):
        wc = pending.get(base + 0x800 + i)
        if wc is None or wc.status != e.IBV_WC_SUCCESS:
            continue
        if wc.byte_len != n:
            fail("round %d SEND %d: byte_len %d, want %d" % (rnd, i, wc.byte_len, n))
        elif n and mr.read(n, RECV_OFF + (i % 16) * SLOT) != pattern(pseed + i, n):
            fail("round %d SEND %d: %d bytes differ" % (rnd, i, n))
        if i % 4 == 3 and not (wc.wc_flags & e.IBV_WC_WITH_IMM and wc.imm_data == 0x5000 + i):
            fail("round %d SEND %d: immediate missing" % (rnd, i))
    # 2. WRITE, then WRITE_WITH_IMM as the marker.
    wdata = pattern(seed * 1000 + rnd, SLOT)
    mr.write(wdata, SLOT, SEND_OFF)
    h = 3000
    wr = SendWR(wr_id=base + 0x100, opcode=e.IBV_WR_RDMA_WRITE, num_sge=2,
                sg=[SGE(mr.buf + SEND_OFF, h, mr.lkey), SGE(mr.buf + SEND_OFF + h, SLOT - 4096 - h, mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(rkey, raddr + WRITE_OFF)
    send(wr)
    mr.write(wdata[SLOT - 4096:], 4096, SEND_OFF + 15 * SLOT)
    wr = SendWR(wr_id=base + 0x101, opcode=e.IBV_WR_RDMA_WRITE_WITH_IMM, num_sge=1,
                sg=[SGE(mr.buf + SEND_OFF + 15 * SLOT, 4096, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED,
                imm_data=0x7700 + rnd)
    wr.set_wr_rdma(rkey, raddr + WRITE_OFF + SLOT - 4096)
    send(wr)
    marker = base + 0x800 + len(SIZES)
    if not poll_until(lambda: base + 0x101 in pending and base + 0x100 in pending and marker in pending,
                      "round %d WRITEs" % rnd):
        fail("round %d: WRITE phase incomplete" % rnd)
    elif mr.read(SLOT, WRITE_OFF) != pattern((3 - seed) * 1000 + rnd, SLOT):
        m = pending[marker]
        fail("round %d: RDMA WRITE data differ (the marker's completion: byte_len %d, flags %#x, imm %#x)"
             % (rnd, m.byte_len, m.wc_flags, m.imm_data))
    else:
        # The marker: the peer's WRITE with immediate, its immediate and length.
        m = pending[marker]
        got = (m.opcode, bool(m.wc_flags & e.IBV_WC_WITH_IMM), m.imm_data, m.byte_len)
        if got != (e.IBV_WC_RECV_RDMA_WITH_IMM, True, 0x7700 + rnd, 4096):
            fail("round %d: the WRITE with immediate completed as (opcode, imm flag, imm, byte_len) %s"
                 % (rnd, got))
    # 3. READ the peer's pattern into the send area.
    wr = SendWR(wr_id=base + 0x200, opcode=e.IBV_WR_RDMA_READ, num_sge=2,
                sg=[SGE(mr.buf + SEND_OFF, 1000, mr.lkey), SGE(mr.buf + SEND_OFF + 1000, SLOT - 1000, mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(rkey, raddr + READ_OFF)
    send(wr)
    if not poll_until(lambda: base + 0x200 in pending, "round %d READ" % rnd):
        fail("round %d: READ incomplete" % rnd)
    elif mr.read(SLOT, SEND_OFF) != pattern((3 - seed) * 10 + rnd, SLOT):
        fail("round %d: RDMA READ data differ" % rnd)
    # 4. Atomics on the peer's counter and word.
    if rnd == 0:
        mr.write((0).to_bytes(8, "little") + (7).to_bytes(8, "little"), 16, ATOM_OFF)
    barrier("r%d-atom-ready" % rnd)
    for k in range(8):
        wr = SendWR(wr_id=base + 0x300 + k, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                    sg=[SGE(mr.buf + SEND_OFF + 8 * k, 8, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_atomic(rkey=rkey, addr=raddr + ATOM_OFF, compare_add=1, swap=0)
        send(wr)
    wr = SendWR(wr_id=base + 0x310, opcode=e.IBV_WR_ATOMIC_CMP_AND_SWP, num_sge=1,
                sg=[SGE(mr.buf + SEND_OFF + 64, 8, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_atomic(rkey=rkey, addr=raddr + ATOM_OFF + 8, compare_add=7 + rnd, swap=8 + rnd)
    send(wr)
    if not poll_until(lambda: all(base + 0x300 + k in pending for k in range(8)) and base + 0x310 in pending,
                      "round %d atomics" % rnd):
        fail("round %d: atomics incomplete" % rnd)
    else:
        olds = sorted(int.from_bytes(mr.read(8, SEND_OFF + 8 * k), "little") for k in range(8))
        if olds != list(range(8 * rnd, 8 * rnd + 8)):
            fail("round %d: FETCH_ADD returned %s" % (rnd, olds))
        if int.from_bytes(mr.read(8, SEND_OFF + 64), "little") != 7 + rnd:
            fail("round %d: COMPARE_SWAP returned the wrong original" % rnd)
    barrier("r%d-atom-done" % rnd)
    if int.from_bytes(mr.read(8, ATOM_OFF), "little") != 8 * (rnd + 1):
        fail("round %d: counter is %d, want %d" % (rnd, int.from_bytes(mr.read(8, ATOM_OFF), "little"), 8 * (rnd + 1)))
    if int.from_bytes(mr.read(8, ATOM_OFF + 8), "little") != 8 + rnd:
        fail("round %d: swapped word wrong" % rnd)
    pending.clear()

barrier("done")
time.sleep(0.5)
print("verified: %s (%d rounds)" % ("OK" if not failures else "%d failures" % len(failures), rounds))
sys.exit(0 if not failures else 1)
