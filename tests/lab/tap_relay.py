"""A stand-in for a vendor VM on the lab's TAP device.

qemu opens the TAP and moves frames between it and the guest's NIC; this
does the same with threads: it opens the TAP (in the lab's switch
namespace) and relays frames to a veth whose other end sits in a namespace
running a Linux IPv6 stack, which is the "guest".  The lab sees only the TAP,
exactly as with a VM, and controls nothing of the guest.
"""

from __future__ import annotations

import fcntl
import os
import select
import socket
import struct
import subprocess
import threading

from v6gate.util.netns import netns

TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000


def sh(*argv, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
    subprocess.run(cmd, check=True, capture_output=True)


class TapGuest:
    def __init__(self, switch_ns: str, tap: str, guest_ns: str, mac: str):
        self.switch_ns, self.tap, self.guest_ns, self.mac = switch_ns, tap, guest_ns, mac
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> TapGuest:
        sh("ip", "netns", "add", self.guest_ns)
        sh("sysctl", "-qw", "net.ipv6.conf.default.router_solicitation_delay=0", ns=self.guest_ns)
        # the relay end lives in the switch namespace (not bridged); the guest end is the guest's eth0
        sh("ip", "-n", self.switch_ns, "link", "add", "relay0", "type", "veth", "peer", "name", "eth0",
           "netns", self.guest_ns)
        sh("ip", "-n", self.guest_ns, "link", "set", "eth0", "address", self.mac)
        sh("sysctl", "-qw", "net.ipv6.neigh.eth0.retrans_time_ms=100", ns=self.guest_ns)
        sh("ip", "-n", self.switch_ns, "link", "set", "relay0", "up")
        sh("ip", "-n", self.guest_ns, "link", "set", "lo", "up")
        sh("ip", "-n", self.guest_ns, "link", "set", "eth0", "up")
        with netns(self.switch_ns):
            self.tap_fd = os.open("/dev/net/tun", os.O_RDWR)
            fcntl.ioctl(self.tap_fd, TUNSETIFF, struct.pack("16sH", self.tap.encode(), IFF_TAP | IFF_NO_PI))
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
            self.sock.bind(("relay0", 0))
        for fn in (self._tap_to_guest, self._guest_to_tap):
            t = threading.Thread(target=fn, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def _tap_to_guest(self):
        while not self._stop.is_set():
            r, _, _ = select.select([self.tap_fd], [], [], 0.2)
            if r:
                try:
                    self.sock.send(os.read(self.tap_fd, 65535))
                except OSError:
                    return

    def _guest_to_tap(self):
        while not self._stop.is_set():
            r, _, _ = select.select([self.sock], [], [], 0.2)
            if r:
                try:
                    data, addr = self.sock.recvfrom(65535)
                    if addr[2] != socket.PACKET_OUTGOING:
                        os.write(self.tap_fd, data)
                except OSError:
                    return

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(1)
        for closer in (lambda: os.close(self.tap_fd), self.sock.close):
            try:
                closer()
            except (OSError, AttributeError):
                pass
        subprocess.run(["ip", "netns", "del", self.guest_ns], capture_output=True)
