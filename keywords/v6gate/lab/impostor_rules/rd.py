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


@rule("source_routing_agent")
def source_routing_agent(pkt, dut, impostor, swap=False, **_):
    """Not an answer but an agent in the DUT's namespace: for every Router
    Advertisement with a Router Lifetime and an autonomous prefix, it
    installs source-address-dependent routing in the DUT's kernel (an
    ``ip -6 rule from <prefix>`` to a table whose default route is that
    router), so the kernel sends traffic from an address in a prefix to the
    router that advertised it (RFC 8028 §3).  With ``swap`` it sends each
    prefix's traffic to another router instead: a stack that gets it backwards."""
    from scapy.layers.inet6 import ICMPv6NDOptPrefixInfo

    from ...util.proc import run

    if ICMPv6ND_RA not in pkt or IPv6 not in pkt or pkt[ICMPv6ND_RA].routerlifetime == 0:
        return []
    routers: dict = impostor.state.setdefault("rfc8028_routers", {})  # prefix -> router link-local
    tables: dict = impostor.state.setdefault("rfc8028_tables", {})  # prefix -> table number
    opt = pkt[ICMPv6ND_RA].payload
    while opt:
        if isinstance(opt, ICMPv6NDOptPrefixInfo) and opt.A and opt.validlifetime:
            prefix = f"{opt.prefix}/{opt.prefixlen}"
            routers[prefix] = pkt[IPv6].src
            if prefix not in tables:
                tables[prefix] = 8028 + len(tables)
                run(["ip", "-6", "rule", "add", "from", prefix, "lookup", str(tables[prefix]), "priority",
                     str(tables[prefix])], ns=impostor.ns, check=False, what="RFC 8028 agent: ip -6 rule")
        opt = opt.payload
    for prefix, table in tables.items():
        via = routers[prefix]
        if swap:
            via = next((r for r in routers.values() if r != via), via)
        run(["ip", "-6", "route", "replace", "default", "via", via, "dev", dut["ifname"], "table", str(table)],
            ns=impostor.ns, check=False, what="RFC 8028 agent: default route per source prefix")
    return []
