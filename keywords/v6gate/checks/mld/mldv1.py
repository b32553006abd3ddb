"""MLDv1 listener (RFC 2710), IPv6 Ready MLD Operations MLD.1.1-1.15: the
DUT in MLDv1 compatibility mode (RFC 3810 §8.2.1) answers queries, delays,
suppresses, reports on join and sends Done on leave."""

from __future__ import annotations

import secrets

from scapy.layers.inet6 import (
    ICMPv6MLQuery,
    ICMPv6MLReport,
    IPv6,
    IPv6ExtHdrHopByHop,
    in6_chksum,
)
from scapy.packet import Raw

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation, Verdict
from ...net import packets as P
from ...net.mld import (
    is_v1_done,
    is_v1_report,
    mld_report_v1,
    reports_group,
    v2_records,
)
from ...net.mutate import break_one
from ._common import (
    CROSSING,
    TRIALS,
    _enter_v1_mode,
    _fresh_group,
    _group,
    _judge_v1,
    _report_by_deadline,
    _slack,
    _v1_query,
    _v1_report_for,
    _witness,
)

# -- MLD.1.1 - 1.4: answering queries ----------------------------------------------------------------

def _answers_query(t: CheckContext, *, specific: bool, mrd_ms: int, trials: int):
    group = _group(t)
    if _enter_v1_mode(t) is None:
        raise Deviation(f"no MLDv1 Report for {group} after an MLDv1 General Query (MRD 0)")
    window = mrd_ms / 1000 + (_slack(t) if mrd_ms else t.reply_timeout)
    delays = []
    for i in range(trials):
        t.wait(0.3)
        q = _v1_query(t, mrd_ms=mrd_ms, group=group if specific else "::")
        since = t.send(q, label=f"{'MAS' if specific else 'General'} Query #{i + 1}, MRD {mrd_ms} ms")
        report = _v1_report_for(t, group, since, window)
        if report is None:
            t.measure("within_mrd", f"{i}/{i + 1}")
            raise Deviation(f"trial {i + 1}: no MLDv1 Report for {group} within {window:.2f} s (Maximum Response "
                             f"Delay {mrd_ms} ms + {window - mrd_ms / 1000:.2f} s slack); earlier delays {delays} s")
        delays.append(round(report.time - since, 3))
        problems = _judge_v1(t, report, group)
        if specific:
            others = [f for f in t.collect(lambda p: is_v1_report(p) and not is_v1_report(p, group), 0, since=since)]
            if others:
                problems.append(f"also reported {others[0].pkt[ICMPv6MLReport].mladdr}, not queried")
        if problems:
            return t.conclude(f"trial {i + 1}: Report after {delays[-1]} s", [f"trial {i + 1}: {p}" for p in problems])
    t.measure("report_delays_s", delays)
    t.measure("within_mrd", f"{trials}/{trials}")
    return t.conclude(f"{trials}/{trials} queries answered by an MLDv1 Report for {group} within the Maximum Response "
                       f"Delay ({mrd_ms} ms): delays {delays} s", [])


@check(area="mld", scope="host", ipv6ready="MLD.1.1", title="Receive General Query with Zero Max Response Delay",
       rfc="RFC 2710 §4; RFC 3810 §8.2.1", capabilities=["MLDv2"], liveness="echo", fault="dut_ignores_mld_queries",
       expect="an MLDv1 General Query with Maximum Response Delay 0 is answered at once (within the reply timeout) "
              "by an MLDv1 Report for each group the DUT listens to, e.g. its solicited-node group")
def general_query_with_zero_delay_is_answered(t: CheckContext):
    """'When a node receives a General Query, it sets a delay timer for each
    multicast address to which it is listening ... to a random value
    selected from the range [0, Maximum Response Delay]' (RFC 2710 §4): with
    0, at once."""
    return _answers_query(t, specific=False, mrd_ms=0, trials=1)


@check(area="mld", scope="host", ipv6ready="MLD.1.2", title="Receive General Query with Non-Zero Max Response Delay",
       rfc="RFC 2710 §4", capabilities=["MLDv2"], liveness="echo", fault="dut_answers_queries_late",
       expect=f"each of {TRIALS} MLDv1 General Queries with Maximum Response Delay 1000 ms is answered by an "
              "MLDv1 Report for the DUT's solicited-node group within 1000 ms (plus scheduling slack)")
def general_query_is_answered_within_max_response_delay(t: CheckContext):
    """The Report goes out when the delay timer, random in [0, Maximum
    Response Delay], expires (RFC 2710 §4)."""
    return _answers_query(t, specific=False, mrd_ms=1000, trials=TRIALS)


@check(area="mld", scope="host", ipv6ready="MLD.1.3", title="Receive MAS Query with Zero Max Response Delay",
       rfc="RFC 2710 §4", capabilities=["MLDv2"], liveness="echo", fault="dut_ignores_mld_queries",
       expect="a Multicast-Address-Specific Query (MRD 0) for the DUT's solicited-node group is answered at once by "
              "an MLDv1 Report for that group only")
def specific_query_with_zero_delay_is_answered(t: CheckContext):
    """'When a node receives a Multicast-Address-Specific Query, if it is
    listening to the queried Multicast Address ... it sets a delay timer for
    that address' (RFC 2710 §4); only that address is reported."""
    return _answers_query(t, specific=True, mrd_ms=0, trials=1)


@check(area="mld", scope="host", ipv6ready="MLD.1.4", title="Receive MAS Query with Non-Zero Max Response Delay",
       rfc="RFC 2710 §4", capabilities=["MLDv2"], liveness="echo", fault="dut_answers_queries_late",
       expect=f"each of {TRIALS} Multicast-Address-Specific Queries (MRD 1000 ms) for the solicited-node group is "
              "answered by a Report for that group only, within 1000 ms (plus scheduling slack)")
def specific_query_is_answered_within_max_response_delay(t: CheckContext):
    """A Multicast-Address-Specific Query starts the delay timer of that
    address only, random in [0, Maximum Response Delay] (RFC 2710 §4)."""
    return _answers_query(t, specific=True, mrd_ms=1000, trials=TRIALS)


@check(area="mld", scope="host", ipv6ready="MLD.1.5", title="Receive Valid Query Message with Unexpected Values",
       rfc="RFC 2710 §3.2, §3.7", capabilities=["MLDv2"], liveness="echo", fault="dut_rejects_query_with_unexpected_values",
       expect="an MLDv1 General Query with a non-zero Code and Reserved field is still a valid Query: the DUT "
              "answers it with a Report for its solicited-node group")
def query_with_unexpected_values_is_answered(t: CheckContext):
    """Code: 'Initialized to zero by the sender; ignored by receivers';
    Reserved: 'Initialized to zero by the sender; ignored by receivers'
    (RFC 2710 §3.2, §3.7)."""
    group = _group(t)
    q = _v1_query(t, mrd_ms=0, code=0x5A, reserved=0xFFFF)
    since = t.send(q, label="MLDv1 General Query, Code 0x5a, Reserved 0xffff")
    report = _v1_report_for(t, group, since, t.reply_timeout)
    if report is None:
        raise Deviation(f"no MLDv1 Report for {group} within {t.reply_timeout:g} s of the query")
    return t.conclude(f"MLDv1 Report for {group} {report.time - since:.3f} s after the query", [])


@check(area="mld", scope="host", ipv6ready="MLD.1.6", title="Receive Invalid Query Messages",
       rfc="RFC 3810 §6.2, §8.1; RFC 2710 §3", capabilities=["MLDv2"], liveness="echo",
       fault="dut_skips_mld_query_validation",
       expect="an invalid Query is dropped: no Report answers it within the silence window, and the DUT still "
              "answers afterwards",
       parts=[
           Part("global_source", "Query from a global source address", how="global_source",
                expect="a Query whose source is not link-local is dropped (RFC 3810 §6.2): no Report"),
           Part("hop_limit_2", "Query with Hop Limit 2", how="hop_limit_2",
                expect="a Query with Hop Limit other than 1 is dropped (RFC 3810 §6.2): no Report"),
           Part("no_router_alert", "Query without Router Alert option", how="no_router_alert",
                fault="impostor_answers_any_mld_query",
                expect="a Query without the Router Alert option is dropped (RFC 3810 §6.2): no Report"),
           Part("bad_checksum", "Query with a bad ICMPv6 checksum", how="bad_checksum",
                expect="a Query with an invalid checksum is dropped (RFC 4443 §2.4): no Report"),
           Part("short_length", "Query of 20 octets (< 24)", how="short_length",
                expect="a Query shorter than 24 octets is ignored (RFC 3810 §8.1): no Report"),
       ])
def invalid_query_is_ignored(t: CheckContext):
    """'Upon reception of an MLD message that contains a Query, the node
    checks if the source address of the message is a valid link-local
    address, if the Hop Limit is set to 1, and if the Router Alert option is
    present in the Hop-By-Hop Options header of the IPv6 packet.  If any of
    these checks fails, the packet is dropped' (RFC 3810 §6.2)."""
    group = _group(t)
    how = t.p.how
    q = _v1_query(t, mrd_ms=0, src="2001:db8:ffff::" + secrets.token_hex(2) if how == "global_source"
                  else None, hlim=2 if how == "hop_limit_2" else 1, router_alert=how != "no_router_alert")
    if how == "bad_checksum":
        q = break_one(q, ICMPv6MLQuery, how)
    elif how == "short_length":  # cut behind the Hop-by-Hop header, which the table's short_length does not keep
        q = _cut_query(q, 20)
    answers = lambda p: reports_group(p, group) and (is_v1_report(p) or any(  # noqa: E731
        r.rtype in (1, 2) for r in v2_records(p)))
    outcome = t.expect_silence(q, answers, what=f"Report for {group} in answer to the invalid Query")
    if outcome.verdict != Verdict.PASS:
        return outcome
    # no vacuous PASS: a valid Query right after must be answered, or the DUT may ignore every Query
    valid = _v1_query(t, mrd_ms=0)
    since = t.send(valid, label="valid MLDv1 General Query (MRD 0): its Report is required")
    report = t.port.expect(t.from_dut(answers), t.reply_timeout + _slack(t), since=since)
    if report is None:
        raise Deviation(f"{outcome.seen}; then a valid General Query got no Report for {group} within "
                         f"{t.reply_timeout + _slack(t):g} s either: the DUT ignores every Query, so the discard "
                         f"proves nothing")
    return t.conclude(f"{outcome.seen}; a valid Query right after was answered ({report.time - since:.3f} s)", [])


def _cut_query(q, length: int):
    """The query cut to ``length`` octets of ICMPv6 (Hop-by-Hop header kept),
    with a checksum valid over what is left."""
    body = bytearray(bytes(q[ICMPv6MLQuery])[:length])
    body[2:4] = b"\0\0"
    body[2:4] = in6_chksum(58, q[IPv6], bytes(body)).to_bytes(2, "big")
    head = q.copy()
    head[IPv6ExtHdrHopByHop].remove_payload()
    head[IPv6ExtHdrHopByHop].nh = 58
    head[IPv6].plen = None
    return head / Raw(bytes(body))


# -- MLD.1.7, 1.9: what the DUT's Reports look like -------------------------------------------------

@check(area="mld", scope="host", ipv6ready="MLD.1.7", title="Transmit Report Message",
       rfc="RFC 2710 §3, §4", capabilities=["MLDv2"], liveness="echo",
       expect="the DUT's MLDv1 Report is sent to the reported group, with hop limit 1, a link-local source, a "
              "Router Alert option (value 0) in a Hop-by-Hop header, Code 0 and the group in Multicast Address",
       parts=[
           Part("hop_limit", "Report Hop Limit is 1", field="hop_limit", fault="dut_mld_reports_hop_limit_2"),
           Part("source", "Report source is link-local", field="source", fault="dut_mld_reports_global_source"),
           Part("destination", "Report sent to the reported group", field="destination",
                fault="dut_mld_reports_to_all_nodes"),
           Part("router_alert", "Report carries a Router Alert option", field="router_alert",
                fault="dut_mld_reports_without_router_alert"),
       ])
def report_message_format(t: CheckContext):
    """'All MLD messages described in this document are sent with a
    link-local IPv6 Source Address, an IPv6 Hop Limit of 1, and an IPv6
    Router Alert option in a Hop-by-Hop Options header' and a Report is sent
    'to that address' it reports (RFC 2710 §3, §4)."""
    group = _group(t)
    report = _enter_v1_mode(t)
    if report is None:
        raise Deviation(f"no MLDv1 Report for {group} after an MLDv1 General Query")
    problems = _judge_v1(t, report, group)
    field = {"hop_limit": "hop limit", "source": "source", "destination": "sent to", "router_alert": "Router Alert"}
    mine = [p for p in problems if field[t.p.field].lower() in p.lower()]
    ip = report.pkt[IPv6]
    seen = f"MLDv1 Report for {group} from {ip.src} to {ip.dst}, hop limit {ip.hlim}"
    if mine:
        raise Deviation(f"{seen}: {'; '.join(mine)}")
    return t.conclude(seen, [])


@check(area="mld", scope="host", ipv6ready="MLD.1.9", title="Maximum Response Delay in Report Message",
       rfc="RFC 2710 §3.4", capabilities=["MLDv2"], liveness="echo", fault="dut_mld_reports_with_max_resp_delay",
       expect="the Maximum Response Delay field of the DUT's MLDv1 Report is zero, as is its Reserved field")
def report_max_response_delay_is_zero(t: CheckContext):
    """'Maximum Response Delay ... In Report and Done messages, this field is
    set to zero by the sender and ignored by receivers' (RFC 2710 §3.4)."""
    group = _group(t)
    report = _enter_v1_mode(t)
    if report is None:
        raise Deviation(f"no MLDv1 Report for {group} after an MLDv1 General Query")
    msg = report.pkt[ICMPv6MLReport]
    seen = f"MLDv1 Report for {group}: Maximum Response Delay {msg.mrd}, Reserved {msg.reserved}"
    if not (msg.mrd == 0 and msg.reserved == 0):
        raise Deviation(seen)
    return t.conclude(seen, [])


# -- MLD.1.8, 1.10, 1.14, 1.15: another listener's Report and the listener states -------------------

def _suppression(t: CheckContext, report_kw: dict):
    """A query starts the DUT's delay timer; another listener's Report for the
    group stops it (RFC 2710 §4).  A trial where the DUT answered before the
    other Report arrived proves nothing and is repeated."""
    group, tn1 = _group(t), t.tn1
    if _enter_v1_mode(t) is None:
        raise Deviation(f"no MLDv1 Report for {group} after an MLDv1 General Query")
    mrd_ms = 3000
    for trial in range(1, TRIALS + 1):
        t.wait(0.3)
        query, theirs = _v1_query(t, mrd_ms=mrd_ms), mld_report_v1(tn1, group, **report_kw)
        since = t.send(query, label=f"General Query, MRD {mrd_ms} ms")
        other = t.send(theirs, label=f"TN1's Report for {group} {report_kw or ''}")
        report = _v1_report_for(t, group, since, mrd_ms / 1000 + _slack(t))
        if report is not None and report.time < other + CROSSING:
            t.note(f"trial {trial}: the DUT answered before TN1's Report could reach it; repeated")
            continue
        if report is not None:
            raise Deviation(f"the DUT still reported {group} {report.time - other:.3f} s after TN1's Report for it "
                             f"(MRD {mrd_ms} ms): its timer was not stopped")
        return t.conclude(f"no Report for {group} within {mrd_ms / 1000 + _slack(t):.2f} s of TN1's Report "
                           f"(trial {trial}): the DUT's timer stopped", [])
    return t.inconclusive(f"in {TRIALS} trials the DUT always answered before TN1's Report arrived")


@check(area="mld", scope="host", ipv6ready="MLD.1.8", title="Receive Report Message with Unexpected Values",
       rfc="RFC 2710 §3, §4", capabilities=["MLDv2"], liveness="echo", fault="dut_rejects_report_with_unexpected_values",
       expect="another listener's Report for the group with a non-zero Code, Maximum Response Delay and Reserved "
              "field still stops the DUT's delay timer: the DUT sends no Report for the group")
def report_with_unexpected_values_suppresses(t: CheckContext):
    """Code, Maximum Response Delay (in a Report) and Reserved are 'ignored
    by receivers' (RFC 2710 §3); such a Report still means another listener
    answered: 'it stops its timer and does not send a Report for that
    address' (§4)."""
    return _suppression(t, {"code": 0x5A, "mrd_ms": 1234, "reserved": 0xFFFF})


@check(area="mld", scope="host", ipv6ready="MLD.1.10", title="Receive Report",
       rfc="RFC 2710 §4", capabilities=["MLDv2"], liveness="echo", fault="dut_ignores_other_mld_reports",
       expect="after a General Query, another listener's Report for the group stops the DUT's delay timer: the DUT "
              "sends no Report for the group (suppression)")
def other_report_suppresses(t: CheckContext):
    """'If a node receives another node's Report from an interface for a
    multicast address while it has a timer running for that same address on
    that interface, it stops its timer and does not send a Report for that
    address' (RFC 2710 §4)."""
    return _suppression(t, {})


@check(area="mld", scope="host", ipv6ready="MLD.1.14", title="Node State Transition – Idle Listener",
       rfc="RFC 2710 §5", capabilities=["MLDv2"], liveness="echo", fault="impostor_reports_on_reports",
       expect="in Idle Listener state another listener's Report changes nothing (the DUT sends no Report), and a "
              "later Multicast-Address-Specific Query still starts the timer (a Report within its MRD)")
def idle_listener_transitions(t: CheckContext):
    """RFC 2710 §5: an Idle Listener has no timer; only a Query moves it to
    Delaying Listener ('start timer'), and a Report received there has no
    action."""
    group = _group(t)
    if _enter_v1_mode(t) is None:
        raise Deviation(f"no MLDv1 Report for {group} after an MLDv1 General Query")
    t.wait(0.3)
    other = mld_report_v1(t.tn1, group)
    silent = t.expect_silence(other, lambda p: is_v1_report(p, group), what=f"Report for {group} after TN1's Report")
    if silent.verdict != Verdict.PASS:
        return silent
    since = t.send(_v1_query(t, mrd_ms=500, group=group), label="MAS Query, MRD 500 ms")
    report = _v1_report_for(t, group, since, 0.5 + _slack(t))
    if report is None:
        raise Deviation(f"no Report for {group} within {0.5 + _slack(t):.2f} s of a MAS Query after the idle period")
    return t.conclude(f"no Report after TN1's Report (Idle); Report {report.time - since:.3f} s after the MAS Query "
                       "(Idle -> Delaying -> Idle)", [])


@check(area="mld", scope="host", ipv6ready="MLD.1.15", title="Node State Transition – Delaying Listener",
       rfc="RFC 2710 §4, §5", capabilities=["MLDv2"], liveness="echo", fault="dut_keeps_first_mld_timer",
       expect=f"in Delaying Listener state (a General Query with MRD 10 s), a Multicast-Address-Specific Query with "
              f"MRD 1 s resets the timer: the Report follows within 1 s of it ({TRIALS} trials)")
def delaying_listener_resets_timer(t: CheckContext):
    """'If a timer for the address is already running, it is reset to the
    random value only if the requested Maximum Response Delay is less than
    the remaining value of the running timer' (RFC 2710 §4)."""
    group = _group(t)
    witness = _witness(t)
    if _enter_v1_mode(t) is None:
        raise Deviation(f"no MLDv1 Report for {group} after an MLDv1 General Query")
    delays, void = [], 0
    for trial in range(1, TRIALS + 1):
        t.wait(0.3)
        general, specific = _v1_query(t, mrd_ms=10000), _v1_query(t, mrd_ms=1000, group=group)
        first = t.send(general, label="General Query, MRD 10000 ms")
        second = t.send(specific, label="MAS Query, MRD 1000 ms")
        report, why = _report_by_deadline(t, group, first, 1.0 + _slack(t) + (second - first), witness)
        if report is None:
            raise Deviation(f"trial {trial}: no Report for {group} within {1 + _slack(t):.2f} s of the MAS Query "
                             f"(MRD 1 s) that followed a General Query with MRD 10 s: the timer was not reset "
                             f"(earlier delays {delays} s){why}")
        if report.time < second + CROSSING:  # the first timer ran out before the MAS Query could arrive
            void += 1
            t.note(f"trial {trial}: the DUT answered the General Query before the MAS Query reached it; not counted")
            t.wait(1.0 + _slack(t))  # let the MAS Query's own Report pass
            continue
        delays.append(round(report.time - second, 3))
    if not delays:
        return t.inconclusive(f"in {TRIALS} trials the DUT always answered before the MAS Query reached it")
    t.measure("within_mrd", f"{len(delays)}/{len(delays)} ({void} void)")
    return t.conclude(f"{len(delays)}/{len(delays)} counted trials: Report {delays} s after the MAS Query (MRD 1 s)", [])


# -- MLD.1.11 - 1.13: joining, the all-nodes group, leaving --------------------------------------------


@check(area="mld", scope="host", ipv6ready="MLD.1.11", title="Transmit Unsolicited Reports",
       rfc="RFC 2710 §4", capabilities=["MLDv2"], liveness="echo", fault="dut_sends_no_mld_reports",
       expect="when the DUT starts listening to a group (in MLDv1 compatibility mode), it sends an unsolicited "
              "MLDv1 Report for it at once (within the reply timeout)")
def unsolicited_report_on_join(t: CheckContext):
    """'When a node starts listening to a multicast address on an interface,
    it should immediately transmit an unsolicited Report for that address on
    that interface' (RFC 2710 §4)."""
    group = _fresh_group()
    if _enter_v1_mode(t) is None:
        raise Deviation(f"no MLDv1 Report for {_group(t)} after an MLDv1 General Query")
    since = t.now()
    t.control.listen(group)
    t.note(f"the DUT listens to {group}")
    try:
        report = _v1_report_for(t, group, since, t.reply_timeout)
        if report is None:
            raise Deviation(f"no MLDv1 Report for {group} within {t.reply_timeout:g} s of starting to listen")
        problems = _judge_v1(t, report, group)
        seen = f"unsolicited MLDv1 Report for {group} {report.time - since:.3f} s after the join"
        return t.conclude(seen, problems)
    finally:
        t.control.unlisten(group)


@check(area="mld", scope="host", ipv6ready="MLD.1.12", title="Link-Scope All-Nodes",
       rfc="RFC 2710 §4; RFC 3810 §6", capabilities=["MLDv2"], liveness="echo", fault="impostor_reports_all_nodes",
       expect="the DUT never reports ff02::1: no Report for it after a General Query nor after a Query for ff02::1")
def all_nodes_group_is_never_reported(t: CheckContext):
    """'The link-scope all-nodes address (FF02::1) is handled as a special
    case.  The node starts in Idle Listener state for that address on every
    interface, never transitions to another state, and never sends a Report
    or Done for that address' (RFC 2710 §4)."""
    since = t.send(_v1_query(t, mrd_ms=0), label="MLDv1 General Query (MRD 0)")
    t.wait(t.reply_timeout)
    specific = _v1_query(t, mrd_ms=0, group=P.ALL_NODES)
    outcome = t.expect_silence(specific, lambda p: reports_group(p, P.ALL_NODES),
                               what="Report for ff02::1 after a Query for ff02::1")
    earlier = t.collect(lambda p: reports_group(p, P.ALL_NODES), 0, since=since)
    if earlier:
        raise Deviation(f"Report for ff02::1 after the General Query: {earlier[0].summary()}")
    return outcome


@check(area="mld", scope="host", ipv6ready="MLD.1.13", title="Transmit Done Message",
       rfc="RFC 2710 §4", capabilities=["MLDv2"], liveness="echo", fault="dut_sends_no_mld_done",
       expect="when the DUT (the last to report it) stops listening to a group, it sends an MLDv1 Done to ff02::2 "
              "naming the group, with hop limit 1, a link-local source and a Router Alert option")
def done_on_leave(t: CheckContext):
    """'When a node ceases to listen to a multicast address on an interface,
    it SHOULD send a single Done message to the link-scope all-routers
    multicast address (FF02::2), carrying in its Multicast Address field the
    address to which it is ceasing to listen' if it sent the last Report
    (RFC 2710 §4)."""
    group = _fresh_group()
    if _enter_v1_mode(t) is None:
        raise Deviation(f"no MLDv1 Report for {_group(t)} after an MLDv1 General Query")
    since = t.now()
    t.control.listen(group)
    try:
        if _v1_report_for(t, group, since, t.reply_timeout) is None:
            raise t.not_judged(f"listener:{group}", "mld.unsolicited_report_on_join#",
                               f"no MLDv1 Report for {group} after the DUT started listening to it")
        t.wait(0.2)
    finally:
        left = t.now()
        t.control.unlisten(group)
        t.note(f"the DUT stopped listening to {group}")
    done = t.port.expect(t.from_dut(lambda p: is_v1_done(p, group)), t.reply_timeout, since=left)
    if done is None:
        raise Deviation(f"no MLDv1 Done for {group} within {t.reply_timeout:g} s of the DUT leaving it")
    problems = _judge_v1(t, done, group, kind="Done")
    seen = f"MLDv1 Done for {group} to {done.pkt[IPv6].dst} {done.time - left:.3f} s after the leave"
    return t.conclude(seen, problems)

