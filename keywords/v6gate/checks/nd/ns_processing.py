"""Neighbor Solicitation processing (RFC 4861 §7.2.3, §7.2.4) in every Neighbor Cache state."""


from scapy.layers.inet6 import ICMPv6ND_NA
from scapy.layers.l2 import Ether

from ...core.check import Part, check
from ...core.context import CheckContext
from ...scenario import nce
from ...scenario.nce import Expect, Neighbour


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


def _dut_na_to(t: CheckContext, nb: Neighbour, since: float, lla: str | None) -> tuple[list[str], str, float | None]:
    """The DUT's solicited NA answering the node's NS, where it went, and when."""
    na = t.port.expect(t.from_dut(nb.is_na_for_me), t.reply_timeout, since=since)
    if na is None:
        return [f"no Neighbor Advertisement to {nb.addr} within {t.reply_timeout:g} s of its NS (§7.2.4)"], "no NA", None
    problems = []
    if not na.pkt[ICMPv6ND_NA].S:
        problems.append("the NA answering the NS has S=0")
    if lla and na.pkt[Ether].dst.lower() != lla:
        problems.append(f"the NA went to {na.pkt[Ether].dst}, not {lla}")
    return problems, f"NA to {na.pkt[Ether].dst}", na.time


def _ns_in_state(t: CheckContext, state: str):
    """Put TN1's entry into ``state``, send the part's NS, judge the answer and the entry."""
    nb = Neighbour(t, t.tn1)
    nce.enter(nb, state)
    other = nce.fresh_mac()
    sll = nb.mac if t.p.sll == "same" else other
    since = t.send(nb.ns(multicast=t.p.multicast, sll=sll),
                   label=f"{'multicast' if t.p.multicast else 'unicast'} NS from TN1, SLLA {sll}")
    new_state, lla = ns_outcome(state, t.p.sll)
    expect = Expect(new_state, other if lla == "new" else nb.mac)
    problems, na_seen, na_time = _dut_na_to(t, nb, since, expect.lla)
    if state == "probe" and new_state == "probe":
        more, seen = nce.judge_probing_continues(nb, expect.lla, since)
    else:
        more, seen = nce.judge_by_echo(nb, expect, since if new_state == "reachable" else None,
                                       delay_from=na_time if new_state == "stale" else None)
    text = f"TN1 {state.upper()} ({nb.mac}), NS sent; {na_seen}; then {seen}"
    problems += more
    return t.conclude(text, problems)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.9",
    title="Neighbor Solicitation Processing, NCE State INCOMPLETE",
    rfc="RFC 4861 §7.2.3, §7.2.4",
    dut_config="nud-fast",
    forms_addresses=False,
    concurrent_parts=True,  # each part a TN1 of its own; they share only the state's RA timers
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
def ns_completes_pending_resolution(t: CheckContext):
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
        return t.conclude(text, problems)
    problems, na_seen, _ = _dut_na_to(t, nb, since, nb.mac)
    more, seen = nce.judge_resolution_completed(nb, nb.mac, since, "stale", by="the NS's SLLA")
    problems += more
    text = f"TN1 INCOMPLETE, NS sent; {na_seen}; then {seen}"
    return t.conclude(text, problems)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.10",
    title="Neighbor Solicitation Processing, NCE State REACHABLE",
    rfc="RFC 4861 §7.2.3, §7.2.4",
    needs=["exclusive_router"],
    dut_config="nud-fast",
    forms_addresses=False,
    concurrent_parts=True,  # each part a TN1 of its own; they share only the state's RA timers
    liveness="echo",
    expect="the solicitor's REACHABLE entry is updated as RFC 4861 §7.2.3 requires",
    parts=_ns_parts("reachable", {"same": "impostor_ns_makes_reachable_entry_stale",
                                  "diff": "dut_drops_neighbor_solicitation"}),
)
def ns_updates_reachable_entry(t: CheckContext):
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
    forms_addresses=False,
    concurrent_parts=True,  # each part a TN1 of its own; they share only the state's RA timers
    liveness="echo",
    expect="the solicitor's STALE entry is updated as RFC 4861 §7.2.3 requires",
    parts=_ns_parts("stale", {"same": "impostor_ns_confirms_stale_entry", "diff": "dut_drops_neighbor_solicitation"}),
)
def ns_updates_stale_entry(t: CheckContext):
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
    forms_addresses=False,
    concurrent_parts=True,  # each part a TN1 of its own; they share only the state's RA timers
    liveness="echo",
    expect="the solicitor's entry in PROBE is updated as RFC 4861 §7.2.3 requires",
    parts=_ns_parts("probe", {"same": "impostor_ns_confirms_probe_entry", "diff": "dut_drops_neighbor_solicitation"}),
)
def ns_updates_probe_entry(t: CheckContext):
    """An NS with the cached SLLA does not confirm reachability: the entry
    stays in PROBE and probing goes on; a different SLLA replaces the
    address and makes the entry STALE (RFC 4861 §7.2.3, §7.3.3)."""
    return _ns_in_state(t, "probe")
