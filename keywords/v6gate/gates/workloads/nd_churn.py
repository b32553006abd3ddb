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
slow sample (``give_up_s``), not a hang."""

from __future__ import annotations

import statistics

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6NDOptDstLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether

from ...net import packets as P
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload


class Crowd:
    """``n`` fresh on-link nodes in ``prefix``, one responder answering the DUT's NS for any of them."""

    def __init__(self, n: int, prefix):
        self.macs = {P.address_in(prefix, P.random_iid()): P.random_mac() for _ in range(n)}
        self.solicited: dict[str, float] = {}  # address -> time of the DUT's first NS for it
        self._na: dict[tuple, bytes] = {}  # (target, the NS's source, its MAC) -> the NA, built once

    def responder(self, port, frame) -> None:
        pkt = frame.pkt
        if ICMPv6ND_NS not in pkt or pkt[IPv6].hlim != 255:
            return
        tgt = pkt[ICMPv6ND_NS].tgt
        mac = self.macs.get(tgt)
        if mac is None or pkt[IPv6].src == P.UNSPECIFIED:
            return
        self.solicited.setdefault(tgt, frame.time)
        key = (tgt, pkt[IPv6].src, pkt[Ether].src)
        na = self._na.get(key)
        if na is None:
            na = self._na[key] = bytes(Ether(src=mac, dst=key[2]) / IPv6(src=tgt, dst=key[1], hlim=255)
                                       / ICMPv6ND_NA(R=0, S=1, O=1, tgt=tgt) / ICMPv6NDOptDstLLAddr(lladdr=mac))
        port.send(na)


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
    t.port.add_responder(crowd.responder)
    answered: dict[str, float] = {}
    sent = 0
    try:
        start = t.now()
        rounds = 0
        while len(answered) < n and t.now() - start < give_up:
            rounds += 1
            for addr, frame in requests.items():
                if addr not in answered:
                    t.port.send(frame)
                    sent += 1

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
    raw = {"neighbours": n, "answered": len(answered), "rounds": rounds, "echo_requests": sent,
           "solicited": len(crowd.solicited),
           "first_reply_ms": round(per_node[0], 3) if per_node else None,
           "median_reply_ms": round(statistics.median(per_node), 3) if per_node else None}
    if len(answered) < n:
        return Measure({"time": give_up * 1000}, 0.0, 0.0, raw)
    total = per_node[-1]
    raw["neighbours_per_s"] = round(n / (total / 1000), 1) if total > 0 else None
    return Measure({"time": round(total, 3)}, 0.0, 0.0, raw)


register_workload(Workload("nd_churn", compare=frozenset({"target"}), metrics={"time": ("ms", False)},
                           params=frozenset({"neighbours", "retry_s", "give_up_s"}), sample=nd_churn))
