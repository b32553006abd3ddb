"""Neighbor Discovery (RFC 4861, RFC 6980) — IPv6 Ready Core v6LC.2.1:
address resolution, the Neighbor Cache state machine and Neighbor
Unreachability Detection, on-link determination.

Neighbour-cache states are driven and judged from the wire (see
``net/nce.py``): the checks never read the DUT's cache.  Timers come from
RFC 4861 §10 and the target's timing; where a check ages an entry, the
tester shortens ReachableTime with a Router Advertisement (which needs it to
be the only router).  In the lab, NUD checks use the ``nud-fast`` DUT
configuration (DELAY_FIRST_PROBE_TIME 1 s, stated in the lab target).
"""

import itertools

from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr, IPv6
from scapy.layers.l2 import Ether

from ..core.check import Part, check
from ..net import nce
from ..net import packets as P
from ..net.firsthop import FirstHop
from ..net.nce import Expect, Neighbour, NudTiming, judged
from ..net.nd import ND_HOP_LIMIT, neighbor_solicitation


def _na_seen(t, frame, *, solicited: bool, dst: str) -> tuple[list[str], str]:
    """Judge an NA sent in answer to an NS (RFC 4861 §7.2.4)."""
    na = frame.pkt[ICMPv6ND_NA]
    ip = frame.pkt[IPv6]
    tlla = frame.pkt[ICMPv6NDOptDstLLAddr].lladdr if ICMPv6NDOptDstLLAddr in frame.pkt else None
    problems = []
    if ip.hlim != ND_HOP_LIMIT:
        problems.append(f"hop limit {ip.hlim}, not 255")
    if int(na.S) != int(solicited):
        problems.append(f"Solicited flag {na.S}, expected {int(solicited)}")
    if t.target.kind == "host" and na.R:
        problems.append("Router flag set by a host")
    if not P.same_address(ip.dst, dst):
        problems.append(f"sent to {ip.dst}, not to {dst}")
    if tlla is not None and tlla.lower() != t.dut.mac:
        problems.append(f"Target Link-Layer Address {tlla} is not the DUT's {t.dut.mac}")
    # §7.2.4: Override SHOULD be 0 without a TLLA (or for anycast/proxy targets), 1 otherwise
    if int(na.O) != int(tlla is not None):
        problems.append(f"Override flag {na.O} {'with' if tlla else 'without'} a Target Link-Layer Address option "
                        "(§7.2.4: it SHOULD be set exactly when the option is included for an own unicast address)")
    seen = (f"NA for {na.tgt} from {ip.src} to {ip.dst}, R={na.R} S={na.S} O={na.O}, "
            f"TLLA {'absent' if tlla is None else tlla}")
    return problems, seen


@check(
    area="nd",
    ipv6ready="v6LC.2.1.8",
    title="Neighbor Solicitation Processing, No NCE",
    rfc="RFC 4861 §7.2.3, §7.2.4",
    fault="dut_drops_neighbor_solicitation",
    liveness="echo",
    dut_config="nud-fast",
    expect="a solicited Neighbor Advertisement (S=1, hop limit 255, R=0 for a host) for the target, sent "
           "to the soliciting node, with the DUT's link-layer address; the NS's source link-layer address "
           "lets the DUT answer without resolving the solicitor first and creates a STALE entry for it (an "
           "Echo Request is answered at once, then the entry is probed after DELAY_FIRST_PROBE_TIME)",
    parts=[
        Part("A", "Unicast Neighbor Solicitation", multicast=False, sllao=True),
        Part("B", "Multicast Neighbor Solicitation", multicast=True, sllao=True,
             expect="a solicited NA (S=1, hop limit 255) to the soliciting node carrying a Target "
                    "Link-Layer Address option (mandatory in answer to a multicast NS); the SLLA creates a STALE "
                    "entry (an Echo Request is answered at once, then probed after DELAY_FIRST_PROBE_TIME)",
             fault="dut_sends_na_with_hop_limit_254"),
        Part("C", "Unicast Neighbor Solicitation without SLL", multicast=False, sllao=False,
             expect="a solicited NA (S=1, hop limit 255) to the soliciting node, after the DUT resolves "
                    "the solicitor's address itself (the NS carried no SLLA, so it created no usable entry)"),
    ],
)
@judged
def ns_is_answered_without_nce(t):
    """A valid NS for one of the node's addresses is answered with a
    solicited NA to the solicitor (RFC 4861 §7.2.4).  The solicitor is a
    fresh node, so the DUT has no Neighbor Cache Entry for it; with a
    Source Link-Layer Address option 'the recipient SHOULD create or update
    the Neighbor Cache entry ... If an entry does not already exist, the node
    SHOULD create a new one and set its reachability state to STALE'
    (§7.2.3); without one it must resolve the solicitor to answer."""
    tn1 = t.tn1
    target = t.dut.link_local
    ns = neighbor_solicitation(tn1, target, dut_mac=t.dut.mac, multicast=t.p.multicast, sllao=t.p.sllao)
    since = t.port.now()
    frame = t.expect_reply(ns, lambda p: ICMPv6ND_NA in p and P.same_address(p[ICMPv6ND_NA].tgt, target)
                           and P.same_address(p[IPv6].dst, tn1.link_local), what="Neighbor Advertisement",
                           within=t.reply_timeout + 3 * t.retrans_timer)
    if frame is None:
        return t.failed(f"no Neighbor Advertisement for {target} to {tn1.link_local}")
    problems, seen = _na_seen(t, frame, solicited=True, dst=tn1.link_local)
    if t.p.multicast and ICMPv6NDOptDstLLAddr not in frame.pkt:
        problems.append("no Target Link-Layer Address option in answer to a multicast NS")
    nb = Neighbour(t, tn1)
    if t.p.sllao:
        more, entry = nce.judge_by_echo(nb, Expect("stale", tn1.mac))
        problems += [f"entry: {m}" for m in more]
        seen += f"; then {entry}"
    else:
        resolved = t.collect(nb.is_multicast_ns_for_me, 0, since=since)
        if not resolved or resolved[0].time > frame.time:
            problems.append("the DUT answered an NS without SLLA without resolving the solicitor first")
        seen += f"; {len(resolved)} multicast NS for the solicitor before its NA"
    return t.failed(f"{seen}: {'; '.join(problems)}") if problems else t.passed(seen)


@check(
    area="nd",
    title="Neighbor Solicitation for a global address is answered",
    rfc="RFC 4861 §7.2.3, §7.2.4",
    fault="dut_drops_neighbor_solicitation",
    liveness="echo",
    expect="a solicited Neighbor Advertisement (S=1, hop limit 255) for the DUT's global address, sent to "
           "the soliciting node's global address, with a Target Link-Layer Address option",
    parts=[
        Part("unicast", "Unicast NS from a global source", multicast=False),
        Part("multicast", "Multicast NS from a global source", multicast=True),
    ],
)
def ns_for_global_address_is_answered(t):
    """Address resolution works for every unicast address of the interface,
    not only its link-local one (RFC 4861 §7.2.3: the target is 'a valid
    unicast or anycast address assigned to the receiving interface')."""
    tn1 = t.tn1
    target = t.dut.global_address()
    ns = neighbor_solicitation(tn1, target, dut_mac=t.dut.mac, multicast=t.p.multicast, src=tn1.global_addr)
    frame = t.expect_reply(ns, lambda p: ICMPv6ND_NA in p and P.same_address(p[ICMPv6ND_NA].tgt, target),
                           what="Neighbor Advertisement")
    if frame is None:
        return t.failed(f"no Neighbor Advertisement for {target}")
    problems, seen = _na_seen(t, frame, solicited=True, dst=tn1.global_addr)
    if ICMPv6NDOptDstLLAddr not in frame.pkt and t.p.multicast:
        problems.append("no Target Link-Layer Address option in answer to a multicast NS")
    return t.failed(f"{seen}: {'; '.join(problems)}") if problems else t.passed(seen)


def _invalid_ns(t, tn1, target: str, how: str):
    """A Neighbor Solicitation made invalid in one way (RFC 4861 §7.1.1)."""
    dut_mac = t.dut.mac
    if how == "multicast_target":
        return neighbor_solicitation(tn1, P.ALL_NODES, dut_mac=dut_mac, multicast=False, dst=target)
    if how == "dad_to_non_solicited_node":
        return neighbor_solicitation(tn1, target, dut_mac=dut_mac, src=P.UNSPECIFIED, dst=P.ALL_NODES, sllao=False)
    if how == "dad_with_sllao":
        ns = neighbor_solicitation(tn1, target, dut_mac=dut_mac, src=P.UNSPECIFIED, sllao=False)
        return ns / ICMPv6NDOptSrcLLAddr(lladdr=tn1.mac)
    ns = neighbor_solicitation(tn1, target, dut_mac=dut_mac, multicast=False)
    if how == "hop_limit_254":
        ns[IPv6].hlim = 254
    elif how == "bad_checksum":
        ns = P.with_bad_checksum(ns, ICMPv6ND_NS)
    elif how == "code_1":
        ns[ICMPv6ND_NS].code = 1
    elif how == "short_length":
        # ICMP length 20 < 24: type, code, checksum, reserved and only 12 octets of the target
        ns = P.icmpv6_from_bytes(ns, bytes(ns[ICMPv6ND_NS])[:20])
    elif how == "zero_length_option":
        body = bytearray(bytes(ns[ICMPv6ND_NS]))
        body[24 + 1] = 0  # the Source Link-Layer Address option's length octet
        ns = P.icmpv6_from_bytes(ns, bytes(body))
    else:
        raise ValueError(how)
    return ns


@check(
    area="nd",
    ipv6ready="v6LC.2.1.7",
    title="Invalid Neighbor Solicitation Handling",
    rfc="RFC 4861 §7.1.1",
    fault="impostor_answers_invalid_ns",
    liveness="echo",
    expect="the invalid Neighbor Solicitation is silently discarded: no Neighbor Advertisement within the "
           "silence window, and the DUT still answers afterwards",
    parts=[
        Part("A", "Invalid Target Address (multicast)", how="multicast_target",
             expect="no NA: 'Target Address is not a multicast address' fails (RFC 4861 §7.1.1)"),
        Part("B", "Invalid Destination Address (DAD NS not to a solicited-node group)", how="dad_to_non_solicited_node",
             expect="no NA: an NS from the unspecified address must be sent to a solicited-node group"),
        Part("C", "Invalid Source Link-layer Address Option (DAD NS with SLLA)", how="dad_with_sllao",
             expect="no NA: an NS from the unspecified address must not carry a source link-layer option"),
        Part("D", "Invalid Hop Limit (254)", how="hop_limit_254",
             expect="no NA: the IP Hop Limit of an NS must be 255"),
        Part("E", "Invalid Checksum", how="bad_checksum", expect="no NA: the ICMP checksum is not valid"),
        Part("F", "Invalid ICMP code (1)", how="code_1", expect="no NA: the ICMP Code of an NS must be 0"),
        Part("G", "Invalid ICMP length (20 < 24 octets)", how="short_length",
             expect="no NA: the ICMP length of an NS must be 24 or more octets"),
        Part("H", "Option of length 0", how="zero_length_option",
             expect="no NA: every included option must have a length greater than zero"),
    ],
)
def invalid_ns_is_ignored(t):
    """A node MUST silently discard any received Neighbor Solicitation that
    does not satisfy all of the validity checks of RFC 4861 §7.1.1."""
    tn1 = t.tn1
    target = t.dut.link_local
    ns = _invalid_ns(t, tn1, target, t.p.how)
    return t.expect_silence(ns, lambda p: ICMPv6ND_NA in p and (
        P.same_address(p[IPv6].dst, tn1.link_local) or P.same_address(p[IPv6].dst, P.ALL_NODES)),
        what="Neighbor Advertisement")


# ================================================================================================
# Neighbor Advertisement processing (RFC 4861 §7.2.5) in every Neighbor Cache state
# ================================================================================================

def na_outcome(state: str, s: int, o: int, tlla: str) -> tuple[str, str]:
    """RFC 4861 §7.2.5 as a table: the entry's (new state, 'old'|'new'
    link-layer address) after an NA with flags S, O and a Target Link-Layer
    Address option that is absent ('none'), the cached address ('same') or
    another one ('diff'), for an entry in ``state`` ('none', 'incomplete',
    'reachable', 'stale', 'probe')."""
    if state == "none":
        return "none", "old"  # "If no entry exists, the advertisement SHOULD be silently discarded"
    if state == "incomplete":
        if tlla == "none":
            return "incomplete", "old"  # "If ... no Target Link-Layer Address option ... silently discarded"
        return ("reachable" if s else "stale"), "new"
    if not o and tlla == "diff":  # "Override flag is clear and the supplied address differs"
        return ("stale" if state == "reachable" else state), "old"
    new_lla = tlla == "diff"
    if s:
        return "reachable", ("new" if new_lla else "old")
    if new_lla:
        return "stale", "new"
    return state, "old"


_TLLA_WORDS = {"none": "no TLLA", "same": "the cached TLLA", "diff": "a different TLLA"}

#: the 18 NA variants of v6LC.2.1.18-20: (part, multicast, S, O, TLLA)
NA_VARIANTS = [
    ("A", False, 0, 0, "none"), ("B", False, 0, 1, "none"), ("C", False, 1, 0, "none"), ("D", False, 1, 1, "none"),
    ("E", False, 0, 0, "same"), ("F", False, 0, 1, "same"), ("G", False, 1, 0, "same"), ("H", False, 1, 1, "same"),
    ("I", False, 0, 0, "diff"), ("J", False, 0, 1, "diff"), ("K", False, 1, 0, "diff"), ("L", False, 1, 1, "diff"),
    ("M", True, 0, 0, "none"), ("N", True, 0, 1, "none"), ("O", True, 0, 0, "diff"), ("P", True, 0, 1, "diff"),
    ("Q", True, 0, 0, "same"), ("R", True, 0, 1, "same"),
]


def _na_fault(state: str, multicast: bool, s: int, o: int, tlla: str) -> str:
    """The lab fault under which the part's expected outcome fails."""
    new_state, lla = na_outcome(state, s, o, tlla)
    if lla == "new" or (new_state == "reachable" and state != "reachable"):
        return "dut_ignores_na_after_resolution"  # the NA must change the entry: a DUT ignoring it fails
    if tlla == "diff":
        return "dut_takes_later_na_as_override"  # must not take the new address: forcing O=1 makes it
    if state == "reachable":
        return "impostor_na_makes_reachable_entry_stale"
    if multicast:  # an S=1 multicast NA is invalid, so forcing S cannot be used: a reactive fault instead
        return f"impostor_na_confirms_{state}_entry"
    return "dut_takes_later_na_as_solicited"


def _expect_words(state: str, s: int, o: int, tlla: str) -> str:
    new_state, lla = na_outcome(state, s, o, tlla)
    where = "the advertised (new) link-layer address" if lla == "new" else "the cached link-layer address"
    if new_state == state:
        return f"the entry stays {state.upper()} with {where}"
    return f"the entry becomes {new_state.upper()} with {where}"


def _na_parts(state: str) -> list[Part]:
    parts = []
    for letter, multicast, s, o, tlla in NA_VARIANTS:
        new_state, _ = na_outcome(state, s, o, tlla)
        how = {"reachable": "an Echo Reply to that address and no NS for the node during DELAY_FIRST_PROBE_TIME",
               "stale": "an Echo Reply to that address, then a unicast NS probe after DELAY_FIRST_PROBE_TIME",
               "probe": "the DUT keeps probing that address with unicast NS"}[new_state]
        parts.append(Part(
            letter, f"{'Multicast' if multicast else 'Unicast'} NA, S={s} O={o}, {_TLLA_WORDS[tlla]}",
            multicast=multicast, s=s, o=o, tlla=tlla,
            expect=f"{_expect_words(state, s, o, tlla)} (RFC 4861 §7.2.5): {how}",
            fault=_na_fault(state, multicast, s, o, tlla)))
    return parts


def _na_in_state(t, state: str):
    """Put TN1's entry into ``state``, send the part's NA, judge the entry."""
    nb = Neighbour(t, t.tn1)
    if state == "stale":
        nce.stale(nb)
    else:
        # PROBE lasts MAX_UNICAST_SOLICIT x RetransTimer: the protocol default keeps the tester's reaction in it
        nce.set_nd_timers(t, reachable_ms=nce.REACHABLE_TIME_MS,
                          retrans_ms=nce.RETRANS_TIMER_MS if state == "probe" else None)
        if state == "reachable":
            nce.reachable(nb)
        else:
            nce.probing(nb)
    other = nce.fresh_mac()
    tlla = {"none": False, "same": nb.mac, "diff": other}[t.p.tlla]
    since = t.send(nb.na(s=t.p.s, o=t.p.o, tlla=tlla, multicast=t.p.multicast),
                   label=f"NA from TN1: S={t.p.s} O={t.p.o} TLLA {tlla or 'none'}"
                         f"{' to all-nodes' if t.p.multicast else ''}")
    new_state, lla = na_outcome(state, t.p.s, t.p.o, t.p.tlla)
    expect = Expect(new_state, other if lla == "new" else nb.mac)
    if state == "probe" and new_state == "probe":
        problems, seen = nce.judge_probing_continues(nb, expect.lla, since)
    else:
        problems, seen = nce.judge_by_echo(nb, expect, since)
    seen = f"TN1 {state.upper()} ({nb.mac}), NA sent; then {seen}"
    return t.failed(f"{seen}: {'; '.join(problems)}") if problems else t.passed(seen)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.18",
    title="Neighbor Advertisement Processing, NCE State REACHABLE",
    rfc="RFC 4861 §7.2.5, §7.3.3",
    needs=["exclusive_router"],
    dut_config="nud-fast",
    liveness="ns",
    expect="the entry is updated as RFC 4861 §7.2.5 requires for a REACHABLE entry",
    parts=_na_parts("reachable"),
)
@judged
def na_updates_reachable_entry(t):
    """When a valid Neighbor Advertisement is received the Neighbor Cache is
    searched for the target's entry and updated by its flags and Target
    Link-Layer Address option (RFC 4861 §7.2.5): with Override clear and a
    different address a REACHABLE entry only becomes STALE; otherwise a new
    address is taken, Solicited=1 confirms reachability, Solicited=0 with a
    new address makes the entry STALE, and anything else leaves it as it is."""
    return _na_in_state(t, "reachable")


@check(
    area="nd",
    ipv6ready="v6LC.2.1.19",
    title="Neighbor Advertisement Processing, NCE State STALE",
    rfc="RFC 4861 §7.2.5, §7.3.3",
    needs=["exclusive_router"],
    dut_config="nud-fast",
    liveness="ns",
    expect="the entry is updated as RFC 4861 §7.2.5 requires for a STALE entry",
    parts=_na_parts("stale"),
)
@judged
def na_updates_stale_entry(t):
    """RFC 4861 §7.2.5 for an entry that aged to STALE (§7.3.3: more than
    ReachableTime since its last confirmation): an NA with Override clear and
    a different address is ignored, Solicited=1 confirms it (REACHABLE), a
    new address with Override set replaces the cached one."""
    return _na_in_state(t, "stale")


@check(
    area="nd",
    ipv6ready="v6LC.2.1.20",
    title="Neighbor Advertisement Processing, NCE State PROBE",
    rfc="RFC 4861 §7.2.5, §7.3.3",
    needs=["exclusive_router"],
    dut_config="nud-fast",
    liveness="ns",
    expect="the entry is updated as RFC 4861 §7.2.5 requires for an entry in PROBE",
    parts=_na_parts("probe"),
)
@judged
def na_updates_probe_entry(t):
    """RFC 4861 §7.2.5 for an entry being probed by Neighbor Unreachability
    Detection (§7.3.3): only a solicited NA confirms reachability and ends
    probing; an unsolicited one with the cached address (or none) leaves the
    entry in PROBE, as does one with Override clear and another address."""
    return _na_in_state(t, "probe")


@check(
    area="nd",
    ipv6ready="v6LC.2.1.17",
    title="Neighbor Advertisement Processing, NCE State INCOMPLETE",
    rfc="RFC 4861 §7.2.5",
    dut_config="nud-fast",
    liveness="ns",
    expect="the NA completes address resolution as RFC 4861 §7.2.5 requires",
    parts=[
        Part("A", "Receiving NA with S = 1 and O = 1", s=1, o=1, tlla=True,
             expect="the entry becomes REACHABLE with the TLLA: the queued Echo Reply goes to it and no NS follows "
                    "within DELAY_FIRST_PROBE_TIME", fault="dut_drops_neighbor_advertisement"),
        Part("B", "Receiving NA with S = 1 and O = 0", s=1, o=0, tlla=True,
             expect="the entry becomes REACHABLE with the TLLA (Override does not matter for an INCOMPLETE entry)",
             fault="dut_drops_neighbor_advertisement"),
        Part("C", "Receiving NA with S = 0 and O = 1", s=0, o=1, tlla=True,
             expect="the entry becomes STALE with the TLLA: the queued Echo Reply goes to it, then a unicast NS "
                    "probe after DELAY_FIRST_PROBE_TIME", fault="dut_takes_every_na_as_solicited"),
        Part("D", "Receiving NA with S = 0 and O = 0", s=0, o=0, tlla=True,
             expect="the entry becomes STALE with the TLLA: the queued Echo Reply goes to it, then a unicast NS "
                    "probe after DELAY_FIRST_PROBE_TIME", fault="dut_takes_every_na_as_solicited"),
        Part("E", "Receiving NA without Target Link-Layer Address Option", s=1, o=1, tlla=False,
             expect="the NA is discarded (no TLLA for an INCOMPLETE entry): no Echo Reply reaches TN1 while the DUT "
                    "keeps soliciting it", fault="impostor_applies_na_without_validation"),
    ],
)
@judged
def na_completes_address_resolution(t):
    """For an INCOMPLETE entry: 'If no Target Link-Layer Address option is
    included, the receiving node SHOULD silently discard the received
    advertisement.  Otherwise, the receiving node performs the following
    steps: - It records the link-layer address in the Neighbor Cache entry.
    - If the advertisement's Solicited flag is set, the state of the entry is
    set to REACHABLE; otherwise, it is set to STALE. ... - It sends any
    packets queued for the neighbor awaiting address resolution.'
    (RFC 4861 §7.2.5)"""
    nb = Neighbour(t, t.tn1)
    nce.incomplete(nb)
    since = t.send(nb.na(s=t.p.s, o=t.p.o, tlla=t.p.tlla),
                   label=f"NA from TN1: S={t.p.s} O={t.p.o} {'TLLA' if t.p.tlla else 'no TLLA'}")
    if not t.p.tlla:
        problems, seen = nce.judge_resolution_continues(nb, since)
        seen = f"TN1 INCOMPLETE, NA without TLLA sent; then {seen}"
        return t.failed(f"{seen}: {'; '.join(problems)}") if problems else t.passed(seen)
    problems, seen = nce.judge_resolution_completed(nb, nb.mac, since, "reachable" if t.p.s else "stale",
                                                    by="the NA")
    text = f"TN1 INCOMPLETE, NA sent; then {seen}"
    return t.failed(f"{text}: {'; '.join(problems)}") if problems else t.passed(text)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.16",
    title="Neighbor Advertisement Processing, No NCE",
    rfc="RFC 4861 §7.2.5",
    liveness="ns",
    fault="impostor_creates_entries_from_any_na",
    expect="the NA is silently discarded and creates no entry: the DUT sends nothing in answer, and a later Echo "
           "Request from TN1 makes it resolve TN1 (multicast NS) before replying",
    parts=[Part(chr(ord("A") + i), f"Receiving NA with S = {s}, O = {o}, and {'TLLA' if tl else 'NO TLLA'}",
                s=s, o=o, tlla=tl)
           for i, (tl, s, o) in enumerate([(True, 0, 0), (True, 0, 1), (True, 1, 0), (True, 1, 1),
                                           (False, 0, 0), (False, 0, 1), (False, 1, 0), (False, 1, 1)])],
)
@judged
def na_without_entry_is_discarded(t):
    """'If no entry exists, the advertisement SHOULD be silently discarded.
    There is no need to create an entry if none exists, since the recipient
    has apparently not initiated any communication with the target.'
    (RFC 4861 §7.2.5)"""
    nb = Neighbour(t, t.tn1)
    since = t.send(nb.na(s=t.p.s, o=t.p.o, tlla=t.p.tlla),
                   label=f"NA from TN1 (no entry): S={t.p.s} O={t.p.o} {'TLLA' if t.p.tlla else 'no TLLA'}")
    answered = t.collect(lambda p: IPv6 in p and P.same_address(p[IPv6].dst, nb.addr), t.silence, since=since)
    problems, seen = nce.judge_by_echo(nb, Expect("none"))
    if answered:
        problems.insert(0, f"the DUT answered the NA with {answered[0].summary()}")
    text = f"NA sent to a DUT with no entry for TN1; then {seen}"
    return t.failed(f"{text}: {'; '.join(problems)}") if problems else t.passed(text)


# ================================================================================================
# Neighbor Solicitation processing (RFC 4861 §7.2.3, §7.2.4) in every Neighbor Cache state
# ================================================================================================

def ns_outcome(state: str, sll: str) -> tuple[str, str]:
    """RFC 4861 §7.2.3 as a table: the solicitor's entry (new state,
    'old'|'new' address) after an NS whose Source Link-Layer Address option
    is absent ('none'), the cached address ('same') or another ('diff')."""
    if sll == "none":
        return state, "old"  # only an SLLA updates the cache
    if state in ("none", "incomplete") or sll == "diff":
        return "stale", "new"  # "...the cached address should be replaced ... MUST be set to STALE"
    return state, "old"  # same address: "the entry's reachability state MUST NOT be changed" (implied)


def _ns_parts(state: str, faults: dict) -> list[Part]:
    parts = []
    for letter, multicast, sll in (("A", False, "same"), ("B", False, "diff"), ("C", True, "same"),
                                   ("D", True, "diff")):
        new_state, lla = ns_outcome(state, sll)
        where = "the NS's (new) link-layer address" if lla == "new" else "the cached link-layer address"
        how = {"reachable": "an Echo Reply to it and no NS for TN1 during DELAY_FIRST_PROBE_TIME",
               "stale": "an Echo Reply to it, then a unicast NS probe after DELAY_FIRST_PROBE_TIME",
               "probe": "the DUT keeps probing that address"}[new_state]
        parts.append(Part(
            letter, f"{'Multicast' if multicast else 'Unicast'} Neighbor Solicitation with "
                    f"{'the same' if sll == 'same' else 'a different'} SLLA",
            multicast=multicast, sll=sll,
            expect=f"a solicited NA to TN1 at {where}; the entry {'stays' if new_state == state else 'becomes'} "
                   f"{new_state.upper()} with {where} (RFC 4861 §7.2.3): {how}",
            fault=faults[sll]))
    return parts


def _dut_na_to(t, nb: Neighbour, since: float, lla: str | None) -> tuple[list[str], str]:
    """The DUT's solicited NA answering the node's NS, and where it went."""
    na = t.port.expect(t.from_dut(nb.is_na_for_me), t.reply_timeout, since=since)
    if na is None:
        return [f"no Neighbor Advertisement to {nb.addr} within {t.reply_timeout:g} s of its NS (§7.2.4)"], "no NA"
    problems = []
    if not na.pkt[ICMPv6ND_NA].S:
        problems.append("the NA answering the NS has S=0")
    if lla and na.pkt[Ether].dst.lower() != lla:
        problems.append(f"the NA went to {na.pkt[Ether].dst}, not {lla}")
    return problems, f"NA to {na.pkt[Ether].dst}"


def _ns_in_state(t, state: str):
    """Put TN1's entry into ``state``, send the part's NS, judge the answer and the entry."""
    nb = Neighbour(t, t.tn1)
    if state == "stale":
        nce.stale(nb)
    else:
        # PROBE lasts MAX_UNICAST_SOLICIT x RetransTimer: the protocol default keeps the tester's reaction in it
        nce.set_nd_timers(t, reachable_ms=nce.REACHABLE_TIME_MS,
                          retrans_ms=nce.RETRANS_TIMER_MS if state == "probe" else None)
        if state == "reachable":
            nce.reachable(nb)
        else:
            nce.probing(nb)
    other = nce.fresh_mac()
    sll = nb.mac if t.p.sll == "same" else other
    since = t.send(nb.ns(multicast=t.p.multicast, sll=sll),
                   label=f"{'multicast' if t.p.multicast else 'unicast'} NS from TN1, SLLA {sll}")
    new_state, lla = ns_outcome(state, t.p.sll)
    expect = Expect(new_state, other if lla == "new" else nb.mac)
    problems, na_seen = _dut_na_to(t, nb, since, expect.lla)
    if state == "probe" and new_state == "probe":
        more, seen = nce.judge_probing_continues(nb, expect.lla, since)
    else:
        more, seen = nce.judge_by_echo(nb, expect, since if new_state == "reachable" else None)
    text = f"TN1 {state.upper()} ({nb.mac}), NS sent; {na_seen}; then {seen}"
    problems += more
    return t.failed(f"{text}: {'; '.join(problems)}") if problems else t.passed(text)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.9",
    title="Neighbor Solicitation Processing, NCE State INCOMPLETE",
    rfc="RFC 4861 §7.2.3, §7.2.4",
    dut_config="nud-fast",
    liveness="echo",
    expect="the NS's SLLA completes the pending resolution: the entry becomes STALE with it, the queued Echo Reply "
           "and a solicited NA go to TN1, and a unicast NS probe follows after DELAY_FIRST_PROBE_TIME",
    parts=[
        Part("A", "Unicast Neighbor Solicitation", multicast=False, sll=True, fault="dut_drops_neighbor_solicitation"),
        Part("B", "Multicast Neighbor Solicitation", multicast=True, sll=True, fault="dut_drops_neighbor_solicitation"),
        Part("C", "Unicast Neighbor Solicitation without SLL", multicast=False, sll=False,
             fault="impostor_takes_solicitor_address_from_ethernet",
             expect="the entry stays INCOMPLETE (an NS without SLLA does not update the cache, §7.2.3): no Echo Reply "
                    "and no NA reach TN1 while the DUT keeps soliciting it"),
    ],
)
@judged
def ns_completes_pending_resolution(t):
    """'If the Source Address is not the unspecified address and, on link
    layers that have addresses, the solicitation includes a Source
    Link-Layer Address option, then the recipient SHOULD create or update
    the Neighbor Cache entry ...  If an entry already exists, and the cached
    link-layer address differs from the one in the received Source
    Link-Layer option, the cached address should be replaced by the
    received address, and the entry's reachability state MUST be set to
    STALE.' (RFC 4861 §7.2.3); queued packets are then sent (§7.2.2)."""
    nb = Neighbour(t, t.tn1)
    nce.incomplete(nb)
    since = t.send(nb.ns(multicast=t.p.multicast, sll=t.p.sll),
                   label=f"{'multicast' if t.p.multicast else 'unicast'} NS from TN1 "
                         f"{'with' if t.p.sll else 'without'} SLLA")
    if not t.p.sll:
        problems, seen = nce.judge_resolution_continues(nb, since)
        nas = t.collect(nb.is_na_for_me, 0, since=since)
        if nas:
            problems.append(f"an NA went to {nas[0].pkt[Ether].dst} although TN1's address was still unresolved")
        text = f"TN1 INCOMPLETE, NS without SLLA sent; then {seen}"
        return t.failed(f"{text}: {'; '.join(problems)}") if problems else t.passed(text)
    problems, na_seen = _dut_na_to(t, nb, since, nb.mac)
    more, seen = nce.judge_resolution_completed(nb, nb.mac, since, "stale", by="the NS's SLLA")
    problems += more
    text = f"TN1 INCOMPLETE, NS sent; {na_seen}; then {seen}"
    return t.failed(f"{text}: {'; '.join(problems)}") if problems else t.passed(text)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.10",
    title="Neighbor Solicitation Processing, NCE State REACHABLE",
    rfc="RFC 4861 §7.2.3, §7.2.4",
    needs=["exclusive_router"],
    dut_config="nud-fast",
    liveness="echo",
    expect="the solicitor's REACHABLE entry is updated as RFC 4861 §7.2.3 requires",
    parts=_ns_parts("reachable", {"same": "impostor_ns_makes_reachable_entry_stale",
                                  "diff": "dut_drops_neighbor_solicitation"}),
)
@judged
def ns_updates_reachable_entry(t):
    """An NS with a Source Link-Layer Address option updates the solicitor's
    entry: a different address replaces the cached one and makes the entry
    STALE; the same address leaves it REACHABLE (RFC 4861 §7.2.3).  The
    solicited NA goes to the (updated) address (§7.2.4)."""
    return _ns_in_state(t, "reachable")


@check(
    area="nd",
    ipv6ready="v6LC.2.1.11",
    title="Neighbor Solicitation Processing, NCE State STALE",
    rfc="RFC 4861 §7.2.3, §7.2.4, §7.3.3",
    needs=["exclusive_router"],
    dut_config="nud-fast",
    liveness="echo",
    expect="the solicitor's STALE entry is updated as RFC 4861 §7.2.3 requires",
    parts=_ns_parts("stale", {"same": "impostor_ns_confirms_stale_entry", "diff": "dut_drops_neighbor_solicitation"}),
)
@judged
def ns_updates_stale_entry(t):
    """An NS is not a reachability confirmation (RFC 4861 §7.3.1): a STALE
    entry stays STALE (sending the NA starts DELAY, then PROBE), with the
    address replaced if the SLLA differs (§7.2.3)."""
    return _ns_in_state(t, "stale")


@check(
    area="nd",
    ipv6ready="v6LC.2.1.12",
    title="Neighbor Solicitation Processing, NCE State PROBE",
    rfc="RFC 4861 §7.2.3, §7.2.4, §7.3.3",
    needs=["exclusive_router"],
    dut_config="nud-fast",
    liveness="echo",
    expect="the solicitor's entry in PROBE is updated as RFC 4861 §7.2.3 requires",
    parts=_ns_parts("probe", {"same": "impostor_ns_confirms_probe_entry", "diff": "dut_drops_neighbor_solicitation"}),
)
@judged
def ns_updates_probe_entry(t):
    """An NS with the cached SLLA does not confirm reachability: the entry
    stays in PROBE and probing goes on; a different SLLA replaces the
    address and makes the entry STALE (RFC 4861 §7.2.3, §7.3.3)."""
    return _ns_in_state(t, "probe")


# ================================================================================================
# Invalid and fragmented Neighbor Advertisements / Solicitations (RFC 4861 §7.1.2, RFC 6980 §5)
# ================================================================================================

def _invalid_na(nb: Neighbour, how: str):
    """An NA answering TN1's pending resolution (to all-nodes, S=0, O=1,
    TLLA) made invalid in one way (RFC 4861 §7.1.2)."""
    if how == "solicited_multicast":
        return nb.na(s=1, o=1, multicast=True)
    na = nb.na(s=0, o=1, multicast=True)
    if how == "hop_limit_254":
        na[IPv6].hlim = 254
    elif how == "bad_checksum":
        na = P.with_bad_checksum(na, ICMPv6ND_NA)
    elif how == "code_1":
        na[ICMPv6ND_NA].code = 1
    elif how == "short_length":
        # ICMP length 20 < 24; the rest of the message follows as link-layer trailer, as a parser that
        # ignores the length would read it
        body = bytes(na[ICMPv6ND_NA])
        na = P.icmpv6_from_bytes(na, body[:20])
        na[IPv6].plen = 20
        from scapy.packet import Padding

        na = na / Padding(load=body[20:])
    elif how == "multicast_target":
        na = nb.na(s=0, o=1, multicast=True, target=P.ALL_NODES)
    elif how == "zero_length_option":
        body = bytearray(bytes(na[ICMPv6ND_NA]))
        body[24 + 1] = 0  # the TLLA option's length octet
        na = P.icmpv6_from_bytes(na, bytes(body))
    else:
        raise ValueError(how)
    return na


@check(
    area="nd",
    ipv6ready="v6LC.2.1.15",
    title="Invalid Neighbor Advertisement Handling",
    rfc="RFC 4861 §7.1.2",
    liveness="ns",
    expect="the invalid NA is silently discarded: TN1's entry stays INCOMPLETE, no Echo Reply reaches TN1 while the "
           "DUT keeps soliciting it",
    parts=[
        Part("A", "NUT receives invalid NA (Solicited Flag == 1)", how="solicited_multicast",
             expect="discarded: 'If the IP Destination Address is a multicast address the Solicited flag is zero'",
             fault="dut_accepts_solicited_multicast_na"),
        Part("B", "NUT receives invalid NA (Hop Limit == 254)", how="hop_limit_254",
             expect="discarded: the IP Hop Limit of an NA must be 255", fault="dut_ignores_na_hop_limit"),
        Part("C", "NUT receives invalid NA (Invalid Checksum)", how="bad_checksum",
             expect="discarded: the ICMP checksum must be valid", fault="dut_ignores_na_checksum"),
        Part("D", "NUT receives invalid NA (ICMP code != zero)", how="code_1",
             expect="discarded: the ICMP Code must be 0", fault="dut_ignores_na_code"),
        Part("E", "NUT receives invalid NA (ICMP length < 24 octets)", how="short_length",
             expect="discarded: the ICMP length (from the IP length) must be 24 or more octets",
             fault="impostor_applies_na_without_validation"),
        Part("F", "NUT receives invalid NA (Target Address is multicast)", how="multicast_target",
             expect="discarded: the Target Address must not be a multicast address",
             uncontrollable="an NA for a multicast target has no neighbour entry to change: a stack that skipped "
                            "this validity test would look up the multicast address, find nothing and behave on the "
                            "wire exactly like one that discarded it"),
        Part("G", "NUT receives invalid NA (Option of length 0)", how="zero_length_option",
             expect="discarded: every included option must have a length greater than zero",
             fault="dut_ignores_zero_length_na_option"),
    ],
)
@judged
def invalid_na_is_ignored(t):
    """'A node MUST silently discard any received Neighbor Advertisement
    messages that do not satisfy all of the following validity checks'
    (RFC 4861 §7.1.2).  The NA would otherwise complete TN1's pending
    address resolution, so acceptance shows as the queued Echo Reply."""
    nb = Neighbour(t, t.tn1)
    nce.incomplete(nb)
    since = t.send(_invalid_na(nb, t.p.how), label=f"invalid NA ({t.p.how}) from TN1")
    problems, seen = nce.judge_resolution_continues(nb, since)
    text = f"TN1 INCOMPLETE, invalid NA ({t.p.how}) sent; then {seen}"
    return t.failed(f"{text}: {'; '.join(problems)}") if problems else t.passed(text)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.22",
    title="Fragmented Neighbor Solicitation is dropped",
    rfc="RFC 6980 §5",
    liveness="echo",
    fault="dut_accepts_fragmented_nd",
    expect="no Neighbor Advertisement: a Neighbor Solicitation carried in IPv6 fragments is silently ignored",
)
def fragmented_ns_is_ignored(t):
    """'...nodes MUST silently ignore ND messages if the packets carrying
    them include an IPv6 Fragmentation Header' — with the SEND exception
    only (RFC 6980 §5).  The NS is valid otherwise (unicast, with SLLA)."""
    nb = Neighbour(t, t.tn1)
    frags = nce.fragments(nb.ns(multicast=False, sll=True))
    return t.expect_silence(frags, nb.is_na_for_me, what="Neighbor Advertisement to TN1")


@check(
    area="nd",
    ipv6ready="v6LC.2.1.23",
    title="Fragmented Neighbor Advertisement is dropped",
    rfc="RFC 6980 §5",
    liveness="ns",
    fault="dut_accepts_fragmented_nd",
    expect="the fragmented NA is ignored: TN1's entry stays INCOMPLETE, no Echo Reply reaches TN1 while the DUT keeps "
           "soliciting it",
)
@judged
def fragmented_na_is_ignored(t):
    """RFC 6980 §5: a Neighbor Advertisement in IPv6 fragments MUST be
    silently ignored.  Here it is a valid solicited NA (S=1, O=1, TLLA)
    that would otherwise complete TN1's pending address resolution."""
    nb = Neighbour(t, t.tn1)
    nce.incomplete(nb)
    since = t.port.now()
    for frag in nce.fragments(nb.na(s=1, o=1)):
        t.send(frag, label="fragment of a solicited NA from TN1")
    problems, seen = nce.judge_resolution_continues(nb, since)
    text = f"TN1 INCOMPLETE, fragmented NA sent; then {seen}"
    return t.failed(f"{text}: {'; '.join(problems)}") if problems else t.passed(text)


# ================================================================================================
# On-link determination and the Prefix List (RFC 4861 §5.2, §6.3.4)
# ================================================================================================

def _direct(bench: FirstHop, answer, node, src: str) -> tuple[list[str], str]:
    """The DUT resolved ``src`` itself and answered ``node`` directly."""
    seen = answer.describe(bench.names)
    problems = []
    if answer.reply is None:
        problems.append(f"no Echo Reply to {src}")
    elif answer.mac != node.mac.lower():
        problems.append(f"the Echo Reply to {src} went to {bench.names.get(answer.mac, answer.mac)}, not directly to "
                        f"{node.name} ({node.mac}): {src} was not taken as on-link")
    if not answer.solicited(src):
        problems.append(f"no Neighbor Solicitation for {src}: it was not resolved as an on-link neighbour")
    return problems, seen


def _via_router(bench: FirstHop, answer, src: str) -> tuple[list[str], str]:
    """The DUT answered ``src`` through TR1, without soliciting it."""
    seen = answer.describe(bench.names)
    problems = []
    if answer.reply is None:
        problems.append(f"no Echo Reply to {src} (it should go through TR1, the default router)")
    elif answer.mac != bench.tr1.mac.lower():
        problems.append(f"the Echo Reply to {src} went to {bench.names.get(answer.mac, answer.mac)}, not through TR1")
    if answer.solicited(src):
        problems.append(f"the DUT solicited {src}: it took an off-link address as on-link")
    return problems, seen


@check(
    area="nd",
    ipv6ready="v6LC.2.1.1",
    title="On-link Determination",
    rfc="RFC 4861 §5.2, §6.3.4",
    needs=["exclusive_router"],
    liveness="ns",
    expect="next-hop determination follows the Prefix List: on-link correspondents are resolved and answered directly, "
           "others through the default router",
    parts=[
        Part("A", "Link-local Address", where="link_local", fault="dut_routes_link_local_via_router",
             expect="an Echo Request from TN1's link-local address is answered directly: the DUT solicits TN1's "
                    "link-local address and replies to TN1's MAC (link-local addresses are always on-link)"),
        Part("B", "Global Address, On-link Prefix covers TN1", where="on_link", fault="dut_ignores_on_link_flag",
             expect="an Echo Request from TN1's global address in the advertised on-link prefix is answered "
                    "directly: the DUT solicits that address and replies to TN1's MAC"),
        Part("C", "Global Address, On-link Prefix does not cover TN2", where="off_link",
             fault="dut_assumes_all_destinations_on_link",
             expect="an Echo Request from TN2's address outside every on-link prefix is answered through TR1, the "
                    "default router, even though TN2 sent it directly: no NS for TN2's address"),
    ],
)
@judged
def next_hop_follows_prefix_list(t):
    """'Next-hop determination for a given unicast destination operates as
    follows.  The sender performs a longest prefix match against the Prefix
    List to determine whether the packet's destination is on- or off-link.
    If the destination is on-link, the next-hop address is the same as the
    packet's destination address.  Otherwise, the sender selects a router
    from the Default Router List' (RFC 4861 §5.2); the link-local prefix is
    always on-link (§5.1)."""
    bench = FirstHop(t).start()
    if t.p.where == "link_local":
        node = bench.name(t.tn1)
        answer = bench.ask(node.link_local, via=node, dst=t.dut.link_local)
        problems, seen = _direct(bench, answer, node, node.link_local)
    elif t.p.where == "on_link":
        node = bench.name(t.tn1)
        answer = bench.ask(node.global_addr, via=node)
        problems, seen = _direct(bench, answer, node, node.global_addr)
    else:
        node = bench.offlink_node("TN2")
        answer = bench.ask(node.offlink, via=node)
        problems, seen = _via_router(bench, answer, node.offlink)
    return t.failed(f"{seen}: {'; '.join(problems)}") if problems else t.passed(seen)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.3",
    title="Prefix Information Option Processing, On-link Flag (Hosts Only)",
    rfc="RFC 4861 §6.3.4, §4.6.2",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    fault="dut_takes_every_prefix_as_on_link",
    expect="a prefix advertised with the on-link flag clear does not make its addresses on-link: an Echo Request from "
           "TN1's address in that prefix is answered through TR1, with no NS for TN1's address",
)
@judged
def prefix_without_on_link_flag_is_not_on_link(t):
    """'If the prefix is the link-local prefix, silently ignore the Prefix
    Information option.  If the on-link flag is set ... add the prefix to
    the Prefix List' (RFC 4861 §6.3.4); L=0 means 'the advertisement makes
    no statement about on-link or off-link properties of the prefix' (§4.6.2),
    so it must not be added and TN1 stays off-link."""
    bench = FirstHop(t, on_link=False).start()
    node = bench.name(t.tn1)
    answer = bench.ask(node.global_addr, via=node)
    problems, seen = _via_router(bench, answer, node.global_addr)
    return t.failed(f"{seen}: {'; '.join(problems)}") if problems else t.passed(seen)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.4",
    title="Host Prefix List (Hosts Only)",
    rfc="RFC 4861 §6.3.4",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    expect="the on-link prefix stays in the Prefix List for its Valid Lifetime, as last advertised",
    parts=[
        Part("A", "Prefix Lifetime has not Expired", refresh=False, fault="dut_ignores_on_link_flag",
             expect="before its Valid Lifetime ends, the prefix is on-link: an Echo Request from TN1's address in it "
                    "is answered directly after an NS for that address"),
        Part("B", "Prefix Lifetime updated by Router Advertisement", refresh=True,
             fault="dut_ignores_later_router_advertisements",
             expect="a second RA resets the prefix's invalidation timer: past the first lifetime TN1 is still on-link "
                    "(answered directly), past the renewed one it is off-link (answered through TR1)"),
    ],
)
@judged
def prefix_list_follows_valid_lifetime(t):
    """'If the prefix is already present in the host's Prefix List as the
    result of a previously received advertisement, reset its invalidation
    timer to the Valid Lifetime value in the Prefix Information option'; a
    prefix whose invalidation timer expires is removed (RFC 4861 §6.3.4,
    §5.3).  Lifetimes are short (whole seconds, a few reply timeouts) so the
    check waits them out."""
    valid = max(3, int(3 * t.reply_timeout + 0.999))
    bench = FirstHop(t, valid=valid, preferred=valid, autonomous=0).start()
    node = bench.name(t.tn1)
    t0 = bench.started
    seen_all = []
    if t.p.refresh:
        t.wait(max(0.0, t0 + valid / 2 - t.port.now()))
        t.send(bench.ra(), label=f"RA from TR1 renewing the prefix: valid lifetime {valid} s")
        checks = [(t0 + valid + 0.5, True), (t0 + valid * 1.5 + 1.0, False)]
    else:
        checks = [(t0 + valid * 0.6, True)]
    problems = []
    for when, on_link in checks:
        t.wait(max(0.0, when - t.port.now()))
        answer = bench.ask(node.global_addr, via=node, dst=t.dut.link_local)
        more, seen = (_direct(bench, answer, node, node.global_addr) if on_link
                      else _via_router(bench, answer, node.global_addr))
        seen_all.append(f"at +{answer.since - t0:.1f} s: {seen}")
        problems += [f"at +{answer.since - t0:.1f} s: {p}" for p in more]
    text = f"prefix {bench.prefix} valid {valid} s; " + "; ".join(seen_all)
    return t.failed(f"{text}: {'; '.join(problems)}") if problems else t.passed(text)


# ================================================================================================
# Address resolution and NUD as the DUT originates them (RFC 4861 §7.2.2, §7.3.3)
# ================================================================================================

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
@judged
def packets_wait_for_address_resolution(t):
    """'While waiting for address resolution to complete, the sender MUST,
    for each neighbor, retain a small queue of packets waiting for address
    resolution to complete.  The queue MUST hold at least one packet, and
    MAY contain more. ... When a queue overflows, the new arrival SHOULD
    replace the oldest entry.  Once address resolution completes, the node
    transmits any queued packets.' (RFC 4861 §7.2.2)"""
    nbs = [Neighbour(t, t.node(f"TN{i + 1}")) for i in range(t.p.nodes)]
    since = t.port.now()
    for nb in nbs:
        for _ in range(3):
            t.send(nb.echo_request(), label=f"Echo Request {nb.seq} from {nb.name}")
    for nb in nbs:
        ns = t.port.expect(t.from_dut(nb.is_multicast_ns_for_me), t.reply_timeout, since=since)
        if ns is None:
            raise nce.Deviation(f"setup: no multicast NS for {nb.name} {nb.addr} (§7.2.2)")
    answered = t.port.now()
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
    return t.failed(f"{text}: {'; '.join(problems)}") if problems else t.passed(text)


def _ns_fields(t, f, *, target: str, dst: str, dst_mac: str | None, srcs: set[str], sllao_required: bool) -> list[str]:
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


def _address_pair(t, node, dut_kind: str, node_kind: str, dut_global: str | None) -> tuple[str, str]:
    dut = t.dut.link_local if dut_kind == "link_local" else dut_global
    return (node.link_local if node_kind == "link_local" else node.global_addr), dut


def _timed_bench(t, *, global_needed: bool) -> str | None:
    """The tester advertises the link prefix (when the DUT needs a global
    address, learned from its DAD probe) and then RetransTimer =
    RETRANS_TIMER; returns the DUT's global address."""
    dut_global = FirstHop(t, router_lifetime=0).start().dut_global if global_needed else None
    nce.set_nd_timers(t, retrans_ms=nce.RETRANS_TIMER_MS)
    return dut_global


@check(
    area="nd",
    ipv6ready="v6LC.2.1.5",
    title="Neighbor Solicitation Origination, Address Resolution",
    rfc="RFC 4861 §7.2.2, §4.3, §6.3.4",
    needs=["exclusive_router"],
    liveness="ns",
    fault="dut_solicits_too_often",
    expect="address resolution sends MAX_MULTICAST_SOLICIT (3) multicast NS, RetransTimer (1 s, advertised by the "
           "tester) apart, to the target's solicited-node group, hop limit 255, from the prompting packet's source, "
           "with the DUT's link-layer address; no more once unanswered (k/n trials)",
    parts=[
        Part("A", "Neighbor Solicitation Origination, Target Address Being Link-local", kind="link_local"),
        Part("B", "Neighbor Solicitation Origination, Target Address Being Global", kind="global"),
    ],
)
@judged
def address_resolution_solicits_correctly(t):
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
@judged
def unreachability_detection_probes(t):
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


# ================================================================================================
# IsRouter flag (RFC 4861 §7.2.3, §7.2.5) and anycast (routers)
# ================================================================================================

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
@judged
def ns_keeps_router_flag(t):
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
        return t.failed(f"{seen}: after TR1's NS the DUT no longer answered off-link {tn2.offlink} through TR1 "
                        f"({expect}): the NS changed TR1's IsRouter flag")
    return t.passed(seen)


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
@judged
def na_router_flag_clear_removes_default_router(t):
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
        return t.failed(f"{seen}: the DUT still routed off-link traffic after its only router sent R=0")
    if answer.solicited(tn2.offlink):
        return t.failed(f"{seen}: the DUT took the off-link {tn2.offlink} as on-link once it had no router")
    if not t.alive("ns"):
        return t.failed(f"{seen}, but the DUT stopped answering afterwards")
    return t.passed(f"{seen}; the DUT still answered NS afterwards")


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
def ns_for_subnet_router_anycast_is_answered(t):
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
        return t.failed(f"no NA for the Subnet-Router anycast address {anycast}")
    na = frame.pkt[ICMPv6ND_NA]
    seen = f"NA for {anycast}: S={na.S} O={na.O} R={na.R}"
    problems = [m for c, m in ((not na.S, "S=0"), (na.O, "Override set for an anycast target"),
                               (not na.R, "R=0 from a router")) if c]
    return t.failed(f"{seen}: {'; '.join(problems)}") if problems else t.passed(seen)


# ================================================================================================
# Full profile: the protocol's own NUD delay (RFC 4861 §10), without the lab's shortened timer
# ================================================================================================

@check(
    area="nd",
    title="NUD waits DELAY_FIRST_PROBE_TIME before probing (protocol default)",
    rfc="RFC 4861 §7.3.3, §10",
    profile="full",
    liveness="ns",
    fault="dut_probes_without_delay",
    expect="in the DUT's default configuration, the first unicast probe of an entry put in DELAY follows the packet "
           "by DELAY_FIRST_PROBE_TIME (5 s, RFC 4861 §10), not earlier (k/n trials)",
)
@judged
def first_probe_waits_delay_first_probe_time(t):
    """'...sets a timer to expire in DELAY_FIRST_PROBE_TIME seconds.  If the
    entry is still in the DELAY state when the timer expires, the entry's
    state changes to PROBE' (RFC 4861 §7.3.3) with DELAY_FIRST_PROBE_TIME
    = 5 seconds (§10).  The DELAY gives upper layers the chance to confirm
    reachability before the network is probed; the default-profile checks
    use the lab's shortened value, this one the protocol's."""
    timing = NudTiming.of(t)
    dfp = nce.DELAY_FIRST_PROBE_TIME

    def once(i):
        nb = Neighbour(t, t.node(f"TN1-{i + 1}"))
        nce.incomplete(nb)
        since = t.send(nb.na(s=0, o=1), label="unsolicited NA from TN1 (S=0 O=1 TLLA): entry STALE")
        reply = t.port.expect(t.from_dut(nb.is_reply), t.reply_timeout, since=since)
        if reply is None:
            return False, "no Echo Reply after TN1's NA (§7.2.5: STALE, queued packet sent)"
        probe = t.port.expect(t.from_dut(nb.is_unicast_ns_for_me), dfp + timing.retrans + timing.reply,
                              since=reply.time)
        if probe is None:
            return False, f"no unicast probe within {dfp + timing.retrans + timing.reply:g} s of the Echo Reply"
        delay = probe.time - reply.time
        seen = f"first probe {delay:.2f} s after the Echo Reply"
        if delay < 0.9 * dfp:
            return False, f"{seen}: earlier than DELAY_FIRST_PROBE_TIME ({dfp:g} s)"
        return True, seen

    return nce.trials(t, once)
