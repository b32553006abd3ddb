"""Router and prefix discovery (RFC 4861 §6, RFC 6980 §5) — IPv6 Ready Core
v6LC.2.2 and the host prefix list of v6LC.2.1.3/2.1.4.

The tester is the DUT's only router in these checks: the emulated routers
(TR1, TR2) send Router Advertisements with short lifetimes and timers, and
the DUT's answers to Echo Requests from a node beyond them (TN2) show which
routers and prefixes it uses.  Timers come from RFC 4861 §10 and the
target's timing; the tester sets ReachableTime / RetransTimer in its RAs
where a check needs them short."""

from __future__ import annotations

import ipaddress
import itertools
import secrets

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NS,
    ICMPv6ND_RA,
    ICMPv6ND_RS,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether

from ..core.check import Part, check
from ..net import match as M
from ..net import nce
from ..net import packets as P
from ..net.nd import ND_HOP_LIMIT, fresh_prefix, prefix_option, router_advertisement
from ..net.rd import (
    MAX_RANDOM_FACTOR,
    MIN_RANDOM_FACTOR,
    RS_RAND,
    RTR_SOLICITATION_INTERVAL,
    fragmented,
    invalid_ra,
    is_rs,
    route_information,
    router_solicitation,
)
from ._observe import (
    autoconfigure,
    dad_done,
    dad_probe_in,
    dad_window,
    echo_hop_limit,
    next_hop_for,
    offlink_node,
)

#: RFC 4861 §10 node constants
DELAY_FIRST_PROBE_TIME = 5.0
MAX_UNICAST_SOLICIT = 3


def _judge_rs(t, frame) -> list[str]:
    """RFC 4861 §4.1, §6.3.7: a Router Solicitation's fields."""
    pkt = frame.pkt
    ip, rs = pkt[IPv6], pkt[ICMPv6ND_RS]
    problems = []
    if ip.hlim != ND_HOP_LIMIT:
        problems.append(f"hop limit {ip.hlim}, not 255")
    if not P.same_address(ip.dst, P.ALL_ROUTERS):
        problems.append(f"sent to {ip.dst}, not to the all-routers group ff02::2")
    if rs.code != 0:
        problems.append(f"ICMP code {rs.code}, not 0")
    src = ipaddress.IPv6Address(ip.src)
    if not (src.is_link_local or src.is_unspecified):
        problems.append(f"source {ip.src} is neither a link-local address nor the unspecified address")
    sllao = pkt[ICMPv6NDOptSrcLLAddr].lladdr.lower() if ICMPv6NDOptSrcLLAddr in pkt else None
    if src.is_unspecified and sllao:
        problems.append("carries a Source Link-Layer Address option although its source is ::")
    if sllao and sllao != t.dut.mac:
        problems.append(f"Source Link-Layer Address {sllao} is not the DUT's {t.dut.mac}")
    return problems


def _rs_gap_floor() -> float:
    """RTR_SOLICITATION_INTERVAL less the RFC 7559 §2 randomisation (-10 %)."""
    return RTR_SOLICITATION_INTERVAL * (1 - RS_RAND)


def _rs_gap_ceiling() -> float:
    return RTR_SOLICITATION_INTERVAL * (1 + RS_RAND)


def _restart_and_first_rs(t):
    since = t.port.now()
    t.restart_dut()
    window = float(t.timing["ready_timeout_s"])
    first = t.port.expect(t.from_dut(is_rs), window, since=since)
    return since, window, first


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.1",
    title="Router Solicitations",
    rfc="RFC 4861 §4.1, §6.3.7; RFC 7559 §2",
    needs=["reset", "exclusive_router"],
    fault="dut_solicits_too_fast",
    expect="after its interface starts with no router on the link, the DUT sends a Router Solicitation (to "
           "ff02::2, hop limit 255, code 0, from its link-local address or ::, a Source Link-Layer Address "
           "option only with a link-local source); a retransmission, if any, comes no sooner than "
           "RTR_SOLICITATION_INTERVAL (4 s, less RFC 7559's 10 % randomisation) after the first",
)
def rs_is_sent_at_interface_start(t):
    """'When an interface becomes enabled, a host may be unwilling to wait for
    the next unsolicited Router Advertisement ... it SHOULD transmit up to
    MAX_RTR_SOLICITATIONS Router Solicitation messages, each separated by at
    least RTR_SOLICITATION_INTERVAL seconds' (RFC 4861 §6.3.7); RFC 7559
    keeps that first interval (IRT = RTR_SOLICITATION_INTERVAL, RAND ±0.1)."""
    since, window, first = _restart_and_first_rs(t)
    if first is None:
        return t.failed(f"no Router Solicitation within {window:g} s of the restart")
    problems = _judge_rs(t, first)
    t.note(f"first RS {first.time - since:.3f} s after the restart: {first.summary()}")
    second = t.port.expect(t.from_dut(is_rs), _rs_gap_ceiling() + t.reply_timeout, since=first.time + 0.001)
    detail = f"first RS from {first.pkt[IPv6].src} {first.time - since:.3f} s after the restart"
    if second is None:
        detail += f"; no retransmission within {_rs_gap_ceiling() + t.reply_timeout:g} s (allowed: 'up to')"
    else:
        gap = second.time - first.time
        t.measure("rs_gap_s", round(gap, 3))
        detail += f"; the second {gap:.3f} s later"
        if gap < _rs_gap_floor():
            problems.append(f"the second RS came {gap:.3f} s after the first, sooner than "
                            f"{_rs_gap_floor():g} s (RTR_SOLICITATION_INTERVAL {RTR_SOLICITATION_INTERVAL:g} s -10 %)")
        problems += [f"second RS: {p}" for p in _judge_rs(t, second)]
    return t.conclude(detail, problems)


@check(
    area="rd", scope="host",
    title="Router Solicitation retransmissions keep their spacing",
    rfc="RFC 4861 §6.3.7; RFC 7559 §2",
    needs=["reset", "exclusive_router"],
    profile="full",
    fault="dut_solicits_too_fast",
    expect="with no router answering, the DUT's Router Solicitations are at least RTR_SOLICITATION_INTERVAL "
           "apart (less 10 % randomisation); after MAX_RTR_SOLICITATIONS it stops (RFC 4861) or keeps "
           "going with intervals that never shrink (RFC 7559 backoff)",
)
def rs_retransmissions_keep_their_spacing(t):
    """RFC 4861 §6.3.7 spaces solicitations RTR_SOLICITATION_INTERVAL apart;
    RFC 7559 §2 lets a host continue past MAX_RTR_SOLICITATIONS with an
    exponential backoff (RT = 2*RTprev + RAND*RTprev), never faster."""
    _since, window, first = _restart_and_first_rs(t)
    if first is None:
        return t.failed(f"no Router Solicitation within {window:g} s of the restart")
    horizon = _rs_gap_ceiling() * 3 + t.reply_timeout  # covers the 2nd (~4 s) and 3rd (~8 s later) RS
    frames = t.collect(is_rs, horizon, since=first.time)
    times = [f.time for f in frames]
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(times)]
    t.measure("rs_gaps_s", gaps)
    detail = f"{len(times)} Router Solicitations; gaps {gaps} s"
    problems = [f"a gap of {g:.3f} s is shorter than {_rs_gap_floor():g} s" for g in gaps if g < _rs_gap_floor()]
    problems += [f"the gaps shrink ({a:.3f} s then {b:.3f} s)" for a, b in itertools.pairwise(gaps) if b < a * 0.9]
    return t.conclude(detail, problems)


def _ra_effects(t, router, prefix, chlim: int, since: float) -> list[str]:
    """What shows that the DUT processed an RA: an address formed from its
    prefix (a DAD probe) or its Cur Hop Limit on the DUT's packets."""
    seen = []
    dad = dad_probe_in(t, prefix, since) if prefix is not None else None
    if dad is not None:
        seen.append(f"it probed {dad.pkt[ICMPv6ND_NS].tgt} from the RA's prefix {prefix} (DAD NS)")
    hlim, all_hlims = echo_hop_limit(t, t.node("TN1"))
    if chlim in all_hlims:
        seen.append(f"its Echo Reply carried the RA's Cur Hop Limit {chlim}")
    elif hlim is None:
        seen.append("it no longer answered an Echo Request")
    return seen


def _valid_ra_takes_effect(t, router, avoid_hop_limit: int | None) -> tuple[bool, str]:
    """After a part that requires an RA to be discarded: a valid RA (fresh
    prefix, new Cur Hop Limit, Router Lifetime 0 so it installs no router)
    must take effect, or the DUT may simply ignore every RA and the discard
    proves nothing.  (took effect, what was seen)."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    chlim = _random_hop_limit(avoid=avoid_hop_limit or 64)
    since = t.send(router_advertisement(router, router_lifetime=0, cur_hop_limit=chlim,
                                        prefixes=[prefix_option(prefix, valid=30, preferred=30)]),
                   label=f"valid RA (Cur Hop Limit {chlim}, prefix {prefix}): its effect is required")
    effects = _ra_effects(t, router, prefix, chlim, since)
    if any("no longer answered" in e for e in effects) or not effects:
        return False, (f"then a valid RA (Cur Hop Limit {chlim}, prefix {prefix}) had no effect either (no DAD "
                       f"probe, hop limit not applied): the DUT ignores every RA, so the discard proves nothing")
    return True, f"a valid RA afterwards took effect ({'; '.join(effects)})"


def _random_hop_limit(avoid: int = 64) -> int:
    while True:
        h = 100 + secrets.randbelow(150)
        if h != avoid:
            return h


_INVALID_RA_PARTS = {
    "global_source": "source is a global address, not link-local",
    "hop_limit_254": "IP Hop Limit 254, not 255",
    "bad_checksum": "ICMP checksum not valid",
    "code_1": "ICMP Code 1, not 0",
    "short_length": "ICMP length 14, less than 16 octets",
    "zero_length_option": "an option of length 0",
}


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.2",
    title="Router Solicitations, Solicited Router Advertisement",
    rfc="RFC 4861 §6.3.7, §6.1.2",
    needs=["reset", "exclusive_router"],
    fault="dut_skips_ra_validation",
    expect="after a valid Router Advertisement answers its first solicitation, the DUT sends no further "
           "Router Solicitation within RTR_SOLICITATION_INTERVAL; an invalid RA does not stop the "
           "solicitations and is not processed (no address from its prefix, its Cur Hop Limit not used)",
    parts=[
        Part("A", "Valid Router Advertisement, No Source Link-layer Address Option", how=None, sllao=False,
             fault="dut_drops_router_advertisements"),
        Part("B", "Valid Router Advertisement, Source Link-layer Address Option", how=None, sllao=True,
             fault="dut_drops_router_advertisements"),
        Part("C", "Invalid Router Advertisement, Global Source Address", how="global_source", sllao=True),
        Part("D", "Invalid Router Advertisement, Bad Hop Limit", how="hop_limit_254", sllao=True),
        Part("E", "Invalid Router Advertisement, Bad ICMP Checksum", how="bad_checksum", sllao=True),
        Part("F", "Invalid Router Advertisement, Bad ICMP Code", how="code_1", sllao=True),
    ],
)
def solicited_ra_stops_solicitations(t):
    """'Once the host sends a Router Solicitation, and receives a valid Router
    Advertisement with a non-zero Router Lifetime, the host MUST desist from
    sending additional solicitations on that interface' (RFC 4861 §6.3.7);
    an RA failing the §6.1.2 validity tests MUST be silently discarded, so
    it neither stops the solicitations nor configures anything."""
    since, window, first = _restart_and_first_rs(t)
    if first is None:
        return t.failed(f"no Router Solicitation within {window:g} s of the restart, nothing to answer")
    tr1, prefix, chlim = t.tr1, fresh_prefix(avoid=t.target.link_prefix), _random_hop_limit()
    fields = dict(router_lifetime=600, cur_hop_limit=chlim, sllao=t.p.sllao,
                  prefixes=[prefix_option(prefix, valid=600, preferred=600)])
    ra = invalid_ra(tr1, t.p.how, **fields) if t.p.how else router_advertisement(tr1, **fields)
    sent = t.send(ra, label=f"{'invalid RA (' + t.p.how + ')' if t.p.how else 'RA'} in answer to the first RS")
    until = first.time + _rs_gap_ceiling() + t.reply_timeout
    later = t.port.expect(t.from_dut(is_rs), max(0.0, until - t.port.now()), since=sent)
    effects = _ra_effects(t, tr1, prefix, chlim, sent) if t.p.how else []
    if not t.p.how:
        if later is not None:
            return t.failed(f"the DUT sent another Router Solicitation {later.time - sent:.3f} s after a valid "
                            f"RA (first RS at +{first.time - since:.3f} s): it did not accept the RA")
        return t.passed(f"one Router Solicitation (+{first.time - since:.3f} s after the restart), none in the "
                        f"{until - sent:.1f} s after the valid RA")
    problems = list(effects)
    if later is None:
        problems.insert(0, f"no further Router Solicitation within {until - sent:.1f} s after the invalid RA "
                           "(it stopped soliciting as if the RA were valid)")
    seen = (f"invalid RA ({_INVALID_RA_PARTS[t.p.how]}); "
            + (f"next RS {later.time - first.time:.3f} s after the first" if later else "no further RS"))
    if problems:
        return t.conclude(seen, problems)
    took, after = _valid_ra_takes_effect(t, tr1, chlim)
    seen = f"{seen}; no address from {prefix} and Cur Hop Limit {chlim} not applied"
    return t.conclude(f"{seen}; {after}", [] if took else [after])


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.3",
    title="Host Ignores Router Solicitations",
    rfc="RFC 4861 §6.2.6",
    fault="impostor_answers_router_solicitations",
    liveness="echo",
    expect="a host silently discards Router Solicitations: it sends no Router Advertisement and does not take "
           "the link-layer address in the RS's Source Link-Layer Address option (it resolves the solicitor "
           "with a Neighbor Solicitation before answering it)",
    parts=[
        Part("A", "All-Router Multicast Destination", dst="all_routers"),
        Part("B", "All-Nodes Multicast Destination", dst="all_nodes"),
        Part("C", "Link-local Unicast Destination", dst="unicast"),
    ],
)
def host_ignores_router_solicitations(t):
    """'A host MUST silently discard any received Router Solicitation
    messages' (RFC 4861 §6.2.6).  The RS names a link-layer address that is
    not the solicitor's: a host that processed it would answer there."""
    tn1 = t.tn1
    decoy = P.random_mac()
    dst = {"all_routers": P.ALL_ROUTERS, "all_nodes": P.ALL_NODES, "unicast": t.dut.link_local}[t.p.dst]
    since = t.send(router_solicitation(tn1, dst, dst_mac=t.dut.mac, sllao_mac=decoy),
                   label=f"RS to {dst} naming {decoy} as the solicitor's link-layer address")
    t.wait(0.2)
    req = t.to_dut(tn1, t.dut.link_local) / ICMPv6EchoRequest(id=0x2203, seq=1, data=P.nonce(8))
    t.expect_reply(req, M.echo_reply_to(req), what="Echo Reply", within=t.reply_timeout + 3 * t.retrans_timer)
    t.wait(max(0.0, since + t.silence - t.port.now()))
    frames = t.collect(M.anything(), 0, since=since)
    problems = []
    ra = next((f for f in frames if ICMPv6ND_RA in f.pkt), None)
    if ra is not None:
        problems.append(f"sent a Router Advertisement {ra.time - since:.3f} s after the RS: {ra.summary()}")
    decoyed = next((f for f in frames if f.pkt[Ether].dst.lower() == decoy), None)
    if decoyed is not None:
        problems.append(f"sent {decoyed.summary()} to {decoy}, the link-layer address from the RS")
    resolved = any(ICMPv6ND_NS in f.pkt and P.same_address(f.pkt[ICMPv6ND_NS].tgt, tn1.link_local) for f in frames)
    replied = any(ICMPv6EchoReply in f.pkt and f.pkt[Ether].dst.lower() == tn1.mac for f in frames)
    seen = (f"{'resolved' if resolved else 'did not resolve'} {tn1.link_local} with an NS, "
            f"{'answered' if replied else 'did not answer'} its Echo Request, no RA")
    if problems:
        return t.failed(seen, problems)
    if not t.alive(method="echo"):
        return t.failed(f"{seen}, but the DUT stopped answering afterwards")
    return t.passed(seen)


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.12",
    title="Router Advertisement Processing, Validity",
    rfc="RFC 4861 §6.1.2",
    needs=["exclusive_router"],
    fault="dut_skips_ra_validation",
    liveness="echo",
    expect="the invalid Router Advertisement is silently discarded: the DUT forms no address from its prefix "
           "and keeps its Cur Hop Limit (its Echo Replies do not carry the RA's value)",
    parts=[Part(letter, title, how=how) for letter, title, how in [
        ("A", "Global Source Address", "global_source"),
        ("B", "Hop Limit less than 255", "hop_limit_254"),
        ("C", "Invalid Checksum", "bad_checksum"),
        ("D", "Invalid ICMP Code", "code_1"),
        ("E", "Invalid ICMP Length", "short_length"),
        ("F", "Option of Length 0", "zero_length_option"),
    ]],
)
def invalid_ra_is_ignored(t):
    """'A node MUST silently discard any received Router Advertisement
    messages that do not satisfy all of the following validity checks'
    (RFC 4861 §6.1.2): link-local source, hop limit 255, valid checksum,
    code 0, ICMP length 16 or more, every option longer than zero."""
    tr1, prefix = t.tr1, fresh_prefix(avoid=t.target.link_prefix)
    before, _ = echo_hop_limit(t, t.node("TN1"))
    chlim = _random_hop_limit(avoid=before or 64)
    ra = invalid_ra(tr1, t.p.how, router_lifetime=600, cur_hop_limit=chlim,
                    prefixes=[prefix_option(prefix, valid=600, preferred=600)])
    since = t.send(ra, label=f"invalid RA ({_INVALID_RA_PARTS[t.p.how]}), Cur Hop Limit {chlim}, prefix {prefix}")
    effects = _ra_effects(t, tr1, prefix, chlim, since)
    if effects:
        return t.failed(f"the DUT processed the invalid RA ({_INVALID_RA_PARTS[t.p.how]}): {'; '.join(effects)}")
    if not t.alive(method="echo"):
        return t.failed("no effect of the RA, but the DUT stopped answering afterwards")
    took, after = _valid_ra_takes_effect(t, tr1, chlim)
    seen = (f"no DAD probe in {prefix} within {dad_window(t):g} s and its Echo Replies kept hop limit {before} "
            f"(the invalid RA said {chlim})")
    return t.passed(f"{seen}; {after}") if took else t.failed(f"{seen}; {after}")


@check(
    area="rd",
    ipv6ready="v6LC.2.2.13",
    title="Router Advertisement Processing, Cur Hop Limit",
    rfc="RFC 4861 §6.3.4",
    needs=["exclusive_router"],
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
def cur_hop_limit_is_applied(t):
    """'If the received Cur Hop Limit value is non-zero, the host SHOULD set
    its CurHopLimit variable to the received value' (RFC 4861 §6.3.4); zero
    means unspecified by this router (§4.2), so it changes nothing."""
    tr1, tn1 = t.tr1, t.node("TN1")
    before, _ = echo_hop_limit(t, tn1)
    if before is None:
        return t.failed("no Echo Reply before any RA")
    chlim = _random_hop_limit(avoid=before)
    t.send(router_advertisement(tr1, router_lifetime=0, cur_hop_limit=chlim), label=f"RA, Cur Hop Limit {chlim}")
    t.wait(0.2)
    _after, seen = echo_hop_limit(t, tn1)
    if not t.p.unspecified:
        detail = f"hop limit {before} before, {seen} after an RA with Cur Hop Limit {chlim}"
        return t.verdict(seen == [chlim], detail)
    if seen != [chlim]:
        raise t.not_judged("cur-hop-limit", "rd.cur_hop_limit_is_applied#B",
                           f"an RA with Cur Hop Limit {chlim} left the DUT's Echo Replies at {seen}")
    t.send(router_advertisement(tr1, router_lifetime=0, cur_hop_limit=0), label="RA, Cur Hop Limit 0")
    t.wait(0.2)
    _last, seen = echo_hop_limit(t, tn1)
    detail = f"hop limit {chlim} after an RA with {chlim}, {seen} after an RA with Cur Hop Limit 0"
    return t.verdict(seen == [chlim], detail)


def _router_in_use(t, tr, tn2, addr) -> tuple[bool, str]:
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
def router_lifetime_is_honoured(t):
    """'If the address is already present in the host's Default Router List
    as a result of a previously received advertisement, reset its
    invalidation timer to the Router Lifetime value in the newly received
    advertisement.  If the address is already present ... and the received
    Router Lifetime value is zero, immediately time-out the entry'
    (RFC 4861 §6.3.4); an entry whose timer runs out is removed (§6.3.5)."""
    tr1, tn2 = t.tr1, offlink_node(t)
    lifetime = t.p.lifetime
    start = t.port.now()
    conf = autoconfigure(t, tr1, router_lifetime=lifetime)
    conf.require(t)
    if t.p.case == "refreshed":
        t.wait(max(0.0, start + lifetime / 2 - t.port.now()))
        t.send(router_advertisement(tr1, router_lifetime=lifetime), label=f"the same RA again (lifetime {lifetime} s)")
        t.wait(max(0.0, start + lifetime + 0.5 - t.port.now()))
        at = t.port.now() - start
        used, how = _router_in_use(t, tr1, tn2, conf.address)
        detail = f"{at:.1f} s after the first RA (lifetime {lifetime} s, renewed at {lifetime / 2:g} s): {how}"
        return t.verdict(used, detail)
    used, how = _router_in_use(t, tr1, tn2, conf.address)
    if not used:
        raise t.not_judged("default-router:TR1", "rd.router_lifetime_is_honoured#A",
                           f"right after TR1's RA (lifetime {lifetime} s) the answer went {how}")
    if t.p.case == "zero":
        t.send(router_advertisement(tr1, router_lifetime=0), label="RA with Router Lifetime 0")
        t.wait(0.2)
        at = "after the RA with Router Lifetime 0"
    else:
        t.wait(max(0.0, start + lifetime + 0.5 - t.port.now()))
        at = f"{t.port.now() - start:.1f} s after TR1's RA with Router Lifetime {lifetime} s"
    used, how = _router_in_use(t, tr1, tn2, conf.address)
    if used:
        return t.failed(f"{at} the DUT still answered {how}")
    if not t.alive(method="echo"):
        return t.failed(f"{at} nothing went to TR1, but the DUT stopped answering")
    return t.passed(f"TR1 was the next hop at first; {at}: {how}")


@check(
    area="rd",
    ipv6ready="v6LC.2.2.15",
    title="Router Advertisement Processing, Reachable Time",
    rfc="RFC 4861 §6.3.4, §6.3.2, §7.3.3",
    needs=["exclusive_router"],
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
def reachable_time_is_applied(t):
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
    start, first, probe, seq = t.port.now(), None, None, 0
    while probe is None:  # traffic every 0.5 s keeps the entry in use (RFC 4861 §7.3.3: DELAY, then PROBE)
        seq += 1
        t.send(t.to_dut(tn1, t.dut.link_local) / ICMPv6EchoRequest(id=0x2215, seq=seq), label=f"Echo Request #{seq}")
        t.wait(0.5)
        solicits = t.collect(M.ns_for(tn1.link_local), 0, since=start)
        if first is None and solicits:
            first = solicits[0]
            t.note(f"TN1 resolved: {first.summary()}")
        if first is None:
            if t.port.now() - start > t.reply_timeout + 1.0:
                return t.failed("the DUT never resolved TN1's address (no Neighbor Solicitation)")
            continue
        probe = next((f for f in solicits if f.time > first.time + 0.5 and f.pkt[Ether].dst.lower() == tn1.mac), None)
        if probe is None and t.port.now() > first.time + high:
            return t.failed(f"no unicast NUD probe of TN1 within {high:.1f} s of its confirmation: the DUT did not "
                            f"use Reachable Time {t.p.base_ms} ms (a probe was due between {low:.1f} and "
                            f"{high:.1f} s)")
    gap = probe.time - first.time
    t.measure("probe_after_s", round(gap, 3))
    detail = (f"unicast NUD probe {gap:.2f} s after TN1 was resolved; expected ReachableTime "
              f"[{MIN_RANDOM_FACTOR * base:g}, {MAX_RANDOM_FACTOR * base:g}] s + DELAY_FIRST_PROBE_TIME "
              f"{DELAY_FIRST_PROBE_TIME:g} s")
    return t.verdict(low <= gap <= high, detail)


def _router_reachable_time(t):
    tn1 = t.tn1
    rs = router_solicitation(tn1)
    frame = t.expect_reply(rs, lambda p: ICMPv6ND_RA in p, what="Router Advertisement",
                           within=t.reply_timeout + 3.0)  # MAX_RA_DELAY_TIME 0.5 s; MIN_DELAY_BETWEEN_RAS 3 s
    if frame is None:
        return t.failed("no Router Advertisement in answer to a Router Solicitation")
    value = frame.pkt[ICMPv6ND_RA].reachabletime
    return t.verdict(value <= 3_600_000, f"Reachable Time {value} ms in the router's RA")


# -- v6LC.2.2.16: RA processing and the Neighbor Cache ----------------------------------

def _echo_from(t, node, seq: int, *, mac: str | None = None):
    req = (Ether(src=mac or node.mac, dst=t.dut.mac) / IPv6(src=node.link_local, dst=t.dut.link_local)
           / ICMPv6EchoRequest(id=0x2216, seq=seq, data=P.nonce(8)))
    return req


def _reach_state(t, tr1, state: str) -> str | None:
    """Bring the DUT's Neighbor Cache entry for TR1 into ``state`` (none,
    INCOMPLETE, REACHABLE, STALE, PROBE) as RFC 4861 §7.3.3 defines the
    transitions.  Returns why it could not, or None."""
    if state == "none":
        return None
    if state == "incomplete":
        tr1.answers_ns = False
        req = _echo_from(t, tr1, 1)
        ns = t.expect_reply(req, M.ns_for(tr1.link_local), what="Neighbor Solicitation for TR1")
        return None if ns is not None else "the DUT did not start resolving TR1 (no NS)"
    if state == "reachable":
        req = _echo_from(t, tr1, 1)
        since = t.port.now()
        rep = t.expect_reply(req, M.echo_reply_to(req), what="Echo Reply after resolving TR1",
                             within=t.reply_timeout + 3 * t.retrans_timer)
        if rep is None or not t.collect(M.ns_for(tr1.link_local), 0, since=since):
            return "the DUT did not resolve and confirm TR1 (no NS, or no Echo Reply after the NA)"
        return None
    # STALE: an RA with a Source Link-Layer Address option creates the entry in STALE (RFC 4861 §6.3.4)
    t.send(router_advertisement(tr1, router_lifetime=0), label="RA from TR1 with its SLLA (entry STALE)")
    t.wait(0.2)
    if state == "stale":
        return None
    # PROBE: a packet sent in STALE moves the entry to DELAY, and DELAY_FIRST_PROBE_TIME later to PROBE
    tr1.answers_ns = False
    since = t.send(_echo_from(t, tr1, 1))
    probe = t.port.expect(t.from_dut(lambda p: M.ns_for(tr1.link_local)(p) and p[Ether].dst.lower() == tr1.mac),
                          DELAY_FIRST_PROBE_TIME + t.reply_timeout, since=since)
    if probe is None:
        return f"no unicast NUD probe of TR1 within {DELAY_FIRST_PROBE_TIME + t.reply_timeout:g} s (DELAY -> PROBE)"
    t.note(f"entry in PROBE: {probe.summary()} at +{probe.time - since:.3f} s")
    return None


_NCE_EXPECT = {
    "stale": "the entry holds the RA's link-layer address (or keeps its own when the RA has none or the same) and "
             "is STALE: the next packet to TR1 goes there without resolution, and a unicast NUD probe follows "
             "DELAY_FIRST_PROBE_TIME later",
    "reachable": "the entry stays REACHABLE with TR1's link-layer address: the next packet goes there and no NUD "
                 "probe follows within DELAY_FIRST_PROBE_TIME",
    "probe": "the entry stays in PROBE: the DUT keeps probing TR1's link-layer address with unicast Neighbor "
             "Solicitations RetransTimer apart",
}


def _nce_part(letter, title, state, sllao, outcome, fault):
    return Part(letter, title, state=state, sllao=sllao, outcome=outcome, fault=fault,
                expect=f"{_NCE_EXPECT[outcome]} (RFC 4861 §6.3.4, §7.3.3)")


#: letter, title, NCE state before the RA, the RA's SLLA, expected state after, the fault that breaks it
_NCE_PARTS = [
    ("A", "RA processing, no NCE", "none", "same", "stale", "dut_drops_router_advertisements"),
    ("B", "RA processing, NCE INCOMPLETE", "incomplete", "same", "stale", "dut_drops_router_advertisements"),
    ("C", "RA with SLLA changed, NCE REACHABLE", "reachable", "changed", "stale", "dut_keeps_cached_router_lladdr"),
    ("D", "RA with SLLA unchanged, NCE REACHABLE", "reachable", "same", "reachable",
     "dut_neighbors_leave_reachable_at_once"),
    ("E", "RA without SLLA, NCE REACHABLE", "reachable", "absent", "reachable", "dut_neighbors_leave_reachable_at_once"),
    ("F", "RA with SLLA changed, NCE PROBE", "probe", "changed", "stale", "dut_keeps_cached_router_lladdr"),
    ("G", "RA with SLLA unchanged, NCE PROBE", "probe", "same", "probe", "dut_probes_once"),
    ("H", "RA without SLLA, NCE PROBE", "probe", "absent", "probe", "dut_probes_once"),
    ("I", "RA with SLLA changed, NCE STALE", "stale", "changed", "stale", "dut_keeps_cached_router_lladdr"),
    ("J", "RA with SLLA unchanged, NCE STALE", "stale", "same", "stale", "dut_delays_probes_long"),
    ("K", "RA without SLLA, NCE STALE", "stale", "absent", "stale", "dut_delays_probes_long"),
]


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.16",
    title="Router Advertisement Processing, Neighbor Cache",
    rfc="RFC 4861 §6.3.4, §7.3.3",
    needs=["exclusive_router"],
    liveness="echo",
    expect="an RA with a Source Link-Layer Address option creates or updates the router's Neighbor Cache "
           "entry: a new or changed address leaves it STALE, the same address (or none) leaves its state alone",
    parts=[_nce_part(*p) for p in _NCE_PARTS],
)
def ra_updates_neighbor_cache(t):
    """'If the advertisement contains a Source Link-Layer Address option, the
    link-layer address SHOULD be recorded in the Neighbor Cache entry for the
    router (creating an entry if necessary) ... If a Neighbor Cache entry is
    created for the source, its reachability state MUST be set to STALE ...
    If a cache entry already exists and is updated with a different
    link-layer address, the reachability state MUST also be set to STALE'
    (RFC 4861 §6.3.4).  An unchanged address leaves the state alone."""
    tr1 = t.tr1
    old_mac = tr1.mac
    if t.p.state in ("probe", "incomplete"):
        # a long RetransTimer keeps the entry in PROBE / INCOMPLETE long enough to act on it
        t.send(router_advertisement(t.node("TR0", router=True), router_lifetime=0, retrans_ms=1000, sllao=False),
               label="RA, Retrans Timer 1000 ms")
        t.wait(0.2)
    why = _reach_state(t, tr1, t.p.state)
    if why:
        raise t.not_judged(f"nce-{t.p.state}:TR1", nce.STATE_JUDGES[t.p.state], why)
    new_mac = P.random_mac() if t.p.sllao == "changed" else old_mac
    ra = router_advertisement(tr1, router_lifetime=0, sllao=t.p.sllao != "absent",
                              retrans_ms=1000 if t.p.state in ("probe", "incomplete") else 0)
    if t.p.sllao == "changed":
        ra[ICMPv6NDOptSrcLLAddr].lladdr = new_mac
    since = t.send(ra, label=f"RA from TR1, SLLA {t.p.sllao} ({new_mac if t.p.sllao != 'absent' else 'none'})")
    if t.p.sllao == "changed":
        tr1.mac = new_mac  # TR1 has moved: it answers from its new address from now on
    if t.p.state == "incomplete":
        # the packet queued during resolution goes out once the entry has an address
        rep = t.port.expect(t.from_dut(lambda p: ICMPv6EchoReply in p), t.reply_timeout, since=since)
        first_out = rep
    else:
        t.wait(0.1)
        if t.p.outcome == "probe":
            return _still_probing(t, tr1, old_mac, since)
        req = _echo_from(t, tr1, 2)
        since = t.port.now()
        first_out = t.expect_reply(req, lambda p: M.echo_reply_to(req)(p) or M.ns_for(tr1.link_local)(p),
                                   what="Echo Reply or NS for TR1", within=t.reply_timeout + 3 * t.retrans_timer)
    if first_out is None:
        return t.failed("no packet from the DUT to TR1 after the RA")
    if ICMPv6ND_NS in first_out.pkt:
        return t.failed(f"the DUT resolved TR1 again ({first_out.summary()} to {first_out.pkt[Ether].dst}) instead of "
                        "using the link-layer address the entry should hold")
    dst = first_out.pkt[Ether].dst.lower()
    want = new_mac if t.p.sllao == "changed" else old_mac
    if dst != want:
        return t.failed(f"the Echo Reply went to {dst}, not to {want}")
    sent_at = first_out.time
    probe = t.port.expect(t.from_dut(lambda p: M.ns_for(tr1.link_local)(p) and p[Ether].dst.lower() == want),
                          DELAY_FIRST_PROBE_TIME + t.reply_timeout, since=sent_at + 0.001)
    if t.p.outcome == "stale":
        if probe is None:
            return t.failed(f"Echo Reply to {want}, but no NUD probe within {DELAY_FIRST_PROBE_TIME + t.reply_timeout:g} "
                            "s: the entry was not STALE")
        return t.passed(f"Echo Reply to {want} without resolution; unicast NUD probe {probe.time - sent_at:.2f} s "
                        "later (STALE -> DELAY -> PROBE)")
    if probe is not None:
        return t.failed(f"Echo Reply to {want}, then a NUD probe {probe.time - sent_at:.2f} s later: the entry "
                        "had left REACHABLE")
    return t.passed(f"Echo Reply to {want}; no NUD probe within {DELAY_FIRST_PROBE_TIME + t.reply_timeout:g} s "
                    "(still REACHABLE)")


def _still_probing(t, tr1, mac: str, since: float):
    probe = t.port.expect(t.from_dut(lambda p: M.ns_for(tr1.link_local)(p) and p[Ether].dst.lower() == mac),
                          1.0 + t.reply_timeout, since=since)  # RetransTimer 1000 ms from the tester's RA
    if probe is None:
        return t.failed(f"no further unicast probe to {mac} within {1.0 + t.reply_timeout:g} s after the RA: "
                        "the entry left PROBE")
    return t.passed(f"the DUT kept probing {mac}: {probe.summary()} {probe.time - since:.2f} s after the RA")


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.17",
    title="Router Advertisement Processing, IsRouter flag",
    rfc="RFC 4861 §6.3.4",
    needs=["exclusive_router"],
    fault="dut_drops_router_advertisements",
    liveness="echo",
    expect="a neighbour the DUT knows as a host (NA with R=0) becomes a router when it sends an RA: the DUT "
           "then sends off-link traffic through it, to the link-layer address of the RA's option if it has one",
    parts=[
        Part("A", "RA without Source Link-layer option", sllao="absent"),
        Part("B", "RA with same Source Link-layer option as cached", sllao="same"),
        Part("C", "RA with different Source Link-layer option as cached", sllao="changed"),
    ],
)
def ra_sets_is_router(t):
    """'If no Source Link-Layer Address is included, but a corresponding
    Neighbor Cache entry exists, its IsRouter flag MUST be set to TRUE'; with
    the option, the address is recorded and IsRouter set (RFC 4861 §6.3.4)."""
    tr1 = t.tr1
    tr1.is_router = False  # answers NS with R=0 first: a host
    why = _reach_state(t, tr1, "reachable")
    if why:
        raise t.not_judged("nce-reachable:TR1", nce.STATE_JUDGES["reachable"], f"TR1 as a host neighbour: {why}")
    tr1.is_router = True
    new_mac = P.random_mac() if t.p.sllao == "changed" else tr1.mac
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    ra = router_advertisement(tr1, router_lifetime=600, sllao=t.p.sllao != "absent",
                              prefixes=[prefix_option(prefix, valid=600, preferred=600)])
    if t.p.sllao == "changed":
        ra[ICMPv6NDOptSrcLLAddr].lladdr = new_mac
    since = t.send(ra, label=f"RA from TR1 (lifetime 600 s), SLLA {t.p.sllao}")
    if t.p.sllao == "changed":
        tr1.mac = new_mac
    dad = dad_probe_in(t, prefix, since)
    if dad is None:
        return t.failed(f"the DUT formed no address from the RA's prefix {prefix}: it did not process the RA")
    dad_done(t, dad)
    path = next_hop_for(t, offlink_node(t), dad.pkt[ICMPv6ND_NS].tgt, via=tr1)
    if path.kind == "router" and path.frame and ICMPv6EchoReply in path.frame.pkt:
        return t.verdict(path.frame.pkt[Ether].dst.lower() == new_mac,
                         f"the answer to an off-link node went {path.describe()}")
    return t.failed(f"the answer to an off-link node went {path.describe()}, not through TR1 at {new_mac}")


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
def offlink_destination_goes_to_default_router(t):
    """Next-hop determination: 'the sender ... performs a longest prefix
    match against the Prefix List ... If the destination is off-link, the
    sender selects a router from the Default Router List' (RFC 4861 §5.2)."""
    tr1 = t.tr1
    conf = autoconfigure(t, tr1, router_lifetime=600)
    conf.require(t)
    path = next_hop_for(t, offlink_node(t), conf.address, via=tr1)
    return t.verdict(path.kind == "router", f"the answer to an off-link node went {path.describe()}")


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
def onlink_prefix_of_any_length_is_onlink(t):
    """On-link determination takes the prefix with its length whatever it is
    (RFC 4861 §6.3.4: 'If the on-link flag is set ... add the prefix to the
    Prefix List'); only autoconfiguration needs prefix length + interface
    identifier = 128 bits (RFC 4862 §5.5.3(d))."""
    tr1 = t.tr1
    base = fresh_prefix(avoid=t.target.link_prefix)
    long_prefix = ipaddress.IPv6Network(f"{base.network_address + (secrets.randbelow(2**16) << 32)}/96")
    since = t.send(router_advertisement(tr1, router_lifetime=600, prefixes=[
        prefix_option(long_prefix, valid=600, preferred=600)]), label=f"RA with prefix {long_prefix} (L=1, A=1)")
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
    liveness="echo",
    expect="a prefix announced on-link (L=1) stays on-link after an RA with the same prefix and L=0: the "
           "DUT keeps resolving a node of that prefix directly instead of sending through the router",
    # the test's own procedure (L=0 alone does not make a prefix on-link) is nd.prefix_without_on_link_flag_is_not_on_link;
    # this part asserts the clause's other half, which that procedure cannot see
    parts=[Part("L0-after-L1", "On-link prefix stays on-link after L=0")],
)
def onlink_flag_clear_keeps_prefix_onlink(t):
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
            return t.failed("; ".join(paths))
    return t.passed("; ".join(paths))


def _fragmented_ra(t, atomic: bool):
    tr1, prefix = t.tr1, fresh_prefix(avoid=t.target.link_prefix)
    before, _ = echo_hop_limit(t, t.node("TN1"))
    chlim = _random_hop_limit(avoid=before or 64)
    ra = router_advertisement(tr1, router_lifetime=600, cur_hop_limit=chlim,
                              prefixes=[prefix_option(prefix, valid=600, preferred=600)])
    frames = fragmented(ra, atomic=atomic)
    since = t.port.now()
    for f in frames:
        t.send(f, label=f"RA in {'an atomic fragment' if atomic else f'{len(frames)} fragments'}")
    effects = _ra_effects(t, tr1, prefix, chlim, since)
    if effects:
        return t.failed(f"the DUT processed the fragmented RA: {'; '.join(effects)}")
    if not t.alive(method="echo"):
        return t.failed("no effect of the RA, but the DUT stopped answering afterwards")
    took, after = _valid_ra_takes_effect(t, tr1, chlim)
    seen = f"no DAD probe in {prefix} and hop limit still {before} (the fragmented RA said {chlim})"
    return t.passed(f"{seen}; {after}") if took else t.failed(f"{seen}; {after}")


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.26",
    title="Router Advertisement in an atomic fragment is ignored",
    rfc="RFC 6980 §5",
    needs=["exclusive_router"],
    fault="dut_skips_ra_validation",
    liveness="echo",
    expect="an RA carried in an atomic fragment (Fragment header, offset 0, M=0) is silently discarded: no "
           "address from its prefix, its Cur Hop Limit not used",
    parts=[Part("A", "Router Advertisement with Atomic Fragment (Host Only)")],
)
def ra_in_atomic_fragment_is_ignored(t):
    """'A node MUST silently ignore any IPv6 packets that contain a Fragment
    Header and ... an ICMPv6 Router Advertisement' etc. (RFC 6980 §5),
    including atomic fragments."""
    return _fragmented_ra(t, atomic=True)


@check(
    area="rd", scope="host",
    ipv6ready="v6LC.2.2.27",
    title="Fragmented Router Advertisement is ignored",
    rfc="RFC 6980 §5",
    needs=["exclusive_router"],
    fault="dut_skips_ra_validation",
    liveness="echo",
    expect="an RA split in two fragments is silently discarded after reassembly: no address from its prefix, "
           "its Cur Hop Limit not used",
    parts=[Part("A", "Router Advertisement in two fragments (Host Only)")],
)
def fragmented_ra_is_ignored(t):
    """'Nodes MUST silently ignore ... Neighbor Discovery messages if the
    packets are fragmented' (RFC 6980 §5)."""
    return _fragmented_ra(t, atomic=False)


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
def default_router_switch(t):
    """'Routers that are reachable or probably reachable (i.e., in any state
    other than INCOMPLETE) SHOULD be preferred over routers whose
    reachability is unknown or suspect' (RFC 4861 §6.3.6); NUD finds a
    router gone (§7.3.3) and the host then uses another."""
    tr1, tr2 = t.tr1, t.node("TR2", router=True)
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    t.send(router_advertisement(tr2, router_lifetime=600, prefixes=[prefix_option(prefix, valid=600, preferred=600)]),
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
    deadline = t.port.now() + budget
    last = None
    while t.port.now() < deadline:
        last = next_hop_for(t, tn2, conf.address, via=other, routers=[tr1, tr2], within=0.5)
        t.wait(max(0.0, 0.5 - (t.port.now() - last.frame.time)) if last.frame else 0.0)
        if last.kind == "router" and last.router is other and ICMPv6EchoReply in last.frame.pkt:
            return t.passed(f"first through {used.name}; {DELAY_FIRST_PROBE_TIME:g}+ s after it went silent the "
                            f"answer went {last.describe()}")
    return t.failed(f"{budget:g} s after {used.name} went silent the answer still went "
                    f"{last.describe() if last else 'nowhere'}")



# -- RFC 4191: a type C host uses Route Information options -----------------------


#: a Route Lifetime short enough to watch run out, and how late after it the route may still be used
RIO_SHORT_LIFETIME = 3
RIO_EXPIRY_MARGIN_S = 1.0


def _route_prefix(avoid: list[ipaddress.IPv6Network]) -> ipaddress.IPv6Network:
    """A fresh /48 (more specific than ::/0, shorter than the /64s in use)."""
    while True:
        route = fresh_prefix().supernet(new_prefix=48)
        if not any(route.overlaps(a) for a in avoid):
            return route


def _rio_ra(t, router, route, *, preference="medium", lifetime=600, router_lifetime=0, step=""):
    """An RA from ``router`` carrying one Route Information option."""
    return t.send(router_advertisement(router, router_lifetime=router_lifetime, options=[
        route_information(route, preference=preference, lifetime=lifetime)]),
        label=f"RA from {router.name} (router lifetime {router_lifetime} s): Route Information {route} "
              f"preference {preference}, lifetime {lifetime} s{step}")


def _via(t, node, conf, tr1, routers):
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
def route_information_selects_next_hop(t):
    """A type C host (RFC 4191 §3) keeps the routes of Route Information
    options in its Routing Table and picks the next hop by longest prefix
    match, then by route preference among routes of equal length (§3.2's
    sending algorithm); a Route Information option with a Route Lifetime of
    zero removes its route (§3.1)."""
    tr1, tr2 = t.tr1, t.node("TR2", router=True)
    routers = [tr1, tr2]
    conf = autoconfigure(t, tr1, router_lifetime=600)  # TR1: the default router and the DUT's prefix
    if conf.address is None:
        return t.failed(conf.missing())
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
        return t.failed(f"{'; '.join(problems)}: {seen}") if problems else t.passed(seen)

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
        return t.failed(f"{'; '.join(problems)}: {seen}") if problems else t.passed(seen)

    lifetime = RIO_SHORT_LIFETIME if t.p.case == "expire" else 600
    sent = _rio_ra(t, tr2, route, lifetime=lifetime)
    before = _via(t, tn2, conf, tr1, routers)
    if before.router is not tr2:
        return t.failed(f"the route via TR2 was not used before the withdrawal (a type C host uses it, see part "
                        f"more-specific): the answer went {before.describe()}")
    if t.p.case == "expire":
        t.wait(max(0.0, sent + lifetime + RIO_EXPIRY_MARGIN_S - t.port.now()))
        step = f"{lifetime} s Route Lifetime over (+{t.port.now() - sent:.1f} s)"
    else:
        _rio_ra(t, tr2, route, lifetime=0, step=" (withdrawal)")
        step = "Route Lifetime 0"
    after = _via(t, tn2, conf, tr1, routers)
    seen = f"before: {before.describe()}; after {step}: {after.describe()}"
    if after.router is not tr1:
        return t.failed(f"the {'expired' if t.p.case == 'expire' else 'withdrawn'} route via TR2 is still used "
                        f"(expected TR1, the default router): {seen}")
    return t.passed(seen)


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
def source_address_selects_first_hop(t):
    """'A host SHOULD select default routers for each prefix it is assigned
    an address in.  Routers that have advertised the prefix in their Router
    Advertisement message SHOULD be preferred over routers that do not
    advertise the prefix' (RFC 8028 §3); RFC 6724 rule 5.5 is the source
    address side of the same rule."""
    tr1, tr2 = t.tr1, t.node("TR2", router=True)
    routers = [tr1, tr2]
    conf1 = autoconfigure(t, tr1, router_lifetime=600)
    conf2 = autoconfigure(t, tr2, prefix=fresh_prefix(avoid=conf1.prefix), router_lifetime=600)
    for conf, router in ((conf1, tr1), (conf2, tr2)):
        if conf.address is None:
            return t.failed(f"from {router.name}'s RA: {conf.missing()}")
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
    return t.failed(f"{'; '.join(problems)}: {'; '.join(seen)}") if problems else t.passed("; ".join(seen))
