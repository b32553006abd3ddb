"""MLDv2 (RFC 3810): current-state answers to General and Multicast Address
Specific Queries, the Report format, the startup Report and MLDv1
compatibility mode."""

from __future__ import annotations

from scapy.layers.inet6 import (
    ICMPv6MLReport2,
    IPv6,
)

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net import packets as P
from ...net.mld import (
    CHANGE_TO_EXCLUDE,
    MODE_IS_EXCLUDE,
    RECORD_TYPES,
    is_v1_report,
    is_v2_report,
    judge_common,
    mld_query,
    parse_records,
    reports_group,
    v2_records,
)
from ._common import _current_state_for, _group, _querier, _slack, _v1_query


def _v2_answer(t: CheckContext, *, specific: bool):
    group, tq = _group(t), _querier(t)
    mrd_ms = 1000
    q = mld_query(tq, version=2, mrd_ms=mrd_ms, group=group if specific else "::")
    since = t.send(q, label=f"MLDv2 {'Multicast Address Specific' if specific else 'General'} Query, MRD {mrd_ms} ms")
    frame = t.port.expect(t.from_dut(_current_state_for(group)), mrd_ms / 1000 + _slack(t), since=since)
    return frame, since


@check(area="mld", title="MLDv2 General Query is answered with current-state records",
       rfc="RFC 3810 §6.2, §5.2.12", capabilities=["MLDv2"], liveness="echo", fault="dut_ignores_mld_queries",
       expect="an MLDv2 General Query (MRD 1000 ms) is answered within the MRD by an MLDv2 Report with a "
              "MODE_IS_EXCLUDE record for the DUT's solicited-node group and no record for ff02::1")
def mldv2_general_query_is_answered(t: CheckContext):
    """A General Query schedules a Report of the current state of every
    group the interface listens to, at a random delay within the Maximum
    Response Delay (RFC 3810 §6.2); ff02::1 is never reported (§6)."""
    frame, since = _v2_answer(t, specific=False)
    if frame is None:
        raise Deviation(f"no MLDv2 Report with a current-state record for {_group(t)} within the MRD + slack")
    records = v2_records(frame.pkt)
    problems = [f"a record for ff02::1 ({RECORD_TYPES.get(r.rtype, r.rtype)})" for r in records
                if P.same_address(r.group, P.ALL_NODES)]
    mine = next(r for r in records if P.same_address(r.group, _group(t)))
    if mine.rtype != MODE_IS_EXCLUDE or mine.sources:
        problems.append(f"record for {_group(t)} is {RECORD_TYPES.get(mine.rtype, mine.rtype)} with sources "
                        f"{mine.sources}, not MODE_IS_EXCLUDE with none")
    seen = (f"MLDv2 Report {frame.time - since:.3f} s after the query with records "
            f"{[(r.group, RECORD_TYPES.get(r.rtype, r.rtype)) for r in records]}")
    return t.conclude(seen, problems)


@check(area="mld", title="MLDv2 Multicast Address Specific Query is answered for that group",
       rfc="RFC 3810 §6.2, §6.3", capabilities=["MLDv2"], liveness="echo", fault="dut_ignores_mld_queries",
       expect="an MLDv2 Multicast Address Specific Query for the solicited-node group is answered within its MRD "
              "by a Report whose records name that group only")
def mldv2_specific_query_is_answered(t: CheckContext):
    """A Multicast Address Specific Query asks for the state of one group;
    the answer reports that group (RFC 3810 §6.2, §6.3)."""
    frame, since = _v2_answer(t, specific=True)
    if frame is None:
        raise Deviation(f"no MLDv2 Report with a current-state record for {_group(t)} within the MRD + slack")
    others = [r.group for r in v2_records(frame.pkt) if not P.same_address(r.group, _group(t))]
    seen = f"MLDv2 Report {frame.time - since:.3f} s after the query"
    if others:
        raise Deviation(f"{seen} also names {others}")
    return t.conclude(f"{seen}, for {_group(t)} only", [])


@check(area="mld", title="MLDv2 Report format",
       rfc="RFC 3810 §5.2, §5.2.13, §5.2.14", capabilities=["MLDv2"], liveness="echo",
       expect="the DUT's MLDv2 Report (answering a General Query) is well formed: hop limit 1, link-local source, "
              "sent to ff02::16, Router Alert (value 0) in a Hop-by-Hop header, Reserved fields zero, record types "
              "1-6, Aux Data Len 0, Number of Sources and Number of Records matching the message",
       parts=[
           Part("hop_limit", "Report Hop Limit is 1 (MLD.2.9)", field="hop_limit", fault="dut_mld_reports_hop_limit_2"),
           Part("source", "Report source is link-local (MLD.2.10)", field="source", fault="dut_mld_reports_global_source"),
           Part("destination", "Report sent to ff02::16 (MLD.2.11)", field="destination",
                fault="dut_mld_reports_to_all_nodes"),
           Part("router_alert", "Report carries a Router Alert option (MLD.2.12)", field="router_alert",
                fault="dut_mld_reports_without_router_alert"),
           Part("reserved", "Reserved fields are zero (MLD.2.23)", field="reserved", fault="dut_mld_reports_reserved_set"),
           Part("records", "Record type, Aux Data Len, counts (MLD.2.26-2.28, 2.13, 2.25)", field="records",
                fault="dut_mld_reports_bad_record_type"),
       ])
def mldv2_report_format(t: CheckContext):
    """'MLDv2 Reports are sent with an IP destination address of FF02:0:0:0:
    0:0:0:16' (§5.2.14), 'with a valid IPv6 link-local source address, or the
    unspecified address' (§5.2.13), 'an IPv6 Hop Limit of 1, and an IPv6
    Router Alert option' (§5); Reserved fields are zero (§5.2.2, §5.2.4),
    record types are 1-6 (§5.2.12), hosts send no auxiliary data (§5.2.6)."""
    frame, _since = _v2_answer(t, specific=False)
    if frame is None:
        raise Deviation(f"no MLDv2 Report with a current-state record for {_group(t)} within the MRD + slack")
    pkt = frame.pkt
    ip, rep = pkt[IPv6], pkt[ICMPv6MLReport2]
    field = t.p.field
    common = judge_common(pkt, t.dut.link_local)
    problems = {
        "hop_limit": [p for p in common if "hop limit" in p],
        "source": [p for p in common if "source" in p],
        "router_alert": [p for p in common if "Router Alert" in p],
        "destination": [] if P.same_address(ip.dst, P.ALL_MLDV2_ROUTERS) else [f"sent to {ip.dst}, not ff02::16"],
        "reserved": [f"{name} {v}, not 0" for name, v in (("first Reserved", rep.res), ("second Reserved",
                                                                                         rep.reserved)) if v],
        "records": _record_problems(pkt),
    }[field]
    seen = (f"MLDv2 Report from {ip.src} to {ip.dst}, hop limit {ip.hlim}, {len(v2_records(pkt))} record(s) "
            f"{[(r.group, r.rtype) for r in v2_records(pkt)]}")
    return t.conclude(seen, problems)


def _record_problems(pkt) -> list[str]:
    rep = pkt[ICMPv6MLReport2]
    problems = []
    in_message = parse_records(bytes(rep)[8:], 0xFFFF)  # every record the message holds, whatever it declares
    if rep.records_number != len(in_message):
        problems.append(f"Number of Records {rep.records_number}, but {len(in_message)} records")
    for r in v2_records(pkt):
        if r.rtype not in RECORD_TYPES:
            problems.append(f"record type {r.rtype} for {r.group} is not defined (1-6)")
        if r.aux_len:
            problems.append(f"Aux Data Len {r.aux_len} for {r.group} (hosts send none)")
        if r.declared_sources != len(r.sources):
            problems.append(f"Number of Sources {r.declared_sources} but {len(r.sources)} sources for {r.group}")
        if not P.is_multicast(r.group):
            problems.append(f"record for {r.group}, not a multicast address")
    return problems


@check(area="mld", title="Solicited-node group is reported when the interface starts",
       rfc="RFC 3810 §6.1; RFC 4862 §5.4.2", needs=["reset"], capabilities=["MLDv2"], liveness=None,
       fault="dut_speaks_only_mldv1",
       expect="after its interface starts (no querier heard), the DUT sends an unsolicited MLDv2 Report with a "
              "CHANGE_TO_EXCLUDE_MODE record for the solicited-node group of its link-local address, around its "
              "DAD probe (the group must be joined before DAD)")
def solicited_node_group_is_reported_at_startup(t: CheckContext):
    """'Before sending a Neighbor Solicitation, an interface MUST join the
    all-nodes multicast address and the solicited-node multicast address of
    the tentative address' (RFC 4862 §5.4.2); joining a group makes an MLDv2
    host send a State-Change Report (RFC 3810 §6.1)."""
    since = t.restart_dut()
    window = float(t.timing["ready_timeout_s"])
    group = _group(t)
    frame = t.port.expect(t.from_dut(lambda p: reports_group(p, group)), window, since=since)
    if frame is None:
        raise Deviation(f"no MLD Report for {group} within {window:g} s of the restart")
    if not is_v2_report(frame.pkt):
        raise Deviation(f"the first Report for {group} is an MLDv1 Report, although no MLDv1 querier was heard "
                         f"(RFC 3810 §8.2): {frame.summary()}")
    rec = next(r for r in v2_records(frame.pkt) if P.same_address(r.group, group))
    seen = (f"MLDv2 Report {frame.time - since:.3f} s after the restart, record "
            f"{RECORD_TYPES.get(rec.rtype, rec.rtype)} for {group}")
    if rec.rtype != CHANGE_TO_EXCLUDE:
        raise Deviation(f"{seen}: not CHANGE_TO_EXCLUDE_MODE (joining with no source filter)")
    return t.conclude(seen, [])


@check(area="mld", title="MLDv1 Query switches the DUT to MLDv1 compatibility mode",
       rfc="RFC 3810 §8.2.1", capabilities=["MLDv2"], liveness="echo", fault="dut_answers_mldv1_with_mldv2",
       expect="after an MLDv1 Query, the DUT answers with MLDv1 Reports, also to a following MLDv2 Query (the "
              "Older Version Querier Present timer runs)")
def mldv1_query_switches_to_compatibility_mode(t: CheckContext):
    """'In order to switch gracefully between versions of MLD, hosts keep
    both an MLDv1 Querier Present timer ... If a host receives an MLDv1
    Query, it MUST ... switch to MLDv1 Host Compatibility Mode' (RFC 3810
    §8.2.1): it then sends MLDv1 Reports."""
    group, tq = _group(t), _querier(t)
    since = t.send(_v1_query(t, mrd_ms=0), label="MLDv1 General Query (MRD 0)")
    answer = t.port.expect(t.from_dut(lambda p: reports_group(p, group)), t.reply_timeout, since=since)
    if answer is None:
        raise Deviation(f"no Report for {group} after an MLDv1 General Query")
    if not is_v1_report(answer.pkt):
        raise Deviation(f"answered an MLDv1 Query with {answer.summary()}, not an MLDv1 Report")
    t.wait(0.3)
    since2 = t.send(mld_query(tq, version=2, mrd_ms=500), label="MLDv2 General Query, MRD 500 ms")
    second = t.port.expect(t.from_dut(lambda p: reports_group(p, group)), 0.5 + _slack(t), since=since2)
    if second is None:
        raise Deviation(f"no Report for {group} after the MLDv2 Query that followed")
    if not is_v1_report(second.pkt):
        raise Deviation(f"after an MLDv1 Query, an MLDv2 Query was answered with {second.summary()}: the DUT left "
                         "MLDv1 compatibility mode at once")
    return t.conclude("MLDv1 Reports answered both the MLDv1 Query and the following MLDv2 Query", [])
