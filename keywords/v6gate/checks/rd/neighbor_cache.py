"""RAs and the Neighbor Cache: every NCE state, the IsRouter flag (RFC 4861 §6.3.4, §7.3.3)."""

from __future__ import annotations

import ipaddress

from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NS,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import match as M
from ...net import packets as P
from ...net.nd import fresh_prefix, prefix_option, router_advertisement
from ...scenario import nce
from ...scenario.observe import (
    dad_done,
    dad_probe_in,
    in_use,
    next_hop_for,
    offlink_node,
    seen_probing,
)
from ...scenario.rd import DELAY_FIRST_PROBE_TIME


def _echo_from(t: CheckContext, node, seq: int, *, mac: str | None = None):
    """An Echo Request from ``node``'s link-local address; its identifier is
    the node's own (the low 16 bits of that address), so that a part beside
    others takes only the answers to its own requests."""
    ident = int(ipaddress.IPv6Address(node.link_local)) & 0xFFFF
    req = (Ether(src=mac or node.mac, dst=t.dut.mac) / IPv6(src=node.link_local, dst=t.dut.link_local)
           / ICMPv6EchoRequest(id=ident, seq=seq, data=P.nonce(8)))
    return req


def _reach_state(t: CheckContext, tr1, state: str) -> str | None:
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
        since = t.now()
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
    forms_addresses=False,  # its RAs carry no prefix
    # each part has a TR1 of its own (its RAs with Router Lifetime 0: no default router), so on a DUT the run does
    # not rebuild its parts run side by side (core/together.py); the RetransTimer the PROBE and INCOMPLETE parts
    # advertise paces only the DUT's Neighbor Solicitations, which no part times
    concurrent_parts=True,
    liveness="echo",
    expect="an RA with a Source Link-Layer Address option creates or updates the router's Neighbor Cache "
           "entry: a new or changed address leaves it STALE, the same address (or none) leaves its state alone",
    parts=[_nce_part(*p) for p in _NCE_PARTS],
)
def ra_updates_neighbor_cache(t: CheckContext):
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
        rep = t.port.expect(t.from_dut(lambda p: ICMPv6EchoReply in p and P.same_address(p[IPv6].dst, tr1.link_local)),
                            t.reply_timeout, since=since)
        first_out = rep
    else:
        t.wait(0.1)
        if t.p.outcome == "probe":
            return _still_probing(t, tr1, old_mac, since)
        req = _echo_from(t, tr1, 2)
        since = t.now()
        first_out = t.expect_reply(req, lambda p: M.echo_reply_to(req)(p) or M.ns_for(tr1.link_local)(p),
                                   what="Echo Reply or NS for TR1", within=t.reply_timeout + 3 * t.retrans_timer)
    if first_out is None:
        raise Deviation("no packet from the DUT to TR1 after the RA")
    if ICMPv6ND_NS in first_out.pkt:
        raise Deviation(f"the DUT resolved TR1 again ({first_out.summary()} to {first_out.pkt[Ether].dst}) instead of "
                         "using the link-layer address the entry should hold")
    dst = first_out.pkt[Ether].dst.lower()
    want = new_mac if t.p.sllao == "changed" else old_mac
    if dst != want:
        raise Deviation(f"the Echo Reply went to {dst}, not to {want}")
    sent_at = first_out.time
    probe = t.port.expect(t.from_dut(lambda p: M.ns_for(tr1.link_local)(p) and p[Ether].dst.lower() == want),
                          DELAY_FIRST_PROBE_TIME + t.reply_timeout, since=sent_at + 0.001)
    if t.p.outcome == "stale":
        if probe is None:
            raise Deviation(f"Echo Reply to {want}, but no NUD probe within {DELAY_FIRST_PROBE_TIME + t.reply_timeout:g} "
                             "s: the entry was not STALE")
        return t.conclude(f"Echo Reply to {want} without resolution; unicast NUD probe {probe.time - sent_at:.2f} s "
                           "later (STALE -> DELAY -> PROBE)", [])
    if probe is not None:
        raise Deviation(f"Echo Reply to {want}, then a NUD probe {probe.time - sent_at:.2f} s later: the entry "
                         "had left REACHABLE")
    return t.conclude(f"Echo Reply to {want}; no NUD probe within {DELAY_FIRST_PROBE_TIME + t.reply_timeout:g} s "
                       "(still REACHABLE)", [])


def _still_probing(t: CheckContext, tr1, mac: str, since: float):
    probe = t.port.expect(t.from_dut(lambda p: M.ns_for(tr1.link_local)(p) and p[Ether].dst.lower() == mac),
                          1.0 + t.reply_timeout, since=since)  # RetransTimer 1000 ms from the tester's RA
    if probe is None:
        raise Deviation(f"no further unicast probe to {mac} within {1.0 + t.reply_timeout:g} s after the RA: "
                         "the entry left PROBE")
    return t.conclude(f"the DUT kept probing {mac}: {probe.summary()} {probe.time - since:.2f} s after the RA", [])


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
def ra_sets_is_router(t: CheckContext):
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
    lease = t.lease_for_probes(2, waits=0.0)  # the address serves one next hop (two tries)
    ra = router_advertisement(tr1, router_lifetime=600, sllao=t.p.sllao != "absent",
                              prefixes=[prefix_option(prefix, valid=lease, preferred=lease)])
    if t.p.sllao == "changed":
        ra[ICMPv6NDOptSrcLLAddr].lladdr = new_mac
    since = t.send(ra, label=f"RA from TR1 (lifetime 600 s), SLLA {t.p.sllao}")
    if t.p.sllao == "changed":
        tr1.mac = new_mac
    dad = dad_probe_in(t, prefix, since)
    address = dad.pkt[ICMPv6ND_NS].tgt if dad is not None else (None if seen_probing(t) else in_use(t, prefix))
    if address is None:
        # an RA the DUT does not process at all does not make TR1 a router either: this check's own FAIL
        raise Deviation(f"the DUT formed no address from the RA's prefix {prefix}: it did not process the RA")
    if dad is not None:
        dad_done(t, dad)
    path = next_hop_for(t, offlink_node(t), address, via=tr1)
    if path.kind == "router" and path.frame and ICMPv6EchoReply in path.frame.pkt:
        seen = f"the answer to an off-link node went {path.describe()}"
        if path.frame.pkt[Ether].dst.lower() != new_mac:
            raise Deviation(seen)
        return t.conclude(seen, [])
    raise Deviation(f"the answer to an off-link node went {path.describe()}, not through TR1 at {new_mac}")
