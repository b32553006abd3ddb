"""Router and prefix discovery packets (RFC 4861 §4.1, §4.2, §6; RFC 6980):
Router Solicitations as a node sends them, Router Advertisements made
invalid in exactly one way, and fragmented ND messages.

The valid RA itself is ``net.nd.router_advertisement``; this module adds
what router-discovery checks need on top of it."""

from __future__ import annotations

import ipaddress
import secrets

from scapy.layers.inet6 import (
    ICMPv6ND_RA,
    ICMPv6ND_RS,
    ICMPv6NDOptPrefixInfo,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
    IPv6ExtHdrFragment,
    fragment6,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from . import packets as P
from .mutate import break_one
from .nd import ND_HOP_LIMIT, router_advertisement
from .nodes import EmulatedNode

#: RFC 4861 §10 host constants
MAX_RTR_SOLICITATION_DELAY = 1.0
RTR_SOLICITATION_INTERVAL = 4.0
MAX_RTR_SOLICITATIONS = 3
#: RFC 4861 §10: MIN/MAX_RANDOM_FACTOR applied to BaseReachableTime
MIN_RANDOM_FACTOR, MAX_RANDOM_FACTOR = 0.5, 1.5
#: RFC 7559 §2: retransmissions are randomised by +-10 % (RAND in [-0.1, 0.1])
RS_RAND = 0.1

#: one-way invalid Router Advertisements (RFC 4861 §6.1.2)
INVALID_RA = ("global_source", "hop_limit_254", "bad_checksum", "code_1", "short_length", "zero_length_option")


def is_rs(pkt: Packet) -> bool:
    return ICMPv6ND_RS in pkt


def is_ra(pkt: Packet) -> bool:
    return ICMPv6ND_RA in pkt


def router_solicitation(node: EmulatedNode, dst: str = P.ALL_ROUTERS, *, dst_mac: str | None = None,
                        sllao_mac: str | None = None) -> Packet:
    """An RS from an emulated node (its link-local source, hop limit 255),
    carrying a Source Link-Layer Address option with ``sllao_mac`` (default:
    the node's own MAC)."""
    mac = P.multicast_mac(dst) if P.is_multicast(dst) else dst_mac
    return (Ether(src=node.mac, dst=mac) / IPv6(src=node.link_local, dst=dst, hlim=ND_HOP_LIMIT)
            / ICMPv6ND_RS() / ICMPv6NDOptSrcLLAddr(lladdr=sllao_mac or node.mac))


def invalid_ra(router: EmulatedNode, how: str, **ra_fields) -> Packet:
    """A Router Advertisement that fails exactly one validity test of RFC
    4861 §6.1.2 (``how`` is one of INVALID_RA)."""
    if how not in INVALID_RA:
        raise ValueError(f"unknown invalid RA {how!r}; use one of {INVALID_RA}")
    ra = router_advertisement(router, **ra_fields)
    if how == "global_source":
        glob = router.global_addr or P.address_in("2001:db8:ffff::/64", P.random_iid())
        ra[IPv6].src = glob
    else:
        # short_length: ICMP length 14 < 16, cut inside the Retrans Timer field; zero_length_option: the first
        # option (the Source Link-Layer Address option)
        ra = break_one(ra, ICMPv6ND_RA, how, length=14)
    return ra


def fragmented(frame: Packet, *, atomic: bool, fragment_size: int = 32) -> list[Packet]:
    """``frame`` (Ether/IPv6/ICMPv6 ND message) sent with a Fragment header
    (RFC 6980 §5): as one atomic fragment (offset 0, M=0), or split in two
    or more fragments of ``fragment_size`` octets of the fragmentable part."""
    eth, ip = frame[Ether], frame[IPv6]
    upper = ip.payload.copy()
    ident = secrets.randbits(32)
    head = IPv6(src=ip.src, dst=ip.dst, hlim=ip.hlim, tc=ip.tc, fl=ip.fl)
    whole = head / IPv6ExtHdrFragment(nh=58, offset=0, m=0, id=ident) / upper
    whole = IPv6(bytes(whole))  # fixes the ICMPv6 checksum with the Fragment header in place
    if atomic:
        return [Ether(src=eth.src, dst=eth.dst) / whole]
    if len(bytes(whole[IPv6ExtHdrFragment].payload)) <= fragment_size:
        raise ValueError("the message is too short to be split into fragments of that size")
    size = 40 + 8 + fragment_size  # fragment6 counts the IPv6 and Fragment headers in the size
    return [Ether(src=eth.src, dst=eth.dst) / f for f in fragment6(whole, size)]


def prefix_options(pkt: Packet) -> list[ICMPv6NDOptPrefixInfo]:
    out, layer = [], pkt.getlayer(ICMPv6NDOptPrefixInfo)
    while layer is not None:
        out.append(layer)
        layer = layer.payload.getlayer(ICMPv6NDOptPrefixInfo) if layer.payload else None
    return out


def advertised_prefixes(pkt: Packet) -> list[ipaddress.IPv6Network]:
    """The /64 prefixes with the autonomous flag of an RA (also of an RA
    Scapy could not dissect: truncated, zero-length option, fragmented),
    read from the raw message."""
    raw = icmp_bytes(pkt)
    if raw is None or len(raw) < 16 or raw[0] != 134:
        return []
    out, off = [], 16
    while off + 2 <= len(raw):
        otype, olen = raw[off], raw[off + 1] * 8
        if otype == 3 and olen == 32 and off + 32 <= len(raw) and raw[off + 3] & 0x40:
            plen = raw[off + 2]
            addr = ipaddress.IPv6Address(raw[off + 16:off + 32])
            try:
                out.append(ipaddress.IPv6Network(f"{addr}/{plen}", strict=False))
            except ValueError:
                pass
        off += olen or 8  # a zero-length option: step over 8 octets to keep reading
    return out


def icmp_bytes(pkt: Packet) -> bytes | None:
    """The ICMPv6 message of a frame, through a Fragment header (first fragment)."""
    if IPv6 not in pkt:
        return None
    data = bytes(pkt[IPv6].payload)
    nh = pkt[IPv6].nh
    while nh != 58:
        if nh == 44 and len(data) >= 8:
            nh, data = data[0], data[8:]
        elif nh in (0, 43, 60) and len(data) >= 8:
            nh, data = data[0], data[(data[1] + 1) * 8:]
        else:
            return None
    return data


#: RFC 4191 §2.1 Prf values (2-bit two's complement: 01 high, 00 medium, 11 low; 10 reserved)
ROUTE_PREFERENCE = {"high": 1, "medium": 0, "low": 3}


def route_information(prefix: str | ipaddress.IPv6Network, *, preference: str = "medium",
                      lifetime: int = 600) -> Packet:
    """A Route Information option (RFC 4191 §2.3) for ``prefix``."""
    from scapy.layers.inet6 import ICMPv6NDOptRouteInfo

    net = ipaddress.IPv6Network(prefix)
    return ICMPv6NDOptRouteInfo(plen=net.prefixlen, prf=ROUTE_PREFERENCE[preference], rtlifetime=lifetime,
                                prefix=str(net.network_address))
