"""Impostor rules for ICMPv6."""

import struct

from scapy.layers.inet import UDP
from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, ICMPv6Unknown, IPv6, IPv6ExtHdrDestOpt
from scapy.layers.l2 import Ether

from ...net.packets import UNSPECIFIED, is_multicast, same_address
from ..impostor import rule


@rule("echo_reply_to_any_destination")
def echo_reply_to_any_destination(pkt, dut, **_):
    """Answer Echo Requests whatever their destination (the unspecified
    address included), from the DUT's link-local address: a stack that
    does not check that a packet is addressed to it."""
    if ICMPv6EchoRequest not in pkt or IPv6 not in pkt:
        return []
    if any(pkt[IPv6].dst == a for a in dut.get("addresses", [])):
        return []  # the real DUT answers these itself
    req = pkt[ICMPv6EchoRequest]
    return [Ether(src=dut["mac"], dst=pkt[Ether].src) / IPv6(src=dut["link_local"], dst=pkt[IPv6].src)
            / ICMPv6EchoReply(id=req.id, seq=req.seq, data=req.data)]


def _ip(pkt) -> bytes | None:
    if Ether not in pkt or pkt[Ether].type != 0x86DD:
        return None
    data = bytes(pkt[Ether].payload)
    return data if len(data) >= 40 else None


def _error(dut, pkt, type_: int, code: int, field: int, quote: bytes) -> Ether:
    ip = pkt[IPv6]
    src = ip.dst if any(same_address(ip.dst, a) for a in dut.get("addresses", [])) else dut["link_local"]
    return (Ether(src=dut["mac"], dst=pkt[Ether].src) / IPv6(src=src, dst=ip.src)
            / ICMPv6Unknown(type=type_, code=code, msgbody=struct.pack("!I", field) + quote))


def _udp_port_unreachable(pkt, dut, quote: int = 1232):
    if UDP not in pkt or IPv6 not in pkt:
        return None
    return _error(dut, pkt, 1, 4, 0, _ip(pkt)[:quote])


@rule("errors_for_multicast_or_non_unique_sources")
def errors_for_multicast_or_non_unique_sources(pkt, dut, **_):
    """Report every UDP datagram to a closed port with a Destination
    Unreachable, also when it was sent to a multicast group or from the
    unspecified or a multicast address (RFC 4443 §2.4 (e.3), (e.6))."""
    if UDP not in pkt or IPv6 not in pkt:
        return []
    ip = pkt[IPv6]
    owned = any(same_address(ip.dst, a) for a in dut.get("addresses", []))
    odd = is_multicast(ip.dst) or ip.src == UNSPECIFIED or is_multicast(ip.src)
    if not odd or not (owned or is_multicast(ip.dst)):
        return []
    return [_udp_port_unreachable(pkt, dut)]


#: what an IPv4-minded stack quotes: the IP header and the first 64 bits of the payload
_SHORT_QUOTE = 48


@rule("short_quoting_errors")
def short_quoting_errors(pkt, dut, **_):
    """Send Destination Unreachable (UDP to a closed port) and Parameter
    Problem (an unrecognized option with action 10) messages quoting only
    the IPv6 header and 8 more octets of the invoking packet, however much
    more would fit in 1280 octets (RFC 4443 §2.4 (c))."""
    if IPv6 not in pkt or not any(same_address(pkt[IPv6].dst, a) for a in dut.get("addresses", [])):
        return []
    ip = _ip(pkt)
    if IPv6ExtHdrDestOpt in pkt:
        for i, b in enumerate(ip[42:40 + (ip[41] + 1) * 8], start=42):
            if b >> 6 == 2:
                return [_error(dut, pkt, 4, 2, i, ip[:_SHORT_QUOTE])]
    if UDP in pkt:
        return [_udp_port_unreachable(pkt, dut, quote=_SHORT_QUOTE)]
    return []


@rule("answer_unknown_informational")
def answer_unknown_informational(pkt, dut, **_):
    """Answer an ICMPv6 informational message of an unknown type with a
    Parameter Problem pointing at its Type, instead of discarding it."""
    ip = _ip(pkt)
    if ip is None or ip[6] != 58 or len(ip) < 48 or ip[40] < 128 or ip[40] in _KNOWN_INFORMATIONAL:
        return []
    if not any(same_address(pkt[IPv6].dst, a) for a in dut.get("addresses", [])):
        return []
    return [_error(dut, pkt, 4, 0, 40, ip[:1232])]


#: Echo, MLD, ND, Router Renumbering, Node Information, MLDv2, ... (types 128-161)
_KNOWN_INFORMATIONAL = set(range(128, 162))
