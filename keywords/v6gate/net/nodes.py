"""Nodes the tester emulates on the DUT's link (TAHI's TN1, TR1, ...).

Each check gets fresh identities (random MAC and interface identifier), so
the DUT has no neighbour cache entry, no destination cache entry and no
router entry for them: "no NCE" is the starting state without any reset.

An emulated node behaves like a minimal conforming node unless told
otherwise: it answers Neighbor Solicitations for its addresses (RFC 4861
§7.2.4) and, if enabled, Echo Requests sent to it (RFC 4443 §4.2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6NDOptDstLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether

from . import packets as P
from .port import Frame, Port


@dataclass
class EmulatedNode:
    name: str
    mac: str
    link_local: str
    global_addr: str | None = None
    is_router: bool = False
    answers_ns: bool = True
    answers_echo: bool = True
    extra_addrs: list[str] = field(default_factory=list)
    #: log of (time, summary) for every automatic answer, for the evidence
    answered: list = field(default_factory=list)
    #: a node beyond a router: the path to it (scenario/firsthop.py sets it)
    offlink: Any = None

    @classmethod
    def fresh(cls, name: str, prefix=None, *, router: bool = False) -> EmulatedNode:
        mac = P.random_mac()
        iid = P.random_iid()
        ll = P.address_in("fe80::/64", iid)
        glob = P.address_in(prefix, iid) if prefix is not None else None
        return cls(name, mac, ll, glob, is_router=router)

    def addresses(self) -> list[str]:
        return [a for a in (self.link_local, self.global_addr, *self.extra_addrs) if a]

    def owns(self, addr: str) -> bool:
        return any(P.same_address(addr, a) for a in self.addresses())

    def source_for(self, dst: str) -> str:
        """RFC 6724 in miniature: link-local to link-scoped destinations, else global."""
        if P.is_link_scoped(dst) or not self.global_addr:
            return self.link_local
        return self.global_addr

    def ether(self, dst_mac: str) -> Ether:
        return Ether(src=self.mac, dst=dst_mac)

    def ipv6(self, dst: str, dst_mac: str, src: str | None = None, **fields) -> Ether:
        """Ether/IPv6 from this node to dst (multicast destinations get the 33:33 MAC)."""
        if P.is_multicast(dst):
            dst_mac = P.multicast_mac(dst)
        return Ether(src=self.mac, dst=dst_mac) / IPv6(src=src or self.source_for(dst), dst=dst, **fields)

    # -- automatic behaviour ----------------------------------------------------
    def responder(self, port: Port, frame: Frame) -> None:
        pkt = frame.pkt
        if IPv6 not in pkt:
            return
        if self.answers_ns and ICMPv6ND_NS in pkt and self.owns(pkt[ICMPv6ND_NS].tgt) and pkt[IPv6].hlim == 255:
            self._answer_ns(port, pkt)
        elif self.answers_echo and ICMPv6EchoRequest in pkt and self.owns(pkt[IPv6].dst):
            req = pkt[ICMPv6EchoRequest]
            reply = (Ether(src=self.mac, dst=pkt[Ether].src)
                     / IPv6(src=pkt[IPv6].dst, dst=pkt[IPv6].src, hlim=64)
                     / ICMPv6EchoReply(id=req.id, seq=req.seq, data=req.data))
            port.send(reply)
            self.answered.append((frame.time, f"{self.name} answered Echo Request from {pkt[IPv6].src}"))

    def _answer_ns(self, port: Port, pkt) -> None:
        ns = pkt[ICMPv6ND_NS]
        src = pkt[IPv6].src
        if src == P.UNSPECIFIED:  # DAD probe for one of our addresses: defend it (RFC 4862 §5.4.3)
            dst, dst_mac, solicited = P.ALL_NODES, P.multicast_mac(P.ALL_NODES), 0
        else:
            dst, dst_mac, solicited = src, pkt[Ether].src, 1
        na = (Ether(src=self.mac, dst=dst_mac)
              / IPv6(src=ns.tgt, dst=dst, hlim=255)
              / ICMPv6ND_NA(R=int(self.is_router), S=solicited, O=1, tgt=ns.tgt)
              / ICMPv6NDOptDstLLAddr(lladdr=self.mac))
        port.send(na)
        self.answered.append((port.now(), f"{self.name} answered NS for {ns.tgt} from {src}"))
