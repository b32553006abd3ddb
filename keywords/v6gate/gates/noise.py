"""The noise probe: before a paired gate spends its budget, a few A/A pairs
(the baseline arm against itself: IPv4 against IPv4, the stream without
the header against itself) measure how much this machine moves the per-pair
log ratio of the gate's own workload, and the engine plans from it:

* the number of pairs a gate whose candidate sits at the reference needs to
  clear the threshold (or, the other way, a candidate at twice the margin
  to fall below it) in ``power`` of its runs, at the per-look confidence of
  the looks it would plan (``pairs_needed``);
* a budget of at least the profile's and, when the noise needs more, up to
  the stated cap (``ProbeSpec.cap_pairs`` / ``cap_seconds``), planned at the
  high end of the sd's one-sided 80 % bound (five pairs read the sd within
  about a factor of 1.6 either way: a budget planned on the point estimate
  left a quarter of synthetic gates at the threshold's noise undecided);
* or, when even the cap cannot reach the margin with the noise measured (at
  the low end of its one-sided 90 % confidence bound, so the probe gives up
  only when an optimistic reading of the machine would not do either), an
  INCONCLUSIVE at once, with one line that says why:
  "this machine's noise for the 16 KB stream is ±9.8 % per pair; 2.5 % needs
  ≈ 272 pairs (354 s), over the cap of 60 pairs (90 s)".

The probe may give up before its last A/A pair: after each kept pair from
the third on, the same test at the low end of the sd's one-sided
``EARLY_GIVE_UP`` (97.5 %) bound; three looks at 97.5, 97.5 and 90 % give
up on a machine that could resolve the margin at most about 15 % of the
time, the cost of which is an INCONCLUSIVE, never a verdict.  A machine far
too noisy (the 16 KB stream beside CPU hogs: ±24 % per pair against a 2.5 %
margin) is then told so after three pairs, not five.

The A/A pairs are measured exactly as the gate's pairs (the same workload,
interleaving, pinning and disturbance policy); only the arms are the same.
Pure logic here: the engine (engine.PairedComparison) runs the pairs.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace

from . import stats

#: Wilcoxon's (Hodges-Lehmann) interval is about 1/sqrt(0.955) = 1.023 wider than t's for normal data; 1.05
#: also covers the exact interval's discreteness at a few dozen pairs (as calibrate.what_would_meet)
WILCOXON_WIDTH = 1.05


#: the one-sided bound of the sd whose low end an early give-up (before the probe's last A/A pair) uses
EARLY_GIVE_UP = 0.975
#: the fewest A/A pairs a give-up may rest on
EARLY_PAIRS = 3

#: a look at the candidate beyond the threshold by more than this many A/A sds is a gross difference
GROSS_SDS = 4.0


@dataclass(frozen=True)
class ProbeSpec:
    """What a profile says about its probe (``probe:`` in profiles.yaml)."""

    pairs: int = 5  # A/A pairs measured before the gate (0: no probe)
    cap_pairs: int = 60  # the most pairs the engine may plan for the gate
    cap_seconds: float = 90.0  # the most wall-clock seconds the engine may plan for the gate
    power: float = 0.95  # the share of runs, at the reference or at twice the margin, that should decide

    @property
    def enabled(self) -> bool:
        return self.pairs > 0


def chi2_ppf(p: float, df: int) -> float:
    """Quantile of the chi-square distribution (Wilson-Hilferty; within 1 % for df >= 2 at the tails used)."""
    z = stats.normal_ppf(p)
    h = 2 / (9 * df)
    return df * (1 - h + z * math.sqrt(h)) ** 3


def sd_bounds(log_ratios: list[float], low: float = 0.90, high: float = 0.80) -> tuple[float, float, float]:
    """The sample sd of the log ratios, the low end of its one-sided ``low`` confidence bound and the high
    end of its one-sided ``high`` bound (normal data: (n-1) s^2 / sigma^2 ~ chi-square(n-1))."""
    n = len(log_ratios)
    if n < 2:
        return math.nan, math.nan, math.nan
    s = statistics.stdev(log_ratios)
    return s, s * math.sqrt((n - 1) / chi2_ppf(low, n - 1)), s * math.sqrt((n - 1) / chi2_ppf(1 - high, n - 1))


def pairs_needed(sd: float, gap: float, *, confidence: float, min_pairs: int, look_every: int,
                 power: float = 0.95) -> int:
    """Kept pairs for an interval on the mean log ratio to clear a threshold ``gap`` (in log units) from its
    centre in ``power`` of runs: n = ((z_look * 1.05 + z_power) * sd / gap)^2, where z_look is the
    per-look level of the planned looks up to n (Pocock, stats.per_look_confidence), found by iterating."""
    if sd <= 0 or math.isnan(sd):
        return min_pairs
    if gap <= 0:
        return math.inf
    z_power = stats.normal_ppf(power)
    n = min_pairs
    for _ in range(20):
        looks = max(1, (n - min_pairs) // max(1, look_every) + 1)
        conf = stats.per_look_confidence(confidence, looks)
        z = stats.normal_ppf(1 - (1 - conf) / 2)
        nxt = max(min_pairs, math.ceil(((z * WILCOXON_WIDTH + z_power) * sd / gap) ** 2))
        if nxt == n:
            break
        n = nxt
    return n


def gap_of(metric) -> float:
    """Log distance from a candidate at the metric's reference to its threshold (engine.Metric)."""
    if metric.higher_is_better:
        return math.log(metric.reference) - math.log(metric.threshold)
    return math.log(metric.threshold) - math.log(1 / metric.reference)


@dataclass
class Reading:
    """The probe's A/A pairs for one judged metric."""

    metric: str
    log_ratios: list[float]
    seconds_per_pair: float
    discarded: int = 0
    give_up_confidence: float = 0.90  # the one-sided bound whose low end the give-up test uses

    @property
    def sd(self) -> float:
        return sd_bounds(self.log_ratios)[0]

    @property
    def sd_low(self) -> float:
        return sd_bounds(self.log_ratios, low=self.give_up_confidence)[1]

    @property
    def sd_high(self) -> float:
        return sd_bounds(self.log_ratios)[2]

    def as_dict(self) -> dict:
        return {"metric": self.metric, "pairs": len(self.log_ratios), "discarded": self.discarded,
                "log_ratios": [round(x, 6) for x in self.log_ratios], "sd_log": _r(self.sd),
                "sd_log_low90": _r(self.sd_low), "sd_log_high80": _r(self.sd_high), "per_pair_pct": _r(pct(self.sd)),
                "seconds_per_pair": round(self.seconds_per_pair, 3)}


def pct(sd_log: float) -> float:
    """A per-pair sd of the log ratio as the +-percent it moves a ratio."""
    return (math.exp(sd_log) - 1) * 100 if not math.isnan(sd_log) else math.nan


@dataclass
class Plan:
    """What the probe decided: run with ``budget``, or stop now (``hopeless``) saying ``line``."""

    hopeless: bool
    line: str
    budget: object  # engine.Budget
    needed_pairs: float
    needed_seconds: float
    metric: str
    readings: list[Reading] = field(default_factory=list)
    probe_seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"hopeless": self.hopeless, "line": self.line, "metric": self.metric,
                "needed_pairs": None if math.isinf(self.needed_pairs) else self.needed_pairs,
                "needed_seconds": None if math.isinf(self.needed_seconds) else round(self.needed_seconds, 1),
                "planned": {"max_pairs": self.budget.max_pairs, "max_seconds": self.budget.max_seconds,
                            "look_every": self.budget.look_every, "looks": self.budget.looks()},
                "probe_seconds": round(self.probe_seconds, 2), "readings": [r.as_dict() for r in self.readings]}


def plan(readings: list[tuple[Reading, object]], spec: ProbeSpec, budget, *, confidence: float, what: str,
         probe_seconds: float = 0.0) -> Plan:
    """The budget for the gate from the probe's readings (each with its engine.Metric), or a hopeless plan.

    Per judged metric: the pairs needed at the measured sd (what the line says), at the high end of its
    80 % bound (the plan) and at the low end of its 90 % bound (the give-up test); the metric needing the
    most decides.  The planned budget is at least the profile's, at most the cap; the seconds follow from
    the probe's seconds per pair."""
    worst = None
    for rd, metric in readings:
        gap = gap_of(metric)
        kw = dict(confidence=confidence, min_pairs=budget.min_pairs, look_every=budget.look_every, power=spec.power)
        n = pairs_needed(rd.sd, gap, **kw)
        n_low = pairs_needed(rd.sd_low, gap, **kw)
        n_high = pairs_needed(rd.sd_high, gap, **kw)
        if worst is None or n > worst[1]:
            worst = (rd, n, n_low, n_high, metric)
    rd, n, n_low, n_high, metric = worst
    spp = max(rd.seconds_per_pair, 1e-3)
    margin = f"{metric.margin * 100:g} %"
    noise = f"this machine's noise for {what} is ±{pct(rd.sd):.1f} % per pair ({metric.name}, {len(rd.log_ratios)} A/A pairs)"
    cap = f"the cap of {spec.cap_pairs} pairs ({spec.cap_seconds:g} s)"
    if n_low > spec.cap_pairs or n_low * spp > spec.cap_seconds:
        low = ("" if n_low == n else f"; at least {_n(n_low)} even at the low end of the noise's "
               f"{rd.give_up_confidence * 100:g} % bound")
        line = (f"{noise}; {margin} needs ≈ {_n(n)} pairs ({_s(n * spp)}{low}), over {cap}: "
                f"INCONCLUSIVE without spending it")
        return Plan(True, line, budget, n, n * spp, metric.name, [r for r, _ in readings], probe_seconds)
    want = n_high
    blocks = math.ceil(max(0, want - budget.min_pairs) / max(1, budget.look_every))
    want = budget.min_pairs + blocks * max(1, budget.look_every)
    pairs = min(spec.cap_pairs, max(budget.max_pairs, want))
    seconds = min(spec.cap_seconds, max(budget.max_seconds, pairs * spp * 1.1))
    new = replace(budget, max_pairs=pairs, max_seconds=seconds)
    grown = "" if new == budget else f"; budget raised to {pairs} pairs / {seconds:.0f} s (cap {spec.cap_pairs} / {spec.cap_seconds:g})"
    line = f"{noise}; {margin} needs ≈ {_n(n)} pairs ({_s(n * spp)}){grown}"
    return Plan(False, line, new, n, n * spp, metric.name, [r for r, _ in readings], probe_seconds)


def _n(n: float) -> str:
    return "more than 10^6" if math.isinf(n) or n > 1e6 else f"{n:,}"


def _s(secs: float) -> str:
    if math.isinf(secs) or secs > 1e6:
        return "forever"
    return f"{secs:.0f} s" if secs < 600 else f"{secs / 60:.0f} min"


def _r(x: float):
    return None if x is None or math.isnan(x) or math.isinf(x) else round(x, 5)


def gross(plan: Plan, looks: dict[str, float], metrics: list, spec: ProbeSpec, budget, *,
          confidence: float) -> Plan:
    """A hopeless ``plan`` reconsidered after one pair of the real arms (``looks``: metric -> its log ratio):
    when some judged metric is beyond its threshold by more than GROSS_SDS of its A/A sd, the gate goes on,
    planned to resolve half that distance, up to the cap (the cap itself when that distance would want more);
    otherwise the plan stays hopeless."""
    readings = {r.metric: r for r in plan.readings}
    for m in metrics:
        d, rd = looks.get(m.name), readings.get(m.name)
        if d is None or rd is None or math.isnan(rd.sd):
            continue
        thr = math.log(m.threshold)
        beyond = (thr - d) if m.higher_is_better else (d - thr)
        if beyond <= GROSS_SDS * rd.sd:
            continue
        n = pairs_needed(rd.sd_high, beyond / 2, confidence=confidence, min_pairs=budget.min_pairs,
                         look_every=budget.look_every, power=spec.power)
        spp = max(rd.seconds_per_pair, 1e-3)
        # a gross difference is worth the cap even when the high end of the noise's bound would want more: the
        # give-up only saves a budget, the verdict rests on the gate's own interval either way (the storage
        # offload gates beside other labs: A/A +-52 % per pair from 3 pairs, the handicap 0.126 x, 4.9 sds,
        # wanted 14 pairs of a 12-pair cap and gave up; their 8 pairs of that handicap FAIL)
        pairs = max(budget.max_pairs, min(spec.cap_pairs, n))
        new = replace(budget, max_pairs=pairs, max_seconds=min(spec.cap_seconds, max(budget.max_seconds, pairs * spp * 1.1)))
        over = "" if n <= spec.cap_pairs and n * spp <= spec.cap_seconds else f" (the cap; ≈ {_n(n)} at the noise's high end)"
        line = (f"{plan.line.split(': INCONCLUSIVE')[0]}; but one pair of the real arms gives {m.name} "
                f"{math.exp(d):.3f} x, {beyond / rd.sd:.0f} A/A sds beyond the threshold {m.threshold:.3f}: a gross "
                f"difference, judged in up to {pairs} pairs{over}")
        return Plan(False, line, new, plan.needed_pairs, plan.needed_seconds, plan.metric, plan.readings,
                    plan.probe_seconds)
    first = {m.name: looks.get(m.name) for m in metrics if looks.get(m.name) is not None}
    look = ", ".join(f"{k} {math.exp(v):.3f} x" for k, v in first.items())
    line = plan.line.replace(": INCONCLUSIVE without spending it",
                             f" (one pair of the real arms: {look or 'no figure'}, no gross difference): "
                             "INCONCLUSIVE without spending it")
    return replace(plan, line=line)
