"""Tunnel mode, in the two end-node topologies the IPv6 Ready IPsec
specification draws: host-to-host (the tunnel's outer addresses are the two
hosts') and host-to-security-gateway (the DUT's tunnel ends at a gateway,
the traffic inside it is with a host behind that gateway)."""

from __future__ import annotations

from ...core.check import check
from ...core.context import CheckContext
from ...ipsec.association import establish
from ._common import COMMON, answered_on_the_sa, per_algorithm


@check(
    area="ipsec", title="Tunnel mode, host to host: Echo answered inside the tunnel on the SA",
    rfc="RFC 4301 §4.1, §5.1.2.2; RFC 4303 §3.1.2, §2.6; RFC 8221 §5",
    expect="each of 3 Echo Requests inside an ESP tunnel (outer and inner addresses the tester's and the DUT's) is "
           "answered inside the tunnel on the DUT's outbound SA: Next Header 41, the inner packet an Echo Reply from "
           "the DUT to the tester, sequence numbers from 1, the default padding; nothing in the clear",
    parts=per_algorithm("ipsec_dut_answers_in_the_clear"),
    **COMMON,
)
def tunnel_mode_echo_is_answered_host_to_host(t: CheckContext):
    """RFC 4301 §4.1: in tunnel mode an outer IP header names the IPsec
    processing source and destination and an inner header the ultimate ones;
    §5.1.2.2 builds the outer header.  RFC 4303 §3.1.2: the whole inner IP
    packet is protected, and Next Header names it (41 for IPv6, §2.6).
    Host to host, both headers carry the hosts' addresses."""
    return answered_on_the_sa(t, establish(t, t.p.encr, mode="tunnel"))


@check(
    area="ipsec", title="Tunnel mode, host to security gateway: Echo with a host behind the gateway",
    rfc="RFC 4301 §4.1, §4.4.1, §5.1.2.2; RFC 4303 §3.1.2; RFC 8221 §5",
    expect="each of 3 Echo Requests from a host behind the tester's security gateway, tunnelled to the DUT from the "
           "gateway, is answered in ESP from the DUT to the gateway (outer) carrying an Echo Reply from the DUT to "
           "the host (inner) on the DUT's outbound SA; nothing in the clear",
    parts=per_algorithm("ipsec_dut_answers_in_the_clear"),
    **COMMON,
)
def tunnel_mode_reaches_a_host_behind_a_gateway(t: CheckContext):
    """RFC 4301 §4.1: a host's SA to a security gateway is a tunnel-mode SA;
    the outer header's destination is the gateway, the inner one the host
    behind it (§5.1.2.2).  The DUT's SPD entry for traffic with that host
    must select the tunnel: a reply that leaves in the clear (to the host's
    address) has bypassed it."""
    return answered_on_the_sa(t, establish(t, t.p.encr, mode="tunnel", topology="gateway"))
