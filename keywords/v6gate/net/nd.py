"""Neighbor Discovery messages as the tester's emulated nodes send them
(RFC 4861 §4), valid by default; checks change one field to make them
invalid in exactly the way a part asks."""

from __future__ import annotations

import ipaddress
import secrets

from scapy.layers.inet6 import (
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6ND_RA,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptMTU,
    ICMPv6NDOptPrefixInfo,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from . import packets as P
from .nodes import EmulatedNode

ND_HOP_LIMIT = 255  # RFC 4861 §6.1.1, §7.1.1: every ND message is sent with hop limit 255


def neighbor_solicitation(src_node: EmulatedNode, target: str, *, dut_mac: str, multicast: bool = True,
                          src: str | None = None, dst: str | None = None, sllao: bool = True,
                          hlim: int = ND_HOP_LIMIT) -> Packet:
    """An NS from ``src_node`` for ``target``: to the target's solicited-node
    group (multicast) or to the target itself (unicast)."""
    dst = dst or (P.solicited_node(target) if multicast else target)
    src = src if src is not None else src_node.source_for(target)
    dst_mac = P.multicast_mac(dst) if P.is_multicast(dst) else dut_mac
    pkt = Ether(src=src_node.mac, dst=dst_mac) / IPv6(src=src, dst=dst, hlim=hlim) / ICMPv6ND_NS(tgt=target)
    if sllao and src != P.UNSPECIFIED:
        pkt = pkt / ICMPv6NDOptSrcLLAddr(lladdr=src_node.mac)
    return pkt


def neighbor_advertisement(node: EmulatedNode, target: str, dst: str, dst_mac: str, *, solicited: int = 1,
                           override: int = 1, router: int | None = None, tllao: bool = True,
                           hlim: int = ND_HOP_LIMIT) -> Packet:
    pkt = (Ether(src=node.mac, dst=P.multicast_mac(dst) if P.is_multicast(dst) else dst_mac)
           / IPv6(src=node.link_local if not node.owns(target) else target, dst=dst, hlim=hlim)
           / ICMPv6ND_NA(R=int(node.is_router if router is None else router), S=solicited, O=override, tgt=target))
    if tllao:
        pkt = pkt / ICMPv6NDOptDstLLAddr(lladdr=node.mac)
    return pkt


def prefix_option(prefix: str | ipaddress.IPv6Network, *, valid: int = 2592000, preferred: int = 604800,
                  on_link: int = 1, autonomous: int = 1, length: int | None = None) -> Packet:
    net = ipaddress.IPv6Network(prefix)
    return ICMPv6NDOptPrefixInfo(prefixlen=net.prefixlen if length is None else length, L=on_link,
                                 A=autonomous, validlifetime=valid, preferredlifetime=preferred,
                                 prefix=str(net.network_address))


def router_advertisement(router: EmulatedNode, *, prefixes=(), router_lifetime: int = 0, cur_hop_limit: int = 64,
                         reachable_ms: int = 0, retrans_ms: int = 0, managed: int = 0, other: int = 0,
                         mtu: int | None = None, sllao: bool = True, dst: str = P.ALL_NODES,
                         dst_mac: str | None = None, hlim: int = ND_HOP_LIMIT, options=()) -> Packet:
    """An RA from the emulated router (its link-local source, hop limit 255).
    ``prefixes`` are prefix options (see prefix_option) or prefixes."""
    pkt = (Ether(src=router.mac, dst=dst_mac or P.multicast_mac(dst))
           / IPv6(src=router.link_local, dst=dst, hlim=hlim)
           / ICMPv6ND_RA(chlim=cur_hop_limit, M=managed, O=other, routerlifetime=router_lifetime,
                         reachabletime=reachable_ms, retranstimer=retrans_ms))
    if sllao:
        pkt = pkt / ICMPv6NDOptSrcLLAddr(lladdr=router.mac)
    if mtu is not None:
        pkt = pkt / ICMPv6NDOptMTU(mtu=mtu)
    for pfx in prefixes:
        pkt = pkt / (pfx if isinstance(pfx, Packet) else prefix_option(pfx))
    for opt in options:
        pkt = pkt / opt
    return pkt


def fresh_prefix(avoid: ipaddress.IPv6Network | None = None) -> ipaddress.IPv6Network:
    """A fresh /64 inside 2001:db8::/32 for one check, so that nothing the
    DUT learned earlier (addresses, prefix list entries) is in the way."""
    while True:
        n = ipaddress.IPv6Network(f"2001:db8:{secrets.randbelow(0xFFFF) + 1:x}:{secrets.randbelow(0xFFFF):x}::/64")
        if avoid is None or not n.overlaps(avoid):
            return n


def is_dad_ns_for(pkt: Packet, net: ipaddress.IPv6Network | None = None, target: str | None = None) -> bool:
    """A Duplicate Address Detection probe (RFC 4862 §5.4.2): NS from ::
    to the target's solicited-node group, for an address in ``net``."""
    if ICMPv6ND_NS not in pkt or pkt[IPv6].src != P.UNSPECIFIED:
        return False
    tgt = pkt[ICMPv6ND_NS].tgt
    if target is not None and not P.same_address(tgt, target):
        return False
    return net is None or ipaddress.IPv6Address(tgt) in net


#: RFC 9762: the P flag, the fourth bit of a Prefix Information option's flags (Scapy's res1, 5 bits wide)
PIO_P_FLAG = 0x10


def pd_preferred(option: Packet) -> Packet:
    """``option`` (a Prefix Information option) with the P flag set: 'DHCPv6
    Prefix Delegation preferred' (RFC 9762)."""
    option.res1 = option.res1 | PIO_P_FLAG
    return option
