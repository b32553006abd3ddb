"""Run-to-run stability: do repeated runs of the same checks on the same
target give the same verdict for every part?  A flaky check is a bench
problem the user cannot tell from a DUT problem, so the project measures it
(``v6gate repeat``) and states the figure."""

from __future__ import annotations

import statistics
from collections import Counter


def part_key(check: dict) -> str:
    return f"{check['id']}{'#' + check['part'] if check.get('part') else ''}"


def run_wall_s(doc: dict) -> float | None:
    """A run's wall time: the sum of its phases (conformance, gates)."""
    phases = (doc.get("run") or {}).get("phases") or []
    walls = [p.get("wall_s") for p in phases if p.get("wall_s") is not None]
    return sum(walls) if walls else None


def compare(runs: list[dict]) -> dict:
    """``runs``: results.json documents of repeated runs.  Returns the parts
    whose verdict was the same in every run, and for the others the verdict
    counts and the reasons seen, plus the runs' wall times."""
    if not runs:
        raise ValueError("no runs to compare")
    verdicts: dict[str, list[str]] = {}
    reasons: dict[str, dict[str, str]] = {}
    for i, doc in enumerate(runs):
        for c in doc.get("checks", []):
            key = part_key(c)
            verdicts.setdefault(key, [None] * len(runs))[i] = c["verdict"]
            reasons.setdefault(key, {}).setdefault(c["verdict"], c.get("reason", ""))
    stable = sorted(k for k, v in verdicts.items() if len(set(v)) == 1)
    unstable = {k: {"counts": dict(Counter("missing" if x is None else x for x in v)), "first_reason": reasons[k]}
                for k, v in sorted(verdicts.items()) if len(set(v)) > 1}
    walls = [w for w in (run_wall_s(doc) for doc in runs) if w is not None]
    return {
        "runs": len(runs),
        "parts": len(verdicts),
        "identical": len(stable),
        "verdicts_when_identical": dict(Counter(verdicts[k][0] for k in stable)),
        "unstable": unstable,
        "wall_s": {"median": round(statistics.median(walls), 1), "min": round(min(walls), 1),
                   "max": round(max(walls), 1)} if walls else None,
    }
