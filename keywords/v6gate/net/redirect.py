"""Redirect messages (RFC 4861 §4.5) as a first-hop router sends them,
valid by default; checks change one field to make them suspicious or
invalid in exactly the way a part asks (§8.1)."""

from __future__ import annotations

from scapy.layers.inet6 import (
    ICMPv6ND_Redirect,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptRedirectedHdr,
    IPv6,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from . import packets as P
from .nd import ND_HOP_LIMIT
from .nodes import EmulatedNode

REDIRECT_MIN_LENGTH = 40  # RFC 4861 §8.1: ICMP length (derived from the IP length) is 40 or more octets
MIN_MTU = 1280  # RFC 8200 §5: a Redirect should not exceed it (§4.5: "without the redirect packet exceeding ...")


def redirect(router: EmulatedNode, dut_mac: str, dst: str, *, target: str, destination: str,
             tlla: str | None = None, redirected: Packet | bytes | None = None, src: str | None = None,
             hlim: int = ND_HOP_LIMIT, code: int = 0, reserved: int = 0, options=(), trim: bool = True) -> Packet:
    """A Redirect from ``router`` (its link-local address unless ``src``) to
    the DUT address ``dst``: ``destination`` is better reached via
    ``target``.  ``tlla``: the Target Link-Layer Address option;
    ``redirected``: the invoking packet for the Redirected Header option
    (trimmed so the Redirect stays within 1280 octets unless ``trim`` is
    false; padded to a multiple of 8 octets)."""
    pkt = (Ether(src=router.mac, dst=P.multicast_mac(dst) if P.is_multicast(dst) else dut_mac)
           / IPv6(src=src or router.link_local, dst=dst, hlim=hlim)
           / ICMPv6ND_Redirect(code=code, res=reserved, tgt=target, dst=destination))
    if tlla:
        pkt = pkt / ICMPv6NDOptDstLLAddr(lladdr=tlla)
    for opt in options:
        pkt = pkt / opt
    if redirected is not None:
        body = bytes(redirected[IPv6]) if isinstance(redirected, Packet) else bytes(redirected)
        if trim:
            body = body[:max(0, MIN_MTU - len(bytes(pkt[IPv6])) - 8) & ~7]
        body += b"\x00" * (-len(body) % 8)
        pkt = pkt / ICMPv6NDOptRedirectedHdr(pkt=body)
    return pkt


def oversized_redirected(redirected: Packet, size: int = 1400) -> bytes:
    """The invoking packet padded so the Redirect carrying it exceeds 1280
    octets (a receiver must still accept it: §8.1 sets no upper bound)."""
    body = bytes(redirected[IPv6])
    return body + b"\x00" * max(0, size - len(body))


def unrecognized_option(kind: int = 253) -> Packet:
    """An option of a type the DUT cannot know (RFC 4861 §4.6: receivers
    MUST silently ignore options they do not recognize and continue)."""
    return Raw(bytes([kind, 1]) + b"\x00" * 6)


def zero_length_option() -> bytes:
    """A Target Link-Layer Address option whose length octet is 0 (invalid, §8.1)."""
    return bytes([2, 0]) + b"\x00" * 6


def redirect_bytes(pkt: Packet) -> bytes:
    return bytes(pkt[ICMPv6ND_Redirect])
