"""A DNS resolver on the tester's side of the link (for RFC 8106 checks):
an emulated node that answers the DUT's queries, and the RA options that
announce it (RDNSS, DNSSL)."""

from __future__ import annotations

from dataclasses import dataclass, field

from scapy.layers.dns import DNS, DNSQR, DNSRR
from scapy.layers.inet import UDP
from scapy.layers.inet6 import ICMPv6NDOptDNSSL, ICMPv6NDOptRDNSS, IPv6
from scapy.layers.l2 import Ether

from .nodes import EmulatedNode
from .port import Frame, Port

DNS_PORT = 53
QTYPES = {1: "A", 28: "AAAA", 33: "SRV", 12: "PTR", 5: "CNAME", 16: "TXT"}


def rdnss_option(servers: list[str], lifetime: int) -> ICMPv6NDOptRDNSS:
    return ICMPv6NDOptRDNSS(lifetime=lifetime, dns=list(servers))


def dnssl_option(domains: list[str], lifetime: int) -> ICMPv6NDOptDNSSL:
    return ICMPv6NDOptDNSSL(lifetime=lifetime, searchlist=[d if d.endswith(".") else d + "." for d in domains])


@dataclass
class Query:
    time: float
    src: str
    dst: str
    name: str
    qtype: str


@dataclass
class Resolver:
    """``node`` answers DNS queries sent to its addresses: AAAA for the
    names in ``records``, an empty NOERROR answer for other types of those
    names, NXDOMAIN for the rest.  Every query is kept in ``queries``."""

    node: EmulatedNode
    records: dict[str, str] = field(default_factory=dict)
    queries: list[Query] = field(default_factory=list)

    def __call__(self, port: Port, frame: Frame) -> None:
        pkt = frame.pkt
        if UDP not in pkt or IPv6 not in pkt or pkt[UDP].dport != DNS_PORT or not self.node.owns(pkt[IPv6].dst):
            return
        if DNS not in pkt or pkt[DNS].qr or not pkt[DNS].qd:
            return
        q = pkt[DNS].qd[0] if isinstance(pkt[DNS].qd, list) else pkt[DNS].qd
        name = q.qname.decode(errors="replace") if isinstance(q.qname, bytes) else str(q.qname)
        self.queries.append(Query(frame.time, pkt[IPv6].src, pkt[IPv6].dst, name, QTYPES.get(q.qtype, str(q.qtype))))
        known = name.rstrip(".").lower() in {n.rstrip(".").lower() for n in self.records}
        answer = None
        if known and q.qtype == 28:
            addr = next(v for n, v in self.records.items() if n.rstrip(".").lower() == name.rstrip(".").lower())
            answer = DNSRR(rrname=q.qname, type="AAAA", ttl=30, rdata=addr)
        reply = (Ether(src=self.node.mac, dst=pkt[Ether].src) / IPv6(src=pkt[IPv6].dst, dst=pkt[IPv6].src)
                 / UDP(sport=DNS_PORT, dport=pkt[UDP].sport)
                 / DNS(id=pkt[DNS].id, qr=1, aa=1, rd=pkt[DNS].rd, ra=1, rcode=0 if known else 3,
                       qd=[DNSQR(qname=q.qname, qtype=q.qtype)], an=[answer] if answer else []))
        port.send(reply)

    def asked(self, since: float = 0.0, name: str | None = None) -> list[Query]:
        want = name.rstrip(".").lower() if name else None
        return [q for q in self.queries if q.time >= since and (want is None or q.name.rstrip(".").lower() == want)]
