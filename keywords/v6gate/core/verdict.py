"""Verdicts and the result record every front-end reports."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field


class Verdict(enum.StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"  # not applicable to this target (with the reason)
    ERROR = "ERROR"  # the bench broke, not the DUT
    INCONCLUSIVE = "INCONCLUSIVE"  # a gate could not reach confidence

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

    @property
    def key(self) -> str:
        return f"{self.id}{'#' + self.part if self.part else ''}"

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Result:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)


def result_key(check_id: str, part: str | None) -> str:
    return f"{check_id}{'#' + part if part else ''}"
