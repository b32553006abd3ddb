"""One table of the ways to break exactly one validity test of an ICMPv6
message (RFC 4861 §6.1, §7.1, §8.1; RFC 2710 §5 / RFC 3810 §6.2 for MLD):
the "invalid X is ignored" checks of nd, rd, dad (slaac), mld and redirect
build a valid message and apply one mutation from here.

    frame = break_one(valid_ns, ICMPv6ND_NS, "hop_limit_254")

``MUTATIONS`` maps a name to its function ``f(frame, layer, **options)``;
every function returns a new frame (the input is not changed).  Options:

* ``short_length``: ``length`` (the ICMP length to cut to; default: the
  message's fixed part minus 4) and ``trailer`` (None: the cut octets are
  gone; "rest": they follow as a link-layer trailer beyond the IPv6 Payload
  Length, as a parser that trusts the frame rather than the IP length would
  read them; an int: that many of them follow).
* ``zero_length_option``: ``at``, the offset in the ICMP message of the
  option whose length octet becomes 0 (default: the first option, right
  after the fixed part).
"""

from __future__ import annotations

from collections.abc import Callable

from scapy.layers.inet6 import (
    ICMPv6MLQuery,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6ND_RA,
    ICMPv6ND_Redirect,
    ICMPv6ND_RS,
    IPv6,
)
from scapy.packet import Packet, Padding

from . import packets as P

#: the fixed part of each message, before its options (RFC 4861 §4, RFC 2710 §3)
FIXED_PART = {ICMPv6ND_RS: 8, ICMPv6ND_RA: 16, ICMPv6ND_NS: 24, ICMPv6ND_NA: 24, ICMPv6ND_Redirect: 40,
              ICMPv6MLQuery: 24}


def hop_limit_254(frame: Packet, layer, **_) -> Packet:
    """IP Hop Limit 254, not 255 (the message may have crossed a router)."""
    out = frame.copy()
    out[IPv6].hlim = 254
    return out


def bad_checksum(frame: Packet, layer, **_) -> Packet:
    """An ICMP checksum that is not valid."""
    return P.with_bad_checksum(frame, layer)


def code_1(frame: Packet, layer, **_) -> Packet:
    """ICMP Code 1, not 0."""
    out = frame.copy()
    out[layer].code = 1
    return out


def short_length(frame: Packet, layer, *, length: int | None = None, trailer=None, **_) -> Packet:
    """The ICMP message cut to ``length`` octets (less than its fixed part),
    checksum valid over what is left."""
    length = FIXED_PART[layer] - 4 if length is None else length
    body = bytes(frame[layer])
    out = P.icmpv6_from_bytes(frame, body[:length])
    if trailer is None:
        return out
    rest = body[length:] if trailer == "rest" else body[length:length + int(trailer)]
    out[IPv6].plen = length
    return out / Padding(load=rest)


def zero_length_option(frame: Packet, layer, *, at: int | None = None, **_) -> Packet:
    """An option whose Length octet is 0 (the first option by default)."""
    body = bytearray(bytes(frame[layer]))
    body[(FIXED_PART[layer] if at is None else at) + 1] = 0
    return P.icmpv6_from_bytes(frame, bytes(body))


MUTATIONS: dict[str, Callable[..., Packet]] = {
    "hop_limit_254": hop_limit_254,
    "bad_checksum": bad_checksum,
    "code_1": code_1,
    "short_length": short_length,
    "zero_length_option": zero_length_option,
}


def break_one(frame: Packet, layer, how: str, **options) -> Packet:
    """``frame`` with the one validity test ``how`` (a MUTATIONS name) broken."""
    if how not in MUTATIONS:
        raise ValueError(f"unknown mutation {how!r}; use one of {sorted(MUTATIONS)}")
    return MUTATIONS[how](frame, layer, **options)
