#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A wire between two tun devices: tun_relay.py NAME_A NAME_B

Creates the layer-3 tun devices NAME_A and NAME_B (IFF_TUN, no packet information, so
each read is one IP packet) and copies every packet read from one to the other until it
is killed. It prints "ready" once both exist; the caller may then move them into network
namespaces and address them. Counts of the packets copied each way go to stderr at exit.
"""
import fcntl
import os
import select
import signal
import struct
import sys

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main():
    a, b = open_tun(sys.argv[1]), open_tun(sys.argv[2])
    peer = {a: b, b: a}
    copied = {a: 0, b: 0}

    def stop(*_):
        sys.stderr.write("relay: %s->%s %d packets, %s->%s %d packets\n"
                         % (sys.argv[1], sys.argv[2], copied[a], sys.argv[2], sys.argv[1], copied[b]))
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print("ready", flush=True)
    while True:
        for fd in select.select([a, b], [], [])[0]:
            try:
                pkt = os.read(fd, 65536)
            except OSError:
                continue  # the device went down: nothing to read
            try:
                os.write(peer[fd], pkt)
                copied[fd] += 1
            except OSError:
                pass  # the other side is down: the packet is lost, as on a wire


main()
