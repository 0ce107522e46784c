#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# The remote-input fuzzer, one side of roce_fuzz.sh:
#   roce_fuzz.py a|b DEV GID_INDEX PEER_IPV4 TAG PACKETS SEED PROBE_GID_INDEX PROBE_PEER [CHECK_EVERY]
# Both sides open the same QPs: a probe RC pair (the pacing barrier, never a target; on b
# it runs from a second address, 10.77.0.4), then the targets: an RC pair, a UC pair and a
# UD QP each. Then:
#   1. Real traffic on the targets, both ways, while b captures it on eth0 (AF_PACKET):
#      SENDs and WRITEs of 3000 B (first, middle and last packets), WRITE with immediate,
#      READ of 3000 B, FETCH_ADD, COMPARE_SWAP and a stream of WRITEs over RC (under an SR
#      scheme the QPs have agreed to the SR format by then, so SR requests, SACK-bearing
#      ACKs and READ responses are in the corpus); SEND and WRITE over UC; SEND over UD.
#   2. b sends PACKETS forged datagrams at a's UDP port 4791 from its own address, each a
#      captured packet changed by one mutation (bit flips; header bytes and words at limit
#      values; every opcode; PSNs near and far; live and dead QPNs; pad counts; TVer and
#      the capability bits; RETH/atomic VA, R_Key and DMA length at their limits;
#      truncation; trailing bytes) with a correct ICRC (so it passes the ICRC check), and
#      some with a wrong ICRC. Packets a sent are sent back to a (its requester then meets
#      forged responses, its responder its own requests). Each goes to a's live target of
#      its kind. Every 256 packets b RDMA WRITEs over the probe pair and waits for the
#      completion: a's receive work has then taken every packet before it (one queue per
#      device, in order), so the flood never outruns it and every forged packet is parsed.
#      A forged packet cannot fail the probe: it comes from another address than the
#      probe QP's path (dropped as rcvd_addr_mismatch).
#   3. Meanwhile a keeps receives posted on its targets, posts a WRITE from its RC target
#      now and then (so forged ACKs and READ responses meet a live requester), drains its
#      CQ, and replaces a target a forged packet put in Error (RoCEv2 has no
#      authentication: a request from the peer's address with the right PSN is the
#      peer's); b aims at the new one. At the end a's probe QP must still be in RTS.
# The test (roce_fuzz.sh) then checks a's counters, runs a data-checked exchange on the same
# devices, and checks the kernel log (no oops, no KASAN or lockdep report) and that unload
# finds no object left.
import atexit, os, random, socket, struct, sys, threading, time, zlib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import Share, connect_rc, ud_up, v4_gid
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute, AH
from pyverbs.wr import SendWR, RecvWR, SGE

role, dev, gidx, peer, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
packets, seed = int(sys.argv[6]), int(sys.argv[7])
# The probe pair's path: on b a second address of its own (10.77.0.4), which the forged
# packets never come from, so a's probe QP drops any of them a mutated QPN sends its way
# (rcvd_addr_mismatch) and the pacing cannot be broken by the fuzz.
probe_gidx, probe_peer = int(sys.argv[8]), sys.argv[9]
# a looks for a failed target every this many milliseconds: fewer keeps more of the flood on
# live QPs, more costs fewer QP queries.
check_ms = int(sys.argv[10]) if len(sys.argv) > 10 else 20
other = "b" if role == "a" else "a"
me = "10.77.0.1" if role == "a" else "10.77.0.2"
ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
          | e.IBV_ACCESS_REMOTE_ATOMIC)
QKEY = 0x11111111
SLOT = 4096 + 64
RECV_BASE = {"rc": 0, "uc": 32 * SLOT, "ud": 64 * SLOT}
REMOTE, MR_LEN = 96 * SLOT, 96 * SLOT + 65536
NRECV = 32
KINDS = ("rc", "uc", "ud")
PSN = {"rc": 0x200, "uc": 0x300}
# The local ACK timeout: 67 ms, 0.5 s when a guest runs the KASAN kernel (roce_fuzz.sh
# says so, as rc_verify_pair does).
TIMEOUT = int(os.environ.get("RXE_SR_ACK_TIMEOUT", "14"))


sh = Share(tag, role)
put, peek, get, barrier = sh.put, sh.peek, sh.get, sh.barrier


finished = [False]


def tell_peer():
    """On any exit but the normal end the peer is told, not left waiting."""
    if not finished[0]:
        sh.give_up()


atexit.register(tell_peer)

ctx = d.Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 4096)
pcq = CQ(ctx, 64)
mr = MR(pd, MR_LEN, ACCESS)
QPT = {"rc": e.IBV_QPT_RC, "uc": e.IBV_QPT_UC, "ud": e.IBV_QPT_UD}


def new_qp(qpt, scq):
    return QP(pd, QPInitAttr(qp_type=qpt, scq=scq, rcq=scq,
                             cap=QPCap(max_send_wr=64, max_recv_wr=NRECV, max_send_sge=1, max_recv_sge=1)))


def connect(kind, qp, rqpn):
    """RESET -> RTS towards the peer's QP `rqpn` (RC and UC), or up with the Q_Key (UD)."""
    if kind == "rc":
        connect_rc(qp, rqpn, PSN["rc"], PSN["rc"], dgid, gidx, access=ACCESS, max_rd=4, timeout=TIMEOUT)
    elif kind == "uc":
        a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1
        a.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_LOCAL_WRITE
        qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
        a = QPAttr(); a.qp_state = e.IBV_QPS_RTR; a.path_mtu = e.IBV_MTU_1024; a.dest_qp_num = rqpn
        a.rq_psn = PSN["uc"]
        a.ah_attr = AHAttr(gr=GlobalRoute(dgid=dgid, sgid_index=gidx), is_global=1, port_num=1)
        qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN)
        a = QPAttr(); a.qp_state = e.IBV_QPS_RTS; a.sq_psn = PSN["uc"]
        qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
    else:
        ud_up(qp, QKEY)


# The probe first, so that the targets' QPNs (which the mutations aim at) follow it.
probe = new_qp(e.IBV_QPT_RC, pcq)
tq = {k: new_qp(QPT[k], cq) for k in KINDS}
put("qp-" + role, [probe.qp_num] + [tq[k].qp_num for k in KINDS] + [mr.rkey, mr.buf])
r_probe, r_rc, r_uc, r_ud, rkey, raddr = get("qp-" + other)
rq = {"rc": r_rc, "uc": r_uc, "ud": r_ud}
dgid = v4_gid(peer)
connect_rc(probe, r_probe, 0x100, 0x100, v4_gid(probe_peer), probe_gidx, access=ACCESS, max_rd=4,
           timeout=TIMEOUT)
for k in KINDS:
    connect(k, tq[k], rq[k])
ah = AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=dgid, sgid_index=gidx), is_global=1, port_num=1))
first = {k: tq[k].qp_num for k in KINDS}   # the targets' QPNs during the capture
posted_recv = {k: 0 for k in KINDS}
qpn_kind = {tq[k].qp_num: k for k in KINDS}


def repost_all():
    """Keeps NRECV receives posted on each target (slots reused round robin)."""
    for k in KINDS:
        room = 4096 + (40 if k == "ud" else 0)
        while posted_recv[k] < NRECV:
            i = posted_recv[k] % NRECV
            try:
                tq[k].post_recv(RecvWR(wr_id=(1 << 32) | i, num_sge=1,
                                       sg=[SGE(mr.buf + RECV_BASE[k] + i * SLOT, room, mr.lkey)]))
            except Exception:
                break  # the QP is in Error (a forged packet may do that): nothing to post
            posted_recv[k] += 1


def drain():
    """Takes every completion of the targets' CQ: receives are posted again."""
    got = []
    while True:
        n, wcs = cq.poll(64)
        if not n:
            return got
        for w in wcs:
            if w.wr_id >> 32 == 1 and w.qp_num in qpn_kind:
                posted_recv[qpn_kind[w.qp_num]] -= 1
            got.append(w)


done_sends = {}  # wr_id -> status, of the warm-up's send completions


def wait_send(wr_id, what, secs=120):
    end = time.time() + secs
    while time.time() < end:
        for w in drain():
            if w.wr_id >> 32 == 0:
                done_sends[w.wr_id] = w.status
        if wr_id in done_sends:
            if done_sends[wr_id] != e.IBV_WC_SUCCESS:
                sys.exit("%s: status %d" % (what, done_sends[wr_id]))
            return
        repost_all()
        time.sleep(0.001)
    sys.exit("%s: no completion" % what)


def send(qp, op, n, wr_id, remote=None, imm=None, ud_dst=None, atomic=None):
    wr = SendWR(wr_id=wr_id, opcode=op, num_sge=1, sg=[SGE(mr.buf + REMOTE + 32768, n, mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED, imm_data=imm or 0)
    if remote is not None:
        wr.set_wr_rdma(rkey, raddr + REMOTE + remote)
    if atomic is not None:
        wr.set_wr_atomic(rkey, raddr + REMOTE + atomic[0], atomic[1], atomic[2])
    if ud_dst is not None:
        wr.set_wr_ud(ah, ud_dst, QKEY)
    qp.post_send(wr)
    wait_send(wr_id, "warm-up wr %d" % wr_id)


# --- 1. Real traffic, captured by b.
repost_all()
captured = []
stop_capture = threading.Event()


def capture():
    # ETH_P_ALL: a socket bound to ETH_P_IP sees only what arrives, not what b sends.
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind(("eth0", 0))
    s.settimeout(0.2)
    while not stop_capture.is_set():
        try:
            frame, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        ip = frame[14:]
        if frame[12:14] != b"\x08\x00" or len(ip) < 28 or ip[9] != 17:
            continue
        ihl = (ip[0] & 15) * 4
        if struct.unpack(">H", ip[ihl + 2:ihl + 4])[0] != 4791:
            continue
        ib = bytes(ip[ihl + 8:len(ip) - 4])  # without the ICRC
        if len(ib) >= 12:
            captured.append((addr[2] == 4, ib))  # PACKET_OUTGOING
    s.close()


if role == "b":
    cap = threading.Thread(target=capture)
    cap.start()
    time.sleep(0.5)
barrier("capturing")
for turn in ("a", "b"):
    if turn == role:
        send(tq["rc"], e.IBV_WR_SEND, 3000, 1)
        send(tq["rc"], e.IBV_WR_RDMA_WRITE, 3000, 2, remote=0)
        send(tq["rc"], e.IBV_WR_RDMA_WRITE_WITH_IMM, 100, 3, remote=4096, imm=0x1234)
        send(tq["rc"], e.IBV_WR_RDMA_READ, 3000, 4, remote=8192)
        send(tq["rc"], e.IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 5, atomic=(16384, 1, 0))
        send(tq["rc"], e.IBV_WR_ATOMIC_CMP_AND_SWP, 8, 6, atomic=(16384, 1, 7))
        for i in range(8):  # a stream: several in flight, ACKs coalesced
            wr = SendWR(wr_id=10 + i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                        sg=[SGE(mr.buf + REMOTE + 32768, 2048, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
            wr.set_wr_rdma(rkey, raddr + REMOTE + 24576 + 256 * i)
            tq["rc"].post_send(wr)
        for i in range(8):
            wait_send(10 + i, "stream write %d" % i)
        send(tq["uc"], e.IBV_WR_SEND, 3000, 20)
        send(tq["uc"], e.IBV_WR_RDMA_WRITE, 1000, 21, remote=20000)
        send(tq["ud"], e.IBV_WR_SEND, 500, 22, ud_dst=r_ud)
    barrier("warm-" + turn)
    drain()
    repost_all()
time.sleep(0.5)
if role == "b":
    stop_capture.set()
    cap.join()

# --- 2. The flood (b) and the target (a).
if role == "a":
    gen, remade = 0, {k: 0 for k in KINDS}
    put("targets-a-0", [tq[k].qp_num for k in KINDS])
    put("ready-a", [1])
    done = sh.path("flood-done")
    n = 0
    # The share (9p) is looked at every 0.1 s, not every turn: a look costs milliseconds of
    # this guest's only CPU on the KASAN kernel, which its receive work needs.
    look = next_check = 0.0
    checks, t_flood, cpu0, napped = 0, time.time(), os.times(), 0.0
    while True:
        if time.time() >= look:
            if os.path.exists(done):
                break
            if sh.aborted():
                sys.exit("side b gave up; side a stops too")
            look = time.time() + 0.1
        drain()
        repost_all()
        n += 1
        if n % 200 == 0:
            try:
                wr = SendWR(wr_id=1000 + n, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                            sg=[SGE(mr.buf + REMOTE + 32768, 64, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
                wr.set_wr_rdma(rkey, raddr + REMOTE + 28672)
                tq["rc"].post_send(wr)
            except Exception:
                pass  # full send queue or a QP in Error
        if time.time() >= next_check:
            next_check = time.time() + check_ms / 1000
            checks += 1
            # A target a forged packet failed (a request from the peer's address with the
            # right PSN is the peer's, as far as RoCEv2 can tell) is replaced, so that the
            # fuzz keeps reaching live QPs.
            fresh = False
            for k in KINDS:
                if tq[k].query(e.IBV_QP_STATE)[0].qp_state in (e.IBV_QPS_ERR, e.IBV_QPS_SQE):
                    drain()
                    tq[k].close()
                    for attempt in range(20):
                        tq[k] = new_qp(QPT[k], cq)
                        try:
                            connect(k, tq[k], rq[k])
                            break
                        except Exception as x:
                            # A forged packet (a mutated QPN) failed it already in RTR:
                            # RTS is then refused, rightly. Another one.
                            why = x
                            tq[k].close()
                            time.sleep(0.05)
                    else:
                        sys.exit("no new %s target reached RTS in 20 tries: %s" % (k, why))
                    qpn_kind[tq[k].qp_num] = k
                    posted_recv[k] = 0
                    remade[k] += 1
                    fresh = True
            if fresh:
                gen += 1
                repost_all()
                put("targets-a-%d" % gen, [tq[k].qp_num for k in KINDS])
        t_nap = time.time()
        time.sleep(0.001)
        napped += time.time() - t_nap
    drain()
    names = {e.IBV_QPS_RTS: "RTS", e.IBV_QPS_ERR: "ERR", e.IBV_QPS_SQE: "SQE", e.IBV_QPS_RTR: "RTR"}
    st = probe.query(e.IBV_QP_STATE)[0].qp_state
    print("probe qp %#x: %s" % (probe.qp_num, names.get(st, str(st))))
    dt = time.time() - t_flood
    cpu1 = os.times()
    cpu = cpu1.user + cpu1.system - cpu0.user - cpu0.system
    # The CPU the flood left this process while it wanted it: its CPU time over the time
    # it was awake (all but its 1-ms sleeps).
    print("a: %d turns in %.1f s, %d target checks; CPU %.2f s of %.1f s awake: %.0f%%"
          % (n, dt, checks, cpu, dt - napped, 100 * cpu / max(dt - napped, 0.001)))
    print("targets replaced after a forged packet failed them: " + ", ".join("%s %d" % (k, remade[k]) for k in KINDS))
    put("done-a", [1])
    finished[0] = True
    sys.exit(0 if st == e.IBV_QPS_RTS else "the probe QP left RTS")

# The corpus: (kind, IB bytes) of what b captured; the destination QPN is set as each copy
# goes, to the target of that kind a has then (it makes a new one when a forged packet
# fails the old).
a_qpn = {rq[k]: k for k in KINDS}
b_qpn = {first[k]: k for k in KINDS}
corpus = []
for outgoing, ib in captured:
    qpn = int.from_bytes(ib[5:8], "big")
    if outgoing and qpn in a_qpn:
        corpus.append((a_qpn[qpn], ib))        # b's requests and responses
    elif not outgoing and qpn in b_qpn:
        corpus.append((b_qpn[qpn], ib))        # a's, sent back to a
if len(corpus) < 20:
    sys.exit("only %d packets captured" % len(corpus))
get("ready-a")
# a's targets, version a_gen: each version is a name of its own (Share.put says why).
a_gen = 0
cur = dict(zip(KINDS, get("targets-a-0")))
rng = random.Random(seed)
LIM32 = [0, 1, 2, 0x7f, 0x80, 0xff, 0xffff, 0x7fffff, 0x800000, 0xffffff, 0x7fffffff,
         0x80000000, 0xfffffffe, 0xffffffff]
LIM8 = [0, 1, 0x7f, 0x80, 0xfe, 0xff]
PSN_D = [1, 2, 3, 7, 64, 255, 1024, 0x3fffff, 0x400000, 0x7fffff, 0x800000, 0x800001, 0xffffff]
RETH_OPS = {0x06, 0x0a, 0x0b, 0x0c, 0x26, 0x2a, 0x2b}   # RC/UC WRITE first/only(+imm), READ request
ATOMIC_OPS = {0x13, 0x14}                          # COMPARE_SWAP, FETCH_ADD
op_next = [0]


def setw(b, off, v):
    if off + 4 <= len(b):
        b[off:off + 4] = (v & 0xffffffff).to_bytes(4, "big")


def mutate(ib):
    """One mutation of a captured packet; returns (bytes, whether its ICRC is right, kind)."""
    b = bytearray(ib)
    k = rng.randrange(14)
    good = True
    if k == 0:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        kind = "flip"
    elif k == 1:
        setw(b, 4 * rng.randrange(min(len(b), 64) // 4), rng.choice(LIM32 + [rng.getrandbits(32)]))
        kind = "word"
    elif k == 2:
        b[rng.randrange(min(len(b), 64))] = rng.choice(LIM8 + [rng.getrandbits(8)])
        kind = "byte"
    elif k == 3:
        b[0] = op_next[0] & 0xff  # every opcode in turn
        op_next[0] += 1
        kind = "opcode"
    elif k == 4:
        psn = int.from_bytes(b[9:12], "big")
        psn = (psn + rng.choice([1, -1]) * rng.choice(PSN_D)) & 0xffffff
        b[9:12] = psn.to_bytes(3, "big")
        kind = "psn"
    elif k == 5:
        live = sorted(cur.values())
        q = rng.choice(live + [0, 1, 2, 0xffffff, rng.getrandbits(24), live[0] - 1, live[-1] + 1])
        b[5:8] = (q & 0xffffff).to_bytes(3, "big")
        kind = "qpn"
    elif k == 6:
        b[1] = (b[1] & 0xcf) | (rng.randrange(4) << 4)
        kind = "pad"
    elif k == 7:
        if rng.randrange(2):
            b[1] = (b[1] & 0xf0) | rng.randrange(16)   # TVer
        else:
            b[8] = (b[8] & 0x80) | rng.randrange(128)  # Resv7: the SR capability bits
        kind = "tver/cap"
    elif k == 8 and b[0] in RETH_OPS and len(b) >= 28:
        f = rng.randrange(3)
        if f == 0:
            b[12:20] = rng.choice([0, 1, 0xffffffffffffffff, 0xfffffffffffff000, rng.getrandbits(64),
                                   raddr + REMOTE + 65536 - 1]).to_bytes(8, "big")
        elif f == 1:
            setw(b, 20, rng.choice([0, rkey ^ 1, rkey ^ 0x100, rng.getrandbits(32), 0xffffffff]))
        else:
            setw(b, 24, rng.choice([0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 65536, 65537]))
        kind = "reth"
    elif k == 8 and b[0] in ATOMIC_OPS and len(b) >= 40:
        f = rng.randrange(3)
        if f == 0:
            b[12:20] = rng.choice([raddr + REMOTE + 16384 + rng.randrange(1, 8), 0,
                                   0xfffffffffffffff8, rng.getrandbits(64)]).to_bytes(8, "big")
        elif f == 1:
            setw(b, 20, rng.choice([0, rkey ^ 1, rng.getrandbits(32)]))
        else:
            b[24:40] = rng.getrandbits(128).to_bytes(16, "big")
        kind = "atomic"
    elif k == 9:
        del b[rng.randrange(len(b)):]
        kind = "truncate"
    elif k == 10:
        b += rng.getrandbits(8 * 256).to_bytes(256, "big")[:rng.randint(1, 256)]
        kind = "trailing"
    elif k == 11:
        good = False
        kind = "bad icrc"
    elif k == 12:
        # Two or three at once.
        for _ in range(rng.randint(2, 3)):
            i = rng.randrange(min(len(b), 64))
            b[i] = rng.getrandbits(8)
        kind = "multi"
    else:
        setw(b, 4 * rng.randrange(3, max(4, min(len(b), 80) // 4)), rng.getrandbits(32))
        kind = "ext word"   # the words after the BTH: RETH/AETH/DETH/AtomicETH/SR headers
    return bytes(b), good, kind


sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO: DF set, IP ID 0
SPORT = 49999
sock.bind((me, SPORT))
ipsrc, ipdst = socket.inet_aton(me), socket.inet_aton(peer)


def icrc(ib):
    """RoCEv2 ICRC over the datagram this socket sends: masked LRH, IPv4 header (TOS, TTL
    and checksum masked; ID 0 with DF), UDP header (checksum masked), IB bytes (BTH's
    reserved byte 4 masked)."""
    total = 20 + 8 + len(ib) + 4
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0xff, total, 0, 0x4000, 0xff, 17, 0xffff, ipsrc, ipdst)
    udp = struct.pack(">HHHH", SPORT, 4791, 8 + len(ib) + 4, 0xffff)
    masked = ib[:4] + b"\xff" + ib[5:] if len(ib) > 4 else ib
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + ip + udp + masked))


probe_id = [0]


def barrier_probe():
    """An RDMA WRITE over the probe pair; its completion means a's receive work took every
    packet sent before it (one receive queue per device, taken in order). Forged packets
    cannot fail the probe QP (they come from another address than its path's)."""
    probe_id[0] += 1
    wr = SendWR(wr_id=probe_id[0], opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                sg=[SGE(mr.buf + REMOTE + 40000, 8, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(rkey, raddr + REMOTE + 40000)
    probe.post_send(wr)
    end = time.time() + 120
    while time.time() < end:
        n, wcs = pcq.poll(1)
        if n:
            if wcs[0].status != e.IBV_WC_SUCCESS:
                sys.exit("probe WRITE %d: status %d" % (probe_id[0], wcs[0].status))
            return
        drain()
        time.sleep(0.0005)
    sys.exit("the probe WRITE got no completion in 120 s: the target stopped answering")


kinds = {}
# Where b's time goes: forging (mutation and ICRC), the sendto system calls, the share's
# target look-ups, and the probes (waiting for a's receive work to catch up).
spent = {"forge": 0.0, "sendto": 0.0, "targets": 0.0, "probes": 0.0}
t0 = time.time()
next_peek = t0
for i in range(packets):
    ta = time.time()
    k, ib = rng.choice(corpus)
    ib, good, kind = mutate(ib[:5] + cur[k].to_bytes(3, "big") + ib[8:])
    c = icrc(ib)
    if not good:
        c = bytes([c[0] ^ 1]) + c[1:]
    tb = time.time()
    sock.sendto(ib + c, (peer, 4791))
    tc = time.time()
    spent["forge"] += tb - ta
    spent["sendto"] += tc - tb
    kinds[kind] = kinds.get(kind, 0) + 1
    if tc >= next_peek:
        # a's new targets, aimed at soon after a replaced one (each packet sent at a QPN
        # gone is a drop that tests nothing). At most every 50 ms: a look at the share is
        # slow on the KASAN kernel.
        next_peek = tc + 0.05
        t = peek("targets-a-%d" % (a_gen + 1))
        while t:
            a_gen += 1
            cur = dict(zip(KINDS, t))
            t = peek("targets-a-%d" % (a_gen + 1))
        spent["targets"] += time.time() - tc
    if i % 256 == 255:
        td = time.time()
        barrier_probe()
        drain()
        spent["probes"] += time.time() - td
        if i % 20000 == 19999:
            print("progress: %d forged packets, %.0f/s" % (i + 1, (i + 1) / (time.time() - t0)), flush=True)
barrier_probe()
dt = time.time() - t0
print("forged %d packets from a corpus of %d captured in %.1f s (%.0f/s); %d probe WRITEs"
      % (packets, len(corpus), dt, packets / dt, probe_id[0]))
print("time spent: " + ", ".join("%s %.1f s" % kv for kv in spent.items()))
print("by mutation: " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
print("forged_total %d" % packets)
put("flood-done", [1])
get("done-a")
finished[0] = True
