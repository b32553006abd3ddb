"""Packets for the offload area: TCP and UDP over IPv6 with chosen transport
checksums (right, wrong, zero), behind a chosen extension header, and the
transport checksum computed independently of Scapy (RFC 8200 §8.1: the
pseudo-header uses the final destination; RFC 768, RFC 9293 §3.1).
"""

from __future__ import annotations

import secrets
import struct

from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Packet

from . import exthdr as X
from . import frag as F

NH_TCP, NH_UDP = X.NH_TCP, X.NH_UDP
#: RFC 4727 §7: Routing Type 253 is reserved for experiments; no stack
#: implements it, so with Segments Left 0 a node must ignore the header and
#: process the next one (RFC 8200 §4.4).  (Type 0 is discarded, RFC 5095;
#: Type 4, the SRH, is dropped by Linux unless seg6 is enabled.)
EXPERIMENTAL_ROUTING_TYPE = 253

#: the extension headers a probe can sit behind: name -> (label, builder of the header(s))
EXTENSIONS = {
    "none": "no extension header",
    "hbh": "a Hop-by-Hop Options header (PadN)",
    "dstopts": "a Destination Options header (PadN)",
    "routing": f"a Routing header of type {EXPERIMENTAL_ROUTING_TYPE} with Segments Left 0",
    "fragment": "a Fragment header (the datagram in two fragments)",
}

#: octets of the transport header/data in the first fragment of a "fragment" probe: the
#: whole fixed TCP header (20) or UDP header (8) must be in it (RFC 8200 §4.5, RFC 7112),
#: the rest (TCP options, UDP data) in the second fragment
FIRST_FRAGMENT = 24


def ones_sum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def l4_checksum(src: bytes, dst: bytes, proto: int, segment: bytes) -> int:
    """The TCP/UDP checksum over the IPv6 pseudo-header (RFC 8200 §8.1) and
    ``segment`` with its checksum field taken as zero."""
    at = 16 if proto == NH_TCP else 6
    seg = segment[:at] + b"\0\0" + segment[at + 2:]
    pseudo = src + dst + struct.pack("!IxxxB", len(seg), proto)
    c = 0xFFFF - ones_sum(pseudo + seg)
    return 0xFFFF if proto == NH_UDP and c == 0 else c


def transport(ip: bytes) -> tuple[int, int] | None:
    """(protocol, offset) of the upper-layer header of an unfragmented IPv6
    packet (bytes), or None if it is a fragment or unparseable."""
    chain = F.header_chain(ip)
    if any(nh == X.NH_FRAGMENT for nh, _, _ in chain[:-1]):
        return None
    nh, start, _ = chain[-1]
    return (nh, start) if nh in (NH_TCP, NH_UDP) and start < len(ip) else None


def checksum_of(ip: bytes, proto: int, start: int) -> tuple[int, int]:
    """(checksum carried, checksum correct) of the segment at ``start``."""
    seg = ip[start:40 + struct.unpack("!H", ip[4:6])[0]]
    at = 16 if proto == NH_TCP else 6
    return struct.unpack("!H", seg[at:at + 2])[0], l4_checksum(ip[8:24], ip[24:40], proto, seg)


def ext_headers(kind: str, upper: int) -> Packet | None:
    if kind == "hbh":
        return X.hop_by_hop(X.padn(6), nh=upper)
    if kind == "dstopts":
        return X.destination_options(X.padn(6), nh=upper)
    if kind == "routing":
        return X.routing(EXPERIMENTAL_ROUTING_TYPE, 0, [], nh=upper)
    return None


def with_checksum(pkt: Packet, layer, how: str) -> Packet:
    """``pkt`` (Ether/IPv6/...) with its TCP or UDP checksum ``how``: 'good'
    (computed), 'bad' (the right one with bits flipped) or 'zero'."""
    built = pkt.__class__(bytes(pkt))
    good = built[layer].chksum
    if how == "good":
        return built
    out = pkt.copy()
    out[layer].chksum = 0 if how == "zero" else ((good ^ 0x5A5A) & 0xFFFF or 0x1234)
    return out.__class__(bytes(out))


def probe(base: Packet, ext: str, segment: Packet, how: str) -> list[Packet]:
    """Frames carrying ``segment`` (TCP()/... or UDP()/...) behind ``ext``
    (a key of EXTENSIONS), its checksum ``how``; ``base`` is Ether/IPv6."""
    layer = TCP if TCP in segment else UDP
    upper = NH_TCP if layer is TCP else NH_UDP
    hdr = ext_headers(ext, upper)
    pkt = base / hdr / segment if hdr is not None else base / segment
    pkt = with_checksum(pkt, layer, how)
    if ext != "fragment":
        return [pkt]
    return F.fragment(pkt, [FIRST_FRAGMENT])


def sport() -> int:
    return 40000 + secrets.randbelow(20000)


def payload(label: str, n: int = 48) -> bytes:
    """A datagram payload with a per-probe token (so an echo is matched to it)."""
    token = f"v6gate-offload {label} {secrets.token_hex(8)} ".encode()
    return (token * (n // len(token) + 1))[:max(n, len(token))]


def udp_echo_of(node_addr: str, port: int, data: bytes):
    """Matcher: the DUT's UDP echo of ``data`` (sent from ``port``) to the node."""

    def m(p):
        return (IPv6 in p and UDP in p and p[UDP].sport == port and p[IPv6].dst == node_addr
                and bytes(p[UDP].payload) == data)

    return m


def answer_to(node_addr: str, sport_: int):
    """Matcher: anything the DUT sends about a probe from ``sport_``: a TCP
    segment or UDP datagram to that port, or an ICMPv6 error quoting it."""
    from scapy.layers.inet6 import TCPerror, UDPerror

    def m(p):
        if IPv6 not in p or p[IPv6].dst != node_addr:
            return False
        if (TCP in p and p[TCP].dport == sport_) or (UDP in p and p[UDP].dport == sport_):
            return True
        return any(err in p and p[err].sport == sport_ for err in (TCPerror, UDPerror))

    return m


def answer_to_v4(node_addr: str, sport_: int):
    """Matcher: the IPv4 counterpart of ``answer_to`` (ICMP errors included)."""
    from scapy.layers.inet import ICMP, IP, TCPerror, UDPerror

    def m(p):
        if IP not in p or p[IP].dst != node_addr:
            return False
        if (TCP in p and p[TCP].dport == sport_) or (UDP in p and p[UDP].dport == sport_):
            return True
        return ICMP in p and any(err in p and p[err].sport == sport_ for err in (TCPerror, UDPerror))

    return m


class TcpStream:
    """The tester's side of one TCP connection to the DUT, small enough to
    judge every segment: a responder (``t.port.add_responder``) that records
    what the DUT sends on the connection, acknowledges in-order data at
    once (so the DUT's congestion window opens) and keeps the bytes.

    No window scaling, SACK or timestamps are offered: the DUT's segments
    then carry no TCP options, and its MSS is exactly what the tester
    announced (RFC 9293 §3.7.1)."""

    def __init__(self, node, dut_mac: str, dut_addr: str, port: int, mss: int):
        import threading

        self.node, self.dut_mac, self.dut_addr, self.port = node, dut_mac, dut_addr, port
        self.mss = mss
        self.sport = sport()
        self.isn = secrets.randbits(31)
        self.snd_nxt = self.isn + 1
        self.peer_isn: int | None = None
        self.rcv_nxt: int | None = None
        self.frames: list = []        # (time, raw IPv6 bytes, Packet) of every DUT segment after the SYN-ACK
        self.data: dict[int, bytes] = {}
        self.synack = threading.Event()
        self._lock = threading.Lock()

    def segment(self, flags: str, data: bytes = b"", seq: int | None = None, ext: str = "none",
                **ipv6_fields) -> Packet:
        """A segment of the connection; ``ext`` an extension header (a key
        of EXTENSIONS other than 'fragment'), ``ipv6_fields`` e.g. fl, tc."""
        ack = (self.rcv_nxt or 0) % 2**32
        base = self.node.ipv6(self.dut_addr, self.dut_mac, **ipv6_fields)
        hdr = ext_headers(ext, NH_TCP)
        if hdr is not None:
            base = base / hdr
        return base / TCP(sport=self.sport, dport=self.port, flags=flags, seq=(self.snd_nxt if seq is None else seq) % 2**32,
                                 ack=ack if "A" in flags else 0, window=65535,
                                 options=[("MSS", self.mss)] if flags == "S" else []) / data

    def ours(self, p) -> bool:
        return (IPv6 in p and TCP in p and p[TCP].sport == self.port and p[TCP].dport == self.sport
                and p[IPv6].dst == self.node.global_addr)

    def responder(self, port, frame) -> None:
        p = frame.pkt
        if not self.ours(p):
            return
        tcp = p[TCP]
        with self._lock:
            if "S" in str(tcp.flags) and "A" in str(tcp.flags):
                self.peer_isn = tcp.seq
                if self.rcv_nxt is None:
                    self.rcv_nxt = tcp.seq + 1
                self.synack.set()
                return
            if self.rcv_nxt is None:
                return
            self.frames.append((frame.time, bytes(p[IPv6]), p))
            data = bytes(tcp.payload)
            ip = bytes(p[IPv6])
            plen = struct.unpack("!H", ip[4:6])[0]
            found = transport(ip)
            if found and data:
                start = found[1]
                data = ip[start + tcp.dataofs * 4:40 + plen]
                self.data.setdefault(tcp.seq, data)
            while True:  # advance over contiguous data
                rel = self.rcv_nxt % 2**32
                chunk = self.data.get(rel)
                if not chunk:
                    break
                self.rcv_nxt += len(chunk)
            if data:
                port.send(self.segment("A"))

    def received(self) -> bytes:
        if self.peer_isn is None:
            return b""
        out, seq = bytearray(), (self.peer_isn + 1) % 2**32
        while seq in self.data:
            chunk = self.data[seq]
            out += chunk
            seq = (seq + len(chunk)) % 2**32
        return bytes(out)
