"""IPv6-only readiness on the wire.

* Rules shared by the active checks (Scapy frames) and the passive audit
  (tshark fields): what counts as IPv4 from a host on an IPv6-only link,
  and what RFC 8925 still allows (``classify_ipv4``); RFC 6052 address
  arithmetic for NAT64 prefixes.
* What the tester plays on the link for these checks: a DNS server, a
  DHCPv6 server for "other configuration" (RFC 8415 §18.2.6), a peer with
  an IPv4 and an IPv6 address that accepts TCP connections, and the
  Router Advertisement options that carry resolvers (RFC 8106 RDNSS) and
  the NAT64 prefix (RFC 8781 PREF64).

Everything here is address-family explicit: IPv4 only appears where a
check asks for it.
"""

from __future__ import annotations

import ipaddress
import secrets
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (not at run time: the audit imports this module without Scapy, see audit/hosts.py)
    from .nodes import EmulatedNode

# -- RFC numbers ---------------------------------------------------------------------------
ETH_P_IPV4 = 0x0800
ETH_P_ARP = 0x0806
ETH_P_IPV6 = 0x86DD
DHCP_SERVER_PORT = 67
DHCP_CLIENT_PORT = 68
DNS_PORT = 53
#: RFC 8925 §3.1: the IPv6-Only Preferred option
OPTION_V6ONLY_PREFERRED = 108
#: RFC 8925 §3.4
MIN_V6ONLY_WAIT_S = 300
#: RFC 2131 §4.1: the first retransmission of a DHCP client, 4 s randomized by +-1 s
DHCP_FIRST_RETRANSMIT_S = 4 + 1
#: RFC 8415 §18.2.6 / §7.6: Information-Request is delayed up to INF_MAX_DELAY
INF_MAX_DELAY_S = 1.0
#: RFC 7050 §2.2: the well-known IPv4-only name and its two addresses
IPV4ONLY_ARPA = "ipv4only.arpa"
WELL_KNOWN_IPV4 = ("192.0.0.170", "192.0.0.171")
DNS_QTYPE = {1: "A", 28: "AAAA"}

DHCP_MESSAGE = {1: "DHCPDISCOVER", 2: "DHCPOFFER", 3: "DHCPREQUEST", 4: "DHCPDECLINE", 5: "DHCPACK",
                6: "DHCPNAK", 7: "DHCPRELEASE", 8: "DHCPINFORM"}


# -- what a host sends on an IPv6-only link ------------------------------------------------
ARP = "ARP"
DHCPV4_RFC8925 = "DHCPv4 requesting option 108"
DHCPV4 = "DHCPv4 without option 108"
IPV4 = "other IPv4"


def classify_ipv4(ethertype: int | None, *, udp_sport: int | None = None, udp_dport: int | None = None,
                  dhcp_prl: list[int] | tuple[int, ...] | None = None) -> str | None:
    """The kind of IPv4-family frame a host sent (None: not IPv4 or ARP).

    RFC 8925 §3.2 lets a host on an IPv6-mostly link run DHCPv4 only to
    learn that IPv6-only is preferred: a client message (to port 67) whose
    Parameter Request List asks for option 108.  Anything else (ARP, other
    DHCPv4, any other IPv4 packet) is IPv4 the host depends on."""
    if ethertype == ETH_P_ARP:
        return ARP
    if ethertype != ETH_P_IPV4:
        return None
    if udp_sport == DHCP_CLIENT_PORT and udp_dport == DHCP_SERVER_PORT:
        return DHCPV4_RFC8925 if OPTION_V6ONLY_PREFERRED in (dhcp_prl or ()) else DHCPV4
    return IPV4


def allowed_on_ipv6_only_link(kind: str | None) -> bool:
    return kind is None or kind == DHCPV4_RFC8925


# -- RFC 6052 ------------------------------------------------------------------------------
#: RFC 8781 §4: Prefix Length Code -> prefix length
PREF64_PLC = {0: 96, 1: 64, 2: 56, 3: 48, 4: 40, 5: 32}
PREF64_PLC_OF = {v: k for k, v in PREF64_PLC.items()}


def nat64_address(prefix: str | ipaddress.IPv6Network, ipv4: str) -> str:
    """The IPv4-embedded IPv6 address (RFC 6052 §2.2): the IPv4 address
    after the prefix, skipping bits 64..71 (the "u" octet)."""
    net = ipaddress.IPv6Network(prefix)
    if net.prefixlen not in PREF64_PLC_OF:
        raise ValueError(f"{net}: a NAT64 prefix is /32, /40, /48, /56, /64 or /96 (RFC 6052 §2.2)")
    v4 = ipaddress.IPv4Address(ipv4).packed
    out = bytearray(net.network_address.packed)
    pos = net.prefixlen // 8
    for b in v4:
        if pos == 8:
            pos += 1  # the u octet stays zero
        out[pos] = b
        pos += 1
    return str(ipaddress.IPv6Address(bytes(out)))


def nat64_extract(prefix: str | ipaddress.IPv6Network, address: str) -> str | None:
    """The IPv4 address embedded in ``address`` under ``prefix`` (None: not in it)."""
    net = ipaddress.IPv6Network(prefix)
    a = ipaddress.IPv6Address(address)
    if a not in net:
        return None
    raw = a.packed
    pos = net.prefixlen // 8
    v4 = bytearray()
    while len(v4) < 4:
        if pos == 8:
            pos += 1
        v4.append(raw[pos])
        pos += 1
    return str(ipaddress.IPv4Address(bytes(v4)))


def prefix_from_ipv4only_answer(aaaa: str) -> str | None:
    """RFC 7050 §3: the NAT64 prefix behind a synthesized AAAA of
    ipv4only.arpa (the well-known IPv4 address found at a /96../32 position)."""
    for plen in (96, 64, 56, 48, 40, 32):
        net = ipaddress.IPv6Network(f"{aaaa}/{plen}", strict=False)
        if nat64_extract(net, aaaa) in WELL_KNOWN_IPV4:
            return str(net)
    return None


# -- frames (Scapy) -------------------------------------------------------------------------
def dhcp_options(pkt) -> dict:
    """DHCPv4 options of a Scapy frame as a dict (name -> value)."""
    from scapy.layers.dhcp import DHCP

    out = {}
    if DHCP not in pkt:
        return out
    for opt in pkt[DHCP].options:
        if isinstance(opt, tuple) and len(opt) >= 2:
            out[opt[0]] = opt[1] if len(opt) == 2 else opt[1:]
    return out


def dhcp_message(pkt) -> str | None:
    mtype = dhcp_options(pkt).get("message-type")
    return DHCP_MESSAGE.get(mtype) if isinstance(mtype, int) else None


def dhcp_prl(pkt) -> list[int]:
    prl = dhcp_options(pkt).get("param_req_list") or []
    return list(prl) if isinstance(prl, list | tuple | bytes) else [prl]


def ipv4_kind_of(pkt) -> str | None:
    """``classify_ipv4`` for a Scapy frame."""
    from scapy.layers.inet import UDP
    from scapy.layers.l2 import ARP as ArpLayer
    from scapy.layers.l2 import Ether

    if ArpLayer in pkt:
        return ARP
    if Ether not in pkt:
        return None
    etype = pkt[Ether].type
    if etype == 0x8100 and hasattr(pkt[Ether].payload, "type"):
        etype = pkt[Ether].payload.type
    sport = dport = None
    if etype == ETH_P_IPV4 and UDP in pkt:
        sport, dport = pkt[UDP].sport, pkt[UDP].dport
    return classify_ipv4(etype, udp_sport=sport, udp_dport=dport,
                         dhcp_prl=dhcp_prl(pkt) if dport == DHCP_SERVER_PORT else None)


def describe_ipv4_frame(frame, t0: float) -> str:
    """One line for a triager: what, when (relative to t0), addresses."""
    from scapy.layers.inet import IP
    from scapy.layers.l2 import ARP as ArpLayer

    pkt = frame.pkt
    kind = ipv4_kind_of(pkt)
    when = f"+{frame.time - t0:.2f} s"
    if ArpLayer in pkt:
        a = pkt[ArpLayer]
        op = {1: "who-has", 2: "is-at"}.get(a.op, f"op {a.op}")
        return f"ARP {op} {a.pdst} from {a.psrc} at {when}"
    msg = dhcp_message(pkt)
    if msg:
        return f"{msg} with parameter request list {dhcp_prl(pkt)} at {when} ({kind})"
    if IP in pkt:
        return f"IPv4 {pkt[IP].src} -> {pkt[IP].dst} proto {pkt[IP].proto} at {when}"
    return f"{kind} frame at {when}"


def summarize_ipv4(frames, t0: float, *, allowed: bool = False) -> tuple[dict[str, int], list[str]]:
    """Counts per kind and the first frame of each kind, of the frames
    that are IPv4 the host depends on (or, allowed=True, every IPv4 frame)."""
    counts: dict[str, int] = {}
    firsts: list[str] = []
    for f in frames:
        kind = ipv4_kind_of(f.pkt)
        if kind is None or (not allowed and allowed_on_ipv6_only_link(kind)):
            continue
        if kind not in counts:
            firsts.append(describe_ipv4_frame(f, t0))
        counts[kind] = counts.get(kind, 0) + 1
    return counts, firsts


# -- what the tester plays ------------------------------------------------------------------
def _norm(name) -> str:
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    return name.rstrip(".").lower()


def unique_name(label: str, domain: str = "v6gate.test") -> str:
    """A name nobody has cached (RFC 6761 reserves .test for testing)."""
    return f"{label}-{secrets.token_hex(4)}.{domain}"


@dataclass
class DnsQuery:
    time: float
    family: int  # 4 or 6
    src: str
    dst: str
    qname: str
    qtype: str


@dataclass
class DnsServer:
    """An authoritative-looking DNS server at the emulated node's addresses
    (UDP).  ``records``: name -> {"AAAA": [...], "A": [...]}; other names
    get NXDOMAIN, other types of a known name NODATA."""

    node: EmulatedNode
    records: dict = field(default_factory=dict)
    ttl: int = 30
    queries: list = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, rtype: str, *values: str) -> None:
        self.records.setdefault(_norm(name), {}).setdefault(rtype, []).extend(values)

    def queries_for(self, name: str) -> list[DnsQuery]:
        with self._lock:
            return [q for q in self.queries if q.qname == _norm(name)]

    def responder(self, port, frame) -> None:
        from scapy.layers.dns import DNS, DNSRR
        from scapy.layers.inet import UDP
        from scapy.layers.inet6 import IPv6
        from scapy.layers.l2 import Ether

        pkt = frame.pkt
        if UDP not in pkt or pkt[UDP].dport != DNS_PORT or DNS not in pkt or IPv6 not in pkt:
            return
        ip = pkt[IPv6]
        if not self.node.owns(ip.dst) or pkt[DNS].qr != 0 or not pkt[DNS].qd:
            return
        q = pkt[DNS].qd[0]
        name = _norm(q.qname)
        qtype = DNS_QTYPE.get(q.qtype, str(q.qtype))
        with self._lock:
            self.queries.append(DnsQuery(frame.time, 6, ip.src, ip.dst, name, qtype))
        known = self.records.get(name)
        answers = [DNSRR(rrname=q.qname, type=qtype, rdata=v, ttl=self.ttl) for v in (known or {}).get(qtype, [])]
        reply = (Ether(src=self.node.mac, dst=pkt[Ether].src) / IPv6(src=ip.dst, dst=ip.src)
                 / UDP(sport=DNS_PORT, dport=pkt[UDP].sport)
                 / DNS(id=pkt[DNS].id, qr=1, aa=1, rd=pkt[DNS].rd, ra=1, rcode=0 if known else 3, qd=pkt[DNS].qd,
                       an=answers))
        port.send(reply)


@dataclass
class Dhcp6InfoServer:
    """A stateless DHCPv6 server (RFC 8415 §18.3.6): answers
    Information-Request with the DNS Recursive Name Server option (RFC 3646)."""

    node: EmulatedNode
    dns_servers: list
    requests: list = field(default_factory=list)

    def responder(self, port, frame) -> None:
        from scapy.layers.dhcp6 import (
            DUID_LL,
            DHCP6_InfoRequest,
            DHCP6_Reply,
            DHCP6OptClientId,
            DHCP6OptDNSServers,
            DHCP6OptServerId,
        )
        from scapy.layers.inet import UDP
        from scapy.layers.inet6 import IPv6
        from scapy.layers.l2 import Ether

        pkt = frame.pkt
        if DHCP6_InfoRequest not in pkt or IPv6 not in pkt:
            return
        req = pkt[DHCP6_InfoRequest]
        self.requests.append((frame.time, pkt[IPv6].src))
        reply = (Ether(src=self.node.mac, dst=pkt[Ether].src) / IPv6(src=self.node.link_local, dst=pkt[IPv6].src)
                 / UDP(sport=547, dport=546) / DHCP6_Reply(trid=req.trid)
                 / DHCP6OptServerId(duid=DUID_LL(lladdr=self.node.mac)))
        if DHCP6OptClientId in pkt:
            reply = reply / DHCP6OptClientId(duid=pkt[DHCP6OptClientId].duid)
        port.send(reply / DHCP6OptDNSServers(dnsservers=list(self.dns_servers)))


@dataclass
class Syn:
    time: float
    family: int
    src: str
    dst: str
    dport: int


@dataclass
class TcpPeer:
    """A peer that accepts TCP connections on ``ports`` at the emulated
    node's IPv6 addresses and, when given, at ``ipv4`` (answering ARP for
    it): SYN -> SYN-ACK, FIN -> FIN-ACK, data -> ACK.  Records every SYN."""

    node: EmulatedNode
    ports: tuple
    ipv4: str | None = None
    syns: list = field(default_factory=list)
    arp_requests: list = field(default_factory=list)
    _isn: int = field(default_factory=lambda: secrets.randbits(32))

    def responder(self, port, frame) -> None:
        from scapy.layers.inet import IP, TCP
        from scapy.layers.inet6 import IPv6
        from scapy.layers.l2 import ARP as ArpLayer
        from scapy.layers.l2 import Ether

        pkt = frame.pkt
        if self.ipv4 and ArpLayer in pkt and pkt[ArpLayer].op == 1 and pkt[ArpLayer].pdst == self.ipv4:
            a = pkt[ArpLayer]
            self.arp_requests.append((frame.time, a.psrc))
            port.send(Ether(src=self.node.mac, dst=pkt[Ether].src)
                      / ArpLayer(op=2, hwsrc=self.node.mac, psrc=self.ipv4, hwdst=a.hwsrc, pdst=a.psrc))
            return
        if TCP not in pkt or pkt[TCP].dport not in self.ports:
            return
        if IPv6 in pkt and self.node.owns(pkt[IPv6].dst):
            ip, family = pkt[IPv6], 6
            head = IPv6(src=ip.dst, dst=ip.src)
        elif IP in pkt and self.ipv4 and pkt[IP].dst == self.ipv4:
            ip, family = pkt[IP], 4
            head = IP(src=ip.dst, dst=ip.src)
        else:
            return
        tcp = pkt[TCP]
        flags = str(tcp.flags)
        base = Ether(src=self.node.mac, dst=pkt[Ether].src) / head
        payload = len(bytes(tcp.payload))
        if "S" in flags and "A" not in flags:
            self.syns.append(Syn(frame.time, family, ip.src, ip.dst, tcp.dport))
            port.send(base / TCP(sport=tcp.dport, dport=tcp.sport, flags="SA", seq=self._isn, ack=tcp.seq + 1,
                                 window=65535))
        elif "F" in flags:
            port.send(base / TCP(sport=tcp.dport, dport=tcp.sport, flags="FA", seq=self._isn + 1,
                                 ack=tcp.seq + payload + 1, window=65535))
        elif payload:
            port.send(base / TCP(sport=tcp.dport, dport=tcp.sport, flags="A", seq=self._isn + 1,
                                 ack=tcp.seq + payload, window=65535))

    def first_syn(self) -> Syn | None:
        return min(self.syns, key=lambda s: s.time) if self.syns else None


def rdnss_option(servers, lifetime: int = 600):
    """RFC 8106 §5.1: lifetime in seconds (recommended >= 3 x MaxRtrAdvInterval)."""
    from scapy.layers.inet6 import ICMPv6NDOptRDNSS

    return ICMPv6NDOptRDNSS(dns=list(servers), lifetime=lifetime)


def pref64_option(prefix: str | ipaddress.IPv6Network, lifetime: int = 1800):
    """RFC 8781 §4: the lifetime travels in units of 8 s (13 bits)."""
    from scapy.layers.inet6 import ICMPv6NDOptPREF64

    net = ipaddress.IPv6Network(prefix)
    return ICMPv6NDOptPREF64(prefix=str(net.network_address), plc=PREF64_PLC_OF[net.prefixlen],
                             scaledlifetime=min(8191, (lifetime + 7) // 8))


def arp_probe(src_mac: str, target_ipv4: str):
    """An ARP Probe (RFC 5227 §2.1.1: sender address 0.0.0.0) asking who has ``target_ipv4``."""
    from scapy.layers.l2 import ARP as ArpLayer
    from scapy.layers.l2 import Ether

    return Ether(src=src_mac, dst="ff:ff:ff:ff:ff:ff") / ArpLayer(op=1, hwsrc=src_mac, psrc="0.0.0.0",
                                                                 hwdst="00:00:00:00:00:00", pdst=target_ipv4)


def parse_addresses(text: str) -> list[str]:
    """Every IPv4/IPv6 address in a control adapter's resolver output
    (``getent ahosts`` lines, or one address per line), first-seen order."""
    out: list[str] = []
    for tok in text.replace(",", " ").split():
        try:
            a = str(ipaddress.ip_address(tok.strip("[]")))
        except ValueError:
            continue
        if a not in out:
            out.append(a)
    return out
