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
import time

from v6gate.util.netns import netns

TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000


def sh(*argv, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
    subprocess.run(cmd, check=True, capture_output=True)


ETH_IPV6 = b"\x86\xdd"
NH_ICMPV6, NS, NA = 58, 135, 136
#: how long after the NA that completes a resolution the guest's queued packets leave (they leave at once)
FLUSH_S = 0.05


class QueueLoss:
    """A stack that loses the packets waiting for address resolution (the
    RFC 4861 §7.2.2 deviation v6LC.2.1.2 exists to catch), made from a
    correct stack: the guest's first packets to a neighbour it solicited with
    a multicast NS, i.e. the ones its queue sends once the NA arrives, are
    dropped on the way out.  Packets to neighbours it already knows (no
    resolution) pass."""

    def __init__(self):
        self.resolving: dict[bytes, float | None] = {}  # target -> when its NA came (None: not yet)
        self.dropped = 0
        self._lock = threading.Lock()

    @staticmethod
    def _nd(frame: bytes) -> tuple[int, bytes] | None:
        if len(frame) >= 78 and frame[12:14] == ETH_IPV6 and frame[20] == NH_ICMPV6 and frame[54] in (NS, NA):
            return frame[54], frame[62:78]
        return None

    def outgoing(self, frame: bytes) -> bool:
        """Should the guest's frame reach the link?"""
        if len(frame) < 54 or frame[12:14] != ETH_IPV6:
            return True
        nd = self._nd(frame)
        with self._lock:
            if nd is not None:
                kind, target = nd
                if kind == NS and frame[38] == 0xFF and frame[22:38] != bytes(16):  # multicast, not DAD
                    self.resolving.setdefault(target, None)
                return True
            dst = frame[38:54]
            if dst in self.resolving:
                na_at = self.resolving[dst]
                if na_at is not None and time.monotonic() - na_at > FLUSH_S:
                    del self.resolving[dst]
                    return True
                self.dropped += 1
                return False
        return True

    def incoming(self, frame: bytes) -> None:
        nd = self._nd(frame)
        if nd and nd[0] == NA:
            with self._lock:
                if nd[1] in self.resolving and self.resolving[nd[1]] is None:
                    self.resolving[nd[1]] = time.monotonic()


class NeighbourCap:
    """What a DUT whose Neighbor Cache takes only ``size`` new neighbours
    at once shows the run's look at its cache (core/neighbour_room.py): no
    Echo Reply to the look's neighbour ``size + 1`` (and on), made from a
    correct stack by dropping the guest's Echo Replies with those
    identifiers (the look's first asks carry 0x4E00 + its index).  Only the
    look's packets: the checks' own neighbours are left alone, as they would
    be by a cache that has room for a batch of 4."""

    FIRST_ASK = 0x4E00

    def __init__(self, size: int = 10, asked: int = 14):
        self.refused = range(self.FIRST_ASK + size, self.FIRST_ASK + asked)
        self.dropped = 0

    def outgoing(self, frame: bytes) -> bool:
        if (len(frame) >= 60 and frame[12:14] == ETH_IPV6 and frame[20] == NH_ICMPV6 and frame[54] == 129
                and int.from_bytes(frame[58:60], "big") in self.refused):
            self.dropped += 1
            return False
        return True

    def incoming(self, frame: bytes) -> None:
        return None


def pio_prefix_lengths(frame: bytes) -> list[int]:
    """The Prefix Length of every Prefix Information option of a Router
    Advertisement frame (none for any other frame)."""
    if len(frame) < 70 or frame[12:14] != ETH_IPV6 or frame[20] != NH_ICMPV6 or frame[54] != 134:
        return []
    out, i = [], 70  # Ether 14 + IPv6 40 + RA header 16
    while i + 2 <= len(frame):
        kind, length = frame[i], frame[i + 1] * 8
        if length == 0:
            break
        if kind == 3 and i + 3 <= len(frame):
            out.append(frame[i + 2])
        i += length
    return out


class Crash:
    """A stack that dies on one packet, made from a correct one: once the
    guest receives a frame ``on(frame)`` accepts (default: an RA whose Prefix
    Information option says prefix length 129, which made two real stacks
    exit), nothing passes either way, as if it had crashed; with
    ``back_after`` seconds it comes back (a supervisor restarted it)."""

    def __init__(self, on=None, *, back_after: float | None = None):
        self.on = on or (lambda frame: 129 in pio_prefix_lengths(frame))
        self.back_after = back_after
        self.died_at: float | None = None  # time.monotonic() of the fatal frame
        self.dropped = 0

    def _dead(self) -> bool:
        if self.died_at is None:
            return False
        return not (self.back_after is not None and time.monotonic() - self.died_at >= self.back_after)

    def incoming(self, frame: bytes) -> bool:
        """Should the frame reach the guest?"""
        if self.died_at is None and self.on(frame):
            self.died_at = time.monotonic()
            self.dropped += 1
            return False
        if self._dead():
            self.dropped += 1
            return False
        return True

    def outgoing(self, frame: bytes) -> bool:
        if self._dead():
            self.dropped += 1
            return False
        return True


class TapGuest:
    def __init__(self, switch_ns: str, tap: str, guest_ns: str, mac: str, *, bounded: bool = False,
                 fault: QueueLoss | Crash | NeighbourCap | None = None):
        self.switch_ns, self.tap, self.guest_ns, self.mac = switch_ns, tap, guest_ns, mac
        self.bounded, self.fault = bounded, fault
        self.max_addresses = 4 if bounded else None  # net.ipv6.conf.eth0.max_addresses, link-local included
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
        if self.bounded:
            # an embedded stack's tables: state a run leaves behind shows up as a wrong verdict later
            sh("sysctl", "-qw", f"net.ipv6.conf.eth0.max_addresses={self.max_addresses}", ns=self.guest_ns)
            sh("sysctl", "-qw", "net.ipv6.route.max_size=64", ns=self.guest_ns)
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
                    data = os.read(self.tap_fd, 65535)
                    if self.fault and self.fault.incoming(data) is False:
                        continue
                    self.sock.send(data)
                except OSError:
                    return

    def _guest_to_tap(self):
        while not self._stop.is_set():
            r, _, _ = select.select([self.sock], [], [], 0.2)
            if r:
                try:
                    data, addr = self.sock.recvfrom(65535)
                    if addr[2] != socket.PACKET_OUTGOING and (self.fault is None or self.fault.outgoing(data)):
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
