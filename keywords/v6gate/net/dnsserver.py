"""A DNS server the tester plays on the DUT's link (area dns, the Happy
Eyeballs gate): an emulated node that answers the DUT's stub resolver over
UDP and TCP (RFC 1035 §4.2, RFC 7766), and misbehaves on purpose where a
check needs it: a truncated answer over UDP (TC=1, the full one over TCP),
an answer held back for a while (per query type), an answer left out.

Every query is kept with what a check judges: transport, addresses and
ports, ID, name, type and the EDNS(0) OPT record (RFC 6891: present or not,
its UDP payload size).  The server is reached only over IPv6; a record set
may hold any address (an IPv4-mapped one in an AAAA record included) and raw
RDATA for types Scapy does not build (HTTPS, RFC 9460)."""

from __future__ import annotations

import secrets
import struct
import threading
from dataclasses import dataclass, field

from scapy.layers.dns import DNS, DNSQR, DNSRR, DNSRROPT
from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from .port import Frame, Port

DNS_PORT = 53
TYPES = {1: "A", 2: "NS", 5: "CNAME", 12: "PTR", 16: "TXT", 28: "AAAA", 33: "SRV", 64: "SVCB", 65: "HTTPS"}
CODES = {v: k for k, v in TYPES.items()}


def norm(name) -> str:
    """A name as compared here: text, lower case, no final dot."""
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    return str(name).rstrip(".").lower()


@dataclass
class Query:
    time: float
    transport: str  # udp | tcp
    src: str
    dst: str
    sport: int
    id: int
    name: str
    qtype: str
    edns: int | None  # the OPT record's UDP payload size, None without OPT
    rd: int

    def describe(self) -> str:
        opt = f"OPT {self.edns}" if self.edns is not None else "no OPT"
        return f"{self.qtype} {self.name} over {self.transport.upper()} from [{self.src}]:{self.sport} ({opt})"


@dataclass
class _Conn:
    """One TCP connection from the DUT: its sequence numbers and the bytes of
    the DNS messages it sends (two-octet length prefix, RFC 1035 §4.2.2)."""

    isn: int
    next_seq: int
    peer_next: int
    buffer: bytes = b""


@dataclass
class DnsServer:
    """``node`` answers at its addresses: ``records`` maps a name to
    ``[(type, rdata), ...]`` (rdata text for A/AAAA/PTR/CNAME, bytes for
    others); a known name without the asked type gets NODATA, an unknown
    name NXDOMAIN.  Faults of its own: names in ``truncate`` are answered
    over UDP with TC=1 and no records (the full answer over TCP); ``delay``
    holds answers of a type back that many seconds; ``silent`` types are
    not answered.  ``on_query(query, frame)`` is called for every query
    (e.g. to send a forged answer first)."""

    node: object
    records: dict = field(default_factory=dict)
    truncate: set = field(default_factory=set)
    delay: dict = field(default_factory=dict)
    silent: set = field(default_factory=set)
    ttl: int = 30
    tcp: bool = True
    on_query: object = None
    queries: list = field(default_factory=list)
    tcp_segments: list = field(default_factory=list)  # (time, flags, src) of TCP segments to port 53
    _conns: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _timers: list = field(default_factory=list, repr=False)

    def add(self, name: str, rtype: str, rdata) -> None:
        self.records.setdefault(norm(name), []).append((rtype, rdata))

    def asked(self, name: str | None = None, qtype: str | None = None, since: float = 0.0,
              transport: str | None = None) -> list[Query]:
        with self._lock:
            return [q for q in self.queries if q.time >= since and (name is None or q.name == norm(name))
                    and (qtype is None or q.qtype == qtype) and (transport is None or q.transport == transport)]

    def stop(self) -> None:
        """Cancel answers still held back (the check is over)."""
        for timer in self._timers:
            timer.cancel()

    # -- answers ------------------------------------------------------------------------------------
    def answer(self, query: DNS, *, full: bool = True, rcode: int | None = None) -> DNS:
        """The answer to ``query`` (``full`` False: TC=1 and no records)."""
        q = query.qd[0]
        name, qtype = norm(q.qname), TYPES.get(q.qtype, str(q.qtype))
        known = self.records.get(name)
        rrs = [self._rr(q.qname, rtype, rdata) for rtype, rdata in (known or []) if rtype == qtype] if full else []
        code = rcode if rcode is not None else (0 if known is not None else 3)
        return DNS(id=query.id, qr=1, aa=1, tc=0 if full else 1, rd=query.rd, ra=1, rcode=code,
                   qd=[DNSQR(qname=q.qname, qtype=q.qtype, qclass=q.qclass)], an=rrs)

    def _rr(self, qname, rtype: str, rdata):
        if isinstance(rdata, bytes):
            return DNSRR(rrname=qname, type=CODES.get(rtype, 0), ttl=self.ttl, rdlen=len(rdata), rdata=rdata)
        return DNSRR(rrname=qname, type=rtype, ttl=self.ttl, rdata=rdata)

    def _later(self, seconds: float, fn) -> None:
        if seconds <= 0:
            fn()
            return
        timer = threading.Timer(seconds, fn)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    # -- the responder ------------------------------------------------------------------------------
    def responder(self, port: Port, frame: Frame) -> None:
        pkt = frame.pkt
        if IPv6 not in pkt or not self.node.owns(pkt[IPv6].dst):
            return
        if UDP in pkt and pkt[UDP].dport == DNS_PORT:
            self._udp(port, frame)
        elif TCP in pkt and pkt[TCP].dport == DNS_PORT and self.tcp:
            self._tcp(port, frame)

    def _record(self, frame: Frame, msg: DNS, transport: str, sport: int) -> Query | None:
        if msg.qr != 0 or not msg.qd:
            return None
        q = msg.qd[0]
        opt = next((rr for rr in (msg.ar or []) if isinstance(rr, DNSRROPT)), None)
        ip = frame.pkt[IPv6]
        query = Query(frame.time, transport, ip.src, ip.dst, sport, msg.id, norm(q.qname),
                      TYPES.get(q.qtype, str(q.qtype)), None if opt is None else int(opt.rclass), int(msg.rd))
        with self._lock:
            self.queries.append(query)
        if self.on_query is not None:
            self.on_query(query, frame)
        return query

    def _udp(self, port: Port, frame: Frame) -> None:
        pkt = frame.pkt
        if DNS not in pkt:
            return
        msg = pkt[DNS]
        query = self._record(frame, msg, "udp", pkt[UDP].sport)
        if query is None or query.qtype in self.silent:
            return
        ip = pkt[IPv6]
        reply = (Ether(src=self.node.mac, dst=pkt[Ether].src) / IPv6(src=ip.dst, dst=ip.src)
                 / UDP(sport=DNS_PORT, dport=pkt[UDP].sport) / self.answer(msg, full=query.name not in self.truncate))
        self._later(float(self.delay.get(query.qtype, 0.0)), lambda: port.send(reply))

    def _tcp(self, port: Port, frame: Frame) -> None:
        pkt = frame.pkt
        ip, tcp = pkt[IPv6], pkt[TCP]
        flags = str(tcp.flags)
        key = (ip.src, tcp.sport)
        with self._lock:
            self.tcp_segments.append((frame.time, flags, ip.src))
        base = Ether(src=self.node.mac, dst=pkt[Ether].src) / IPv6(src=ip.dst, dst=ip.src)

        def segment(conn: _Conn, flags: str, data: bytes = b"") -> None:
            seg = base / TCP(sport=DNS_PORT, dport=tcp.sport, flags=flags, seq=conn.next_seq, ack=conn.peer_next,
                             window=65535)
            port.send(seg / Raw(data) if data else seg)
            conn.next_seq += len(data) + (1 if "F" in flags else 0)

        if "S" in flags and "A" not in flags:
            isn = secrets.randbits(32)
            conn = _Conn(isn, isn, (tcp.seq + 1) & 0xFFFFFFFF)
            self._conns[key] = conn
            port.send(base / TCP(sport=DNS_PORT, dport=tcp.sport, flags="SA", seq=isn, ack=conn.peer_next,
                                 window=65535, options=[("MSS", 1220)]))
            conn.next_seq = (isn + 1) & 0xFFFFFFFF
            return
        conn = self._conns.get(key)
        if conn is None:
            return
        data = bytes(tcp.payload)
        if "R" in flags:
            self._conns.pop(key, None)
            return
        if data and tcp.seq == conn.peer_next:
            conn.peer_next = (conn.peer_next + len(data)) & 0xFFFFFFFF
            conn.buffer += data
            while len(conn.buffer) >= 2 and len(conn.buffer) >= 2 + struct.unpack("!H", conn.buffer[:2])[0]:
                n = struct.unpack("!H", conn.buffer[:2])[0]
                wire, conn.buffer = conn.buffer[2:2 + n], conn.buffer[2 + n:]
                self._tcp_query(frame, conn, wire, tcp.sport, segment)
            if conn.buffer:
                segment(conn, "A")
        if "F" in flags:
            conn.peer_next = (conn.peer_next + 1) & 0xFFFFFFFF
            segment(conn, "FA")
            self._conns.pop(key, None)

    def _tcp_query(self, frame: Frame, conn: _Conn, wire: bytes, sport: int, segment) -> None:
        try:
            msg = DNS(wire)
        except Exception:  # not DNS: acknowledge the bytes, answer nothing
            segment(conn, "A")
            return
        query = self._record(frame, msg, "tcp", sport)
        if query is None or query.qtype in self.silent:
            segment(conn, "A")
            return
        body = bytes(self.answer(msg))
        self._later(float(self.delay.get(query.qtype, 0.0)),
                    lambda: segment(conn, "PA", struct.pack("!H", len(body)) + body))


def ptr_name(address: str) -> str:
    """The ip6.arpa name of an IPv6 address (RFC 3596 §2.5): its 32 nibbles
    in reverse order, each a label."""
    import ipaddress

    nibbles = ipaddress.IPv6Address(address).exploded.replace(":", "")
    return ".".join(reversed(nibbles)) + ".ip6.arpa"


def https_rdata(priority: int, target: str, *, alpn: tuple[str, ...] = (), port: int | None = None,
                ipv6hint: tuple[str, ...] = (), ipv4hint: tuple[str, ...] = ()) -> bytes:
    """HTTPS/SVCB RDATA (RFC 9460 §2.2): SvcPriority, TargetName and the
    SvcParams in key order (alpn 1, port 3, ipv4hint 4, ipv6hint 6)."""
    import ipaddress

    wire = b"".join(bytes([len(label)]) + label.encode() for label in target.rstrip(".").split(".") if label) + b"\0"
    params = []
    if alpn:
        params.append((1, b"".join(bytes([len(a)]) + a.encode() for a in alpn)))
    if port is not None:
        params.append((3, struct.pack("!H", port)))
    if ipv4hint:
        params.append((4, b"".join(ipaddress.IPv4Address(a).packed for a in ipv4hint)))
    if ipv6hint:
        params.append((6, b"".join(ipaddress.IPv6Address(a).packed for a in ipv6hint)))
    return struct.pack("!H", priority) + wire + b"".join(struct.pack("!HH", k, len(v)) + v for k, v in params)
