"""Running one gate variant inside a check: the variant's profile names its
workload and its comparison (both registered, gates/registry.py); the
comparison builds the bench, runs the engine, records everything and
returns the verdict.

Everything a triager (or the report's plot) needs goes into the result's
``measurements``: the merged profile, the facts of both ends (kernel, MTU,
``ethtool -k``), the engine's decision with every trial's raw figures, and
for sweeps one decision per payload size.
"""

from __future__ import annotations

from ..core.verdict import Outcome
from .bench import Bench
from .comparisons import pair_of
from .profiles import GateProfile, profile_of
from .registry import comparison, workload


def run_gate(t) -> Outcome:
    """The body of every gate check: the part's ``gate`` and ``variant`` name its profile."""
    prof = profile_of(t.p.gate, getattr(t.p, "variant", None))
    t.measure("gate", prof.as_dict())
    t.note(f"gate {prof.key}: {prof.workload}, compare {prof.compare}, budget {prof.budget.max_pairs} pairs / "
           f"{prof.budget.max_seconds:g} s")
    return comparison(prof.compare).run(t, prof, workload(prof.workload))


def family_pair(prof: GateProfile, bench: Bench):
    """order -> the two arms' Measures in that order, as the gate takes a pair: one finely alternated
    trial holding both arms (params.interleave: slices) or two trials one after the other (a family
    comparison; ``v6gate calibrate`` tunes its handicap with it)."""
    wl = workload(prof.workload)
    pair = pair_of(prof, bench, wl)
    if pair is not None:
        return pair
    measure, _ = comparison(prof.compare).measure(None, prof, bench, wl)
    return lambda order: tuple(measure(arm) for arm in order)
