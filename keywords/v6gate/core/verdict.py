"""Verdicts and the result record every front-end reports."""

from __future__ import annotations

import copy
import enum
from dataclasses import asdict, dataclass, field, fields, is_dataclass


class Verdict(enum.StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"  # not applicable to this target (with the reason)
    ERROR = "ERROR"  # the bench broke, not the DUT
    INCONCLUSIVE = "INCONCLUSIVE"  # a gate could not reach confidence
    NOT_JUDGED = "NOT_JUDGED"  # the DUT did not reach the check's precondition (judged by another check)

    def __str__(self) -> str:
        return self.value


@dataclass
class Outcome:
    """What a check function returns: the verdict and what was seen.

    ``expected`` defaults to the check's (or part's) stated expectation."""

    verdict: Verdict
    seen: str
    expected: str | None = None
    measurements: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)  # each problem first: "hop limit 254, not 255"
    dut_sent: list = field(default_factory=list)  # what the DUT sent when the expected answer did not come
    precondition: dict | None = None  # NOT_JUDGED: {"name", "judged_by", "detail"}


class NotJudged(Exception):
    """The DUT did not reach what the check presupposes (a neighbour entry
    for TN1, a default router, a global address): the check's own clause is
    not judged (verdict NOT_JUDGED); ``judged_by`` names the check (and part)
    that judges that behaviour, e.g. ``nd.packets_wait_for_address_resolution#``.
    """

    def __init__(self, name: str, judged_by: str, detail: str, dut_sent: list | None = None):
        super().__init__(f"precondition {name} not reached: {detail} (judged by {judged_by})")
        self.name = name
        self.judged_by = judged_by if "#" in judged_by else judged_by + "#"
        self.detail = detail
        self.dut_sent = list(dut_sent or [])

    def precondition(self) -> dict:
        return {"name": self.name, "judged_by": self.judged_by, "detail": self.detail}

    def outcome(self) -> Outcome:
        return Outcome(Verdict.NOT_JUDGED, f"not judged: {self.detail}", dut_sent=self.dut_sent,
                       precondition=self.precondition())


class Deviation(Exception):
    """The DUT did not do what a step of the check requires of it: the
    check ends here, and ``Session.run`` gives its verdict.

    Raised by a check (``raise Deviation("no Echo Reply to ... within 1 s")``:
    the clause's FAIL, the message is both what was seen and the problem) or
    by a scenario step it calls.  With ``judged_by`` (``<check id>#<part>``:
    the check that judges the step's behaviour) the step is a precondition:
    in any other check the verdict is NOT_JUDGED (precondition ``name``), and
    only the judging check itself FAILs (one root cause, one FAIL)."""

    def __init__(self, message: str, *, name: str | None = None, judged_by: str | None = None):
        super().__init__(message)
        self.name = name
        self.judged_by = judged_by

    def judged_elsewhere(self, check_id: str) -> bool:
        """The step is judged by another check than ``check_id``."""
        return bool(self.judged_by) and self.judged_by.split("#")[0] != check_id


@dataclass
class Result:
    id: str
    part: str | None
    title: str
    area: str
    ipv6ready: str | None
    rfc: str
    verdict: str
    reason: str
    expected: str
    seen: str
    evidence: dict
    duration_s: float
    started: str
    kind: str = "check"
    profile: str = "default"
    capabilities: list = field(default_factory=list)
    waived: bool = False
    waiver: dict | None = None
    fault: str | None = None
    setup: str = "as-is"
    target: str | None = None
    worker: str | None = None
    measurements: dict = field(default_factory=dict)
    timeline: list = field(default_factory=list)
    cleanup_errors: list = field(default_factory=list)
    fail_side_proven_against: str | None = None
    problems: list = field(default_factory=list)
    dut_sent: list = field(default_factory=list)
    precondition: dict | None = None

    @property
    def key(self) -> str:
        return f"{self.id}{'#' + self.part if self.part else ''}"

    def as_dict(self) -> dict:
        """``dataclasses.asdict(self)``, made without its generic walk (a
        report of 7,000 audited hosts converts 63,000 results: 2.4 s of
        asdict, a sixth of the report)."""
        return {name: _plain(getattr(self, name)) for name in _RESULT_FIELDS}

    @classmethod
    def from_dict(cls, d: dict) -> Result:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)


_RESULT_FIELDS = tuple(f.name for f in fields(Result))
_ATOMS = frozenset((str, int, float, bool, type(None)))


def _plain(x):
    """A copy of ``x`` as ``dataclasses.asdict`` makes it for a field value:
    dicts, lists and tuples copied through, dataclasses as dicts, anything
    else deep-copied (strings, numbers and None are their own copies)."""
    t = type(x)
    if t in _ATOMS:
        return x
    if t is dict:
        return {_plain(k): _plain(v) for k, v in x.items()}
    if t is list:
        return [_plain(v) for v in x]
    if t is tuple:
        return tuple(_plain(v) for v in x)
    if is_dataclass(x) and not isinstance(x, type):
        return asdict(x)
    return copy.deepcopy(x)


def reason_for(outcome: Outcome, expected: str, where: str = "") -> str:
    """The one-line reason: the problem first, then expected vs. seen, then
    what the DUT did send when the expected answer did not come."""
    v = outcome.verdict
    sent = ""
    if outcome.dut_sent:
        shown = outcome.dut_sent[:6]
        more = f" (+{len(outcome.dut_sent) - len(shown)} more)" if len(outcome.dut_sent) > len(shown) else ""
        sent = "; the DUT sent: " + ", ".join(shown) + more
    if v == Verdict.NOT_JUDGED:
        pre = outcome.precondition or {}
        judged_by = (pre.get("judged_by") or "").rstrip("#")
        return (f"not judged: precondition {pre.get('name', '?')} not reached — {pre.get('detail') or outcome.seen}"
                f" (judged by {judged_by or '?'}){sent}{where}")
    if v in (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE):
        if v != Verdict.PASS and outcome.problems == [outcome.seen]:  # what was seen is the problem
            return f"{outcome.seen} — expected {expected}{sent}{where}"
        lead = "; ".join(outcome.problems) + " — " if outcome.problems and v != Verdict.PASS else ""
        return f"{lead}expected {expected}; seen {outcome.seen}{sent}{where}"
    return outcome.seen + sent + where


#: the end of the reason of a part the run did not run because its bench was lost before it (core/session.py):
#: ``run --resume`` runs such a part again
NOT_RUN = "; this part was not run"


def result_key(check_id: str, part: str | None) -> str:
    return f"{check_id}{'#' + part if part else ''}"
