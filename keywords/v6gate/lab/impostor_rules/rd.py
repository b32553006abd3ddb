"""Impostor rules for router discovery."""

from scapy.layers.inet6 import ICMPv6ND_RA, ICMPv6ND_RS, ICMPv6NDOptSrcLLAddr, IPv6
from scapy.layers.l2 import Ether

from ...net.packets import ALL_NODES, multicast_mac
from ..impostor import rule


@rule("answer_rs_with_ra")
def answer_rs_with_ra(pkt, dut, **_):
    """Answer every Router Solicitation with a Router Advertisement from the
    DUT's link-local address: a host that behaves as a router."""
    if ICMPv6ND_RS not in pkt or IPv6 not in pkt:
        return []
    return [Ether(src=dut["mac"], dst=multicast_mac(ALL_NODES)) / IPv6(src=dut["link_local"], dst=ALL_NODES, hlim=255)
            / ICMPv6ND_RA(chlim=64, routerlifetime=1800) / ICMPv6NDOptSrcLLAddr(lladdr=dut["mac"])]
