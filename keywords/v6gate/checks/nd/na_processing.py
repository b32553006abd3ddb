"""Neighbor Advertisement processing (RFC 4861 §7.2.5) in every Neighbor Cache state."""


from scapy.layers.inet6 import IPv6

from ...core.check import Part, check
from ...core.context import CheckContext
from ...net import packets as P
from ...scenario import nce
from ...scenario.nce import Expect, Neighbour


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


def _na_in_state(t: CheckContext, state: str):
    """Put TN1's entry into ``state``, send the part's NA, judge the entry."""
    nb = Neighbour(t, t.tn1)
    nce.enter(nb, state)
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
    return t.conclude(seen, problems)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.18",
    title="Neighbor Advertisement Processing, NCE State REACHABLE",
    rfc="RFC 4861 §7.2.5, §7.3.3",
    needs=["exclusive_router"],
    dut_config="nud-fast",
    forms_addresses=False,
    concurrent_parts=True,  # each part a TN1 of its own; they share only the state's RA timers
    liveness="ns",
    expect="the entry is updated as RFC 4861 §7.2.5 requires for a REACHABLE entry",
    parts=_na_parts("reachable"),
)
def na_updates_reachable_entry(t: CheckContext):
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
    forms_addresses=False,
    concurrent_parts=True,  # each part a TN1 of its own; they share only the state's RA timers
    liveness="ns",
    expect="the entry is updated as RFC 4861 §7.2.5 requires for a STALE entry",
    parts=_na_parts("stale"),
)
def na_updates_stale_entry(t: CheckContext):
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
    forms_addresses=False,
    concurrent_parts=True,  # each part a TN1 of its own; they share only the state's RA timers
    liveness="ns",
    expect="the entry is updated as RFC 4861 §7.2.5 requires for an entry in PROBE",
    parts=_na_parts("probe"),
)
def na_updates_probe_entry(t: CheckContext):
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
    forms_addresses=False,
    concurrent_parts=True,  # each part a TN1 of its own, resolved by its own NA; no DUT state shared
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
def na_completes_address_resolution(t: CheckContext):
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
        return t.conclude(seen, problems)
    problems, seen = nce.judge_resolution_completed(nb, nb.mac, since, "reachable" if t.p.s else "stale",
                                                    by="the NA")
    text = f"TN1 INCOMPLETE, NA sent; then {seen}"
    return t.conclude(text, problems)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.16",
    title="Neighbor Advertisement Processing, No NCE",
    rfc="RFC 4861 §7.2.5",
    liveness="ns",
    forms_addresses=False,
    concurrent_parts=True,  # each part a TN1 of its own, unknown to the DUT; no DUT state shared
    fault="impostor_creates_entries_from_any_na",
    expect="the NA is silently discarded and creates no entry: the DUT sends nothing in answer, and a later Echo "
           "Request from TN1 makes it resolve TN1 (multicast NS) before replying",
    parts=[Part(chr(ord("A") + i), f"Receiving NA with S = {s}, O = {o}, and {'TLLA' if tl else 'NO TLLA'}",
                s=s, o=o, tlla=tl)
           for i, (tl, s, o) in enumerate([(True, 0, 0), (True, 0, 1), (True, 1, 0), (True, 1, 1),
                                           (False, 0, 0), (False, 0, 1), (False, 1, 0), (False, 1, 1)])],
)
def na_without_entry_is_discarded(t: CheckContext):
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
    return t.conclude(text, problems)
