"""RA parameters applied: Cur Hop Limit, Router Lifetime, Reachable Time (RFC 4861 §6.3.4)."""

from __future__ import annotations

from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    ICMPv6ND_RA,
)
from scapy.layers.l2 import Ether

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import match as M
from ...net.nd import router_advertisement
from ...net.rd import (
    MAX_RANDOM_FACTOR,
    MIN_RANDOM_FACTOR,
    router_solicitation,
)
from ...scenario.observe import (
    autoconfigure,
    echo_hop_limit,
    next_hop_for,
    offlink_node,
)
from ...scenario.rd import DELAY_FIRST_PROBE_TIME, _random_hop_limit


@check(
    area="rd",
    ipv6ready="v6LC.2.2.13",
    title="Router Advertisement Processing, Cur Hop Limit",
    rfc="RFC 4861 §6.3.4",
    needs=["exclusive_router"],
    forms_addresses=False,  # its RAs carry no prefix
    liveness="echo",
    expect="the DUT's packets carry the Cur Hop Limit of the latest RA that specified one; an RA with Cur Hop "
           "Limit 0 (unspecified) leaves the value unchanged",
    parts=[
        Part("A", "Unspecified", unspecified=True, fault="dut_resets_hop_limit_on_unspecified",
             expect="after an RA with Cur Hop Limit X, an RA with Cur Hop Limit 0 leaves the DUT's packets at "
                    "hop limit X"),
        Part("B", "Non-Zero", unspecified=False, fault="dut_ignores_ra_hop_limit",
             expect="after an RA with a non-zero Cur Hop Limit X, the DUT's Echo Replies carry hop limit X"),
    ],
)
def cur_hop_limit_is_applied(t: CheckContext):
    """'If the received Cur Hop Limit value is non-zero, the host SHOULD set
    its CurHopLimit variable to the received value' (RFC 4861 §6.3.4); zero
    means unspecified by this router (§4.2), so it changes nothing."""
    tr1, tn1 = t.tr1, t.node("TN1")
    before, _ = echo_hop_limit(t, tn1)
    if before is None:
        raise Deviation("no Echo Reply before any RA")
    chlim = _random_hop_limit(avoid=before)
    t.send(router_advertisement(tr1, router_lifetime=0, cur_hop_limit=chlim), label=f"RA, Cur Hop Limit {chlim}")
    t.wait(0.2)
    _after, seen = echo_hop_limit(t, tn1)
    if not t.p.unspecified:
        detail = f"hop limit {before} before, {seen} after an RA with Cur Hop Limit {chlim}"
        if seen != [chlim]:
            raise Deviation(detail)
        return t.conclude(detail, [])
    if seen != [chlim]:
        raise t.not_judged("cur-hop-limit", "rd.cur_hop_limit_is_applied#B",
                           f"an RA with Cur Hop Limit {chlim} left the DUT's Echo Replies at {seen}")
    t.send(router_advertisement(tr1, router_lifetime=0, cur_hop_limit=0), label="RA, Cur Hop Limit 0")
    t.wait(0.2)
    _last, seen = echo_hop_limit(t, tn1)
    detail = f"hop limit {chlim} after an RA with {chlim}, {seen} after an RA with Cur Hop Limit 0"
    if seen != [chlim]:
        raise Deviation(detail)
    return t.conclude(detail, [])


def _router_in_use(t: CheckContext, tr, tn2, addr) -> tuple[bool, str]:
    path = next_hop_for(t, tn2, addr, via=tr)
    return path.kind == "router" and path.router is tr, path.describe()


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.14",
    title="Router Advertisement Processing, Router Lifetime",
    rfc="RFC 4861 §6.3.4, §6.3.5",
    needs=["exclusive_router"],
    liveness="echo",
    expect="the DUT uses TR1 as its default router while TR1's latest Router Lifetime lasts, and stops at once "
           "when it is 0 or has run out",
    parts=[
        Part("A", "Router Lifetime Updated with Same Lifetime", case="refreshed", lifetime=4,
             fault="dut_ignores_later_router_advertisements",
             expect="TR1 (Router Lifetime 4 s, advertised again after 2 s) is still the DUT's next hop 4.5 s after "
                    "the first RA"),
        Part("B", "Router Lifetime Set to Zero", case="zero", lifetime=600, fault="dut_keeps_expired_routers",
             expect="after an RA with Router Lifetime 0 the DUT no longer sends off-link traffic to TR1"),
        Part("C", "Router Lifetime Set to Five; Allowed to Expire", case="expire", lifetime=5,
             fault="dut_keeps_expired_routers",
             expect="TR1 (Router Lifetime 5 s) is the next hop at first, and no longer once 5 s have passed"),
    ],
)
def router_lifetime_is_honoured(t: CheckContext):
    """'If the address is already present in the host's Default Router List
    as a result of a previously received advertisement, reset its
    invalidation timer to the Router Lifetime value in the newly received
    advertisement.  If the address is already present ... and the received
    Router Lifetime value is zero, immediately time-out the entry'
    (RFC 4861 §6.3.4); an entry whose timer runs out is removed (§6.3.5)."""
    tr1, tn2 = t.tr1, offlink_node(t)
    lifetime = t.p.lifetime
    # the address serves: refreshed, one next hop (two tries) after the Router Lifetime and 0.5 s; zero, two next
    # hops 0.2 s apart; expire, two next hops around the Router Lifetime and 0.5 s
    waits = {"refreshed": lifetime + 0.5, "zero": 0.2, "expire": lifetime + 0.5}[t.p.case]
    lease = t.lease_for_probes(2 if t.p.case == "refreshed" else 4, waits=waits)
    start = t.now()
    conf = autoconfigure(t, tr1, router_lifetime=lifetime, valid=lease, preferred=lease)
    conf.require(t)
    if t.p.case == "refreshed":
        t.wait(max(0.0, start + lifetime / 2 - t.now()))
        t.send(router_advertisement(tr1, router_lifetime=lifetime), label=f"the same RA again (lifetime {lifetime} s)")
        t.wait(max(0.0, start + lifetime + 0.5 - t.now()))
        at = t.now() - start
        used, how = _router_in_use(t, tr1, tn2, conf.address)
        detail = f"{at:.1f} s after the first RA (lifetime {lifetime} s, renewed at {lifetime / 2:g} s): {how}"
        if not used:
            raise Deviation(detail)
        return t.conclude(detail, [])
    used, how = _router_in_use(t, tr1, tn2, conf.address)
    if not used:
        raise t.not_judged("default-router:TR1", "rd.router_lifetime_is_honoured#A",
                           f"right after TR1's RA (lifetime {lifetime} s) the answer went {how}")
    if t.p.case == "zero":
        t.send(router_advertisement(tr1, router_lifetime=0), label="RA with Router Lifetime 0")
        t.wait(0.2)
        at = "after the RA with Router Lifetime 0"
    else:
        t.wait(max(0.0, start + lifetime + 0.5 - t.now()))
        at = f"{t.now() - start:.1f} s after TR1's RA with Router Lifetime {lifetime} s"
    used, how = _router_in_use(t, tr1, tn2, conf.address)
    if used:
        raise Deviation(f"{at} the DUT still answered {how}")
    if not t.alive(method="echo"):
        raise Deviation(f"{at} nothing went to TR1, but the DUT stopped answering")
    return t.conclude(f"TR1 was the next hop at first; {at}: {how}", [])


@check(
    area="rd",
    ipv6ready="v6LC.2.2.15",
    title="Router Advertisement Processing, Reachable Time",
    rfc="RFC 4861 §6.3.4, §6.3.2, §7.3.3",
    needs=["exclusive_router"],
    forms_addresses=False,  # its RAs carry no prefix
    liveness="echo",
    expect="after an RA with Reachable Time B, a neighbour in constant use is re-probed ReachableTime + "
           "DELAY_FIRST_PROBE_TIME after its confirmation, with ReachableTime in [0.5 B, 1.5 B]",
    parts=[
        Part("A", "RA Processing – Reachable Time (Host Only)", base_ms=2000, scope="host",
             fault="dut_ignores_router_advertisements"),
        Part("B", "Reachable Time Configuration (Routers Only)", scope="router", base_ms=None,
             expect="the router's Router Advertisements carry a Reachable Time no greater than 3,600,000 ms"),
    ],
)
def reachable_time_is_applied(t: CheckContext):
    """'If the received Reachable Time value is non-zero, the host SHOULD set
    its BaseReachableTime variable to the received value' and re-compute
    ReachableTime, a random value between MIN_RANDOM_FACTOR and
    MAX_RANDOM_FACTOR times BaseReachableTime (RFC 4861 §6.3.4, §6.3.2).
    A router's AdvReachableTime MUST be no greater than 3,600,000 ms (§6.2.1)."""
    if t.p.base_ms is None:
        return _router_reachable_time(t)
    base = t.p.base_ms / 1000
    tr0, tn1 = t.node("TR0", router=True), t.node("TN1")
    t.send(router_advertisement(tr0, router_lifetime=0, reachable_ms=t.p.base_ms, sllao=False),
           label=f"RA, Reachable Time {t.p.base_ms} ms")
    t.wait(0.2)
    low = MIN_RANDOM_FACTOR * base + DELAY_FIRST_PROBE_TIME - 0.3
    high = MAX_RANDOM_FACTOR * base + DELAY_FIRST_PROBE_TIME + t.reply_timeout
    start, first, probe, seq = t.now(), None, None, 0
    while probe is None:  # traffic every 0.5 s keeps the entry in use (RFC 4861 §7.3.3: DELAY, then PROBE)
        seq += 1
        t.send(t.to_dut(tn1, t.dut.link_local) / ICMPv6EchoRequest(id=0x2215, seq=seq), label=f"Echo Request #{seq}")
        t.wait(0.5)
        solicits = t.collect(M.ns_for(tn1.link_local), 0, since=start)
        if first is None and solicits:
            first = solicits[0]
            t.note(f"TN1 resolved: {first.summary()}")
        if first is None:
            if t.now() - start > t.reply_timeout + 1.0:
                raise Deviation("the DUT never resolved TN1's address (no Neighbor Solicitation)")
            continue
        probe = next((f for f in solicits if f.time > first.time + 0.5 and f.pkt[Ether].dst.lower() == tn1.mac), None)
        if probe is None and t.now() > first.time + high:
            raise Deviation(f"no unicast NUD probe of TN1 within {high:.1f} s of its confirmation: the DUT did not "
                             f"use Reachable Time {t.p.base_ms} ms (a probe was due between {low:.1f} and "
                             f"{high:.1f} s)")
    gap = probe.time - first.time
    t.measure("probe_after_s", round(gap, 3))
    detail = (f"unicast NUD probe {gap:.2f} s after TN1 was resolved; expected ReachableTime "
              f"[{MIN_RANDOM_FACTOR * base:g}, {MAX_RANDOM_FACTOR * base:g}] s + DELAY_FIRST_PROBE_TIME "
              f"{DELAY_FIRST_PROBE_TIME:g} s")
    if not (low <= gap <= high):
        raise Deviation(detail)
    return t.conclude(detail, [])


def _router_reachable_time(t: CheckContext):
    tn1 = t.tn1
    rs = router_solicitation(tn1)
    frame = t.expect_reply(rs, lambda p: ICMPv6ND_RA in p, what="Router Advertisement",
                           within=t.reply_timeout + 3.0)  # MAX_RA_DELAY_TIME 0.5 s; MIN_DELAY_BETWEEN_RAS 3 s
    if frame is None:
        raise Deviation("no Router Advertisement in answer to a Router Solicitation")
    value = frame.pkt[ICMPv6ND_RA].reachabletime
    seen = f"Reachable Time {value} ms in the router's RA"
    if value > 3_600_000:
        raise Deviation(seen)
    return t.conclude(seen, [])


# -- v6LC.2.2.16: RA processing and the Neighbor Cache ----------------------------------
