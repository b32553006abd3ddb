"""How many parts of a check run side by side: the room in the DUT's
Neighbor Cache, found out rather than assumed.

Parts of a Neighbor Cache check run side by side on a DUT the run does not
rebuild (core/together.py), each with a neighbour of its own.  Their
entries must all stay in the DUT's cache while they run, beside those the
previous batch left: in the worst case that batch's entries are still
REACHABLE, and a small cache may not evict a REACHABLE entry to make room
(lwIP's, 10 entries by default, replaces STALE, PROBE, DELAY and INCOMPLETE
ones only).  With the DUT's default router and the tester's own entry, a
batch of n parts needs ``2 n + 2`` entries: ``SAFE_PARTS`` (4) fit in
lwIP's 10, and are what a run assumes of a DUT it knows nothing about.

Where a check has more parts than that, the run first finds out whether the
DUT holds the room for ``MAX_PARTS`` (6): it makes ``2 x 6 + 2`` fresh
neighbours REACHABLE (an Echo Request from each; the DUT's Neighbor
Solicitation answered with a solicited NA), then asks each again: an entry
the DUT still holds gets its Echo Reply at once, one it dropped gets a
multicast Neighbor Solicitation first (address resolution again).  Only if
every one was held do batches take MAX_PARTS; otherwise SAFE_PARTS, as
before (the probe stops at the first neighbour the DUT does not take).  The probe's entries are then made STALE (an unsolicited NA, S=0
O=1, with another link-layer address, RFC 4861 §7.2.5), so that a cache
that evicts only STALE entries can still make room for the checks' own.
It runs once per run, in its own pcap (``results.json``: ``run.neighbour_room``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6NDOptDstLLAddr,
    IPv6,
)

from ..net import match as M
from ..net import packets as P
from ..net.nd import ND_HOP_LIMIT
from ..net.nodes import EmulatedNode
from ..net.port import Port

#: parts side by side on a DUT whose Neighbor Cache the run has not found out: 2 x 4 + 2 entries fit in lwIP's 10
SAFE_PARTS = 4
#: parts side by side on a DUT that held ``entries_for(MAX_PARTS)`` fresh neighbours at once
MAX_PARTS = 6


def entries_for(parts: int) -> int:
    """The Neighbor Cache entries a batch of ``parts`` may need at once: its
    own, the previous batch's (still REACHABLE), the DUT's default router
    and the tester's own entry."""
    return 2 * parts + 2


@dataclass
class Probe:
    """What the probe found: how many fresh neighbours the DUT held at once."""

    asked: int
    taken: int = 0  # neighbours the DUT resolved and answered
    held: int = 0  # of those, still in its cache once all were made
    dropped: list[str] = field(default_factory=list)  # how each one not held showed it
    pcap: str | None = None

    @property
    def parts(self) -> int:
        return MAX_PARTS if self.held >= self.asked else SAFE_PARTS


class NeighbourRoom:
    """The run's answer to "how many parts side by side", found out once."""

    def __init__(self, session):
        self.session = session
        self.probe: Probe | None = None
        self._lock = threading.Lock()

    def parts(self, want: int) -> int:
        """How many of ``want`` parts may run side by side now."""
        if want <= SAFE_PARTS:
            return want
        with self._lock:
            if self.probe is None:
                self.probe = self._run_probe()
        return min(want, self.probe.parts)

    def summary(self) -> dict | None:
        p = self.probe
        if p is None:
            return None
        return {"asked": p.asked, "taken": p.taken, "held": p.held, "parts_side_by_side": p.parts,
                "safe_parts": SAFE_PARTS, "dropped": p.dropped[:8], "pcap": p.pcap}

    def _run_probe(self) -> Probe:
        from ..net.capture import pcap_path_for
        from ..paths import shown

        s = self.session
        pcap = pcap_path_for(s.run_dir, "run.neighbour_room", None, "run")
        timing = s.pace.timing() if s.pace is not None else s.target.timing
        try:
            s.capture.begin(pcap)
            try:
                found = probe(s.port, s.target.dut_mac, s.dut.link_local, entries_for(MAX_PARTS),
                              float(timing["reply_timeout_s"]))
            finally:
                s.capture.end()
        except Exception as exc:  # the bench's own health is judged around each part; here: assume the small cache
            return Probe(asked=entries_for(MAX_PARTS), dropped=[f"the probe did not run: {type(exc).__name__}: {exc}"])
        found.pcap = shown(pcap)
        return found


def probe(port: Port, dut_mac: str, dut_ll: str, n: int, reply_timeout: float) -> Probe:
    """Make ``n`` fresh neighbours REACHABLE in the DUT, then ask each
    again: how many it still holds (see the module docstring)."""
    dut_mac = dut_mac.lower()
    nodes = [EmulatedNode.fresh(f"NC{i + 1}") for i in range(n)]
    found = Probe(asked=n)
    for node in nodes:
        port.add_responder(node.responder)
    try:
        taken = []
        for i, node in enumerate(nodes):
            req = _echo(node, dut_mac, dut_ll, 0x4E00 + i)
            since = port.send(req)
            if port.expect(_reply_to(node, dut_mac, req), reply_timeout + 1.0, since=since) is None:
                # the answer is known (not all held): a small cache is not kept waiting for the rest
                found.dropped.append(f"{node.link_local}: no Echo Reply when it was new (neighbour {i + 1} of {n}; "
                                     "the rest not asked)")
                break
            taken.append((i, node))
        found.taken = len(taken)
        for i, node in taken:
            req = _echo(node, dut_mac, dut_ll, 0x4E80 + i)
            since = port.send(req)
            reply = port.expect(_reply_to(node, dut_mac, req), reply_timeout, since=since)
            resolved = port.collect(_resolved(dut_mac, node.link_local), 0, since=since)
            if reply is not None and not resolved:
                found.held += 1
            else:
                found.dropped.append(f"{node.link_local}: " + ("resolved again (multicast NS)" if resolved
                                                               else "no Echo Reply the second time"))
        for _, node in taken:  # STALE, so that a cache that keeps REACHABLE entries can evict them
            port.send(node.ipv6(dut_ll, dut_mac, src=node.link_local, hlim=ND_HOP_LIMIT)
                      / ICMPv6ND_NA(R=0, S=0, O=1, tgt=node.link_local) / ICMPv6NDOptDstLLAddr(lladdr=P.random_mac()))
    finally:
        for node in nodes:
            port.remove_responder(node.responder)
    return found


def _echo(node: EmulatedNode, dut_mac: str, dut_ll: str, ident: int):
    return node.ipv6(dut_ll, dut_mac, src=node.link_local, hlim=64) / ICMPv6EchoRequest(id=ident, seq=1,
                                                                                        data=P.nonce(8))


def _reply_to(node: EmulatedNode, dut_mac: str, req):
    return M.all_of(M.from_mac(dut_mac), M.echo_reply_to(req), M.ipv6_to(node.link_local))


def _resolved(dut_mac: str, addr: str):
    """The DUT's address resolution for ``addr``: a multicast NS for it."""
    return M.all_of(M.from_mac(dut_mac), M.ns_for(addr), lambda p: P.is_multicast(p[IPv6].dst))
