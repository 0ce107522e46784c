#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# One side of ipv6_ext_headers.sh: RoCEv2 UD SENDs over IPv6 that carry extension headers.
#   roce_v6_ext.py recv DEV TAG          (g1) a UD QP with Q_Key 0x11223344; waits for the
#                                             three messages and checks each one's payload,
#                                             source QPN and GRH (the fixed IPv6 header)
#   roce_v6_ext.py send SRC DST TAG      (g2) forges the three from a plain UDP socket, SRC
#                                             to DST (IPv6), as any host can
# The messages: (0) no extension header, the control that the forging is right; (1) a
# destination options header; (2) hop-by-hop + destination options headers, each 8 bytes
# with a PadN option, set on the socket (IPV6_HOPOPTS / IPV6_DSTOPTS) so that the sending
# kernel writes them. The ICRC covers the fixed IPv6 header as sent (next header and payload
# length include the extension headers), the UDP header and the IB bytes.
import os, socket, struct, sys, time, zlib
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPInitAttr, QPCap
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbs_util import ud_up
from pyverbs.wr import RecvWR, SGE

QKEY, SRC_QPN, N = 0x11223344, 0x42, 3
role, tag = sys.argv[1], sys.argv[-1]
share = os.environ["HOST_SHARE"] + "/vals/" + tag + "-"
os.makedirs(os.path.dirname(share), exist_ok=True)

def payload(i):
    return bytes((i * 11 + k) % 251 for k in range(64 + 16 * i))

def wait_file(name, secs=120):
    end = time.time() + secs
    while time.time() < end:
        if os.path.exists(share + name):
            return open(share + name).read().split()
        time.sleep(0.05)
    sys.exit("timed out waiting for " + name)

def put(name, text):
    open(share + name + ".tmp", "w").write(text + "\n")
    os.rename(share + name + ".tmp", share + name)

if role == "recv":
    dev = sys.argv[2]
    ctx = d.Context(name=dev)
    pd = PD(ctx)
    cq = CQ(ctx, 16)
    mr = MR(pd, N * 4096, e.IBV_ACCESS_LOCAL_WRITE)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq,
                           cap=QPCap(max_send_wr=4, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)))
    ud_up(qp, QKEY, rts=False)
    for i in range(N):
        qp.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + 4096 * i, 4096, mr.lkey)]))
    put("qpn", "%d" % qp.qp_num)
    got, end = [], time.time() + 30
    while len(got) < N and time.time() < end:
        k, wcs = cq.poll(N - len(got))
        got += wcs[:k]
        if not k:
            time.sleep(0.01)
    src = socket.inet_pton(socket.AF_INET6, wait_file("src")[0])
    ok = 0
    # Receives complete in posting order: the i-th completion is the i-th message that got
    # through, so a dropped message shows as a missing wr_id.
    for wc in got:
        i = wc.wr_id
        m = payload(i)
        grh = mr.read(40, 4096 * i)
        data = mr.read(len(m), 4096 * i + 40)
        good = (wc.status == e.IBV_WC_SUCCESS and wc.byte_len == 40 + len(m) and data == m
                and wc.src_qp == SRC_QPN and grh[8:24] == src and grh[0] >> 4 == 6)
        print("message %d: status %d, %d bytes, src_qp %#x, data %s, GRH source %s" % (
            i, wc.status, wc.byte_len, wc.src_qp, "ok" if data == m else "differs",
            "ok" if grh[8:24] == src else grh[8:24].hex()))
        ok += good
    print("received %d of %d, verified %d" % (len(got), N, ok))
    sys.exit(0 if ok == N else 1)

# Sender.
src, dst = sys.argv[2], sys.argv[3]
dqpn = int(wait_file("qpn")[0])
put("src", src)
PADN8 = bytes([0, 0, 1, 4, 0, 0, 0, 0])  # next header, length 0 (8 bytes), PadN of 4

def icrc(ip, udp, ib):
    ip, udp, ib = bytearray(ip), bytearray(udp), bytearray(ib)
    ip[0] |= 0x0f; ip[1:4] = b"\xff\xff\xff"; ip[7] = 0xff  # traffic class, flow label, hop limit
    udp[6:8] = b"\xff\xff"
    ib[4] = 0xff
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(ib)))

for i, exts in enumerate([[], [socket.IPV6_DSTOPTS], [socket.IPV6_HOPOPTS, socket.IPV6_DSTOPTS]]):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    for opt in exts:
        s.setsockopt(socket.IPPROTO_IPV6, opt, PADN8)
    sport = 49152 + i
    s.bind((src, sport))
    ib = (struct.pack(">BBHII", 0x64, 0, 0xffff, dqpn, i)  # BTH: UD SEND_ONLY, PSN i
          + struct.pack(">II", QKEY, SRC_QPN)               # DETH
          + payload(i))
    ulen = 8 + len(ib) + 4
    first = 17 if not exts else (0 if socket.IPV6_HOPOPTS in exts else 60)
    ip = (struct.pack(">IHBB", 6 << 28, 8 * len(exts) + ulen, first, 64)
          + socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst))
    udp = struct.pack(">HHHH", sport, 4791, ulen, 0)
    s.sendto(ib + icrc(ip, udp, ib), (dst, 4791))
    s.close()
    print("sent message %d with %d extension header(s)" % (i, len(exts)), flush=True)
    time.sleep(0.2)
