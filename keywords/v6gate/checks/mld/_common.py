"""What the MLD checks share: the group under test (the DUT's solicited-node
group), the tester's querier, MLDv1 compatibility mode with short timers,
and the readers of the DUT's Reports."""

from __future__ import annotations

import secrets

from scapy.layers.inet6 import (
    ICMPv6MLDone,
    ICMPv6MLReport,
    IPv6,
)

from ...core.context import CheckContext
from ...core.control import NotSupported
from ...net import packets as P
from ...net.mld import (
    is_v1_report,
    is_v2_report,
    judge_common,
    mld_query,
    v2_records,
)

TRIALS = 4  # repetitions of a timing-sensitive part (RFC 2710 timers are random)
CROSSING = 0.02  # a Report arriving this soon after the tester's packet was sent before the DUT could see it


def _slack(t: CheckContext) -> float:
    """Scheduling slack allowed on top of a Maximum Response Delay."""
    return 0.25 * t.reply_timeout


def _group(t: CheckContext) -> str:
    return P.solicited_node(t.dut.link_local)


def _querier(t: CheckContext):
    return t.node("TQ", router=True)


def _v1_report_for(t: CheckContext, group: str, since: float, within: float):
    return t.port.expect(t.from_dut(lambda p: is_v1_report(p, group)), within, since=since)


#: the querier's timers set before a check switches the DUT to MLDv1 compatibility mode: QRV 2, QQIC 6 s and a
#: Maximum Response Delay of 1 s make its Older Version Querier Present Timeout (RFC 3810 §9.12: QRV x QQI + QRI)
#: 13 s instead of the default 260 s, so a DUT that is not reset between checks is back in MLDv2 soon, yet stays
#: in MLDv1 longer than the longest Maximum Response Delay an MLDv1 check asks for (10 s): a Report the DUT
#: delays that long is still an MLDv1 Report
SHORT_QRV, SHORT_QQIC, SHORT_MRD_MS = 2, 6, 1000
OLDER_VERSION_TIMEOUT_S = SHORT_QRV * SHORT_QQIC + SHORT_MRD_MS / 1000


def _v1_query(t: CheckContext, **fields):
    """An MLDv1 Query from the tester's querier.  The first in a check is
    preceded by an MLDv2 General Query with short timers (above), and when
    the check ends the next MLD check waits out the Older Version Querier
    Present Timeout unless the DUT is reset first (only MLD checks judge the
    DUT's Reports: other areas' checks run meanwhile)."""
    if not getattr(t, "mld_short_timers", False):
        t.mld_short_timers = True
        since = t.send(mld_query(_querier(t), version=2, mrd_ms=SHORT_MRD_MS, qrv=SHORT_QRV, qqic=SHORT_QQIC),
                       label=f"MLDv2 General Query (QRV {SHORT_QRV}, QQIC {SHORT_QQIC} s, MRD {SHORT_MRD_MS} ms): "
                             f"MLDv1 compatibility will last {OLDER_VERSION_TIMEOUT_S:g} s after the last MLDv1 Query")
        # its answer (current-state records), not a State-Change Report the DUT may still repeat after its start
        t.port.expect(t.from_dut(_current_state_for(_group(t))), SHORT_MRD_MS / 1000 + _slack(t), since=since)
        t.wait(0.1)  # the rest of the answer
        t.defer(lambda: t.dut_keeps_state(OLDER_VERSION_TIMEOUT_S + _slack(t),
                                          "the DUT stays in MLDv1 compatibility mode for its Older Version Querier "
                                          f"Present Timeout ({OLDER_VERSION_TIMEOUT_S:g} s, RFC 3810 §9.12) after "
                                          "an earlier check's MLDv1 Query", matters_to=("mld",)))
    return mld_query(_querier(t), version=1, **fields)


def _enter_v1_mode(t: CheckContext):
    """An MLDv1 General Query (Maximum Response Delay 0): the DUT answers at
    once with MLDv1 Reports and stays in MLDv1 compatibility mode."""
    since = t.send(_v1_query(t, mrd_ms=0), label="MLDv1 General Query (MRD 0)")
    report = _v1_report_for(t, _group(t), since, t.reply_timeout)
    t.wait(0.2)  # let the rest of the answer burst pass
    return report


def _judge_v1(t: CheckContext, frame, group: str, kind: str = "Report") -> list[str]:
    pkt = frame.pkt
    layer = ICMPv6MLReport if kind == "Report" else ICMPv6MLDone
    msg = pkt[layer]
    problems = judge_common(pkt, t.dut.link_local)
    want_dst = group if kind == "Report" else P.ALL_ROUTERS
    if not P.same_address(pkt[IPv6].dst, want_dst):
        problems.append(f"sent to {pkt[IPv6].dst}, not to {want_dst}")
    if not P.same_address(msg.mladdr, group):
        problems.append(f"Multicast Address {msg.mladdr}, not {group}")
    if msg.code != 0:
        problems.append(f"Code {msg.code}, not 0")
    return problems



#: how long the DUT is given to answer the witness's Query (MRD 0) before a missing Report stands as missing
WITNESS_WAIT_S = 10.0


def _witness(t: CheckContext) -> str | None:
    """A second group the DUT listens to for the whole check (the control
    adapter's listen), whose Reports tell the DUT's own pace: None where the
    adapter cannot make the DUT listen (the checks then judge by the
    Maximum Response Delay and the slack alone)."""
    group = _fresh_group()
    try:
        t.control.listen(group)
    except NotSupported:
        return None
    t.defer(lambda: t.control.unlisten(group))
    t.note(f"witness group {group}: the DUT listens to it, its Reports time the DUT's own MLD processing")
    return group


def _report_by_deadline(t: CheckContext, group: str, since: float, window: float, witness: str | None):
    """The DUT's MLDv1 Report for ``group`` sent by ``since + window`` (the
    Maximum Response Delay plus slack), as a (Report or None, note) pair.

    A DUT whose MLD processing runs late (a loaded machine, a busy CPU)
    sends a timer's Report late, not never.  When none came by the deadline
    and a witness group is held, a Query with Maximum Response Delay 0 for
    the witness is sent *after* the deadline: a DUT that answers it has run
    its MLD work past the deadline, so a Report for ``group`` whose timer ran
    out by then arrives no later than the witness's answer (plus the
    witness's own turnaround, for work queued on another CPU).  A Report for
    ``group`` only after that is a timer that had not run out: not within
    the Maximum Response Delay, whatever the load."""
    report = _v1_report_for(t, group, since, window)
    if report is not None or witness is None:
        return report, ""
    asked = t.send(_v1_query(t, mrd_ms=0, group=witness),
                   label=f"witness: MAS Query for {witness}, MRD 0 (the DUT's pace after the deadline)")
    answer = _v1_report_for(t, witness, asked, WITNESS_WAIT_S)
    if answer is None:
        return None, f"; the DUT did not answer a Query (MRD 0) for the witness group {witness} either"
    turnaround = answer.time - asked
    t.measure("witness_turnaround_s", round(turnaround, 3))
    limit = answer.time + turnaround
    late = _v1_report_for(t, group, since, max(0.0, limit - t.now()))
    if late is not None and late.time <= limit:
        t.note(f"Report for {group} {late.time - since:.3f} s after the Query, past the {window:.2f} s window, "
               f"but by the DUT's answer to the witness Query sent after it ({turnaround * 1000:.1f} ms turnaround): the "
               "DUT was slow, its timer ran out in time")
        return late, ""
    return None, (f"; a Query (MRD 0) for the witness group {witness} sent after the deadline was answered "
                  f"{turnaround * 1000:.1f} ms later, with still no Report for {group}: the DUT's MLD work was running, "
                  "the timer had not run out")


def _fresh_group() -> str:
    return f"ff12::{secrets.randbelow(0xFFFF) + 1:x}:{secrets.randbelow(0xFFFF) + 1:x}"


def _current_state_for(group: str):
    """An MLDv2 Report with a current-state record for ``group``: an answer to a Query."""
    return lambda p: is_v2_report(p) and any(r.rtype in (1, 2) and P.same_address(r.group, group)
                                             for r in v2_records(p))



def fails(t: CheckContext, problem: str):
    """The verdict when what the DUT did (or did not do) is itself the problem: FAIL, the problem as seen."""
    return t.conclude(problem, [problem])


def holds(t: CheckContext, seen: str):
    """PASS with ``seen`` (nothing wrong found)."""
    return t.conclude(seen, [])
