"""The comparisons a gate can make, each registered here
(``registry.register_comparison``): what its arms are and how its verdict
is decided.

* paired (``family``: IPv4 vs IPv6; ``offload``: off vs on, in one family;
  ``exthdr``: an IPv6 stream without vs with an extension header, Destination
  Options or Hop-by-Hop Options, ``params.header``):
  interleaved trials of the two arms, the per-pair ratio judged on a
  confidence interval (engine.PairedComparison);
* ``target``: one arm's trials against a stated target (control-plane
  times, engine.TargetComparison);
* ``parity``: facts of the DUT compared with each other (no traffic).
"""

from __future__ import annotations

import contextlib
import random

from ..core.verdict import Outcome, Verdict
from .bench import Bench, dut_facts
from .engine import Measure, PairedComparison, TargetComparison
from .outcome import note_trial, outcome
from .profiles import GateProfile
from .registry import Comparison, Workload, register_comparison


# -- paired comparisons -------------------------------------------------------------------------------------
def _paired(t, prof: GateProfile, wl: Workload) -> Outcome:
    c = _PAIRED[prof.compare]
    bench = Bench.for_check(t)
    for fam in c.families(prof):
        bench.address(fam)  # SKIP early when a family is missing
    with bench.mtu(prof.mtu):
        t.measure("facts", bench.facts())
        if wl.decide is not None:
            return wl.decide(t, prof, bench)
        measure, cleanup = c.measure(t, prof, bench, wl)
        try:
            dec = PairedComparison(arms=prof.arms, metrics=prof.metrics, measure=measure, budget=prof.budget,
                                   policy=prof.disturbance, method=prof.method, confidence=prof.confidence,
                                   rng=random.Random(), on_trial=lambda tr: note_trial(t, tr),
                                   measure_pair=pair_of(prof, bench, wl), probe=prof.probe,
                                   what=prof.probe_what).run()
        finally:
            cleanup()
    return outcome(t, prof, dec)


def pair_of(prof: GateProfile, bench: Bench, wl: Workload):
    """Both arms in one finely alternated trial (params.interleave: slices), or None."""
    if prof.params.get("interleave", "trials") != "slices":
        return None
    return lambda order: wl.alternate(bench, prof, order)


def _family_measure(t, prof: GateProfile, bench: Bench, wl: Workload):
    return (lambda arm: wl.trial(bench, prof, arm, baseline=arm == "v4")), lambda: None


def exthdr_of(prof: GateProfile) -> str:
    """The with-arm's extension header (``params.header``: dstopts or hopopts)."""
    return str(prof.params.get("header", "dstopts"))


def _exthdr_measure(t, prof: GateProfile, bench: Bench, wl: Workload):
    header = exthdr_of(prof)

    def m(arm: str) -> Measure:
        return wl.trial(bench, prof, prof.family or "v6", header=header if arm == "with" else None,
                        baseline=arm == "without")

    return m, lambda: None


def _offload_measure(t, prof: GateProfile, bench: Bench, wl: Workload):
    saved = bench.offload_state()
    t.measure("offloads_as_found", saved)
    state = {"on": True}

    def m(arm: str) -> Measure:
        want = arm == "on"
        if state["on"] != want:
            bench.set_offloads(want, saved)
            state["on"] = want
        return wl.trial(bench, prof, prof.family, baseline=arm == "off")

    def cleanup() -> None:
        if not state["on"]:
            with contextlib.suppress(Exception):
                bench.set_offloads(True, saved)

    return m, cleanup


def _one_family(prof: GateProfile) -> tuple[str, ...]:
    return (prof.family or "v6",)


_PAIRED = {c.name: register_comparison(c) for c in (
    Comparison("family", _paired, arms=("v4", "v6"), arms_are_families=True, families=lambda prof: ("v4", "v6"),
               measure=_family_measure),
    Comparison("offload", _paired, arms=("off", "on"), needs_family=True, families=_one_family,
               measure=_offload_measure),
    Comparison("exthdr", _paired, arms=("without", "with"), families=_one_family, measure=_exthdr_measure),
)}


# -- one arm against a target ----------------------------------------------------------------------------------
def _target(t, prof: GateProfile, wl: Workload) -> Outcome:
    state: dict = {"i": 0}

    def measure(_arm: str) -> Measure:
        state["i"] += 1
        return wl.sample(t, prof, state["i"])

    t.measure("facts", dut_facts(t))
    dec = TargetComparison(arm="dut", metrics=prof.metrics, measure=measure, budget=prof.budget,
                           policy=prof.disturbance, confidence=prof.confidence,
                           on_trial=lambda tr: note_trial(t, tr)).run()
    return outcome(t, prof, dec)


register_comparison(Comparison("target", _target, arms=("dut",), needs_target=True, order_statistics=True))


# -- facts -------------------------------------------------------------------------------------------------------
def _parity(t, prof: GateProfile, wl: Workload) -> Outcome:
    bench = Bench.for_check(t)
    facts = bench.facts()
    t.measure("facts", facts)
    problems, seen = wl.judge(facts, prof)
    t.measure("parity", {"problems": problems, "features": seen})
    where = f"on {facts['dut'].get('interface')}"
    if problems:
        return Outcome(Verdict.FAIL, f"{where}: {'; '.join(problems)}", expected=prof.description)
    return Outcome(Verdict.PASS, f"{where}: {', '.join(seen)}", expected=prof.description)


register_comparison(Comparison("parity", _parity, judges_metrics=False))
