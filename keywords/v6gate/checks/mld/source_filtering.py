"""MLDv2 source filtering (RFC 3810 §3, §5.2.12, §6.1-6.3; RFC 9777, its
2025 revision, keeps the section numbers and tables): what the DUT reports
when an application changes a group's filter mode or source list, how often
and how fast it repeats that State-Change Report, and what it answers to
General, Multicast Address Specific and Multicast Address and Source
Specific Queries for a group it filters.

The DUT's filters are set through the control adapter's ``listen(group,
mode=, sources=)`` (RFC 3810 §3 IPv6MulticastListen: one application, one
filter per group); each check uses a fresh organisation-local group
(ff18::/16) and fresh documentation sources, and leaves the group when it
ends.  The DUT's Robustness Variable and Unsolicited Report Interval are the
RFC's defaults (2, 1 s; §9.1, §9.11) unless the target states others
(``extensions.mld``); every Query the tester sends carries QRV 2, so a DUT
that adopts the querier's value keeps the default too.
"""

from __future__ import annotations

from itertools import pairwise

from ...core.check import Part, check
from ...core.context import CheckContext
from ...errors import UsageError
from ...net.mld import (
    ALLOW_NEW,
    BLOCK_OLD,
    CHANGE_TO_EXCLUDE,
    CHANGE_TO_INCLUDE,
    CURRENT_STATE,
    MODE_IS_EXCLUDE,
    MODE_IS_INCLUDE,
    ROBUSTNESS_VARIABLE,
    SHORT,
    STATE_CHANGE,
    UNSOLICITED_REPORT_INTERVAL,
    fresh_group,
    fresh_sources,
    is_v2_report,
    mld_query,
    records_for,
)
from ._common import _querier, _slack, fails, holds

QUERY_MRD_MS = 1000  # the Maximum Response Delay of the tester's MLDv2 Queries here
LATE_FACTOR = 10  # how many Unsolicited Report Intervals the retransmission checks wait for a late one


def mld_settings(t: CheckContext) -> tuple[int, float]:
    """The DUT's [Robustness Variable] and [Unsolicited Report Interval]
    (RFC 3810 §9.1, §9.11 defaults, or the target's ``extensions.mld``)."""
    ext = (t.target.extensions or {}).get("mld") or {}
    if not isinstance(ext, dict):
        raise UsageError(f"{t.target.source}: extensions.mld must be a mapping "
                         "{robustness: N, unsolicited_report_interval_s: S}")
    rv, uri = ext.get("robustness", ROBUSTNESS_VARIABLE), ext.get("unsolicited_report_interval_s",
                                                                 UNSOLICITED_REPORT_INTERVAL)
    if isinstance(rv, bool) or not isinstance(rv, int) or not 1 <= rv <= 7:
        raise UsageError(f"{t.target.source}: extensions.mld.robustness must be a whole number 1-7 (RFC 3810 §9.1; "
                         f"default 2), not {rv!r}")
    if isinstance(uri, bool) or not isinstance(uri, (int, float)) or not 0 < uri <= 60:
        raise UsageError(f"{t.target.source}: extensions.mld.unsolicited_report_interval_s must be a number of "
                         f"seconds in (0, 60] (RFC 3810 §9.11; default 1), not {uri!r}")
    return rv, float(uri)


def _settle_s(t: CheckContext) -> float:
    """How long a state change's retransmissions last at most: (RV - 1) x URI, plus slack."""
    rv, uri = mld_settings(t)
    return (rv - 1) * uri + _slack(t) + 0.2


class Filter:
    """The DUT's filter for one fresh group, set through the control adapter."""

    def __init__(self, t: CheckContext, *, ssm: bool = False, n_sources: int = 3):
        self.t = t
        self.group = fresh_group(ssm=ssm)
        self.sources = fresh_sources(n_sources)
        self.state: tuple[str, list[str]] | None = None  # None: no per-interface state (INCLUDE {})
        self.took = 0.0

    def named(self, idx) -> list[str]:
        return [self.sources[i] for i in idx]

    def set(self, mode: str | None, idx=()) -> float:
        """Change the filter to ``mode`` with the sources ``idx`` (None: leave); returns the port time before
        the control adapter was asked (a Report may leave before its call returns); ``took`` is how long the
        call took, so a delay can be judged from when the change was surely made."""
        since = self.t.now()
        if mode is None:
            self.t.control.unlisten(self.group)
            self.state = None
            self.t.note(f"the DUT's application left {self.group}")
        else:
            self.t.control.listen(self.group, mode=mode, sources=self.named(idx))
            self.state = (mode, self.named(idx))
            self.t.note(f"the DUT's application listens to {self.group} with {mode.upper()} "
                        f"{{{', '.join(self.named(idx))}}}")
        self.took = self.t.now() - since
        return since

    def describe(self, state=None) -> str:
        mode, sources = state if state is not None else (self.state or ("include", []))
        return f"{mode.upper()} {{{', '.join(sources)}}}"

    def leave(self) -> None:
        if self.state is not None:
            self.t.control.unlisten(self.group)
            self.state = None


def _state_change_for(group: str):
    return lambda p: is_v2_report(p) and any(r.rtype in STATE_CHANGE for r in records_for(p, group))


def _current_state_answer(group: str):
    return lambda p: is_v2_report(p) and any(r.rtype in CURRENT_STATE for r in records_for(p, group))


def _expected(expect: dict, f: Filter) -> dict[int, set[str]]:
    return {rtype: set(f.named(idx)) for rtype, idx in expect.items()}


def _compare(got: dict[int, set[str]], want: dict[int, set[str]], group: str) -> list[str]:
    """Problems of the records about ``group`` (type -> sources) against the RFC's."""
    problems = []
    for rtype, sources in want.items():
        if rtype not in got:
            problems.append(f"no {SHORT[rtype]} {{{', '.join(sorted(sources))}}} record for {group}")
        elif got[rtype] != sources:
            problems.append(f"{SHORT[rtype]} {{{', '.join(sorted(got[rtype]))}}} for {group}, not "
                            f"{SHORT[rtype]} {{{', '.join(sorted(sources))}}}")
    for rtype in sorted(set(got) - set(want)):
        problems.append(f"an unexpected {SHORT.get(rtype, f'type {rtype}')} {{{', '.join(sorted(got[rtype]))}}} "
                        f"record for {group}")
    return problems


def _by_type(records) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for r in records:
        out.setdefault(r.rtype, set()).update(r.sources)
    return out


# -- RFC 3810 §6.1: the State-Change Report -----------------------------------------------------------

INC, EXC = "include", "exclude"
#: (part, title, from state, to state, expected records); states are (mode, source indices) or None (no state)
TRANSITIONS = [
    ("join_include", "joining with INCLUDE {S1}: ALLOW {S1}", None, (INC, (0,)), {ALLOW_NEW: (0,)}),
    # an any-source join: one change on every API (Linux's cannot create EXCLUDE {S1} in one step: a join, then
    # the filter; include_to_exclude judges TO_EX with sources)
    ("join_exclude", "joining with EXCLUDE {} (any source): TO_EX {}", None, (EXC, ()), {CHANGE_TO_EXCLUDE: ()}),
    ("include_allow", "INCLUDE {S1} to INCLUDE {S1, S2}: ALLOW {S2}", (INC, (0,)), (INC, (0, 1)), {ALLOW_NEW: (1,)}),
    ("include_block", "INCLUDE {S1, S2} to INCLUDE {S1}: BLOCK {S2}", (INC, (0, 1)), (INC, (0,)), {BLOCK_OLD: (1,)}),
    ("include_allow_block", "INCLUDE {S1} to INCLUDE {S2}: ALLOW {S2} and BLOCK {S1}", (INC, (0,)), (INC, (1,)),
     {ALLOW_NEW: (1,), BLOCK_OLD: (0,)}),
    ("include_to_exclude", "INCLUDE {S1} to EXCLUDE {S2}: TO_EX {S2}", (INC, (0,)), (EXC, (1,)),
     {CHANGE_TO_EXCLUDE: (1,)}),
    ("exclude_to_include", "EXCLUDE {S1} to INCLUDE {S2}: TO_IN {S2}", (EXC, (0,)), (INC, (1,)),
     {CHANGE_TO_INCLUDE: (1,)}),
    ("exclude_block", "EXCLUDE {} to EXCLUDE {S1}: BLOCK {S1}", (EXC, ()), (EXC, (0,)), {BLOCK_OLD: (0,)}),
    ("exclude_allow", "EXCLUDE {S1} to EXCLUDE {}: ALLOW {S1}", (EXC, (0,)), (EXC, ()), {ALLOW_NEW: (0,)}),
    ("leave_include", "leaving INCLUDE {S1}: BLOCK {S1}", (INC, (0,)), None, {BLOCK_OLD: (0,)}),
    ("leave_exclude", "leaving EXCLUDE {S1}: TO_IN {}", (EXC, (0,)), None, {CHANGE_TO_INCLUDE: ()}),
]


@check(area="mld", title="A filter change is reported with the State-Change records of RFC 3810 Table 1",
       rfc="RFC 3810 §6.1 (Table 1), §5.2.12; RFC 9777 §6.1", capabilities=["MLDv2-Source-Filtering"],
       liveness="echo", fault="dut_swaps_mld_state_change_records",
       expect="when the DUT's application changes a group's filter, the DUT at once (within the reply timeout) "
              "sends an MLDv2 State-Change Report whose records for the group are those RFC 3810 §6.1 Table 1 gives "
              "for the old and new state (a non-existent state is INCLUDE {}; empty ALLOW/BLOCK records left out), "
              "with exactly those sources",
       parts=[Part(name, title, before=before, after=after, records=records) for name, title, before, after, records
              in TRANSITIONS])
def filter_change_is_reported_per_table_1(t: CheckContext):
    """'A change of per-interface state causes the node to immediately
    transmit a State-Change Report from that interface.  The type and
    contents of the Multicast Address Record(s) in that Report are
    determined by comparing the filter mode and source list for the
    affected multicast address before and after the change, according to
    the table below' (RFC 3810 §6.1): INCLUDE (A) -> INCLUDE (B): ALLOW
    (B-A), BLOCK (A-B); EXCLUDE (A) -> EXCLUDE (B): ALLOW (A-B), BLOCK
    (B-A); INCLUDE (A) -> EXCLUDE (B): TO_EX (B); EXCLUDE (A) -> INCLUDE
    (B): TO_IN (B)."""
    f = Filter(t)
    try:
        if t.p.before is not None:
            f.set(*t.p.before)
            t.wait(_settle_s(t))  # the setup's own State-Change Report and its retransmissions end first
        before = f.describe()
        since = f.set(*t.p.after) if t.p.after is not None else f.set(None)
        after = f.describe() if t.p.after is not None else "no state (INCLUDE {})"
        window = t.reply_timeout + _slack(t)
        frame = t.port.expect(t.from_dut(_state_change_for(f.group)), window, since=since)
        if frame is None:
            return fails(t, f"no MLDv2 State-Change Report for {f.group} within {window:.2f} s of the change from "
                            f"{before} to {after}")
        mine = records_for(frame.pkt, f.group)
        problems = _compare(_by_type(r for r in mine if r.rtype in STATE_CHANGE), _expected(t.p.records, f), f.group)
        problems += [f"a current-state {SHORT[r.rtype]} record for {f.group} in the State-Change Report"
                     for r in mine if r.rtype in CURRENT_STATE]
        seen = (f"{before} -> {after}: State-Change Report {frame.time - since:.3f} s after the control adapter "
                f"was asked (its call took {f.took:.3f} s) with {', '.join(r.describe() for r in mine)}")
        t.measure("report_delay_s", round(frame.time - since, 3))
        return t.conclude(seen, problems)
    finally:
        f.leave()


# -- RFC 3810 §6.1, §9.1, §9.11: retransmissions ------------------------------------------------------

def _transmissions(t: CheckContext, f: Filter, since: float, *, stop_at: int | None) -> list:
    """The DUT's State-Change Reports for ``f.group`` from ``since``: each
    next one waited for up to LATE_FACTOR Unsolicited Report Intervals after
    the previous (so a late one is seen, not taken for a missing one)."""
    rv, uri = mld_settings(t)
    match = t.from_dut(_state_change_for(f.group))
    first = t.port.expect(match, t.reply_timeout + _slack(t), since=since)
    frames = [first] if first else []
    while frames and len(frames) < (stop_at or rv + 3):
        horizon = frames[-1].time + LATE_FACTOR * uri + _slack(t)
        nxt = t.port.expect(match, max(0.0, horizon - t.now()), since=frames[-1].time + 1e-6)
        if nxt is None:
            break
        frames.append(nxt)
    return frames


@check(area="mld", title="The State-Change Report is sent Robustness Variable times within the Unsolicited "
                         "Report Interval",
       rfc="RFC 3810 §6.1, §9.1, §9.11; RFC 9777 §6.1", capabilities=["MLDv2-Source-Filtering"], liveness="echo",
       expect="after one filter change (joining with INCLUDE {S1}), the DUT sends its State-Change Report "
              "[Robustness Variable] times in all (default 2), each retransmission within [Unsolicited Report "
              "Interval] (default 1 s) of the one before, each carrying the same records",
       parts=[
           Part("count", "Robustness Variable transmissions, no more, no fewer", judge="count",
                fault="dut_sends_mld_state_change_once",
                expect="the State-Change Report for one change is sent [Robustness Variable] times in all (default 2; "
                       f"counted until {LATE_FACTOR} Unsolicited Report Intervals pass without another)"),
           Part("count_mode_change", "a filter-mode change (TO_EX) sent Robustness Variable times too",
                judge="count", join=(EXC, ()), fault="dut_sends_mld_state_change_once",
                expect="after an any-source join (EXCLUDE {}), a filter-mode change, the State-Change Report with its "
                       "TO_EX record is sent [Robustness Variable] times in all (default 2; RFC 3810 §6.1: 'the next "
                       "[Robustness Variable] State-Change Reports will include a Filter-Mode-Change Record')"),
           Part("spacing", "each retransmission within the Unsolicited Report Interval", judge="spacing",
                fault="dut_mld_unsolicited_report_interval_8s",
                expect="each retransmission of the State-Change Report follows the previous within the [Unsolicited "
                       "Report Interval] (default 1 s, plus scheduling slack), in each of 3 joins"),
       ])
def state_change_report_is_retransmitted(t: CheckContext):
    """'To cover the possibility of the State Change Report being missed by
    one or more multicast routers, it is retransmitted [Robustness
    Variable] - 1 more times, at intervals chosen at random from the range
    (0, [Unsolicited Report Interval])' (RFC 3810 §6.1); Robustness
    Variable default 2 (§9.1), Unsolicited Report Interval default 1 second
    (§9.11)."""
    rv, uri = mld_settings(t)
    bound = uri + _slack(t)
    if t.p.judge == "count":
        join = getattr(t.p, "join", (INC, (0,)))
        # from a settled interface: a DUT just started may still repeat its own groups' State-Change Reports,
        # and a join merged into those is another case (Linux then sent the new record 3 times in 1 of 3 runs)
        t.wait(_settle_s(t))
        f = Filter(t)
        try:
            frames = _transmissions(t, f, f.set(*join), stop_at=None)
        finally:
            f.leave()
        if not frames:
            raise t.not_judged(f"state-change:{f.group}", f"mld.filter_change_is_reported_per_table_1#join_{join[0]}",
                               f"no State-Change Report for {f.group} after joining it with "
                               f"{f.describe((join[0], f.named(join[1])))}")
        gaps = [round(b.time - a.time, 3) for a, b in pairwise(frames)]
        t.measure("transmissions", len(frames))
        t.measure("gaps_s", gaps)
        seen = (f"{len(frames)} transmission(s) of the State-Change Report for {f.group} (gaps {gaps} s; none more "
                f"within {LATE_FACTOR * uri:g} s of the last)")
        problems = [] if len(frames) == rv else [
            f"{len(frames)} transmission(s) of the State-Change Report, not {rv} (the Robustness Variable)"]
        problems += _same_records(frames, f.group)
        return t.conclude(seen, problems)
    trials, all_gaps = 3, []
    for trial in range(1, trials + 1):
        f = Filter(t)
        try:
            frames = _transmissions(t, f, f.set("include", (0,)), stop_at=rv)
        finally:
            f.leave()
        gaps = [round(b.time - a.time, 3) for a, b in pairwise(frames)]
        all_gaps += gaps
        if len(frames) < 2:
            raise t.not_judged(f"retransmission:{f.group}", "mld.state_change_report_is_retransmitted#count",
                               f"trial {trial}: {len(frames)} transmission(s) of the State-Change Report for {f.group} "
                               f"and no retransmission within {LATE_FACTOR * uri:g} s")
        late = [g for g in gaps if g > bound]
        if late:
            t.measure("gaps_s", all_gaps)
            return fails(t, f"trial {trial}: retransmission(s) {late} s after the previous one, later than the "
                            f"Unsolicited Report Interval ({uri:g} s + {_slack(t):.2f} s slack); gaps so far "
                            f"{all_gaps} s")
        t.wait(_settle_s(t))  # the leave's own State-Change Reports pass before the next trial
    t.measure("gaps_s", all_gaps)
    return holds(t, f"{trials} joins: every retransmission within {bound:.2f} s of the previous (gaps {all_gaps} s)")


def _same_records(frames, group: str) -> list[str]:
    first = sorted((r.rtype, tuple(sorted(r.sources))) for r in records_for(frames[0].pkt, group))
    return [f"transmission {i + 2} carries {', '.join(r.describe() for r in records_for(fr.pkt, group))}, not the "
            f"first one's records" for i, fr in enumerate(frames[1:])
            if sorted((r.rtype, tuple(sorted(r.sources))) for r in records_for(fr.pkt, group)) != first]


# -- RFC 3810 §6.2, §6.3: answering Queries --------------------------------------------------------------

def _query(t: CheckContext, f: Filter, *, specific: bool, source_idx=(), label: str = "") -> float:
    q = mld_query(_querier(t), version=2, mrd_ms=QUERY_MRD_MS, group=f.group if specific else "::",
                  sources=f.named(source_idx))
    kind = ("Multicast Address and Source Specific" if source_idx else "Multicast Address Specific") if specific \
        else "General"
    return t.send(q, label=label or f"MLDv2 {kind} Query{' for ' + f.group if specific else ''}"
                  f"{' sources {' + ', '.join(f.named(source_idx)) + '}' if source_idx else ''}, MRD {QUERY_MRD_MS} ms")


def _answer(t: CheckContext, f: Filter, since: float):
    return t.port.expect(t.from_dut(_current_state_answer(f.group)), QUERY_MRD_MS / 1000 + _slack(t), since=since)


@check(area="mld", title="Current-state records carry the group's filter mode and sources",
       rfc="RFC 3810 §6.2, §6.3, §5.2.12; RFC 9777 §6.3", capabilities=["MLDv2-Source-Filtering"], liveness="echo",
       fault="dut_mld_records_lose_a_source",
       expect="within the Query's Maximum Response Delay (1 s) the DUT answers with a current-state record for the "
              "filtered group: MODE_IS_INCLUDE with its include list, or MODE_IS_EXCLUDE with its exclude list",
       parts=[
           Part("general_include", "General Query, INCLUDE {S1, S2}: IS_IN {S1, S2}", specific=False,
                state=(INC, (0, 1)), records={MODE_IS_INCLUDE: (0, 1)}),
           Part("general_exclude", "General Query, EXCLUDE {S1}: IS_EX {S1}", specific=False, state=(EXC, (0,)),
                records={MODE_IS_EXCLUDE: (0,)}),
           Part("specific_include", "Multicast Address Specific Query, INCLUDE {S1, S2}: IS_IN {S1, S2}",
                specific=True, state=(INC, (0, 1)), records={MODE_IS_INCLUDE: (0, 1)}),
           Part("specific_exclude", "Multicast Address Specific Query, EXCLUDE {S1}: IS_EX {S1}", specific=True,
                state=(EXC, (0,)), records={MODE_IS_EXCLUDE: (0,)}),
       ])
def current_state_records_carry_the_filter(t: CheckContext):
    """'If the expired timer is the interface timer ... one Current State
    Record is sent for each multicast address for which the specified
    interface has listening state ... The Current State Record carries the
    multicast address and its associated filter mode (MODE_IS_INCLUDE or
    MODE_IS_EXCLUDE) and source list'; for a Multicast Address Specific
    Query 'a single Current State Record is sent for that address' (RFC
    3810 §6.3)."""
    f = Filter(t)
    try:
        f.set(*t.p.state)
        t.wait(_settle_s(t))
        since = _query(t, f, specific=t.p.specific)
        frame = _answer(t, f, since)
        if frame is None:
            return fails(t, f"no MLDv2 Report with a current-state record for {f.group} ({f.describe()}) within "
                            f"{QUERY_MRD_MS / 1000 + _slack(t):.2f} s of the Query")
        mine = records_for(frame.pkt, f.group)
        problems = _compare(_by_type(r for r in mine if r.rtype in CURRENT_STATE), _expected(t.p.records, f), f.group)
        problems += [f"a State-Change {SHORT[r.rtype]} record for {f.group} in the answer"
                     for r in mine if r.rtype in STATE_CHANGE]
        return t.conclude(f"{f.describe()}: answer {frame.time - since:.3f} s after the Query with "
                          f"{', '.join(r.describe() for r in mine)}", problems)
    finally:
        f.leave()


@check(area="mld", title="A Multicast Address and Source Specific Query is answered per RFC 3810 Table 3",
       rfc="RFC 3810 §6.3 (Table 3), §6.2; RFC 9777 §6.3", capabilities=["MLDv2-Source-Filtering"], liveness="echo",
       fault="dut_reads_source_queries_as_group_queries",
       expect="a Multicast Address and Source Specific Query (sources B) for a group in INCLUDE (A) is answered with "
              "IS_IN (A*B), in EXCLUDE (A) with IS_IN (B-A), within its Maximum Response Delay; when that set is "
              "empty no Report is sent (and a query the DUT can answer still is)",
       parts=[
           Part("include_intersection", "INCLUDE {S1, S2}, queried {S2, S3}: IS_IN {S2}", state=(INC, (0, 1)),
                queried=(1, 2), answer=(1,)),
           Part("include_disjoint", "INCLUDE {S1}, queried {S3}: no Report", state=(INC, (0,)), queried=(2,),
                answer=None, then=(0,)),
           Part("exclude_difference", "EXCLUDE {S1}, queried {S1, S2}: IS_IN {S2}", state=(EXC, (0,)), queried=(0, 1),
                answer=(1,)),
           Part("exclude_all_blocked", "EXCLUDE {S1}, queried {S1}: no Report", state=(EXC, (0,)), queried=(0,),
                answer=None, then=(1,)),
       ])
def source_specific_query_is_answered_per_table_3(t: CheckContext):
    """'If the expired timer is a multicast address timer and the list of
    recorded sources for that multicast address is non-empty ... the
    contents of the corresponding Current State Record are determined from
    the per-interface state and the pending response record': INCLUDE (A)
    with B queried gives IS_IN (A*B), EXCLUDE (A) gives IS_IN (B-A); 'If the
    resulting Current State Record has an empty set of source addresses,
    then no response is sent' (RFC 3810 §6.3)."""
    f = Filter(t)
    window = QUERY_MRD_MS / 1000 + _slack(t)
    try:
        f.set(*t.p.state)
        t.wait(_settle_s(t))
        since = _query(t, f, specific=True, source_idx=t.p.queried)
        queried = f"sources {{{', '.join(f.named(t.p.queried))}}}"
        frame = _answer(t, f, since)
        if t.p.answer is None:
            if frame is not None:
                return fails(t, f"{f.describe()}, queried {queried}: answered with "
                                f"{', '.join(r.describe() for r in records_for(frame.pkt, f.group))} "
                                f"{frame.time - since:.3f} s after the Query, although the resulting record is empty")
            # no vacuous PASS: a query for a source the DUT does want is answered
            since2 = _query(t, f, specific=True, source_idx=t.p.then)
            answer = _answer(t, f, since2)
            if answer is None:
                return fails(t, f"{f.describe()}: no Report for a query for {queried} (right), but none either "
                                f"within {window:.2f} s for sources {{{', '.join(f.named(t.p.then))}}}, which it "
                                f"receives: the DUT ignores source-specific queries, so the silence proves nothing")
            return holds(t, f"{f.describe()}, queried {queried}: no Report within {window:.2f} s; queried "
                            f"{{{', '.join(f.named(t.p.then))}}}: answered {answer.time - since2:.3f} s later with "
                            f"{', '.join(r.describe() for r in records_for(answer.pkt, f.group))}")
        if frame is None:
            return fails(t, f"{f.describe()}, queried {queried}: no MLDv2 Report with a current-state record for "
                            f"{f.group} within {window:.2f} s")
        mine = records_for(frame.pkt, f.group)
        problems = _compare(_by_type(r for r in mine if r.rtype in CURRENT_STATE),
                            {MODE_IS_INCLUDE: set(f.named(t.p.answer))}, f.group)
        return t.conclude(f"{f.describe()}, queried {queried}: answer {frame.time - since:.3f} s after the Query "
                          f"with {', '.join(r.describe() for r in mine)}", problems)
    finally:
        f.leave()
