"""Repair rules for the dns area (``protocol: udp``): a stub resolver with
one mistake.  ``direction: in`` changes the DNS answers the DUT's kernel
receives (as that resolver would read them), ``direction: out`` the queries
it sends (as that resolver would build them).  Each rule rebuilds the
packet with Scapy, which recomputes the lengths and the UDP checksum."""

from __future__ import annotations

from scapy.layers.dns import DNS, DNSRROPT
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6

from ..repair import repair

DNS_PORT = 53


def _dns(packet: bytes, *, answer: bool):
    """The packet parsed, when it is a DNS answer (``answer``) or query over UDP port 53."""
    try:
        pkt = IPv6(packet)
    except Exception:
        return None
    if UDP not in pkt or DNS not in pkt:
        return None
    port = pkt[UDP].sport if answer else pkt[UDP].dport
    if port != DNS_PORT or bool(pkt[DNS].qr) != answer:
        return None
    return pkt


def _rebuilt(pkt) -> bytes:
    del pkt[IPv6].plen
    del pkt[UDP].len
    del pkt[UDP].chksum
    return bytes(pkt)


@repair("dns_clear_truncation")
def dns_clear_truncation(packet: bytes, dut: dict, **_):
    """A resolver that ignores TC: an answer with TC=1 reads as complete
    (its empty answer section is taken as the answer)."""
    pkt = _dns(packet, answer=True)
    if pkt is None or not pkt[DNS].tc:
        return None
    pkt[DNS].tc = 0
    return _rebuilt(pkt)


@repair("dns_answer_from_any_address")
def dns_answer_from_any_address(packet: bytes, dut: dict, resolver: str = "", **_):
    """A resolver that does not check where an answer comes from: an answer
    from any other address reads as if its server (``resolver``) sent it."""
    pkt = _dns(packet, answer=True)
    if pkt is None or not resolver or pkt[IPv6].src == resolver:
        return None
    pkt[IPv6].src = resolver
    return _rebuilt(pkt)


@repair("dns_query_edns")
def dns_query_edns(packet: bytes, dut: dict, payload: int | None = None, **_):
    """The OPT record of the DUT's queries: removed (``payload`` None: a
    resolver without EDNS(0)), or added/set to advertise ``payload``."""
    pkt = _dns(packet, answer=False)
    if pkt is None:
        return None
    msg = pkt[DNS]
    others = [rr for rr in (msg.ar or []) if not isinstance(rr, DNSRROPT)]
    opts = [rr for rr in (msg.ar or []) if isinstance(rr, DNSRROPT)]
    if payload is None:
        if not opts:
            return None
        msg.ar = others
    else:
        if opts and all(o.rclass == payload for o in opts):
            return None
        opt = opts[0] if opts else DNSRROPT(z=0)
        opt.rclass = payload
        msg.ar = [*others, opt]
    msg.arcount = None
    return _rebuilt(pkt)


@repair("dns_reverse_in_ip6_int")
def dns_reverse_in_ip6_int(packet: bytes, dut: dict, **_):
    """A resolver of the RFC 1886 era: reverse lookups go to ip6.int
    (withdrawn by RFC 4159) instead of ip6.arpa."""
    pkt = _dns(packet, answer=False)
    if pkt is None or not pkt[DNS].qd:
        return None
    q = pkt[DNS].qd[0]
    name = q.qname.decode(errors="replace") if isinstance(q.qname, bytes) else str(q.qname)
    if not name.lower().rstrip(".").endswith(".ip6.arpa"):
        return None
    q.qname = name.rstrip(".")[: -len("ip6.arpa")] + "ip6.int."
    return _rebuilt(pkt)
