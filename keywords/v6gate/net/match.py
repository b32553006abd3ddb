"""Matchers: predicates over received packets, built from the probe they
answer.  A matcher names what makes a reply *this probe's* reply (a token:
ICMP identifier and sequence, a payload nonce, the quoted invoking packet),
so background traffic never passes for an answer."""

from __future__ import annotations

from collections.abc import Callable

from scapy.layers.inet6 import (
    ICMPv6DestUnreach,
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6PacketTooBig,
    ICMPv6ParamProblem,
    ICMPv6TimeExceeded,
    IPerror6,
    IPv6,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from .packets import same_address

Matcher = Callable[[Packet], bool]

ICMP_ERROR_LAYERS = {1: ICMPv6DestUnreach, 2: ICMPv6PacketTooBig, 3: ICMPv6TimeExceeded, 4: ICMPv6ParamProblem}


def all_of(*ms: Matcher) -> Matcher:
    return lambda p: all(m(p) for m in ms)


def any_of(*ms: Matcher) -> Matcher:
    return lambda p: any(m(p) for m in ms)


def from_mac(mac: str) -> Matcher:
    mac = mac.lower()
    return lambda p: Ether in p and p[Ether].src.lower() == mac


def to_mac(mac: str) -> Matcher:
    mac = mac.lower()
    return lambda p: Ether in p and p[Ether].dst.lower() == mac


def ipv6_from(addr: str) -> Matcher:
    return lambda p: IPv6 in p and same_address(p[IPv6].src, addr)


def ipv6_to(addr: str) -> Matcher:
    return lambda p: IPv6 in p and same_address(p[IPv6].dst, addr)


def echo_reply_to(request: Packet) -> Matcher:
    """An Echo Reply carrying the request's identifier and sequence number."""
    req = request[ICMPv6EchoRequest]
    ident, seq = req.id, req.seq
    return lambda p: ICMPv6EchoReply in p and p[ICMPv6EchoReply].id == ident and p[ICMPv6EchoReply].seq == seq


def echo_request_from(mac: str) -> Matcher:
    return all_of(from_mac(mac), lambda p: ICMPv6EchoRequest in p)


def icmp6_error(type_: int | None = None, code: int | None = None) -> Matcher:
    def m(p):
        if IPv6 not in p:
            return False
        for t, layer in ICMP_ERROR_LAYERS.items():
            if layer in p and (type_ is None or type_ == t):
                return code is None or p[layer].code == code
        return False

    return m


def quotes(probe: Packet) -> Matcher:
    """An ICMPv6 error whose invoking packet is ``probe`` (same source,
    destination, and the first bytes of the payload after the IPv6 header)."""
    ip = probe[IPv6]
    head = bytes(ip.payload)[:8]

    def m(p):
        if IPerror6 not in p:
            return False
        q = p[IPerror6]
        if not (same_address(q.src, ip.src) and same_address(q.dst, ip.dst)):
            return False
        return bytes(q.payload)[:len(head)] == head if head else True

    return m


def icmp6_error_for(probe: Packet, type_: int | None = None, code: int | None = None) -> Matcher:
    return all_of(icmp6_error(type_, code), quotes(probe))


def na_for(target: str) -> Matcher:
    return lambda p: ICMPv6ND_NA in p and same_address(p[ICMPv6ND_NA].tgt, target)


def ns_for(target: str) -> Matcher:
    return lambda p: ICMPv6ND_NS in p and same_address(p[ICMPv6ND_NS].tgt, target)


def anything() -> Matcher:
    return lambda p: True
