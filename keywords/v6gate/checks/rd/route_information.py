"""Beyond IPv6 Ready: Route Information options (RFC 4191 type C host) and first-hop selection by source prefix (RFC 8028)."""

from __future__ import annotations

import ipaddress

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net.nd import fresh_prefix, router_advertisement
from ...net.rd import (
    route_information,
)
from ...scenario.observe import (
    autoconfigure,
    next_hop_for,
    offlink_node,
)

#: a Route Lifetime short enough to watch run out, and how late after it the route may still be used
RIO_SHORT_LIFETIME = 3
RIO_EXPIRY_MARGIN_S = 1.0


def _route_prefix(avoid: list[ipaddress.IPv6Network]) -> ipaddress.IPv6Network:
    """A fresh /48 (more specific than ::/0, shorter than the /64s in use)."""
    while True:
        route = fresh_prefix().supernet(new_prefix=48)
        if not any(route.overlaps(a) for a in avoid):
            return route


def _rio_ra(t: CheckContext, router, route, *, preference="medium", lifetime=600, router_lifetime=0, step=""):
    """An RA from ``router`` carrying one Route Information option."""
    return t.send(router_advertisement(router, router_lifetime=router_lifetime, options=[
        route_information(route, preference=preference, lifetime=lifetime)]),
        label=f"RA from {router.name} (router lifetime {router_lifetime} s): Route Information {route} "
              f"preference {preference}, lifetime {lifetime} s{step}")


def _via(t: CheckContext, node, conf, tr1, routers):
    """Where the DUT sends its answer to ``node`` (whose request came through TR1)."""
    t.wait(0.2)  # the RA's processing
    return next_hop_for(t, node, conf.address, via=tr1, routers=routers)


@check(
    area="rd", scope="host",
    title="Route Information options select the next hop (type C host)",
    rfc="RFC 4191 §3.1, §3.2, §2.3",
    needs=["exclusive_router"],
    capabilities=["RFC4191"],
    dut_config="rio-host",
    fault="dut_ignores_route_information",
    liveness="echo",
    expect="the DUT sends traffic for a destination covered by a Route Information option to the router that "
           "advertised it: a more-specific route via TR2 wins over the default route via TR1, a high-preference "
           "route beats a medium one for the same prefix (and a route lowered to low preference loses to medium), "
           "and a route goes when its Route Lifetime runs out or a Route Information option gives it lifetime 0",
    parts=[
        Part("more-specific", "A more-specific route via TR2 wins over the default route via TR1", case="specific"),
        Part("preference", "High beats medium, medium beats low, for the same prefix", case="preference",
             fault="dut_misreads_route_preference"),
        Part("lifetime-zero", "A Route Lifetime of zero removes the route", case="withdraw",
             fault="dut_keeps_withdrawn_routes"),
        Part("lifetime-expiry", "A route is no longer used once its Route Lifetime has run out", case="expire",
             fault="dut_keeps_withdrawn_routes"),
    ],
)
def route_information_selects_next_hop(t: CheckContext):
    """A type C host (RFC 4191 §3) keeps the routes of Route Information
    options in its Routing Table and picks the next hop by longest prefix
    match, then by route preference among routes of equal length (§3.2's
    sending algorithm); a Route Information option with a Route Lifetime of
    zero removes its route (§3.1)."""
    tr1, tr2 = t.tr1, t.node("TR2", router=True)
    routers = [tr1, tr2]
    conf = autoconfigure(t, tr1, router_lifetime=600)  # TR1: the default router and the DUT's prefix
    conf.require(t)
    tn3 = offlink_node(t, "TN3")
    route = _route_prefix([t.target.link_prefix, conf.prefix, ipaddress.IPv6Network(f"{tn3.global_addr}/64", strict=False)])
    tn2 = t.node("TN2", prefix=next(route.subnets(new_prefix=64)))
    tn2.answers_ns = tn3.answers_ns = False  # both beyond the routers
    t.note(f"route {route} (TN2 {tn2.global_addr}); TN3 {tn3.global_addr} is outside it")

    if t.p.case == "specific":
        _rio_ra(t, tr2, route)
        inside, outside = _via(t, tn2, conf, tr1, routers), _via(t, tn3, conf, tr1, routers)
        seen = f"answer to {tn2.global_addr} (in {route}) went {inside.describe()}; to {tn3.global_addr} went " \
               f"{outside.describe()}"
        problems = []
        if inside.router is not tr2:
            problems.append(f"the answer inside {route} did not go to TR2, which advertised the route")
        if outside.router is not tr1:
            problems.append("the answer outside the route did not go to TR1, the default router")
        if problems:
            raise Deviation(f"{'; '.join(problems)}: {seen}")
        return t.conclude(seen, [])

    if t.p.case == "preference":
        _rio_ra(t, tr2, route, preference="high")
        _rio_ra(t, tr1, route, preference="medium", router_lifetime=600, step=" (sent last)")
        first = _via(t, tn2, conf, tr1, routers)
        _rio_ra(t, tr2, route, preference="low", step=" (TR2 lowers its route)")
        second = _via(t, tn2, conf, tr1, routers)
        seen = f"TR2 high vs TR1 medium: {first.describe()}; TR2 low vs TR1 medium: {second.describe()}"
        problems = []
        if first.router is not tr2:
            problems.append("with TR2's route at high preference the answer did not go to TR2")
        if second.router is not tr1:
            problems.append("with TR2's route at low preference the answer did not go to TR1 (medium)")
        if problems:
            raise Deviation(f"{'; '.join(problems)}: {seen}")
        return t.conclude(seen, [])

    lifetime = RIO_SHORT_LIFETIME if t.p.case == "expire" else 600
    sent = _rio_ra(t, tr2, route, lifetime=lifetime)
    before = _via(t, tn2, conf, tr1, routers)
    if before.router is not tr2:
        raise Deviation(f"the route via TR2 was not used before the withdrawal (a type C host uses it, see part "
                         f"more-specific): the answer went {before.describe()}")
    if t.p.case == "expire":
        t.wait(max(0.0, sent + lifetime + RIO_EXPIRY_MARGIN_S - t.now()))
        step = f"{lifetime} s Route Lifetime over (+{t.now() - sent:.1f} s)"
    else:
        _rio_ra(t, tr2, route, lifetime=0, step=" (withdrawal)")
        step = "Route Lifetime 0"
    after = _via(t, tn2, conf, tr1, routers)
    seen = f"before: {before.describe()}; after {step}: {after.describe()}"
    if after.router is not tr1:
        raise Deviation(f"the {'expired' if t.p.case == 'expire' else 'withdrawn'} route via TR2 is still used "
                         f"(expected TR1, the default router): {seen}")
    return t.conclude(seen, [])


# -- RFC 8028: the first hop depends on the source address -------------------------


@check(
    area="rd", scope="host",
    title="Traffic from a prefix goes to the router that advertised it (multihomed host)",
    rfc="RFC 8028 §3; RFC 6724 §5 rule 5.5",
    needs=["exclusive_router"],
    capabilities=["RFC8028"],
    fault="dut_sends_each_prefix_to_the_other_router",
    liveness="echo",
    expect="with two default routers each advertising its own prefix, the DUT sends a packet whose source is "
           "its address in TR1's prefix to TR1 and one whose source is its address in TR2's prefix to TR2, "
           "whichever router the request arrived through (four Echo Replies: P1, P2, P2, P1)",
)
def source_address_selects_first_hop(t: CheckContext):
    """'A host SHOULD select default routers for each prefix it is assigned
    an address in.  Routers that have advertised the prefix in their Router
    Advertisement message SHOULD be preferred over routers that do not
    advertise the prefix' (RFC 8028 §3); RFC 6724 rule 5.5 is the source
    address side of the same rule."""
    tr1, tr2 = t.tr1, t.node("TR2", router=True)
    routers = [tr1, tr2]
    conf1 = autoconfigure(t, tr1, router_lifetime=600)
    conf2 = autoconfigure(t, tr2, prefix=fresh_prefix(avoid=conf1.prefix), router_lifetime=600)
    for conf in (conf1, conf2):
        conf.require(t)
    tn2 = offlink_node(t)
    tn2.answers_ns = False
    own = {conf1.address: tr1, conf2.address: tr2}
    seen, problems = [], []
    # each address twice, in the order P1 P2 P2 P1, each request arriving through the *other* router: a stack
    # with one default router, alternating ones, or answering where a request came from cannot get all four right
    for addr in (conf1.address, conf2.address, conf2.address, conf1.address):
        other = tr2 if own[addr] is tr1 else tr1
        path = next_hop_for(t, tn2, addr, via=other, routers=routers)
        seen.append(f"from {addr} (advertised by {own[addr].name}): {path.describe()}")
        if path.kind == "none":
            problems.append(f"no answer from {addr}")
        elif path.router is not own[addr]:
            problems.append(f"the answer from {addr} went {'through ' + path.router.name if path.router else path.kind}"
                            f", not through {own[addr].name}, which advertised its prefix")
    if problems:
        raise Deviation(f"{'; '.join(problems)}: {'; '.join(seen)}")
    return t.conclude("; ".join(seen), [])
