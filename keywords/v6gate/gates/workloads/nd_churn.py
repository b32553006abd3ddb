"""Neighbour churn (RFC 4861 §7.2.2, §7.2.4), measured on the tester's
wire (any DUT): how long the DUT takes to answer ``neighbours`` new
correspondents at once, each of which it must first resolve.

Each trial makes ``neighbours`` fresh on-link nodes (a new MAC and a new
address in the link prefix each: no Neighbor Cache entry can exist for
them) and sends one Echo Request from every one of them, back to back.  The
DUT resolves each sender (its NS; one responder of this bench answers them
all with a solicited NA) and answers.  A node whose request is not answered
asks again every ``retry_s``, as an application's retransmission would.
``time`` runs from the first request to the last node's first Echo Reply:
the neighbour-churn time of the DUT (its rate is ``neighbours`` / time,
recorded with the per-node figures).  A stack that keeps the packets that
wait for resolution (§7.2.2) answers every node in the first round; one
that drops them, or that resolves one neighbour at a time, needs more
rounds.  A DUT that leaves a node unanswered within ``give_up_s`` is a very
slow sample (``give_up_s``), not a hang.

The tester's own time is not the DUT's: the 32 requests leave back to back
from frames built before the clock starts, the responder reads each NS from
its bytes and answers with an NA built before the clock starts (Scapy only
for a source it did not foresee), and the time the tester itself held the
DUT up -- sending the first round, and every interval in which an NS of the
DUT waited for the tester's NA -- is measured (``tester_ms``) and taken out
of ``time``.  On a machine loaded to 13 on 2 CPUs the responder's Scapy
parse had made the tester answer 32 NSs one every 2-30 ms, and a healthy
DUT's churn time 810 ms (median of 6, lab, 2026-11-27)."""

from __future__ import annotations

import socket
import statistics

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6NDOptDstLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether

from ...net import packets as P
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload

#: offsets in an Ethernet frame carrying IPv6 (no extension header) with ICMPv6, after the ethertype
_NH, _HLIM, _SRC, _ICMP, _TARGET = 6, 7, 8, 40, 48
_UNSPEC = bytes(16)
_TAGS = (b"\x81\x00", b"\x88\xa8")  # 802.1Q / 802.1ad: a tagged tester interface


def ns_of(raw: bytes) -> tuple[bytes, bytes, bytes] | None:
    """(target, IPv6 source, Ethernet source) of a Neighbor Solicitation with hop limit 255 whose IPv6 header
    is followed by ICMPv6 (untagged or one VLAN tag), read from the bytes: the responder runs on the receive
    thread, for every frame.  None for anything else."""
    at = 12
    if raw[at:at + 2] in _TAGS:
        at += 4
    if raw[at:at + 2] != b"\x86\xdd":
        return None
    ip = at + 2
    if (len(raw) < ip + _TARGET + 16 or raw[ip + _NH] != 58 or raw[ip + _HLIM] != 255
            or raw[ip + _ICMP] != 135 or raw[ip + _ICMP + 1] != 0):
        return None
    return raw[ip + _TARGET:ip + _TARGET + 16], raw[ip + _SRC:ip + _SRC + 16], raw[6:12]


def union_s(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """The length of the union of ``intervals`` clipped to [lo, hi]."""
    total, end = 0.0, lo
    for a, b in sorted(intervals):
        a, b = max(a, end), min(b, hi)
        if b > a:
            total += b - a
            end = b
    return total


class Crowd:
    """``n`` fresh on-link nodes in ``prefix``, one responder answering the DUT's NS for any of them."""

    def __init__(self, n: int, prefix):
        self.macs = {P.address_in(prefix, P.random_iid()): P.random_mac() for _ in range(n)}
        self._addr = {socket.inet_pton(socket.AF_INET6, a): a for a in self.macs}
        self.solicited: dict[str, float] = {}  # address -> time of the DUT's first NS for it
        self.waits: list[tuple[float, float]] = []  # (an NS's arrival, the tester's NA to it sent)
        self._na: dict[tuple, bytes] = {}  # (target, the NS's source, its MAC), as bytes -> the NA

    def _build(self, tgt: str, src: str, src_mac: str) -> bytes:
        mac = self.macs[tgt]
        return bytes(Ether(src=mac, dst=src_mac) / IPv6(src=tgt, dst=src, hlim=255)
                     / ICMPv6ND_NA(R=0, S=1, O=1, tgt=tgt) / ICMPv6NDOptDstLLAddr(lladdr=mac))

    def foresee(self, src: str, src_mac: str) -> None:
        """Build the NAs to NSs from ``src`` / ``src_mac`` (the DUT's) before the clock starts."""
        s, m = socket.inet_pton(socket.AF_INET6, src), bytes.fromhex(src_mac.replace(":", ""))
        for b, tgt in self._addr.items():
            self._na[(b, s, m)] = self._build(tgt, src, src_mac)

    def responder(self, port, frame) -> None:
        got = ns_of(frame.raw)
        if got is None or got[0] not in self._addr or got[1] == _UNSPEC:
            return
        tgt = self._addr[got[0]]
        self.solicited.setdefault(tgt, frame.time)
        na = self._na.get(got)
        if na is None:
            src = socket.inet_ntop(socket.AF_INET6, got[1])
            na = self._na[got] = self._build(tgt, src, ":".join(f"{b:02x}" for b in got[2]))
        port.send(na)
        self.waits.append((frame.time, port.now()))


def nd_churn(t, prof: GateProfile, i: int) -> Measure:
    p = prof.params
    n, retry, give_up = int(p.get("neighbours", 32)), float(p.get("retry_s", 0.25)), float(p.get("give_up_s", 2.0))
    dut = t.dut.global_address()
    crowd = Crowd(n, t.target.link_prefix)
    ident = 0x4E43 + i
    # built before the clock starts: the tester's own cost per packet is not the DUT's
    requests = {addr: bytes(Ether(src=mac, dst=t.dut.mac) / IPv6(src=addr, dst=dut, hlim=64)
                            / ICMPv6EchoRequest(id=ident, seq=k, data=P.nonce(8)))
                for k, (addr, mac) in enumerate(crowd.macs.items())}
    crowd.foresee(dut, t.dut.mac)
    t.port.add_responder(crowd.responder)
    answered: dict[str, float] = {}
    sent = 0
    sending: list[tuple[float, float]] = []  # the tester sending a round: its time, not the DUT's
    try:
        start = t.now()
        rounds = 0
        while len(answered) < n and t.now() - start < give_up:
            rounds += 1
            began = t.now()
            for addr, frame in requests.items():
                if addr not in answered:
                    t.port.send(frame)
                    sent += 1
            sending.append((began, t.now()))

            def mine(pkt):
                return (ICMPv6EchoReply in pkt and pkt[ICMPv6EchoReply].id == ident
                        and pkt[IPv6].dst in crowd.macs)

            window = min(retry, max(0.0, give_up - (t.now() - start)))
            for f in t.port.collect(t.from_dut(mine), window, since=start,
                                    until=lambda fs: len({f.pkt[IPv6].dst for f in fs}) >= n):
                answered.setdefault(f.pkt[IPv6].dst, f.time)
    finally:
        t.port.remove_responder(crowd.responder)
    per_node = sorted((answered[a] - start) * 1000 for a in answered)
    delays = sorted((b - a) * 1000 for a, b in crowd.waits)
    raw = {"neighbours": n, "answered": len(answered), "rounds": rounds, "echo_requests": sent,
           "solicited": len(crowd.solicited), "ns_answered": len(crowd.waits),
           "first_reply_ms": round(per_node[0], 3) if per_node else None,
           "median_reply_ms": round(statistics.median(per_node), 3) if per_node else None,
           "tester_na_ms_max": round(delays[-1], 3) if delays else None}
    if len(answered) < n:
        return Measure({"time": give_up * 1000}, 0.0, 0.0, raw)
    wall = per_node[-1]
    tester = union_s(sending + crowd.waits, start, start + wall / 1000) * 1000
    total = max(0.0, wall - tester)
    raw.update(wall_ms=round(wall, 3), tester_ms=round(tester, 3))
    raw["neighbours_per_s"] = round(n / (total / 1000), 1) if total > 0 else None
    return Measure({"time": round(total, 3)}, 0.0, 0.0, raw)


register_workload(Workload("nd_churn", compare=frozenset({"target"}), metrics={"time": ("ms", False)},
                           params=frozenset({"neighbours", "retry_s", "give_up_s"}), sample=nd_churn))
