"""The ICMPv6 error messages a DUT sends, read from the raw frame, and the
rules every one of them must keep (RFC 4443 §2.2, §2.4, §3): type and
code, the Pointer / MTU field, addresses, the quoted invoking packet, and
the minimum-MTU size limit."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from scapy.layers.inet6 import IPv6
from scapy.packet import Packet

from . import packets as P
from .exthdr import (
    IPV6_HEADER_LEN,
    IPV6_MIN_MTU,
    NH_DEST_OPTS,
    NH_FRAGMENT,
    NH_HOP_BY_HOP,
    NH_ICMPV6,
    NH_ROUTING,
    NH_TCP,
    NH_UDP,
)
from .frag import header_chain

NAMES = {1: "Destination Unreachable", 2: "Packet Too Big", 3: "Time Exceeded", 4: "Parameter Problem"}
FIELD = {2: "MTU", 4: "pointer"}
HEADER_NAMES = {NH_HOP_BY_HOP: "Hop-by-Hop Options", NH_ROUTING: "Routing", NH_FRAGMENT: "Fragment",
                NH_DEST_OPTS: "Destination Options", NH_ICMPV6: "ICMPv6", NH_TCP: "TCP", NH_UDP: "UDP"}


@dataclass
class IcmpError:
    type: int
    code: int
    field: int  # Pointer (Parameter Problem), MTU (Packet Too Big), unused otherwise
    src: str
    dst: str
    size: int  # IPv6 packet length on the wire
    quoted: bytes  # the invoking packet as quoted

    @property
    def quoted_src(self) -> str | None:
        return _addr(self.quoted[8:24]) if len(self.quoted) >= 40 else None

    @property
    def quoted_dst(self) -> str | None:
        return _addr(self.quoted[24:40]) if len(self.quoted) >= 40 else None

    def describe(self) -> str:
        name = NAMES.get(self.type, f"ICMPv6 type {self.type}")
        field = f" {FIELD[self.type]} {self.field}" if self.type in FIELD else ""
        return (f"{name} code {self.code}{field} from {self.src} to {self.dst}, {self.size} octets, "
                f"quoting {len(self.quoted)} octets of a packet from {self.quoted_src} to {self.quoted_dst}")


def _addr(b: bytes) -> str:
    import ipaddress

    return str(ipaddress.IPv6Address(b))


def parse(pkt: Packet) -> IcmpError | None:
    """The ICMPv6 error in ``pkt`` (Ether/IPv6/...), or None."""
    if IPv6 not in pkt:
        return None
    ip = bytes(pkt[IPv6])
    nh, start, _ = header_chain(ip)[-1]
    end = min(len(ip), IPV6_HEADER_LEN + struct.unpack("!H", ip[4:6])[0])
    if nh != NH_ICMPV6 or end - start < 8 or not 1 <= ip[start] <= 127:
        return None
    type_, code, _cks, field = struct.unpack("!BBHI", ip[start:start + 8])
    return IcmpError(type_, code, field, pkt[IPv6].src, pkt[IPv6].dst, end, ip[start + 8:end])


def quote_offset(quoted: bytes, invoking: bytes) -> tuple[int, str] | None:
    """Where in ``invoking`` (an IPv6 packet) the ``quoted`` octets start,
    when that is a header boundary other than the IPv6 header: (octet,
    header name).  None when the quote starts at the IPv6 header or is not
    found at any header boundary."""
    if len(quoted) < 8 or len(invoking) < IPV6_HEADER_LEN:
        return None
    for nh, start, _ in header_chain(invoking):
        if start >= len(invoking):
            break
        n = min(len(quoted), len(invoking) - start)
        if n >= 8 and quoted[:n] == invoking[start:start + n]:
            return start, HEADER_NAMES.get(nh, f"next header {nh}")
    return None


def quote_problem(quoted: bytes, invoking: bytes | list[bytes]) -> str | None:
    """A problem-first sentence for a quote that does not start at the
    invoking packet's IPv6 header but at a later header; None otherwise."""
    for inv in invoking if isinstance(invoking, list) else [invoking]:
        where = quote_offset(quoted, inv)
        if where:
            off, name = where
            return (f"the quote starts at the invoking packet's {name} header (octet {off}), "
                    "not at its IPv6 header")
    return None


def misquoting(type_: int, invoking: bytes | list[bytes]):
    """Matcher: an ICMPv6 error of ``type_`` whose quote is the invoking
    packet from a later header on (``quote_problem`` says which), so that a
    check judges it (and says what is wrong) instead of missing it."""

    def m(pkt):
        e = parse(pkt)
        return e is not None and e.type == type_ and quote_problem(e.quoted, invoking) is not None

    return m


def error_about(src: str, dst: str | None = None, type_: int | None = None):
    """Matcher: an ICMPv6 error (of ``type_``) quoting a packet sent from
    ``src`` (to ``dst``)."""

    def m(pkt):
        e = parse(pkt)
        if e is None or (type_ is not None and e.type != type_):
            return False
        return P.same_address(e.quoted_src or "::", src) and (dst is None or P.same_address(e.quoted_dst or "::", dst))

    return m


def problems(e: IcmpError, *, type_: int, code: int | tuple[int, ...], invoking: bytes | list[bytes],
             field: int | None = None, pointed_octet: int | None = None, dut_dst: str | None = None) -> list[str]:
    """What is wrong with error ``e`` sent in answer to ``invoking`` (the
    IPv6 packet the DUT received; alternatives allowed, e.g. a fragment or
    its reassembled datagram).

    * type and code (one of ``code`` when a tuple);
    * ``field``: the expected Pointer or MTU;
    * ``pointed_octet``: instead of a fixed pointer, the octet the Pointer
      must designate in the quoted packet (RFC 4443 §3.4: "the octet offset
      within the invoking packet where the error was detected");
    * source: the invoking packet's destination when that was a unicast
      address of the DUT (§2.2 (a)); destination: the invoking packet's source;
    * the quote: as much of the invoking packet as fits (§2.4 (c)), and the
      whole error no larger than the IPv6 minimum MTU, 1280 octets."""
    out = []
    codes = code if isinstance(code, tuple) else (code,)
    if e.type != type_ or e.code not in codes:
        want = " or ".join(str(c) for c in codes)
        out.append(f"{NAMES.get(e.type, e.type)} code {e.code}, expected {NAMES[type_]} code {want}")
    candidates = invoking if isinstance(invoking, list) else [invoking]
    quote_ok = [c for c in candidates if _quote_matches(e.quoted, c)]
    if not quote_ok:
        out.append(quote_problem(e.quoted, candidates)
                   or f"the quoted {len(e.quoted)} octets are not the start of the invoking packet")
    if field is not None and e.field != field:
        out.append(f"{FIELD.get(type_, 'field')} {e.field}, expected {field}")
    if pointed_octet is not None:
        q = e.quoted
        if e.field >= len(q) or q[e.field] != pointed_octet:
            seen = f"{q[e.field]:#04x}" if e.field < len(q) else "beyond the quote"
            out.append(f"pointer {e.field} designates octet {seen} of the quoted packet, not the erroneous "
                       f"{pointed_octet:#04x}")
    inv = candidates[0]
    inv_src, inv_dst = _addr(inv[8:24]), _addr(inv[24:40])
    if not P.same_address(e.dst, inv_src):
        out.append(f"sent to {e.dst}, not to the invoking packet's source {inv_src}")
    if not P.is_multicast(inv_dst) and not P.same_address(e.src, dut_dst or inv_dst):
        out.append(f"sent from {e.src}, not from the address the invoking packet was sent to ({inv_dst})")
    if e.size > IPV6_MIN_MTU:
        out.append(f"the error is {e.size} octets, more than the IPv6 minimum MTU of {IPV6_MIN_MTU}")
    else:
        room = IPV6_MIN_MTU - IPV6_HEADER_LEN - 8
        want = min(room, max(len(c) for c in quote_ok)) if quote_ok else 0
        if len(e.quoted) < want:
            out.append(f"quotes {len(e.quoted)} octets of the invoking packet where {want} fit in 1280 octets")
    return out


def _quote_matches(quoted: bytes, invoking: bytes) -> bool:
    """The quote is a prefix of the invoking packet.  The quoted Payload
    Length may differ when the node quotes a reassembled datagram, and hop
    limits are compared as sent."""
    n = min(len(quoted), len(invoking))
    if n < min(48, len(invoking)):
        return False
    return quoted[:4] == invoking[:4] and quoted[6:n] == invoking[6:n]
