# SPDX-License-Identifier: GPL-2.0
# Helpers the pyverbs selftests share: RoCEv2 GIDs of IPv4 addresses, bringing an RC QP
# from RESET to RTS towards a peer QP, and the files two sides exchange values through.
import os, socket, struct, sys, time, zlib
try:
    import pyverbs.enums as e
except ImportError:
    # rdma-core 65's pyverbs (the forky root's) has the enums only as classes in
    # pyverbs.libibverbs_enums: their members, gathered into one namespace by name, serve
    # as pyverbs.enums' did.
    import enum, types
    import pyverbs.libibverbs_enums as _le
    e = types.SimpleNamespace()
    for _cls in list(vars(_le).values()):
        if isinstance(_cls, type) and issubclass(_cls, enum.Enum):
            for _m in _cls:
                setattr(e, _m.name, _m)
from pyverbs.qp import QPAttr
from pyverbs.wr import SendWR, SGE
from pyverbs.addr import AHAttr, GlobalRoute, GID


# The checks a script made that failed; it exits 1 at its end when there is any.
failures = []


def fail(msg):
    """Notes a failed check and prints it; the script goes on."""
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def pattern(s, n):
    """`n` bytes of the test pattern of seed `s` (a 251-byte cycle, distinct per seed)."""
    base = bytes((s * 131 + k * 7) % 251 for k in range(251))
    return (base * (n // 251 + 1))[:n]


def v4_gid(ip):
    """The IPv4-mapped RoCEv2 GID of a dotted IPv4 address."""
    return GID("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(int(x) for x in ip.split(".")))


def connect_rc(qp, rqpn, rq_psn, sq_psn, dgid, gidx, access=0, max_rd=1, timeout=14, rnr_retry=7):
    """RESET -> INIT -> RTR -> RTS towards QP `rqpn` at `dgid`, path MTU 1024."""
    a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qp_access_flags = access
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTR; a.path_mtu = e.IBV_MTU_1024; a.dest_qp_num = rqpn
    a.rq_psn = rq_psn; a.max_dest_rd_atomic = max_rd; a.min_rnr_timer = 12
    a.ah_attr = AHAttr(gr=GlobalRoute(dgid=dgid, sgid_index=gidx), is_global=1, port_num=1)
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
              | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTS; a.timeout = timeout; a.retry_cnt = 7; a.rnr_retry = rnr_retry
    a.sq_psn = sq_psn; a.max_rd_atomic = max_rd
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY
              | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)


def ud_up(qp, qkey, rts=True):
    """RESET -> INIT -> RTR (-> RTS, send PSN 0) for a UD QP on port 1 with Q_Key `qkey`."""
    a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qkey = qkey
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTR
    qp.modify(a, e.IBV_QP_STATE)
    if rts:
        a = QPAttr(); a.qp_state = e.IBV_QPS_RTS; a.sq_psn = 0
        qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)


class Share:
    """Values two sides (roles "a" and "b") exchange through files in the 9p share
    ($HOST_SHARE/vals), each named TAG-NAME; a side that gives up writes TAG-abort-ROLE, and
    the other's get() then stops too (after `on_abort`, for a diagnosis)."""

    def __init__(self, tag, role, on_abort=None):
        self.dir = os.environ["HOST_SHARE"] + "/vals/"
        os.makedirs(self.dir, exist_ok=True)
        self.tag, self.role, self.other = tag, role, "b" if role == "a" else "a"
        self.on_abort = on_abort

    def path(self, name):
        return self.dir + self.tag + "-" + name

    def put(self, name, vals):
        """Writes `name` once, whole (a temporary file renamed into place). A name is never
        written twice: a 9p read of a file replaced between the guest's open and read is
        short of the size the guest was told, and the 6.12 guest kernel's netfs retries
        such a read by recursing until its stack overflows (a panic in roce_fuzz's peer,
        which re-read a value rewritten hundreds of times). A value that changes takes a
        new name per version instead."""
        final = self.path(name)
        if os.path.exists(final):
            raise ValueError("share value %s is written twice" % name)
        tmp = final + ".tmp"
        with open(tmp, "w") as f:
            f.write(" ".join(str(v) for v in vals) + "\n")
        os.rename(tmp, final)

    def give_up(self):
        """Tells the other side that this one stopped (once; a second call does nothing)."""
        if not os.path.exists(self.path("abort-" + self.role)):
            self.put("abort-" + self.role, [1])

    def peek(self, name):
        """The values under `name`, or None while there are none."""
        try:
            with open(self.path(name)) as f:
                return [int(v) for v in f.read().split()]
        except (FileNotFoundError, ValueError):
            return None

    def aborted(self):
        """The other side gave up, or a guest failed the test this runs in (the runner's
        abort file, TEST_INDEX)."""
        if os.path.exists(self.path("abort-" + self.other)):
            return True
        t = os.environ.get("TEST_INDEX")
        if t is None:
            return False
        sync = os.environ["HOST_SHARE"] + "/sync/abort-t%s.g" % t
        return any(os.path.exists(sync + str(g)) for g in range(1, int(os.environ.get("GUESTS", "2")) + 1))

    def get(self, name, secs=600):
        end = time.time() + secs
        while time.time() < end:
            v = self.peek(name)
            if v is not None:
                return v
            if self.aborted():
                if self.on_abort:
                    self.on_abort()
                sys.exit("side %s gave up (see its output); side %s stops too" % (self.other, self.role))
            time.sleep(0.05)
        sys.exit("timed out waiting for %s" % name)

    def barrier(self, name):
        self.put(name + "-" + self.role, [1])
        self.get(name + "-" + self.other)


def sends_checked(qp, cq, mr, n, slot, mul, base, secs=60):
    """Posts `n` SENDs on `qp`, message i of base + i bytes whose byte k is (i * mul + k)
    mod 256, taken from `mr` at (n + i) * slot; the receives are posted already, receive i
    (wr_id i) at `mr` + i * slot, completing on `cq` as the SENDs do. Checks every status,
    that all n of each completed within `secs`, and every byte; returns the receives
    (wr_id, byte_len) in completion order."""
    def payload(i):
        return bytes(((i * mul + k) & 0xff) for k in range(base + i))

    for i in range(n):
        data = payload(i)
        mr.write(data, len(data), (n + i) * slot)
        qp.post_send(SendWR(wr_id=1000 + i, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(mr.buf + (n + i) * slot, len(data), mr.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED))
    recvs, sends, end = [], 0, time.time() + secs
    while (len(recvs) < n or sends < n) and time.time() < end:
        k, wcs = cq.poll(32)
        for wc in wcs[:k]:
            assert wc.status == e.IBV_WC_SUCCESS, "wr_id %d status %d" % (wc.wr_id, wc.status)
            if wc.wr_id >= 1000:
                sends += 1
            else:
                recvs.append((wc.wr_id, wc.byte_len))
    assert len(recvs) == n and sends == n, "got %d receives, %d sends" % (len(recvs), sends)
    for i, got in recvs:
        want = payload(i)
        assert got == len(want) and mr.read(len(want), i * slot) == want, "message %d differs" % i
    return recvs


# enum ib_mr_rereg_flags (uapi: IB_MR_REREG_*).
REREG_TRANS, REREG_PD, REREG_ACCESS = 1, 2, 4


def rereg_mr(ctx, mr, flags, pd=None, addr=0, length=0, access=0):
    """ibv_rereg_mr as the kernel takes it: rdma-core's rxe provider has no rereg_mr (libibverbs
    answers EOPNOTSUPP without asking the kernel), so this writes IB_USER_VERBS_CMD_REREG_MR
    (11) to the context's command file itself. Returns the (lkey, rkey) the kernel answers;
    raises OSError with the kernel's errno."""
    import ctypes, struct
    resp = ctypes.create_string_buffer(8)
    body = struct.pack("<QIIQQQII", ctypes.addressof(resp), mr.handle, flags, addr, length, addr,
                       pd.handle if pd is not None else 0, access)
    hdr = struct.pack("<IHH", 11, (8 + len(body)) // 4, len(resp) // 4)
    os.write(ctx.cmd_fd, hdr + body)
    return struct.unpack("<II", resp.raw)


# enum ib_uverbs_advise_mr_advice and IB_UVERBS_ADVISE_MR_FLAG_FLUSH (uapi).
ADVISE_PREFETCH, ADVISE_PREFETCH_WRITE, ADVISE_PREFETCH_NO_FAULT = 0, 1, 2
ADVISE_FLUSH = 1


def advise_mr(ctx, pd, advice, flags, sges):
    """ibv_advise_mr as the kernel takes it: rdma-core's rxe provider has no advise_mr
    (libibverbs answers EOPNOTSUPP itself), so this sends uverbs' ADVISE_MR method (object
    MR, method 2; attributes PD handle, advice, flags, SGE list) through RDMA_VERBS_IOCTL
    on the context's command file, with the device's driver id (RDMA_DRIVER_RXE, 14, which
    rxe_sr reports so that the rxe provider serves it). `sges` is a list of (addr, length, lkey). Raises
    OSError with the kernel's errno."""
    import ctypes, fcntl, struct
    sgl = ctypes.create_string_buffer(b"".join(struct.pack("<QII", a, n, k) for a, n, k in sges))
    mandatory = 1                                   # UVERBS_ATTR_F_MANDATORY
    attrs = [struct.pack("<HHHHQ", 0, 0, mandatory, 0, pd.handle),            # PD (IDR)
             struct.pack("<HHHHQ", 1, 8, mandatory, 0, advice),               # const in
             struct.pack("<HHHHQ", 2, 8, mandatory, 0, flags),                # flags in
             struct.pack("<HHHHQ", 3, len(sgl.raw) - 1, mandatory, 0, ctypes.addressof(sgl))]
    body = b"".join(attrs)
    rdma_driver_rxe = 14
    hdr = struct.pack("<HHHHQII", 24 + len(body), 7, 2, len(attrs), 0, rdma_driver_rxe, 0)
    buf = bytearray(hdr + body)
    rdma_verbs_ioctl = (3 << 30) | (24 << 16) | (0x1b << 8) | 1
    fcntl.ioctl(ctx.cmd_fd, rdma_verbs_ioctl, buf)


# Forged RoCEv2 packets, sent from a plain UDP socket (what any host on the path can do).

def icrc(ip, udp, ib):
    """RoCEv2 ICRC: CRC-32 over 8 bytes of 0xff (the masked LRH), the IP header with TOS,
    TTL and checksum masked, the UDP header with its checksum masked, the IB bytes with
    the BTH's reserved byte masked; stored little-endian."""
    ip, udp, ib = bytearray(ip), bytearray(udp), bytearray(ib)
    ip[1] = 0xff; ip[8] = 0xff; ip[10:12] = b"\xff\xff"
    udp[6:8] = b"\xff\xff"
    ib[4] = 0xff
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(ib)))

def forge(src, sport, dst, ib):
    """Sends IB bytes (BTH ..) with their ICRC from src:sport to dst:4791. The socket is
    unconnected with DF set, so the kernel sends IP ID 0 (which the ICRC covers)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO: DF, ID 0
    s.bind((src, sport))
    total = 20 + 8 + len(ib) + 4
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    udp = struct.pack(">HHHH", sport, 4791, 8 + len(ib) + 4, 0)
    s.sendto(ib + icrc(ip, udp, ib), (dst, 4791))
    s.close()

def bth(opcode, qpn, psn, ackreq=True, tver=0):
    """A BTH (P_Key 0xffff); TVer 1 marks rxe_sr's SR format."""
    return struct.pack(">BBHII", opcode, tver & 0xf, 0xffff, qpn & 0xffffff,
                       ((0x80000000 if ackreq else 0) | (psn & 0xffffff)))

def reth(va, rkey, length):
    return struct.pack(">QII", va, rkey, length)
