"""Next-hop and on-link determination, the on-link flag, default router switch (RFC 4861 §5.2, §6.3.4, §6.3.6)."""

from __future__ import annotations

import ipaddress
import secrets

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6ND_NS,
)

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.ledger import ADDRESS_LEASE_S
from ...core.verdict import Deviation
from ...net.nd import fresh_prefix, prefix_option, router_advertisement
from ...scenario.observe import (
    autoconfigure,
    dad_probe_in,
    next_hop_for,
    offlink_node,
)
from ...scenario.rd import DELAY_FIRST_PROBE_TIME, MAX_UNICAST_SOLICIT


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.18",
    title="Next-hop Determination",
    rfc="RFC 4861 §5.2, §6.3.6",
    needs=["exclusive_router"],
    fault="dut_ignores_router_lifetime",
    liveness="echo",
    expect="an Echo Reply to an off-link address goes to the default router TR1 (learnt from its RA), not "
           "on-link and not elsewhere",
)
def offlink_destination_goes_to_default_router(t: CheckContext):
    """Next-hop determination: 'the sender ... performs a longest prefix
    match against the Prefix List ... If the destination is off-link, the
    sender selects a router from the Default Router List' (RFC 4861 §5.2)."""
    tr1 = t.tr1
    lease = t.lease_for_probes(2, waits=0.0)  # the address serves one next hop (two tries)
    conf = autoconfigure(t, tr1, router_lifetime=600, valid=lease, preferred=lease)
    conf.require(t)
    path = next_hop_for(t, offlink_node(t), conf.address, via=tr1)
    seen = f"the answer to an off-link node went {path.describe()}"
    if path.kind != "router":
        raise Deviation(seen)
    return t.conclude(seen, [])


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.19",
    title="Router Advertisement Processing, On-link determination",
    rfc="RFC 4861 §6.3.4; RFC 4862 §5.5.3",
    needs=["exclusive_router"],
    fault="dut_ignores_prefix_information",
    liveness="echo",
    expect="a Prefix Information option with L=1 and prefix length 96 is used for on-link determination (the "
           "DUT resolves and answers a node in it directly) although no address is formed from it",
)
def onlink_prefix_of_any_length_is_onlink(t: CheckContext):
    """On-link determination takes the prefix with its length whatever it is
    (RFC 4861 §6.3.4: 'If the on-link flag is set ... add the prefix to the
    Prefix List'); only autoconfiguration needs prefix length + interface
    identifier = 128 bits (RFC 4862 §5.5.3(d))."""
    tr1 = t.tr1
    base = fresh_prefix(avoid=t.target.link_prefix)
    long_prefix = ipaddress.IPv6Network(f"{base.network_address + (secrets.randbelow(2**16) << 32)}/96")
    # the prefix's valid lifetime is also how long it stays on-link (RFC 4861 §6.3.4): through the DAD window
    # and one next hop (two tries)
    lease = t.lease_for_probes(2, waits=0.0)
    since = t.send(router_advertisement(tr1, router_lifetime=600, prefixes=[
        prefix_option(long_prefix, valid=lease, preferred=lease)]), label=f"RA with prefix {long_prefix} (L=1, A=1)")
    formed = dad_probe_in(t, long_prefix, since)
    tn1 = t.node("TN1", prefix=long_prefix)
    path = next_hop_for(t, tn1, t.dut.link_local, routers=[tr1])
    problems = []
    if formed is not None:
        problems.append(f"it formed {formed.pkt[ICMPv6ND_NS].tgt} from the /96 prefix")
    if path.kind != "on-link":
        problems.append(f"the answer to {tn1.global_addr} went {path.describe()}")
    detail = f"answer to {tn1.global_addr} (inside {long_prefix}) went {path.describe()}"
    return t.conclude(detail, problems, passed=detail + "; no address formed from the /96")


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.1.3",
    title="Prefix Information Option Processing, On-link Flag",
    rfc="RFC 4861 §6.3.4",
    needs=["exclusive_router"],
    fault="dut_takes_l0_as_offlink",
    forms_addresses=False,  # its prefix has A=0
    liveness="echo",
    expect="a prefix announced on-link (L=1) stays on-link after an RA with the same prefix and L=0: the "
           "DUT keeps resolving a node of that prefix directly instead of sending through the router",
    # the test's own procedure (L=0 alone does not make a prefix on-link) is nd.prefix_without_on_link_flag_is_not_on_link;
    # this part asserts the clause's other half, which that procedure cannot see
    parts=[Part("L0-after-L1", "On-link prefix stays on-link after L=0")],
)
def onlink_flag_clear_keeps_prefix_onlink(t: CheckContext):
    """'a Prefix Information option with the on-link flag set to zero
    conveys no information concerning on-link determination and MUST NOT be
    interpreted to mean that addresses covered by the prefix are off-link'
    (RFC 4861 §6.3.4)."""
    tr1 = t.tr1
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    tn1 = t.node("TN1", prefix=prefix)
    paths = []
    for onlink in (1, 0):
        t.send(router_advertisement(tr1, router_lifetime=100, prefixes=[
            prefix_option(prefix, valid=20, preferred=20, on_link=onlink, autonomous=0)]),
            label=f"RA with prefix {prefix}, L={onlink}")
        t.wait(0.2)
        path = next_hop_for(t, tn1, t.dut.link_local, routers=[tr1])
        paths.append(f"after L={onlink}: {path.describe()}")
        if path.kind != "on-link":
            raise Deviation("; ".join(paths))
    return t.conclude("; ".join(paths), [])


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.11",
    title="Default Router Switch",
    rfc="RFC 4861 §6.3.6, §7.3.3",
    needs=["exclusive_router"],
    profile="full",
    fault="dut_ignores_later_router_advertisements",
    liveness="echo",
    expect="with two default routers, when the one in use stops answering Neighbor Solicitations, NUD fails "
           "for it and the DUT sends off-link traffic through the other within DELAY_FIRST_PROBE_TIME + "
           "MAX_UNICAST_SOLICIT x RetransTimer and a margin",
)
def default_router_switch(t: CheckContext):
    """'Routers that are reachable or probably reachable (i.e., in any state
    other than INCOMPLETE) SHOULD be preferred over routers whose
    reachability is unknown or suspect' (RFC 4861 §6.3.6); NUD finds a
    router gone (§7.3.3) and the host then uses another."""
    tr1, tr2 = t.tr1, t.node("TR2", router=True)
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    t.send(router_advertisement(tr2, router_lifetime=600, prefixes=[prefix_option(prefix, valid=ADDRESS_LEASE_S, preferred=ADDRESS_LEASE_S)]),
           label="RA from TR2")
    conf = autoconfigure(t, tr1, prefix, router_lifetime=600)
    conf.require(t)
    tn2 = offlink_node(t)
    first = next_hop_for(t, tn2, conf.address, via=tr1, routers=[tr1, tr2])
    if first.kind != "router":
        raise t.not_judged("default-router", "rd.router_lifetime_is_honoured#A",
                           f"the answer to an off-link node went {first.describe()}, not through a router")
    used, other = first.router, (tr2 if first.router is tr1 else tr1)
    used.answers_ns = False
    t.note(f"{used.name} stops answering Neighbor Solicitations")
    budget = DELAY_FIRST_PROBE_TIME + MAX_UNICAST_SOLICIT * t.retrans_timer + 2 * t.reply_timeout
    deadline = t.now() + budget
    last = None
    while t.now() < deadline:
        last = next_hop_for(t, tn2, conf.address, via=other, routers=[tr1, tr2], within=0.5)
        t.wait(max(0.0, 0.5 - (t.now() - last.frame.time)) if last.frame else 0.0)
        if last.kind == "router" and last.router is other and ICMPv6EchoReply in last.frame.pkt:
            return t.conclude(f"first through {used.name}; {DELAY_FIRST_PROBE_TIME:g}+ s after it went silent the "
                               f"answer went {last.describe()}", [])
    raise Deviation(f"{budget:g} s after {used.name} went silent the answer still went "
                     f"{last.describe() if last else 'nowhere'}")



# -- RFC 4191: a type C host uses Route Information options -----------------------
