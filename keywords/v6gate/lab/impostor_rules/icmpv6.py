"""Impostor rules for ICMPv6."""

from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import Ether

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
