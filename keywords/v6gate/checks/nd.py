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

from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr, IPv6
from scapy.layers.l2 import Ether

from ..core.check import Part, check
from ..net import nce
from ..net import packets as P
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
    expect="a solicited Neighbor Advertisement (S=1, hop limit 255, R=0 for a host) for the target, sent "
           "to the soliciting node, with the DUT's link-layer address; the NS's source link-layer address "
           "lets the DUT answer without resolving the solicitor first",
    parts=[
        Part("A", "Unicast Neighbor Solicitation", multicast=False, sllao=True),
        Part("B", "Multicast Neighbor Solicitation", multicast=True, sllao=True,
             expect="a solicited NA (S=1, hop limit 255) to the soliciting node carrying a Target "
                    "Link-Layer Address option (mandatory in answer to a multicast NS)"),
        Part("C", "Unicast Neighbor Solicitation without SLL", multicast=False, sllao=False,
             expect="a solicited NA (S=1, hop limit 255) to the soliciting node, after the DUT resolves "
                    "the solicitor's address itself if it needs to (the NS carried no SLLA)"),
    ],
)
def ns_is_answered_without_nce(t):
    """A valid NS for one of the node's addresses is answered with a
    solicited NA to the solicitor (RFC 4861 §7.2.4).  The solicitor is a
    fresh node, so the DUT has no Neighbor Cache Entry for it (§7.2.3)."""
    tn1 = t.tn1
    target = t.dut.link_local
    ns = neighbor_solicitation(tn1, target, dut_mac=t.dut.mac, multicast=t.p.multicast, sllao=t.p.sllao)
    frame = t.expect_reply(ns, lambda p: ICMPv6ND_NA in p and P.same_address(p[ICMPv6ND_NA].tgt, target)
                           and P.same_address(p[IPv6].dst, tn1.link_local), what="Neighbor Advertisement",
                           within=t.reply_timeout + 3 * t.retrans_timer)
    if frame is None:
        return t.failed(f"no Neighbor Advertisement for {target} to {tn1.link_local}")
    problems, seen = _na_seen(t, frame, solicited=True, dst=tn1.link_local)
    if t.p.multicast and ICMPv6NDOptDstLLAddr not in frame.pkt:
        problems.append("no Target Link-Layer Address option in answer to a multicast NS")
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
    if lla == "new" or new_state == "reachable" and state != "reachable":
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
    timing = NudTiming.of(t)
    nb = Neighbour(t, t.tn1)
    if state == "stale":
        nce.stale(nb, timing)
    else:
        nce.set_nd_timers(t, reachable_ms=nce.REACHABLE_TIME_MS)
        if state == "reachable":
            nce.reachable(nb)
        else:
            nce.probing(nb, timing)
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
    timing = NudTiming.of(t)
    seen = nb.collect(since, timing.probe_window)
    t.note(f"TN1: {seen.describe()}")
    problems = []
    if seen.reply is None:
        problems.append("the queued Echo Reply was not sent: the NA did not complete address resolution")
    elif seen.reply_mac != nb.mac:
        problems.append(f"the queued Echo Reply went to {seen.reply_mac}, not the TLLA {nb.mac}")
    elif t.p.s and seen.unicast_ns():
        problems.append("a unicast NS followed: the entry was not REACHABLE after a solicited NA")
    elif not t.p.s and not seen.unicast_ns():
        problems.append(f"no unicast NS probe within {timing.probe_window:g} s of the Echo Reply: the entry was not "
                        "STALE after an unsolicited NA")
    text = f"TN1 INCOMPLETE, NA sent; then {seen.describe()}"
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
    timing = NudTiming.of(t)
    nb = Neighbour(t, t.tn1)
    if state == "stale":
        nce.stale(nb, timing)
    else:
        nce.set_nd_timers(t, reachable_ms=nce.REACHABLE_TIME_MS)
        if state == "reachable":
            nce.reachable(nb)
        else:
            nce.probing(nb, timing)
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
    timing = NudTiming.of(t)
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
    seen = nb.collect(since, timing.probe_window + timing.reply)
    t.note(f"TN1: {seen.describe()}")
    if seen.reply is None:
        problems.append("the queued Echo Reply was not sent: the NS's SLLA did not complete the resolution")
    elif seen.reply_mac != nb.mac:
        problems.append(f"the queued Echo Reply went to {seen.reply_mac}, not the SLLA {nb.mac}")
    elif not seen.unicast_ns():
        problems.append("no unicast NS probe followed: the entry was not STALE")
    text = f"TN1 INCOMPLETE, NS sent; {na_seen}; then {seen.describe()}"
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
