"""Source-Specific Multicast (RFC 4607, RFC 4604) over MLDv2: the DUT joins a
channel (S,G) with G in the SSM range ff3x::/96 as INCLUDE {S}, answers the
source-specific Query a router sends for it, and leaves it with BLOCK {S}
(RFC 3810 §6.1 Table 1, §6.3).  RFC 8504 (and its -bis) require MLDv2 for
SSM; the DUT is made to join through the control adapter's listen with a
source list."""

from __future__ import annotations

from ...core.check import Part, check
from ...core.context import CheckContext
from ...net.mld import (
    ALLOW_NEW,
    BLOCK_OLD,
    CHANGE_TO_EXCLUDE,
    MODE_IS_EXCLUDE,
    MODE_IS_INCLUDE,
    STATE_CHANGE,
    in_ssm_range,
    mld_query,
    records_for,
    reports_group,
)
from ._common import _group, _querier, _slack, fails
from .source_filtering import QUERY_MRD_MS, Filter, _answer, _query, _settle_s, _state_change_for

EXCLUDE_MODE = (MODE_IS_EXCLUDE, CHANGE_TO_EXCLUDE)


def _exclude_records(frame, group: str) -> list[str]:
    return [f"an EXCLUDE-mode {r.describe()} record for the SSM address {group}"
            for r in records_for(frame.pkt, group) if r.rtype in EXCLUDE_MODE]


@check(area="mld", title="A Source-Specific Multicast channel is joined and left in INCLUDE mode",
       rfc="RFC 4604 §2.2, §3; RFC 4607 §3; RFC 3810 §6.1, §6.3", capabilities=["MLDv2-SSM"], liveness="echo",
       expect="joining the channel (S, G), G in ff3x::/96, the DUT sends ALLOW {S} for G and no EXCLUDE-mode record; "
              "it answers the router's Multicast Address and Source Specific Query for (S, G) with IS_IN {S}; "
              "leaving, it sends BLOCK {S} and answers no further Query for G",
       parts=[
           Part("join", "joining (S, G): ALLOW {S}, no EXCLUDE mode", step="join",
                fault="dut_joins_ssm_channels_in_exclude_mode"),
           Part("query", "Query for (S, G): IS_IN {S}", step="query", fault="dut_mld_records_lose_a_source"),
           Part("leave", "leaving (S, G): BLOCK {S}, then no Report for G", step="leave",
                fault="dut_does_not_report_blocked_sources"),
       ])
def ssm_channel_is_joined_and_left(t: CheckContext):
    """'An SSM-aware host SHOULD NOT send ... EXCLUDE mode ... for SSM
    addresses' (RFC 4604 §2.2.1, RFC 9777 §5.2.13): a channel is requested
    with IPv6MulticastListen(G, INCLUDE {S}) (RFC 4604 §2.1), which for a
    new group is INCLUDE {} -> INCLUDE {S}: ALLOW {S} (RFC 3810 §6.1
    Table 1); the router queries (S, G) with a Multicast Address and Source
    Specific Query (RFC 4604 §3), answered IS_IN (A*B) = {S} (RFC 3810
    §6.3); leaving is INCLUDE {S} -> INCLUDE {}: BLOCK {S}, after which the
    interface has no state for G to report."""
    f = Filter(t, ssm=True, n_sources=1)
    if not in_ssm_range(f.group):  # the generator's own promise (RFC 4607 §1)
        raise AssertionError(f"{f.group} is not in ff3x::/96")
    step, window = t.p.step, t.reply_timeout + _slack(t)
    try:
        since = f.set("include", (0,))
        joined = t.port.expect(t.from_dut(_state_change_for(f.group)), window, since=since)
        if step == "join":
            if joined is None:
                return fails(t, f"no MLDv2 State-Change Report for the SSM group {f.group} within {window:.2f} s of "
                                f"joining the channel ({f.sources[0]}, {f.group})")
            mine = records_for(joined.pkt, f.group)
            problems = _exclude_records(joined, f.group)
            allow = [r for r in mine if r.rtype == ALLOW_NEW]
            if not allow or {s for r in allow for s in r.sources} != {f.sources[0]}:
                problems.append(f"no ALLOW {{{f.sources[0]}}} record for {f.group}")
            return t.conclude(f"joined ({f.sources[0]}, {f.group}): State-Change Report "
                              f"{joined.time - since:.3f} s later with {', '.join(r.describe() for r in mine)}",
                              problems)
        if joined is None:
            raise t.not_judged(f"ssm-join:{f.group}", "mld.ssm_channel_is_joined_and_left#join",
                               f"no State-Change Report after joining the channel ({f.sources[0]}, {f.group})")
        t.wait(_settle_s(t))
        if step == "query":
            q = _query(t, f, specific=True, source_idx=(0,))
            answer = _answer(t, f, q)
            if answer is None:
                return fails(t, f"no answer for ({f.sources[0]}, {f.group}) within "
                                f"{QUERY_MRD_MS / 1000 + _slack(t):.2f} s of the router's source-specific Query")
            mine = records_for(answer.pkt, f.group)
            problems = _exclude_records(answer, f.group)
            included = [r for r in mine if r.rtype == MODE_IS_INCLUDE]
            if not included or {s for r in included for s in r.sources} != {f.sources[0]}:
                problems.append(f"{', '.join(r.describe() for r in mine)}, not IS_IN {{{f.sources[0]}}}")
            return t.conclude(f"answer {answer.time - q:.3f} s after the Query with "
                              f"{', '.join(r.describe() for r in mine)}", problems)
        # leave
        since = f.set(None)
        left = t.port.expect(t.from_dut(_state_change_for(f.group)), window, since=since)
        if left is None:
            return fails(t, f"no MLDv2 State-Change Report for {f.group} within {window:.2f} s of leaving the "
                            f"channel ({f.sources[0]}, {f.group})")
        mine = records_for(left.pkt, f.group)
        problems = []
        blocks = [r for r in mine if r.rtype == BLOCK_OLD]
        if not blocks or {s for r in blocks for s in r.sources} != {f.sources[0]}:
            problems.append(f"{', '.join(r.describe() for r in mine)}, not BLOCK {{{f.sources[0]}}}")
        problems += [f"an unexpected {r.describe()} record" for r in mine if r.rtype in STATE_CHANGE and
                     r.rtype != BLOCK_OLD]
        t.wait(_settle_s(t))
        # the interface has no state for G now: a Query for G gets no Report; a General Query still gets one
        q = _query(t, f, specific=True)
        late = t.port.expect(t.from_dut(lambda p: reports_group(p, f.group)), QUERY_MRD_MS / 1000 + _slack(t),
                             since=q)
        if late is not None:
            problems.append(f"still reported {f.group} {late.time - q:.3f} s after a Query for it, having left: "
                            f"{', '.join(r.describe() for r in records_for(late.pkt, f.group))}")
        general = t.send(mld_query(_querier(t), version=2, mrd_ms=QUERY_MRD_MS),
                         label=f"MLDv2 General Query, MRD {QUERY_MRD_MS} ms (the DUT still answers Queries)")
        alive = t.port.expect(t.from_dut(lambda p: reports_group(p, _group(t))), QUERY_MRD_MS / 1000 + _slack(t),
                              since=general)
        if alive is None and not problems:
            return fails(t, f"left ({f.sources[0]}, {f.group}) with BLOCK {{{f.sources[0]}}}, but then answered no "
                            f"General Query either (no Report for {_group(t)}): the silence for {f.group} proves "
                            "nothing")
        return t.conclude(f"left: State-Change Report {left.time - since:.3f} s later with "
                          f"{', '.join(r.describe() for r in mine)}; no Report for {f.group} after a Query for it; "
                          f"General Query answered for {_group(t)}", problems)
    finally:
        f.leave()

