"""Gate profiles and budgets as data: ``fixtures/gates/profiles.yaml``.

Every field is documented in that file's header and validated here; bad data
gets one line naming the file, the field and what to write instead.  A gate
(one check of kind "gate") has variants; each variant is one check part, so
the matrix of a seed study (pairs x MTU, ...) is data, not code.

Merging: ``defaults`` <- the gate's own fields <- the variant's fields
(``params``, ``budget`` and ``disturbance`` merge key by key).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import yamlfile
from ..errors import UsageError
from ..paths import FIXTURES
from . import stats
from .engine import Budget, DisturbancePolicy, Metric
from .noise import ProbeSpec
from .registry import comparison, workloads

GATES_DIR = FIXTURES / "gates"
PROFILES_FILE = GATES_DIR / "profiles.yaml"
PAIRINGS_FILE = GATES_DIR / "pairings.yaml"

#: the extension header the lab DUT's loadgen server puts on an exthdr gate's with-arm (lab/services/perf.py)
EXTHDR_BYTES = 8


def tcp_payload_ratio(mtu: int) -> float:
    """IPv6/IPv4 TCP payload per full-size segment at link MTU ``mtu``: 40 vs 20 bytes of IP header,
    20 of TCP header and 12 of timestamps (RFC 7323, on by default in the stacks measured)."""
    return (mtu - 40 - 20 - 12) / (mtu - 20 - 20 - 12)


FIELDS = {"title", "description", "workload", "compare", "params", "metrics", "margin", "confidence", "method",
          "trial_s", "warmup_s", "budget", "disturbance", "mtu", "target", "quantile", "profile", "family",
          "pin", "variants", "report", "reference", "areas", "probe"}
BUDGET_FIELDS = {"min_pairs", "max_pairs", "max_seconds", "max_discarded", "look_every"}
#: what a paired gate reports next to what it judges, when its profile names no ``report`` list: the rate
#: and the cost of the same trials, so a reader sees both (issue 17)
RATE_AND_COST = ("throughput", "transactions", "cpu_per_unit")
DIST_FIELDS = {"max_steal_fraction", "max_steal_gap", "max_foreign_gap", "enabled"}
PROBE_FIELDS = {"pairs", "cap_pairs", "cap_seconds", "what"}
NO_PROBE = ProbeSpec(pairs=0)


@dataclass
class GateProfile:
    """One gate variant, fully merged and validated."""

    gate: str
    variant: str
    title: str
    description: str
    workload: str
    compare: str
    params: dict
    metrics: list[Metric]
    confidence: float
    method: str
    trial_s: float
    warmup_s: float
    budget: Budget
    disturbance: DisturbancePolicy
    mtu: int
    profile: str
    family: str | None = None
    pin: bool = False
    areas: tuple[str, ...] = ()  # the conformance areas the gate goes with (pairings.yaml says why)
    probe: ProbeSpec = NO_PROBE  # the noise probe before a paired gate (gates/noise.py)
    probe_what: str = ""  # the workload as the probe's line names it ("the 16 KB stream")
    raw: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.gate}/{self.variant}"

    @property
    def arms(self) -> tuple[str, ...]:
        return comparison(self.compare).arms

    def as_dict(self) -> dict:
        return {"gate": self.gate, "variant": self.variant, "workload": self.workload, "compare": self.compare,
                "params": self.params, "metrics": [m.name for m in self.metrics if m.judged],
                "report": [m.name for m in self.metrics if not m.judged],
                "margin": self.metrics[0].margin if self.metrics else None, "confidence": self.confidence,
                "method": self.method, "trial_s": self.trial_s, "warmup_s": self.warmup_s,
                "budget": self.budget.__dict__, "disturbance": self.disturbance.__dict__, "mtu": self.mtu,
                "profile": self.profile, "family": self.family, "pin": self.pin,
                "reference": self.metrics[0].reference if self.metrics else 1.0,
                "probe": {**self.probe.__dict__, "what": self.probe_what}}


def _bad(path, where, problem, fix) -> UsageError:
    return UsageError(f"{path}: {where}: {problem}; {fix}")


def _num(path, where, v, lo, hi, kind=float):
    if isinstance(v, bool) or not isinstance(v, int | float) or (kind is int and not isinstance(v, int)):
        raise _bad(path, where, f"{v!r} is not {'an integer' if kind is int else 'a number'}",
                   f"write a number between {lo} and {hi}")
    if not lo <= v <= hi:
        raise _bad(path, where, f"{v} is out of range", f"write a number between {lo} and {hi}")
    return kind(v)


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if k in ("params", "budget", "disturbance", "probe") and isinstance(v, dict):
            out[k] = {**out.get(k, {}), **v}
        elif k == "areas" and isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = [*out[k], *(a for a in v if a not in out[k])]  # a variant pairs with more areas
        else:
            out[k] = copy.deepcopy(v)
    return out


def _build(path, gate: str, variant: str, spec: dict) -> GateProfile:
    where = f"gates.{gate}.variants.{variant}" if variant != "-" else f"gates.{gate}"
    unknown = set(spec) - FIELDS
    if unknown:
        raise _bad(path, where, f"unknown fields {sorted(unknown)}", f"use {sorted(FIELDS - {'variants'})}")
    known = workloads()
    wl = spec.get("workload")
    if wl not in known:
        raise _bad(path, f"{where}.workload", f"{wl!r} is not a workload", f"use one of {sorted(known)}")
    w = known[wl]
    compare = spec.get("compare")
    if compare not in w.compare:
        raise _bad(path, f"{where}.compare", f"{compare!r} does not fit workload {wl}", f"use one of {sorted(w.compare)}")
    c = comparison(compare)
    params = dict(spec.get("params") or {})
    bad_params = set(params) - w.params
    if bad_params:
        raise _bad(path, f"{where}.params", f"unknown {sorted(bad_params)} for workload {wl}",
                   f"use {sorted(w.params) or 'none'}")
    if params.get("interleave", "trials") not in ("trials", "slices"):
        raise _bad(path, f"{where}.params.interleave", f"{params['interleave']!r}", "use trials or slices")
    wrong = w.check_params(params, compare) if w.check_params else None
    if wrong:
        name, problem, fix = wrong
        raise _bad(path, f"{where}.params.{name}", problem, fix)
    if params.get("interleave") == "slices":
        _num(path, f"{where}.params.slice_s", params.get("slice_s", w.slice_s), 0.005, 10)
    margin = _num(path, f"{where}.margin", spec.get("margin", 0.03), 0.001, 0.5)
    confidence = _num(path, f"{where}.confidence", spec.get("confidence", 0.95), 0.5, 0.999)
    method = spec.get("method", "wilcoxon")
    if method not in stats.METHODS:
        raise _bad(path, f"{where}.method", f"{method!r} is not an interval method", f"use one of {stats.METHODS}")
    names = spec.get("metrics") or []
    if not isinstance(names, list):
        raise _bad(path, f"{where}.metrics", "must be a list", f"write e.g. [{', '.join(w.metrics)}]")
    metrics = []
    target = spec.get("target")
    quantile = _num(path, f"{where}.quantile", spec.get("quantile", 0.5), 0.05, 0.95)
    for n in names:
        if n not in w.metrics:
            raise _bad(path, f"{where}.metrics", f"{n!r} is not measured by workload {wl}",
                       f"use some of {sorted(w.metrics)}")
        unit, higher = w.metrics[n]
        t = None
        if c.needs_target:
            if target is None:
                raise _bad(path, f"{where}.target", "a target comparison needs a target", f"write the target in {unit}")
            t = _num(path, f"{where}.target", target, 1e-6, 1e6)
        metrics.append(Metric(n, unit, higher, margin, t, quantile))
    if c.judges_metrics and not metrics:
        raise _bad(path, f"{where}.metrics", "no metric is judged", f"list some of {sorted(w.metrics)}")
    report = spec.get("report")
    if report is None:
        report = [n for n in RATE_AND_COST if n in w.metrics and n not in names] \
            if c.paired and "cpu_per_unit" in w.metrics else []
    if not isinstance(report, list) or any(n not in w.metrics or n in names for n in report):
        raise _bad(path, f"{where}.report", f"{report!r} is not a list of other metrics of workload {wl}",
                   f"use some of {sorted(set(w.metrics) - set(names))}")
    if report and not c.paired:
        raise _bad(path, f"{where}.report", "only a paired gate reports extra metrics", "remove report:")
    for n in report:
        unit, higher = w.metrics[n]
        metrics.append(Metric(n, unit, higher, margin, None, quantile, judged=False))
    b = dict(spec.get("budget") or {})
    if set(b) - BUDGET_FIELDS:
        raise _bad(path, f"{where}.budget", f"unknown {sorted(set(b) - BUDGET_FIELDS)}", f"use {sorted(BUDGET_FIELDS)}")
    budget = Budget(min_pairs=_num(path, f"{where}.budget.min_pairs", b.get("min_pairs", 6), 2, 1000, int),
                    max_pairs=_num(path, f"{where}.budget.max_pairs", b.get("max_pairs", 30), 2, 10000, int),
                    max_seconds=_num(path, f"{where}.budget.max_seconds", b.get("max_seconds", 120), 1, 86400),
                    max_discarded=_num(path, f"{where}.budget.max_discarded", b.get("max_discarded", 10), 0, 10000, int),
                    look_every=_num(path, f"{where}.budget.look_every", b.get("look_every", 2), 1, 1000, int))
    if budget.max_pairs < budget.min_pairs:
        raise _bad(path, f"{where}.budget", f"max_pairs {budget.max_pairs} < min_pairs {budget.min_pairs}",
                   "raise max_pairs")
    if method == "wilcoxon" and c.judges_metrics and stats._signed_rank_k(budget.max_pairs, 1 - confidence)[0] == 0:
        raise _bad(path, f"{where}.budget.max_pairs", f"{budget.max_pairs} pairs can never reach {confidence:g} "
                   "with the Wilcoxon interval", "allow at least 6 pairs (95 %) or lower the confidence")
    pr = dict(spec.get("probe") or {})
    if set(pr) - PROBE_FIELDS:
        raise _bad(path, f"{where}.probe", f"unknown {sorted(set(pr) - PROBE_FIELDS)}", f"use {sorted(PROBE_FIELDS)}")
    probe = ProbeSpec(pairs=_num(path, f"{where}.probe.pairs", pr.get("pairs", 0), 0, 100, int),
                      cap_pairs=_num(path, f"{where}.probe.cap_pairs", pr.get("cap_pairs", budget.max_pairs), 2, 10000,
                                     int),
                      cap_seconds=_num(path, f"{where}.probe.cap_seconds", pr.get("cap_seconds", budget.max_seconds),
                                       1, 86400))
    if probe.pairs and not c.paired:
        probe = NO_PROBE  # defaults may switch it on; a target or facts comparison has no A/A pair
    if 0 < probe.pairs < 3:
        raise _bad(path, f"{where}.probe.pairs", f"{probe.pairs} A/A pairs give no spread", "write 0 (off) or 3..100")
    if probe.pairs and (probe.cap_pairs < budget.max_pairs or probe.cap_seconds < budget.max_seconds):
        raise _bad(path, f"{where}.probe", f"the cap ({probe.cap_pairs} pairs, {probe.cap_seconds:g} s) is below the "
                   f"budget ({budget.max_pairs} pairs, {budget.max_seconds:g} s)",
                   "make cap_pairs / cap_seconds at least budget.max_pairs / max_seconds")
    what = pr.get("what", f"the {spec.get('title', gate)}")
    if not isinstance(what, str) or not what or len(what) > 80:
        raise _bad(path, f"{where}.probe.what", f"{what!r}", "write a short name of the workload (a string)")
    d = dict(spec.get("disturbance") or {})
    if set(d) - DIST_FIELDS:
        raise _bad(path, f"{where}.disturbance", f"unknown {sorted(set(d) - DIST_FIELDS)}", f"use {sorted(DIST_FIELDS)}")
    policy = DisturbancePolicy(
        max_steal_fraction=_num(path, f"{where}.disturbance.max_steal_fraction", d.get("max_steal_fraction", 0.10), 0, 1),
        max_steal_gap=_num(path, f"{where}.disturbance.max_steal_gap", d.get("max_steal_gap", 0.03), 0, 1),
        max_foreign_gap=_num(path, f"{where}.disturbance.max_foreign_gap", d.get("max_foreign_gap", 0.35), 0, 1),
        enabled=bool(d.get("enabled", True)))
    profile = spec.get("profile", "full")
    if profile not in ("default", "full"):
        raise _bad(path, f"{where}.profile", f"{profile!r} is not a run profile", "use default or full")
    mtu = _num(path, f"{where}.mtu", spec.get("mtu", 1500), 1280, 65535, int)
    family = spec.get("family")
    if family not in (None, "v4", "v6"):
        raise _bad(path, f"{where}.family", f"{family!r}", "use v4 or v6 (or leave it out)")
    if c.needs_family and family is None:
        raise _bad(path, f"{where}.family", f"an {compare} comparison runs in one family", "write family: v4 or v6")
    trial_s = _num(path, f"{where}.trial_s", spec.get("trial_s", 2.0), 0.05 if c.paired else 0, 600)
    if params.get("interleave") == "slices" and trial_s < 2 * float(params.get("slice_s", 0.05)):
        raise _bad(path, f"{where}.trial_s", f"{trial_s:g} s holds no AB slice pair of {params.get('slice_s', 0.05)} s",
                   "make trial_s at least twice slice_s")
    areas = spec.get("areas") or []
    if not isinstance(areas, list) or not all(isinstance(a, str) and a for a in areas):
        raise _bad(path, f"{where}.areas", f"{areas!r} is not a list of area names",
                   "write e.g. areas: [nd, slaac] (the conformance areas the gate goes with)")
    reference = spec.get("reference")
    if reference is not None:
        if reference != "header_overhead":
            raise _bad(path, f"{where}.reference", f"{reference!r}", "use header_overhead (or leave it out)")
        if not c.arms_are_families and compare != "exthdr":
            raise _bad(path, f"{where}.reference", "header_overhead is the payload per segment of IPv6 against IPv4, "
                       "or with an extension header against without", "use it on a family or exthdr comparison only")
        if compare == "exthdr":
            r = (mtu - 72 - EXTHDR_BYTES) / (mtu - 72)
            why = (f"the {EXTHDR_BYTES}-byte header takes that much of every segment, so a TCP segment at MTU {mtu} "
                   f"carries {mtu - 72 - EXTHDR_BYTES} payload bytes vs {mtu - 72} without (timestamps on)")
        else:
            r = tcp_payload_ratio(mtu)
            why = (f"IPv6's header is 20 bytes longer, so a TCP segment at MTU {mtu} carries {mtu - 72} payload "
                   f"bytes vs IPv4's {mtu - 52} (timestamps on)")
        metrics = [replace(m, reference=r, reference_why=why) for m in metrics]
    return GateProfile(
        gate=gate, variant=variant, title=str(spec.get("title", "")), description=str(spec.get("description", "")),
        workload=wl, compare=compare, params=params, metrics=metrics, confidence=confidence, method=method,
        trial_s=trial_s,
        warmup_s=_num(path, f"{where}.warmup_s", spec.get("warmup_s", 0.2), 0, 60), budget=budget,
        disturbance=policy, mtu=mtu, profile=profile, family=family, pin=bool(spec.get("pin", False)),
        areas=tuple(areas), probe=probe, probe_what=what, raw=spec)


def load_profiles(path: Path | str = PROFILES_FILE) -> dict[str, dict[str, GateProfile]]:
    """gate name -> variant -> GateProfile (a gate without variants has one, '-')."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: gate profiles not found; restore fixtures/gates/profiles.yaml")
    doc = yamlfile.load_data_file(path, "gate profiles file")
    if not isinstance(doc, dict) or not isinstance(doc.get("gates"), dict):
        raise _bad(path, "(top level)", "needs a 'gates' mapping", "see the header of fixtures/gates/profiles.yaml")
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict) or set(defaults) - FIELDS:
        raise _bad(path, "defaults", f"unknown fields {sorted(set(defaults) - FIELDS)}", f"use {sorted(FIELDS)}")
    out: dict[str, dict[str, GateProfile]] = {}
    for gate, spec in doc["gates"].items():
        if not isinstance(spec, dict):
            raise _bad(path, f"gates.{gate}", "must be a mapping", "see the header of the file")
        base = _merge(defaults, {k: v for k, v in spec.items() if k != "variants"})
        variants = spec.get("variants") or {"-": {}}
        if not isinstance(variants, dict):
            raise _bad(path, f"gates.{gate}.variants", "must be a mapping of label -> fields", "see the file's header")
        out[gate] = {}
        for label, vspec in variants.items():
            label = str(label)
            if label != "-" and not all(c.isalnum() or c in "_x" for c in label):
                raise _bad(path, f"gates.{gate}.variants.{label}", "bad label", "use letters, digits and _")
            out[gate][label] = _build(path, gate, label, _merge(base, vspec or {}))
    return out


_CACHE: dict[str, dict[str, GateProfile]] | None = None


def profiles() -> dict[str, dict[str, GateProfile]]:
    """The gate profiles in force: fixtures/gates/profiles.yaml, or the file
    named by V6GATE_GATE_PROFILES (same gates and variants, other budgets:
    e.g. a smoke run of every variant)."""
    global _CACHE
    if _CACHE is None:
        _CACHE = load_profiles(os.environ.get("V6GATE_GATE_PROFILES") or PROFILES_FILE)
    return _CACHE


def profile_of(gate: str, variant: str | None) -> GateProfile:
    g = profiles().get(gate)
    if g is None:
        raise UsageError(f"{PROFILES_FILE}: no gate {gate!r}; add it under gates:")
    key = variant or "-"
    if key not in g:
        raise UsageError(f"{PROFILES_FILE}: gate {gate} has no variant {key!r}; known: {', '.join(g)}")
    return g[key]


def load_pairings(path: Path | str = PAIRINGS_FILE) -> dict[str, dict]:
    """conformance area -> {"why": text, "status": present | planned}: why the gates that name the area
    (``areas:`` in profiles.yaml) go with it."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: pairings not found; restore fixtures/gates/pairings.yaml")
    doc = yamlfile.load_data_file(path, "gate pairings file") or {}
    pairs = doc.get("pairings")
    if not isinstance(pairs, dict):
        raise _bad(path, "(top level)", "needs a 'pairings' mapping", "write pairings: {area: {why: ...}}")
    out = {}
    for area, spec in pairs.items():
        if not isinstance(spec, dict):
            raise _bad(path, f"pairings.{area}", "must be a mapping", "write {why: ..., status: present}")
        if "gates" in spec:
            raise _bad(path, f"pairings.{area}.gates", "a gate names its areas itself",
                       f"write areas: [{area}] in the gate's entry of {PROFILES_FILE.name} (docs/writing-gates.md)")
        if not spec.get("why"):
            raise _bad(path, f"pairings.{area}.why", "missing", "say in a line why these gates go with this area")
        out[str(area)] = {"why": str(spec["why"]), "status": str(spec.get("status", "present"))}
    return out


def gate_checks() -> dict[tuple[str, str], tuple[str, str | None]]:
    """(gate, variant) -> (check id, part letter) of the gate checks that run it (their parts' ``gate``
    and ``variant`` parameters, checks/perf.py ``_parts``)."""
    from ..core.check import load_all

    out = {}
    for c in load_all().values():
        for p in c.parts:
            if c.kind == "gate" and p.params.get("gate"):
                out[(p.params["gate"], p.params.get("variant") or "-")] = (c.id, p.letter)
    return out


def pairings(path: Path | str = PAIRINGS_FILE, gate_profiles: dict | None = None) -> dict[str, dict]:
    """conformance area -> {"gates": [check ids, or id#part where only some variants pair], "why", "status"}:
    pairings.yaml's areas, each with the gates whose profile names it."""
    areas = load_pairings(path)
    runs = gate_checks()
    gates: dict[str, list[str]] = {a: [] for a in areas}
    for gate, variants in (gate_profiles if gate_profiles is not None else profiles()).items():
        for area in dict.fromkeys(a for prof in variants.values() for a in prof.areas):
            if area not in areas:
                raise _bad(PROFILES_FILE, f"gates.{gate}.areas", f"{area!r} is not an area of {Path(path).name}",
                           f"add it there with its why, or use one of {sorted(areas)}")
            keys = [runs.get((gate, label)) for label, prof in variants.items() if area in prof.areas]
            if None in keys:
                raise _bad(PROFILES_FILE, f"gates.{gate}", "no gate check runs it",
                           f"declare a gate check with parts=_parts(\"{gate}\") (checks/perf.py)")
            whole = len(keys) == len(variants)
            gates[area] += [keys[0][0]] if whole else [f"{cid}#{letter}" for cid, letter in keys]
    for area, listed in gates.items():
        if not listed:
            raise _bad(path, f"pairings.{area}", "no gate names this area",
                       f"add areas: [{area}] to a gate in {PROFILES_FILE.name}, or remove the area")
    return {a: {"gates": gates[a], **spec} for a, spec in areas.items()}
