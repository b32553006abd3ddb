"""Impostor rules for MLD: a listener that answers what it must not."""

from scapy.layers.inet6 import ICMPv6MLQuery, ICMPv6MLReport, IPv6, IPv6ExtHdrHopByHop, PadN, RouterAlert
from scapy.layers.l2 import Ether

from ...net.packets import ALL_NODES, multicast_mac, same_address, solicited_node
from ..impostor import rule


def _report(dut, group):
    return (Ether(src=dut["mac"], dst=multicast_mac(group)) / IPv6(src=dut["link_local"], dst=group, hlim=1)
            / IPv6ExtHdrHopByHop(options=[RouterAlert(value=0), PadN(optdata=b"")]) / ICMPv6MLReport(mladdr=group))


@rule("report_all_nodes")
def report_all_nodes(pkt, dut, **_):
    """Answer every Query with an MLDv1 Report for ff02::1 (RFC 2710 §4: never)."""
    if ICMPv6MLQuery not in pkt or IPv6 not in pkt:
        return []
    return [_report(dut, ALL_NODES)]


@rule("report_on_reports")
def report_on_reports(pkt, dut, **_):
    """Answer another node's Report for the DUT's solicited-node group with
    a Report of its own (an Idle Listener must do nothing, RFC 2710 §5)."""
    if ICMPv6MLReport not in pkt or IPv6 not in pkt or pkt[Ether].src.lower() == dut["mac"]:
        return []
    group = solicited_node(dut["link_local"])
    if not same_address(pkt[ICMPv6MLReport].mladdr, group):
        return []
    return [_report(dut, group)]


@rule("answer_any_query")
def answer_any_query(pkt, dut, **_):
    """Answer every MLD Query, valid or not, with an MLDv1 Report for the
    DUT's solicited-node group (a listener without the RFC 3810 §6.2
    checks; the kernel reads the Router Alert option before any netfilter
    hook, so this one cannot be repaired in front of it)."""
    if ICMPv6MLQuery not in pkt or IPv6 not in pkt:
        return []
    return [_report(dut, solicited_node(dut["link_local"]))]
