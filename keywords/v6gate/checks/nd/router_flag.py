"""IsRouter flag (RFC 4861 §7.2.3, §7.2.5) and anycast (routers)."""


from scapy.layers.inet6 import ICMPv6ND_NA

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import packets as P
from ...scenario import nce
from ...scenario.firsthop import FirstHop
from ...scenario.nce import Neighbour


@check(
    area="nd",
    ipv6ready="v6LC.2.1.13",
    title="Neighbor Solicitation Processing, IsRouterFlag (Host Only)",
    rfc="RFC 4861 §7.2.3",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    fault="impostor_clears_isrouter_on_ns",
    expect="an NS from the default router does not change its IsRouter flag: off-link traffic still goes through TR1 "
           "(to the NS's link-layer address when it carried a different one)",
    parts=[
        Part("A", "Unicast Neighbor Solicitation without SLLA", multicast=False, sll="none"),
        Part("B", "Unicast Neighbor Solicitation with a SLLA", multicast=False, sll="same"),
        Part("C", "Multicast Neighbor Solicitation with a different SLLA", multicast=True, sll="diff"),
    ],
)
def ns_keeps_router_flag(t: CheckContext):
    """'If a Neighbor Cache entry is created, the IsRouter flag SHOULD be
    set to FALSE. ... If a Neighbor Cache entry already exists, its
    IsRouter flag MUST NOT be modified.' (RFC 4861 §7.2.3, as summarised in
    its Appendix C: an NS leaves the flag unchanged)."""
    bench = FirstHop(t).start()
    tn2 = bench.offlink_node("TN2")
    bench.require_first_hop(tn2.offlink, bench.tr1, "before TR1's NS")
    tr = Neighbour(t, bench.tr1)
    tr.node.answers_ns = True  # TR1 stays a normal router
    other = nce.fresh_mac()
    sll = {"none": False, "same": tr.mac, "diff": other}[t.p.sll]
    t.send(tr.ns(multicast=t.p.multicast, sll=sll),
           label=f"{'multicast' if t.p.multicast else 'unicast'} NS from TR1, SLLA {sll or 'none'}")
    t.wait(nce.SETTLE_S)
    expect = other if t.p.sll == "diff" else tr.mac
    bench.names[other] = f"the NS's SLLA {other}"
    answer = bench.ask(tn2.offlink)
    seen = answer.describe(bench.names)
    if answer.mac != expect:
        raise Deviation(f"{seen}: after TR1's NS the DUT no longer answered off-link {tn2.offlink} through TR1 "
                         f"({expect}): the NS changed TR1's IsRouter flag")
    return t.conclude(seen, [])


@check(
    area="nd",
    ipv6ready="v6LC.2.1.21",
    title="Neighbor Advertisement Processing, R-bit Change (Hosts Only)",
    rfc="RFC 4861 §7.2.5, §5.2",
    scope="host",
    needs=["exclusive_router"],
    liveness="ns",
    fault="dut_ignores_na_after_resolution",
    expect="after TR1 advertises itself with R=0 it is no longer a default router: an off-link Echo Request is not "
           "answered through TR1 (nor by resolving the off-link address, RFC 4861 has no on-link assumption)",
)
def na_router_flag_clear_removes_default_router(t: CheckContext):
    """'In those cases where the IsRouter flag changes from TRUE to FALSE as
    a result of this update, the node MUST remove that router from the
    Default Router List and update the Destination Cache entries for all
    destinations using that neighbor as a router' (RFC 4861 §7.2.5).  With
    no default router left, off-link destinations are unreachable (§5.2;
    the RFC 2461 on-link assumption was removed)."""
    bench = FirstHop(t, sllao=False).start()
    tn2 = bench.offlink_node("TN2")
    bench.require_first_hop(tn2.offlink, bench.tr1, "before TR1's R=0 NA")
    tr = Neighbour(t, bench.tr1)
    tr.node.answers_ns = True
    t.send(tr.na(s=0, o=1, r=0), label="NA from TR1 with R=0 (S=0 O=1 TLLA)")
    t.wait(nce.SETTLE_S)
    answer = bench.ask(tn2.offlink)
    seen = answer.describe(bench.names)
    if answer.reply is not None:
        raise Deviation(f"{seen}: the DUT still routed off-link traffic after its only router sent R=0")
    if answer.solicited(tn2.offlink):
        raise Deviation(f"{seen}: the DUT took the off-link {tn2.offlink} as on-link once it had no router")
    if not t.alive("ns"):
        raise Deviation(f"{seen}, but the DUT stopped answering afterwards")
    return t.conclude(f"{seen}; the DUT still answered NS afterwards", [])


@check(
    area="nd",
    ipv6ready="v6LC.2.1.14",
    title="Neighbor Solicitation Processing, Anycast (Routers Only)",
    rfc="RFC 4861 §7.2.3, §7.2.4, §7.2.7; RFC 4291 §2.6.1",
    scope="router",
    liveness="ns",
    expect="an NS for the router's Subnet-Router anycast address on the link prefix is answered with a solicited NA "
           "(Override clear) within MAX_ANYCAST_DELAY_TIME",
)
def ns_for_subnet_router_anycast_is_answered(t: CheckContext):
    """Routers MUST support the Subnet-Router anycast address of the prefixes
    of their interfaces (RFC 4291 §2.6.1); an NA for an anycast target
    SHOULD have Override clear and may be delayed by up to
    MAX_ANYCAST_DELAY_TIME (1 s) (RFC 4861 §7.2.4, §7.2.7)."""
    max_anycast_delay = 1.0  # RFC 4861 §10
    anycast = str(t.target.link_prefix.network_address)
    nb = Neighbour(t, t.tn1, addr=t.tn1.global_addr)
    nb.node.answers_ns = True
    frame = t.expect_reply(nb.ns(multicast=True, sll=True, target=anycast),
                           lambda p: ICMPv6ND_NA in p and P.same_address(p[ICMPv6ND_NA].tgt, anycast),
                           within=max_anycast_delay + t.reply_timeout, what="NA for the anycast address")
    if frame is None:
        raise Deviation(f"no NA for the Subnet-Router anycast address {anycast}")
    na = frame.pkt[ICMPv6ND_NA]
    seen = f"NA for {anycast}: S={na.S} O={na.O} R={na.R}"
    problems = [m for c, m in ((not na.S, "S=0"), (na.O, "Override set for an anycast target"),
                               (not na.R, "R=0 from a router")) if c]
    return t.conclude(seen, problems)
