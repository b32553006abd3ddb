"""IPv6 fragmentation as the tester needs it (RFC 8200 §4.5): split a
packet into Fragment-header packets at chosen offsets (valid, overlapping,
out of order, with odd sizes) and put the DUT's fragments back together.

The per-fragment ("unfragmentable") part is, as RFC 8200 §4.5 defines it,
the IPv6 header plus every extension header up to and including the
Routing header if there is one, else the Hop-by-Hop Options header if there
is one, else nothing.  A check can override it (RFC 7112 probes put more
or fewer headers in the first fragment).
"""

from __future__ import annotations

import itertools
import secrets
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from . import packets as P
from .exthdr import IPV6_HEADER_LEN, NH_DEST_OPTS, NH_FRAGMENT, NH_HOP_BY_HOP, NH_ROUTING

_OPTION_HEADERS = (NH_HOP_BY_HOP, NH_ROUTING, NH_DEST_OPTS)


def new_ident() -> int:
    """A fresh 32-bit Fragment Identification (never 0, so a stray match is unlikely)."""
    return secrets.randbits(32) or 1


def header_chain(ip: bytes) -> list[tuple[int, int, int]]:
    """The extension headers of an IPv6 packet: (type, start, nh-field offset),
    in order, up to the first header that is not HBH, Routing, DstOpts or Fragment."""
    out = []
    nh, nh_at, pos = ip[6], 6, IPV6_HEADER_LEN
    while nh in (*_OPTION_HEADERS, NH_FRAGMENT) and pos + 2 <= len(ip):
        out.append((nh, pos, nh_at))
        length = 8 if nh == NH_FRAGMENT else (ip[pos + 1] + 1) * 8
        nh, nh_at, pos = ip[pos], pos, pos + length
    out.append((nh, pos, nh_at))  # the upper-layer (or unparsed) header
    return out


def per_fragment_length(ip: bytes) -> int:
    """Octets of ``ip`` that every fragment repeats (RFC 8200 §4.5)."""
    chain = header_chain(ip)
    end = IPV6_HEADER_LEN
    for i, (nh, start, _) in enumerate(chain[:-1]):
        length = chain[i + 1][1] - start
        if nh == NH_ROUTING or (nh == NH_HOP_BY_HOP and i == 0 and end == IPV6_HEADER_LEN):
            end = start + length
    return end


@dataclass
class Piece:
    """One fragment to build: ``data`` of the fragmentable part at ``offset``."""

    offset: int
    data: bytes
    more: bool


def pieces(payload: bytes, cuts: Iterable[int]) -> list[Piece]:
    """Cut ``payload`` at the given offsets (multiples of 8) into in-order pieces."""
    bounds = [0, *sorted(cuts), len(payload)]
    out = []
    for a, b in itertools.pairwise(bounds):
        if a % 8:
            raise ValueError(f"fragment offset {a} is not a multiple of 8 octets")
        out.append(Piece(a, payload[a:b], b < len(payload)))
    return out


def fragment(pkt: Packet, cuts: Iterable[int] = (), *, ident: int | None = None,
             unfragmentable: int | None = None, pieces_: list[Piece] | None = None) -> list[Packet]:
    """Split ``pkt`` (Ether/IPv6/...) into fragments.

    ``cuts``: offsets into the fragmentable part where a new fragment
    starts; or ``pieces_`` for arbitrary (overlapping, duplicated) pieces.
    ``unfragmentable``: octets repeated in every fragment (default: RFC 8200
    §4.5).  Returns Ether/IPv6/.../Fragment/... packets in offset order."""
    eth = pkt[Ether]
    ip = bytes(pkt[IPv6])
    split_at = per_fragment_length(ip) if unfragmentable is None else unfragmentable
    nh_at = 6
    for _, start, at in header_chain(ip):
        if start == split_at:
            nh_at = at
            break
    else:
        raise ValueError(f"{split_at} is not a header boundary of the packet")
    original_nh = ip[nh_at]
    head = bytearray(ip[:split_at])
    head[nh_at] = NH_FRAGMENT
    rest = ip[split_at:]
    ident = new_ident() if ident is None else ident
    out = []
    for pc in pieces_ if pieces_ is not None else pieces(rest, cuts):
        fh = struct.pack("!BBHI", original_nh, 0, (pc.offset // 8) << 3 | int(pc.more), ident)
        body = bytearray(head) + fh + pc.data
        struct.pack_into("!H", body, 4, len(body) - IPV6_HEADER_LEN)
        out.append(Ether(src=eth.src, dst=eth.dst, type=0x86DD) / IPv6(bytes(body)))
    return out


def fragmentable_part(pkt: Packet) -> bytes:
    ip = bytes(pkt[IPv6])
    return ip[per_fragment_length(ip):]


def readdress(frag: Packet, *, src: str | None = None, dst: str | None = None, dst_mac: str | None = None) -> Packet:
    """A copy of a fragment with another source or destination address."""
    out = frag.copy()
    if src:
        out[IPv6].src = src
    if dst:
        out[IPv6].dst = dst
        if dst_mac or P.is_multicast(dst):
            out[Ether].dst = dst_mac or P.multicast_mac(dst)
    return out


# -- the DUT's fragments -----------------------------------------------------------
def is_fragment(pkt: Packet) -> bool:
    return IPv6ExtHdrFragment in pkt


def is_atomic_fragment(pkt: Packet) -> bool:
    """A Fragment header with offset 0 and M=0: a packet that is not
    fragmented but carries a Fragment header (RFC 6946 §1)."""
    return IPv6ExtHdrFragment in pkt and pkt[IPv6ExtHdrFragment].offset == 0 and not pkt[IPv6ExtHdrFragment].m


def same_datagram(first: Packet):
    """Matcher: fragments of the datagram ``first`` belongs to."""
    ip, fh = first[IPv6], first[IPv6ExtHdrFragment]

    def m(p):
        return (IPv6ExtHdrFragment in p and p[IPv6ExtHdrFragment].id == fh.id
                and P.same_address(p[IPv6].src, ip.src) and P.same_address(p[IPv6].dst, ip.dst))

    return m


def ipv6_length(pkt: Packet) -> int:
    """Length of the IPv6 packet (header + payload) as sent on the wire."""
    plen = pkt[IPv6].plen
    return IPV6_HEADER_LEN + plen if plen is not None else len(bytes(pkt[IPv6]))


def fragment_data(pkt: Packet) -> bytes:
    """The octets a fragment carries after its Fragment header."""
    ip = bytes(pkt[IPv6])
    start = len(ip) - len(bytes(pkt[IPv6ExtHdrFragment])) + 8
    return ip[start:IPV6_HEADER_LEN + pkt[IPv6].plen]


def reassemble(frags: list[Packet]) -> bytes | None:
    """The fragmentable part of a datagram from its fragments, or None if
    some octets are missing (no last fragment, or a hole)."""
    parts = sorted(((f[IPv6ExtHdrFragment].offset * 8, fragment_data(f), bool(f[IPv6ExtHdrFragment].m))
                    for f in frags), key=lambda x: x[0])
    data = bytearray()
    for off, chunk, _more in parts:
        if off > len(data):
            return None
        data[off:off + len(chunk)] = chunk
    if not parts or parts[-1][2]:
        return None
    return bytes(data)
