"""Duplicate Address Detection messages as other nodes send them (RFC 4862
§5.4): DAD Neighbor Solicitations and the Neighbor Advertisements that
defend an address, valid by default or invalid in exactly one way (RFC 4861
§7.1.1 / §7.1.2), for the DAD checks of v6LC.3.1.x."""

from __future__ import annotations

from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr, IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from . import packets as P
from .mutate import MUTATIONS, break_one
from .nd import ND_HOP_LIMIT
from .nodes import EmulatedNode

#: one-way changes to a DAD NS: invalid ones (ignored) and valid oddities (processed)
DAD_NS_VARIANTS = ("valid", "short_length", "hop_limit_254", "dst_tentative", "dst_all_nodes", "code_1",
                   "bad_checksum", "target_multicast", "with_sllao", "reserved_set", "with_tllao")
DAD_NA_VARIANTS = ("valid", "short_length", "hop_limit_254", "code_1", "bad_checksum", "solicited_set",
                   "target_multicast", "zero_length_option", "reserved_set", "with_sllao")


def dad_ns(node: EmulatedNode, target: str, dut_mac: str, how: str = "valid") -> Packet | bytes:
    """A DAD probe from another node for ``target`` (source ::, to the
    target's solicited-node group, no options), changed as ``how`` says."""
    if how not in DAD_NS_VARIANTS:
        raise ValueError(f"unknown DAD NS variant {how!r}; use one of {DAD_NS_VARIANTS}")
    dst = {"dst_tentative": target, "dst_all_nodes": P.ALL_NODES}.get(how, P.solicited_node(target))
    mac = dut_mac if how == "dst_tentative" else P.multicast_mac(dst)
    tgt = P.solicited_node(target) if how == "target_multicast" else target
    ns = (Ether(src=node.mac, dst=mac) / IPv6(src=P.UNSPECIFIED, dst=dst, hlim=ND_HOP_LIMIT)
          / ICMPv6ND_NS(tgt=tgt, res=0xFFFFFFFF if how == "reserved_set" else 0))
    if how == "with_sllao":
        ns = ns / ICMPv6NDOptSrcLLAddr(lladdr=node.mac)
    elif how == "with_tllao":
        ns = ns / ICMPv6NDOptDstLLAddr(lladdr=node.mac)
    elif how == "short_length":
        return short_message(ns, ICMPv6ND_NS)
    elif how in MUTATIONS:
        ns = break_one(ns, ICMPv6ND_NS, how)
    return ns


def dad_na(node: EmulatedNode, target: str, how: str = "valid") -> Packet | bytes:
    """A Neighbor Advertisement defending ``target`` (RFC 4862 §5.4.3: to
    all-nodes, S=0, O=1, with a Target Link-Layer Address option), changed as
    ``how`` says."""
    if how not in DAD_NA_VARIANTS:
        raise ValueError(f"unknown DAD NA variant {how!r}; use one of {DAD_NA_VARIANTS}")
    tgt = P.solicited_node(target) if how == "target_multicast" else target
    na = (Ether(src=node.mac, dst=P.multicast_mac(P.ALL_NODES))
          / IPv6(src=node.link_local, dst=P.ALL_NODES, hlim=ND_HOP_LIMIT)
          / ICMPv6ND_NA(R=0, S=1 if how == "solicited_set" else 0, O=1, tgt=tgt,
                        res=0x1FFFFFFF if how == "reserved_set" else 0))
    if how == "with_sllao":
        na = na / ICMPv6NDOptSrcLLAddr(lladdr=node.mac)
    na = na / ICMPv6NDOptDstLLAddr(lladdr=node.mac)  # the zero_length_option mutation zeroes its length octet
    if how == "short_length":
        return short_message(na, ICMPv6ND_NA)
    if how in MUTATIONS:
        na = break_one(na, ICMPv6ND_NA, how)
    return na


def short_message(frame: Packet, layer) -> bytes:
    """``frame`` with its ICMP message cut to 20 octets (less than the 24 an
    NS or NA needs, RFC 4861 §7.1), checksum valid over those 20 octets.
    The 4 octets cut off the Target Address follow as link-layer padding,
    beyond the IPv6 Payload Length: a receiver that trusts the frame rather
    than the IP length would read the whole target."""
    return bytes(break_one(frame, layer, "short_length", length=20, trailer=4))

