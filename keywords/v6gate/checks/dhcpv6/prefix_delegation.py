"""RFC 9762: a Prefix Information option with the P flag tells a host that
supports DHCPv6 Prefix Delegation to request a prefix (capability
DHCPv6-PD).  The SLAAC side (no address from such a prefix) is
``slaac.pio_with_p_flag_forms_no_address``.

The lab's DUT does not act on the P flag, so the lab target does not claim
DHCPv6-PD and the check SKIPs there; ``tests/lab/test_simulated_clients.py``
proves it both ways against the project's own simulated client
(``lab/impostor_rules/dhcpv6_pd.py``)."""

from __future__ import annotations

from ...core.check import check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import dhcpv6 as D
from ...net.nd import fresh_prefix, pd_preferred, prefix_option, router_advertisement
from ...scenario.observe import dad_window


@check(
    area="dhcpv6", scope="host",
    title="A prefix with the P flag makes a DHCPv6-PD host request a prefix",
    rfc="RFC 9762 (updating RFC 4861 §4.6.2)",
    capabilities=["DHCPv6-PD"],
    needs=["exclusive_router", "reset"],
    fault="impostor_solicits_an_address_for_p_flag",
    liveness=None,
    expect="after an RA (M=0, O=0) whose Prefix Information option has P=1, the DUT sends a Solicit carrying an "
           "IA_PD option (it requests a delegated prefix) within the DAD window plus two reply timeouts",
)
def p_flag_starts_prefix_delegation(t: CheckContext):
    """With the P flag the network says it prefers that hosts get prefixes
    by DHCPv6 Prefix Delegation: a host that supports DHCPv6-PD and sees P=1
    requests a prefix (RFC 9762, updating RFC 4861: the P flag indicates DHCPv6-PD support for
    clients), whatever the RA's M and O flags say."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    server = D.TesterServer(t.port, t.node("DHCP6S"), t.dut.mac, D.Lease([]))
    server.on(D.SOLICIT, None)  # watch only
    server.start()
    try:
        since = t.send(router_advertisement(t.tr1, router_lifetime=600, prefixes=[
            pd_preferred(prefix_option(prefix, valid=600, preferred=600))]),
            label=f"RA (M=0, O=0): {prefix} with L=1 A=1 P=1")
        window = dad_window(t) + 2 * t.reply_timeout
        solicits = server.wait(D.SOLICIT, window, since=since)
    finally:
        server.stop()
    if not solicits:
        raise Deviation(f"no Solicit within {window:g} s of an RA whose prefix has P=1: the DUT did not request a "
                         "delegated prefix")
    first = solicits[0]
    if first.opt(D.OPT_IA_PD) is None:
        raise Deviation(f"the DUT's Solicit carries no IA_PD ({first.summary()}): it asked for something, not a "
                         "delegated prefix")
    return t.conclude(f"{first.summary()} {first.time - since:.2f} s after the RA", [])
