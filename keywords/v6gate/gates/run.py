"""Running one gate variant inside a check: build the bench, run the engine
with the variant's workload, record everything, return the verdict.

Everything a triager (or the report's plot) needs goes into the result's
``measurements``: the merged profile, the facts of both ends (kernel, MTU,
``ethtool -k``), the engine's decision with every trial's raw figures, and
for sweeps one decision per payload size.
"""

from __future__ import annotations

import contextlib
import math
import random
import time

from ..core.context import NotApplicable
from ..core.verdict import Outcome, Verdict
from ..errors import BenchError
from . import timing, workloads
from .bench import Bench
from .engine import GateDecision, Measure, PairedComparison, TargetComparison
from .happy_eyeballs import happy_eyeballs
from .profiles import GateProfile, profile_of

FAMILY_NAME = {"v4": "IPv4", "v6": "IPv6"}


def run_gate(t, gate: str) -> Outcome:
    """The body of every gate check: ``t.p.variant`` names the profile variant."""
    prof = profile_of(gate, getattr(t.p, "variant", None))
    t.measure("gate", prof.as_dict())
    t.note(f"gate {prof.key}: {prof.workload}, compare {prof.compare}, budget {prof.budget.max_pairs} pairs / "
           f"{prof.budget.max_seconds:g} s")
    if prof.compare == "target":
        return _target(t, prof)
    if prof.compare == "parity":
        return _parity(t, prof)
    bench = Bench.for_check(t)
    for fam in ("v4", "v6") if prof.compare == "family" else (prof.family or "v6",):
        bench.address(fam)  # SKIP early when a family is missing
    with bench.mtu(prof.mtu):
        t.measure("facts", bench.facts())
        if prof.workload == "qperf":
            return _sweep(t, prof, bench)
        measure, cleanup = _measure_fn(t, prof, bench)
        try:
            dec = PairedComparison(arms=prof.arms, metrics=prof.metrics, measure=measure, budget=prof.budget,
                                   policy=prof.disturbance, method=prof.method, confidence=prof.confidence,
                                   rng=random.Random(), on_trial=lambda tr: _note_trial(t, tr),
                                   measure_pair=_pair_fn(prof, bench)).run()
        finally:
            cleanup()
    return _outcome(t, prof, dec)


def _pair_fn(prof: GateProfile, bench: Bench):
    """Both arms in one finely alternated trial (params.interleave: slices), or None."""
    if prof.params.get("interleave", "trials") != "slices":
        return None
    if prof.workload in ("iscsi_seq", "nfs_seq"):
        return lambda order: workloads.storage_alternate(bench, prof, order)
    size = int(prof.params.get("dstopts", 8))
    return lambda order: workloads.loadgen_alternate(bench, prof, order, compare=prof.compare,
                                                      family=prof.family or "v6", dstopts=size)


def family_pair(prof: GateProfile, bench: Bench):
    """order -> the two arms' Measures in that order, as the gate takes a pair: one finely alternated
    trial holding both arms (params.interleave: slices) or two trials one after the other (a family
    comparison; ``v6gate calibrate`` tunes its handicap with it)."""
    pair = _pair_fn(prof, bench)
    if pair is not None:
        return pair
    measure, _ = _measure_fn(None, prof, bench)
    return lambda order: tuple(measure(arm) for arm in order)


def _measure_fn(t, prof: GateProfile, bench: Bench):
    """arm -> Measure for the variant's comparison, and a cleanup."""
    wl = prof.workload
    if prof.compare == "family":
        if wl == "loadgen":
            return (lambda arm: workloads.loadgen(bench, prof, arm, baseline=arm == "v4")), lambda: None
        if wl in ("iscsi_seq", "nfs_seq"):
            fn = getattr(workloads, wl)
            return (lambda arm: fn(bench, prof, arm, baseline=arm == "v4")), lambda: None
        return (lambda arm: workloads.iperf3(bench, prof, arm, baseline=arm == "v4")), lambda: None
    if prof.compare == "dstopts":
        size = int(prof.params.get("dstopts", 8))

        def m(arm: str) -> Measure:
            return workloads.loadgen(bench, prof, prof.family or "v6", dstopts=size if arm == "with" else 0,
                                     baseline=arm == "without")

        return m, lambda: None
    if prof.compare == "offload":
        saved = bench.offload_state()
        t.measure("offloads_as_found", saved)
        state = {"on": True}

        def m(arm: str) -> Measure:
            want = arm == "on"
            if state["on"] != want:
                bench.set_offloads(want, saved)
                state["on"] = want
            fn = {"loadgen": workloads.loadgen, "iscsi_seq": workloads.iscsi_seq,
                  "nfs_seq": workloads.nfs_seq}.get(wl, workloads.iperf3)
            return fn(bench, prof, prof.family, baseline=arm == "off")

        def cleanup() -> None:
            if not state["on"]:
                with contextlib.suppress(Exception):
                    bench.set_offloads(True, saved)

        return m, cleanup
    raise BenchError(f"gate {prof.key}: no measure for compare {prof.compare!r} with workload {wl}")


def _note_trial(t, tr) -> None:
    vals = ", ".join(f"{k} {v:.4g}" for k, v in tr.values.items())
    extra = f" DISCARDED: {tr.discarded}" if tr.discarded else ""
    t.note(f"pair {tr.pair} {tr.arm}: {vals}{extra}")


def _arm_label(prof: GateProfile, arm: str) -> str:
    return FAMILY_NAME.get(arm, arm)


def _outcome(t, prof: GateProfile, dec: GateDecision, extra: str = "") -> Outcome:
    t.measure("decision", dec.as_dict())
    seen = dec.why + extra
    v = {"PASS": Verdict.PASS, "FAIL": Verdict.FAIL}.get(dec.verdict, Verdict.INCONCLUSIVE)
    return Outcome(v, seen, expected=_expected(prof))


def _expected(prof: GateProfile) -> str:
    rules = [m.describe_threshold(tuple(_arm_label(prof, a) for a in prof.arms)) for m in prof.metrics if m.judged]
    reported = [m.name for m in prof.metrics if not m.judged]
    if reported:
        rules[-1] += f" ({', '.join(reported)} reported too, not judged)"
    b = prof.budget
    return (f"{prof.title or prof.key}: {'; '.join(rules)}, decided on a {prof.confidence * 100:g}% "
            f"{prof.method if prof.compare != 'target' else 'order-statistics'} interval within {b.max_pairs} "
            f"{'pairs' if prof.compare != 'target' else 'trials'} / {b.max_seconds:g} s")


# -- payload sweep (qperf) ------------------------------------------------------------------------------------
def _sweep(t, prof: GateProfile, bench: Bench) -> Outcome:
    sizes = [int(s) for s in prof.params.get("sizes", [])]
    if not sizes:
        raise BenchError(f"gate {prof.key}: no payload sizes")
    per_size = {}
    verdicts = []
    traffic = 0.0
    for size in sizes:
        dec = PairedComparison(
            arms=prof.arms, metrics=prof.metrics, budget=prof.budget, policy=prof.disturbance, method=prof.method,
            confidence=prof.confidence, rng=random.Random(),
            measure=lambda arm, s=size: workloads.qperf(bench, prof, arm, s, baseline=arm == "v4")).run()
        per_size[str(size)] = dec.as_dict()
        verdicts.append((size, dec.verdict, dec))
        traffic += dec.traffic_s
        m = prof.metrics[0].name
        iv = dec.metrics[m].interval
        t.note(f"size {size}: {dec.verdict} ratio {iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]" if iv else
               f"size {size}: {dec.verdict}")
    t.measure("sweep", per_size)
    failing = [s for s, v, _ in verdicts if v == "FAIL"]
    undecided = [s for s, v, _ in verdicts if v == "INCONCLUSIVE"]
    metric = prof.metrics[0]
    curve = "; ".join(f"{s} B {d.metrics[metric.name].interval.estimate:.3f}" for s, _, d in verdicts
                      if d.metrics[metric.name].interval is not None)
    summary = (f"v6/v4 {metric.name} ratio per payload size: {curve}; {traffic:.0f} s of traffic; "
               f"{len(sizes) - len(failing) - len(undecided)} sizes PASS, {len(failing)} FAIL"
               f"{' (' + ', '.join(map(str, failing)) + ' B)' if failing else ''}, {len(undecided)} undecided")
    if failing:
        return Outcome(Verdict.FAIL, summary, expected=_expected(prof))
    if undecided:
        return Outcome(Verdict.INCONCLUSIVE, summary, expected=_expected(prof))
    return Outcome(Verdict.PASS, summary, expected=_expected(prof))


# -- control-plane timing gates ----------------------------------------------------------------------------------
def _target(t, prof: GateProfile) -> Outcome:
    fn = {"ra_to_slaac": timing.ra_to_usable_address, "ns_to_na": timing.ns_to_na,
          "dhcpv6_lease": timing.link_up_to_dhcpv6_lease, "happy_eyeballs": happy_eyeballs}[prof.workload]
    state: dict = {"i": 0}

    def measure(_arm: str) -> Measure:
        state["i"] += 1
        return fn(t, prof, state["i"])

    facts = {"dut": {"mac": t.dut.mac, "link_local": t.dut.link_local}, "timing": dict(t.timing)}
    lab = getattr(t.session, "lab", None)
    if lab is not None and not lab.external_dut:
        from .bench import End

        facts["dut"].update(End("DUT", lab.dut_ns, lab.dut_ifname(), True).facts())
    t.measure("facts", facts)
    dec = TargetComparison(arm="dut", metrics=prof.metrics, measure=measure, budget=prof.budget,
                           policy=prof.disturbance, confidence=prof.confidence,
                           on_trial=lambda tr: _note_trial(t, tr)).run()
    return _outcome(t, prof, dec)


# -- ethtool -k parity ---------------------------------------------------------------------------------------------
GENERIC = {"tx-checksum-ipv4": "tx-checksum-ip-generic", "tx-checksum-ipv6": "tx-checksum-ip-generic"}


def parity_problems(feats: dict[str, str], pairs: list[list[str]]) -> tuple[list[str], list[str]]:
    """(problems, facts): an IPv4 offload on whose IPv6 twin is off."""

    def on(name: str) -> bool | None:
        if name not in feats:
            return None
        generic = GENERIC.get(name)
        return feats[name].startswith("on") or bool(generic and feats.get(generic, "").startswith("on"))

    problems, facts = [], []
    for v4, v6 in pairs:
        a, b = on(v4), on(v6)
        facts.append(f"{v4}={feats.get(v4, 'absent')}/{v6}={feats.get(v6, 'absent')}"
                     + (f" (generic {GENERIC[v6]}={feats.get(GENERIC[v6], 'absent')})" if v6 in GENERIC else ""))
        if a and b is False:
            problems.append(f"{v4} is on but {v6} is off ({feats.get(v6)})")
        elif a and b is None:
            problems.append(f"{v4} is on but the interface has no {v6}")
    return problems, facts


def _parity(t, prof: GateProfile) -> Outcome:
    bench = Bench.for_check(t)
    facts = bench.facts()
    t.measure("facts", facts)
    feats = facts["dut"].get("ethtool_k")
    if not feats or "error" in feats:
        raise NotApplicable("the DUT's ethtool -k cannot be read by the harness"
                            + (f" ({feats['error']})" if feats and "error" in feats else ""))
    problems, seen = parity_problems(feats, prof.params.get("features", []))
    t.measure("parity", {"problems": problems, "features": seen})
    where = f"on {facts['dut'].get('interface')}"
    if problems:
        return Outcome(Verdict.FAIL, f"{where}: {'; '.join(problems)}", expected=prof.description)
    return Outcome(Verdict.PASS, f"{where}: {', '.join(seen)}", expected=prof.description)


def elapsed_since(t0: float) -> float:
    return time.monotonic() - t0


def finite_or_none(x):
    return None if x is None or math.isinf(x) or math.isnan(x) else x
