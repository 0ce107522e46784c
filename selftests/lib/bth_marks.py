#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# bth_marks.py PCAP SRC_IP: counts the RoCEv2 datagrams from SRC_IP in an Ethernet pcap,
# and of those the ones with BTH TVer != 0 (rxe_sr's SR format) and with BTH Resv7 != 0
# (rxe_sr's capability probe). Prints "total N tver N resv7 N".
import socket
import struct
import sys


def main():
    path, src = sys.argv[1], socket.inet_aton(sys.argv[2])
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off, total, tver, resv7 = 24, 0, 0, 0
    while off + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[off + 8:off + 12])[0]
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(frame) < 14 + 20 + 8 + 12 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 17 or ip[12:16] != src:
            continue
        udp = ip[ihl:]
        if struct.unpack(">H", udp[2:4])[0] != 4791:
            continue
        bth = udp[8:]
        total += 1
        tver += (bth[1] & 0x0F) != 0
        resv7 += (bth[8] & 0x7F) != 0
    print(f"total {total} tver {tver} resv7 {resv7}")


main()
