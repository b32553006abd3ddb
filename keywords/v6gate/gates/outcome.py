"""A gate's verdict from its engine's decision, and the expectation it is
judged against: what every comparison ends with."""

from __future__ import annotations

from ..core.verdict import Outcome, Verdict
from .engine import GateDecision
from .profiles import GateProfile
from .registry import comparison

FAMILY_NAME = {"v4": "IPv4", "v6": "IPv6"}


def note_trial(t, tr) -> None:
    vals = ", ".join(f"{k} {v:.4g}" for k, v in tr.values.items())
    extra = f" DISCARDED: {tr.discarded}" if tr.discarded else ""
    which = f"noise probe A/A pair {-tr.pair}" if tr.pair < 0 else f"pair {tr.pair}"
    t.note(f"{which} {tr.arm}: {vals}{extra}")


def arm_label(prof: GateProfile, arm: str) -> str:
    return FAMILY_NAME.get(arm, arm)


def outcome(t, prof: GateProfile, dec: GateDecision, extra: str = "") -> Outcome:
    t.measure("decision", dec.as_dict())
    seen = dec.why + extra
    v = {"PASS": Verdict.PASS, "FAIL": Verdict.FAIL}.get(dec.verdict, Verdict.INCONCLUSIVE)
    return Outcome(v, seen, expected=expected(prof))


def expected(prof: GateProfile) -> str:
    rules = [m.describe_threshold(tuple(arm_label(prof, a) for a in prof.arms)) for m in prof.metrics if m.judged]
    reported = [m.name for m in prof.metrics if not m.judged]
    if reported:
        rules[-1] += f" ({', '.join(reported)} reported too, not judged)"
    b = prof.budget
    single = comparison(prof.compare).order_statistics  # one arm's trials, not pairs
    return (f"{prof.title or prof.key}: {'; '.join(rules)}, decided on a {prof.confidence * 100:g}% "
            f"{'order-statistics' if single else prof.method} interval within {b.max_pairs} "
            f"{'trials' if single else 'pairs'} / {b.max_seconds:g} s")
