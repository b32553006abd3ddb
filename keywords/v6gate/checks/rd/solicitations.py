"""Router Solicitations: sent at interface start, their spacing, stopped by a solicited RA; a host ignores RSs (RFC 4861 §6.3.7, §6.2.6)."""

from __future__ import annotations

import ipaddress
import itertools

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

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import match as M
from ...net import packets as P
from ...net.nd import ND_HOP_LIMIT, fresh_prefix, prefix_option, router_advertisement
from ...net.rd import (
    RS_RAND,
    RTR_SOLICITATION_INTERVAL,
    invalid_ra,
    is_rs,
    router_solicitation,
)
from ...scenario.rd import _INVALID_RA_PARTS, _ra_effects, _random_hop_limit, _valid_ra_takes_effect


def _judge_rs(t: CheckContext, frame) -> list[str]:
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


def _restart_and_first_rs(t: CheckContext):
    since = t.restart_dut()
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
def rs_is_sent_at_interface_start(t: CheckContext):
    """'When an interface becomes enabled, a host may be unwilling to wait for
    the next unsolicited Router Advertisement ... it SHOULD transmit up to
    MAX_RTR_SOLICITATIONS Router Solicitation messages, each separated by at
    least RTR_SOLICITATION_INTERVAL seconds' (RFC 4861 §6.3.7); RFC 7559
    keeps that first interval (IRT = RTR_SOLICITATION_INTERVAL, RAND ±0.1)."""
    since, window, first = _restart_and_first_rs(t)
    if first is None:
        raise Deviation(f"no Router Solicitation within {window:g} s of the restart")
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
def rs_retransmissions_keep_their_spacing(t: CheckContext):
    """RFC 4861 §6.3.7 spaces solicitations RTR_SOLICITATION_INTERVAL apart;
    RFC 7559 §2 lets a host continue past MAX_RTR_SOLICITATIONS with an
    exponential backoff (RT = 2*RTprev + RAND*RTprev), never faster."""
    _since, window, first = _restart_and_first_rs(t)
    if first is None:
        raise Deviation(f"no Router Solicitation within {window:g} s of the restart")
    horizon = _rs_gap_ceiling() * 3 + t.reply_timeout  # covers the 2nd (~4 s) and 3rd (~8 s later) RS
    frames = t.collect(is_rs, horizon, since=first.time)
    times = [f.time for f in frames]
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(times)]
    t.measure("rs_gaps_s", gaps)
    detail = f"{len(times)} Router Solicitations; gaps {gaps} s"
    problems = [f"a gap of {g:.3f} s is shorter than {_rs_gap_floor():g} s" for g in gaps if g < _rs_gap_floor()]
    problems += [f"the gaps shrink ({a:.3f} s then {b:.3f} s)" for a, b in itertools.pairwise(gaps) if b < a * 0.9]
    return t.conclude(detail, problems)


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
def solicited_ra_stops_solicitations(t: CheckContext):
    """'Once the host sends a Router Solicitation, and receives a valid Router
    Advertisement with a non-zero Router Lifetime, the host MUST desist from
    sending additional solicitations on that interface' (RFC 4861 §6.3.7);
    an RA failing the §6.1.2 validity tests MUST be silently discarded, so
    it neither stops the solicitations nor configures anything."""
    since, window, first = _restart_and_first_rs(t)
    if first is None:
        raise Deviation(f"no Router Solicitation within {window:g} s of the restart, nothing to answer")
    tr1, prefix, chlim = t.tr1, fresh_prefix(avoid=t.target.link_prefix), _random_hop_limit()
    lease = t.lease_for_probes(0)  # its address is never used: a DAD probe in its prefix is all that is watched for
    fields = dict(router_lifetime=600, cur_hop_limit=chlim, sllao=t.p.sllao,
                  prefixes=[prefix_option(prefix, valid=lease, preferred=lease)])
    ra = invalid_ra(tr1, t.p.how, **fields) if t.p.how else router_advertisement(tr1, **fields)
    sent = t.send(ra, label=f"{'invalid RA (' + t.p.how + ')' if t.p.how else 'RA'} in answer to the first RS")
    until = first.time + _rs_gap_ceiling() + t.reply_timeout
    later = t.port.expect(t.from_dut(is_rs), max(0.0, until - t.now()), since=sent)
    effects = _ra_effects(t, tr1, prefix, chlim, sent) if t.p.how else []
    if not t.p.how:
        if later is not None:
            raise Deviation(f"the DUT sent another Router Solicitation {later.time - sent:.3f} s after a valid "
                             f"RA (first RS at +{first.time - since:.3f} s): it did not accept the RA")
        return t.conclude(f"one Router Solicitation (+{first.time - since:.3f} s after the restart), none in the "
                           f"{until - sent:.1f} s after the valid RA", [])
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
    forms_addresses=False,  # it sends no RA
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
def host_ignores_router_solicitations(t: CheckContext):
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
    t.wait(max(0.0, since + t.silence - t.now()))
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
        return t.conclude(seen, problems)
    if not t.alive(method="echo"):
        raise Deviation(f"{seen}, but the DUT stopped answering afterwards")
    return t.conclude(seen, [])
