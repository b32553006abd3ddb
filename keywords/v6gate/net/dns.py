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


#: RFC 9463 §6: the Encrypted DNS option of Router Advertisements
ND_OPT_ENCRYPTED_DNS = 144
SVC_KEY_ALPN, SVC_KEY_PORT = 1, 3  # RFC 9460 §14.3.2
DOT_PORT = 853  # RFC 7858 §3.1


def _dns_wire(name: str) -> bytes:
    return b"".join(bytes([len(label)]) + label.encode() for label in name.rstrip(".").split(".")) + b"\0"


def encrypted_dns_option(adn: str, addresses: list[str], *, alpn: tuple[str, ...] = ("dot",), priority: int = 1,
                         lifetime: int = 600, port: int | None = None):
    """An Encrypted DNS option (RFC 9463 §6): Service Priority, Lifetime,
    the Authentication Domain Name, the resolver's addresses and its
    SvcParams (alpn, and port when not the protocol's default), zero-padded
    to a multiple of 8 octets."""
    import ipaddress
    import struct

    from scapy.packet import Raw

    adn_wire = _dns_wire(adn)
    addrs = b"".join(ipaddress.IPv6Address(a).packed for a in addresses)
    alpn_value = b"".join(bytes([len(p)]) + p.encode() for p in alpn)
    params = struct.pack("!HH", SVC_KEY_ALPN, len(alpn_value)) + alpn_value
    if port is not None:
        params += struct.pack("!HHH", SVC_KEY_PORT, 2, port)
    body = (struct.pack("!HI", priority, lifetime) + struct.pack("!H", len(adn_wire)) + adn_wire
            + struct.pack("!H", len(addrs)) + addrs + struct.pack("!H", len(params)) + params)
    total = 2 + len(body)
    total += (-total) % 8
    return Raw(bytes([ND_OPT_ENCRYPTED_DNS, total // 8]) + body + b"\0" * (total - 2 - len(body)))


def parse_encrypted_dns(option: bytes) -> dict | None:
    """(priority, lifetime, adn, addresses, alpn, port) of an Encrypted DNS option, or None if malformed."""
    import ipaddress
    import struct

    try:
        if option[0] != ND_OPT_ENCRYPTED_DNS:
            return None
        priority, lifetime, adn_len = struct.unpack("!HIH", option[2:10])
        off = 10 + adn_len
        labels, i = [], 10
        while option[i]:
            labels.append(option[i + 1:i + 1 + option[i]].decode())
            i += 1 + option[i]
        addr_len = struct.unpack("!H", option[off:off + 2])[0]
        addrs = [str(ipaddress.IPv6Address(option[off + 2 + k:off + 18 + k])) for k in range(0, addr_len, 16)]
        off += 2 + addr_len
        plen = struct.unpack("!H", option[off:off + 2])[0]
        params, alpn, port = option[off + 2:off + 2 + plen], [], None
        j = 0
        while j + 4 <= len(params):
            key, vlen = struct.unpack("!HH", params[j:j + 4])
            value = params[j + 4:j + 4 + vlen]
            if key == SVC_KEY_ALPN:
                k = 0
                while k < len(value):
                    alpn.append(value[k + 1:k + 1 + value[k]].decode())
                    k += 1 + value[k]
            elif key == SVC_KEY_PORT and vlen == 2:
                port = struct.unpack("!H", value)[0]
            j += 4 + vlen
        return {"priority": priority, "lifetime": lifetime, "adn": ".".join(labels), "addresses": addrs,
                "alpn": alpn, "port": port}
    except (IndexError, ValueError, struct.error, UnicodeDecodeError):
        return None
