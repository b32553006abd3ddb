"""Address resolution and NUD as the DUT originates them (RFC 4861 §7.2.2, §7.3.3)."""

import itertools

from scapy.layers.inet6 import ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, IPv6
from scapy.layers.l2 import Ether

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import packets as P
from ...net.nd import ND_HOP_LIMIT
from ...scenario import nce
from ...scenario.firsthop import FirstHop
from ...scenario.nce import Neighbour, NudTiming


@check(
    area="nd",
    ipv6ready="v6LC.2.1.2",
    title="Resolution Wait Queue",
    rfc="RFC 4861 §7.2.2",
    liveness="ns",
    fault="dut_loses_packets_awaiting_resolution",
    expect="packets waiting for address resolution are queued per neighbour and sent once it completes: at least the "
           "most recent of three Echo Replies reaches each node (the queue MUST hold one packet; a new arrival SHOULD "
           "replace the oldest)",
    parts=[
        Part("A", "Single Queue", nodes=1),
        Part("B", "Multiple Queues", nodes=2),
    ],
)
def packets_wait_for_address_resolution(t: CheckContext):
    """'While waiting for address resolution to complete, the sender MUST,
    for each neighbor, retain a small queue of packets waiting for address
    resolution to complete.  The queue MUST hold at least one packet, and
    MAY contain more. ... When a queue overflows, the new arrival SHOULD
    replace the oldest entry.  Once address resolution completes, the node
    transmits any queued packets.' (RFC 4861 §7.2.2)"""
    nbs = [Neighbour(t, t.node(f"TN{i + 1}")) for i in range(t.p.nodes)]
    since = t.now()
    for nb in nbs:
        for _ in range(3):
            t.send(nb.echo_request(), label=f"Echo Request {nb.seq} from {nb.name}")
    for nb in nbs:
        ns = t.port.expect(t.from_dut(nb.is_multicast_ns_for_me), t.reply_timeout, since=since)
        if ns is None:
            raise Deviation(f"setup: no multicast NS for {nb.name} {nb.addr} (§7.2.2)", name=f"nce-incomplete:{nb.name}",
                            judged_by=nce.STATE_JUDGES["incomplete"])
    answered = t.now()
    for nb in nbs:
        t.send(nb.na(s=1, o=1), label=f"solicited NA from {nb.name}")
    frames = t.collect(lambda p: any(nb.is_reply(p) for nb in nbs), t.reply_timeout, since=answered)
    problems, seen = [], []
    for nb in nbs:
        seqs = sorted({f.pkt["ICMPv6 Echo Reply"].seq for f in frames if nb.is_reply(f.pkt)})
        seen.append(f"{nb.name}: replies to requests {seqs or 'none'} of 1-3")
        if not seqs:
            problems.append(f"no queued Echo Reply reached {nb.name}")
        elif nb.seq not in seqs:
            problems.append(f"{nb.name}'s newest request ({nb.seq}) was not answered: the oldest were kept instead")
    text = "; ".join(seen)
    return t.conclude(text, problems)


def _ns_fields(t: CheckContext, f, *, target: str, dst: str, dst_mac: str | None, srcs: set[str], sllao_required: bool) -> list[str]:
    pkt = f.pkt
    problems = []
    if pkt[IPv6].hlim != ND_HOP_LIMIT:
        problems.append(f"hop limit {pkt[IPv6].hlim}, not 255")
    if not P.same_address(pkt[IPv6].dst, dst):
        problems.append(f"sent to {pkt[IPv6].dst}, not {dst}")
    if dst_mac and pkt[Ether].dst.lower() != dst_mac:
        problems.append(f"sent to MAC {pkt[Ether].dst}, not {dst_mac}")
    if not P.same_address(pkt[ICMPv6ND_NS].tgt, target):
        problems.append(f"target {pkt[ICMPv6ND_NS].tgt}, not {target}")
    if not any(P.same_address(pkt[IPv6].src, s) for s in srcs):
        problems.append(f"source {pkt[IPv6].src}, not the prompting packet's source {' or '.join(sorted(srcs))}")
    sll = pkt[ICMPv6NDOptSrcLLAddr].lladdr.lower() if ICMPv6NDOptSrcLLAddr in pkt else None
    if sllao_required and sll is None:
        problems.append("no Source Link-Layer Address option (MUST be in multicast solicitations, §4.3)")
    elif sll is not None and sll != t.dut.mac:
        problems.append(f"Source Link-Layer Address {sll} is not the DUT's {t.dut.mac}")
    return problems


def _intervals(frames, retrans: float) -> list[str]:
    """RetransTimer between successive solicitations (with the bench's
    scheduling allowance)."""
    out = []
    for a, b in itertools.pairwise(frames):
        gap = b.time - a.time
        if not 0.5 * retrans <= gap <= 1.5 * retrans + 0.05:
            out.append(f"{gap:.3f} s between solicitations, not RetransTimer {retrans:g} s")
    return out


def _address_pair(t: CheckContext, node, dut_kind: str, node_kind: str, dut_global: str | None) -> tuple[str, str]:
    dut = t.dut.link_local if dut_kind == "link_local" else dut_global
    return (node.link_local if node_kind == "link_local" else node.global_addr), dut


def _timed_bench(t: CheckContext, *, global_needed: bool) -> str | None:
    """The tester advertises the link prefix (when the DUT needs a global
    address, learned from its DAD probe) and then RetransTimer =
    RETRANS_TIMER; returns the DUT's global address.  Parts side by side
    (core/together.py) do each once for all of them: the same RA timer,
    the same address."""
    dut_global = nce.once_for_batch(t, "the DUT's global address in the link prefix",
                                    lambda: FirstHop(t, router_lifetime=0).start().dut_global) if global_needed else None
    nce.once_for_batch(t, f"RA RetransTimer {nce.RETRANS_TIMER_MS} ms",
                       lambda: nce.set_nd_timers(t, retrans_ms=nce.RETRANS_TIMER_MS))
    nce.advertised_retrans(t, nce.RETRANS_TIMER_MS)  # (each part judges by it)
    return dut_global


@check(
    area="nd",
    ipv6ready="v6LC.2.1.5",
    title="Neighbor Solicitation Origination, Address Resolution",
    rfc="RFC 4861 §7.2.2, §4.3, §6.3.4",
    needs=["exclusive_router"],
    liveness="ns",
    forms_addresses=False,
    concurrent_parts=True,  # each trial a TN1 of its own; they share only the RetransTimer RA and the link prefix
    fault="dut_solicits_too_often",
    expect="address resolution sends MAX_MULTICAST_SOLICIT (3) multicast NS, RetransTimer (1 s, advertised by the "
           "tester) apart, to the target's solicited-node group, hop limit 255, from the prompting packet's source, "
           "with the DUT's link-layer address; no more once unanswered (k/n trials)",
    parts=[
        Part("A", "Neighbor Solicitation Origination, Target Address Being Link-local", kind="link_local"),
        Part("B", "Neighbor Solicitation Origination, Target Address Being Global", kind="global"),
    ],
)
def address_resolution_solicits_correctly(t: CheckContext):
    """'When a node has a unicast packet to send to a neighbor, but does not
    know the neighbor's link-layer address, it performs address resolution
    ... creating an entry in the INCOMPLETE state and transmitting a
    Neighbor Solicitation ... to the solicited-node multicast address ...
    While awaiting a response, the sender SHOULD retransmit ... approximately
    every RetransTimer milliseconds ... until MAX_MULTICAST_SOLICIT
    solicitations have been sent.' (RFC 4861 §7.2.2)  The tester advertises
    RetransTimer = RETRANS_TIMER (1 s) in an RA (§6.3.4), so the intervals
    are measured on a scale bench jitter does not distort."""
    dut_global = _timed_bench(t, global_needed=t.p.kind == "global")
    timing = NudTiming.of(t)

    def once(i):
        node = t.node(f"TN1-{i + 1}")
        addr, dut = _address_pair(t, node, t.p.kind, t.p.kind, dut_global)
        nb = Neighbour(t, node, addr=addr, dut_addr=dut)
        since = t.send(nb.echo_request(), label=f"Echo Request from {addr} to {dut}")
        frames = t.collect(nb.is_ns_for_me, timing.resolution + timing.reply + timing.retrans, since=since)
        if not frames:
            return False, f"no NS for {addr}"
        problems = []
        if frames[0].time - since > t.reply_timeout:
            problems.append(f"first NS {frames[0].time - since:.2f} s after the packet")
        for f in frames:
            problems += _ns_fields(t, f, target=addr, dst=P.solicited_node(addr), dst_mac=P.multicast_mac(
                P.solicited_node(addr)), srcs={dut}, sllao_required=True)
        if len(frames) != nce.MAX_MULTICAST_SOLICIT:
            problems.append(f"{len(frames)} solicitations, not MAX_MULTICAST_SOLICIT ({nce.MAX_MULTICAST_SOLICIT})")
        problems += _intervals(frames, timing.retrans)
        seen = (f"{len(frames)} multicast NS for {addr} from {frames[0].pkt[IPv6].src} at "
                + ", ".join(f"+{f.time - since:.3f}" for f in frames) + " s")
        return not problems, seen + (": " + "; ".join(dict.fromkeys(problems)) if problems else "")

    return nce.trials(t, once)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.6",
    title="Neighbor Solicitation Origination, Reachability Confirmation",
    rfc="RFC 4861 §7.3.3, §7.2.2, §6.3.4",
    needs=["exclusive_router"],
    liveness="ns",
    dut_config="nud-fast",
    forms_addresses=False,
    concurrent_parts=True,  # each trial a TN1 of its own; they share only the RetransTimer RA and the link prefix
    fault="dut_probes_too_often",
    expect="a packet to a STALE neighbour starts DELAY; DELAY_FIRST_PROBE_TIME later the DUT probes it with "
           "MAX_UNICAST_SOLICIT (3) unicast NS to its cached address, RetransTimer (1 s, advertised) apart, hop "
           "limit 255, target "
           "the neighbour's address, from one of the DUT's addresses; no more once unanswered (k/n trials)",
    parts=[
        Part("A", "Neighbor Solicitation Origination, Link-local => Link-local", dut="link_local", node="link_local"),
        Part("B", "Neighbor Solicitation Origination, Global => Global", dut="global", node="global"),
        Part("C", "Neighbor Solicitation Origination, Link-local => Global", dut="link_local", node="global"),
        Part("D", "Neighbor Solicitation Origination, Global => Link-local", dut="global", node="link_local"),
    ],
)
def unreachability_detection_probes(t: CheckContext):
    """'The first time a node sends a packet to a neighbor whose entry is
    STALE, the sender changes the state to DELAY and sets a timer to expire
    in DELAY_FIRST_PROBE_TIME seconds.  If the entry is still in the DELAY
    state when the timer expires, the entry's state changes to PROBE. ...
    Upon entering the PROBE state, a node sends a unicast Neighbor
    Solicitation message to the neighbor using the cached link-layer
    address. ... retransmits ... every RetransTimer milliseconds until ...
    MAX_UNICAST_SOLICIT solicitations have been sent' (RFC 4861 §7.3.3).
    Parts name the DUT's and the neighbour's address (DUT => neighbour).
    The probes' source is not constrained by the RFC (any of the DUT's
    addresses).  RetransTimer is advertised as RETRANS_TIMER (1 s)."""
    dut_global = _timed_bench(t, global_needed="global" in (t.p.dut, t.p.node))
    timing = NudTiming.of(t)
    dut_addrs = {t.dut.link_local} | ({dut_global} if dut_global else set())

    def once(i):
        node = t.node(f"TN1-{i + 1}")
        addr, dut = _address_pair(t, node, t.p.dut, t.p.node, dut_global)
        nb = Neighbour(t, node, addr=addr, dut_addr=dut)
        nce.incomplete(nb)
        since = t.send(nb.na(s=0, o=1), label=f"unsolicited NA from {addr} (S=0 O=1 TLLA): entry STALE")
        reply = t.port.expect(t.from_dut(nb.is_reply), t.reply_timeout, since=since)
        if reply is None:
            return False, f"no Echo Reply to {addr} after its NA (§7.2.5: STALE, queued packet sent)"
        frames = t.collect(nb.is_ns_for_me, timing.probe_window + timing.probing, since=reply.time)
        if not frames:
            return False, f"no NS for {addr} within {timing.probe_window + timing.probing:g} s of the Echo Reply"
        first = frames[0].time - reply.time
        problems = []
        if not 0.8 * timing.delay_first_probe <= first <= timing.delay_first_probe + timing.retrans + timing.reply:
            problems.append(f"first probe {first:.2f} s after the packet, not DELAY_FIRST_PROBE_TIME "
                            f"{timing.delay_first_probe:g} s")
        for f in frames:
            problems += _ns_fields(t, f, target=addr, dst=addr, dst_mac=nb.mac, srcs=dut_addrs, sllao_required=False)
        if len(frames) != nce.MAX_UNICAST_SOLICIT:
            problems.append(f"{len(frames)} probes, not MAX_UNICAST_SOLICIT ({nce.MAX_UNICAST_SOLICIT})")
        problems += _intervals(frames, timing.retrans)
        seen = (f"{len(frames)} unicast NS for {addr} from {frames[0].pkt[IPv6].src} at "
                + ", ".join(f"+{f.time - reply.time:.3f}" for f in frames) + " s after the Echo Reply")
        return not problems, seen + (": " + "; ".join(dict.fromkeys(problems)) if problems else "")

    return nce.trials(t, once)
