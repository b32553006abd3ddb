"""Impostor rules for Path MTU Discovery: stacks whose PMTU estimate does
what RFC 8201 forbids."""

from __future__ import annotations

from scapy.layers.inet6 import ICMPv6PacketTooBig

from ...util.proc import run
from ..impostor import rule


@rule("flush_pmtu_on_larger_packet_too_big")
def flush_pmtu_on_larger_packet_too_big(pkt, dut, impostor=None, above=1280, **_):
    """On a Packet Too Big reporting more than ``above`` octets, forget
    every PMTU estimate of the DUT (its route exceptions), as a stack that
    raises its estimate to the reported MTU would: the next packets go out
    at the link MTU again."""
    if ICMPv6PacketTooBig not in pkt or pkt[ICMPv6PacketTooBig].mtu <= int(above) or impostor is None:
        return []
    run(["ip", "-6", "route", "flush", "cache"], ns=impostor.ns, check=False, what="flush the DUT's PMTU cache")
    return []
