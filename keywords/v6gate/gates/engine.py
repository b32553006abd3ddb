"""The gate engine: paired, interleaved trials with an adaptive stop.

Paired comparison (``PairedComparison``): trials run in pairs, one of each
arm (baseline A: IPv4, offload off, no extension header; candidate B: IPv6,
offload on, with the header), order-balanced: the kept pairs alternate AB,
BA, AB, ... (ABBA blocks; which comes first is drawn at random), so slow
drifts of a shared machine and any first-trial advantage hit both arms
alike.  Each pair gives one ratio B/A per metric; the interval on the ratio
(stats.py, method named in the gate's profile) decides at planned looks:
after ``min_pairs`` and then after every ``look_every`` pairs up to
``max_pairs``.  Each look uses a wider interval than the stated confidence
(Pocock's constant boundary for that many looks, stats.per_look_confidence),
so looking again and again does not spend more than the stated error rate:

* higher is better (throughput, transactions/s), margin m:
  PASS when the interval's low end >= 1 - m (non-inferiority: B faster is fine),
  FAIL when its high end < 1 - m;
* lower is better (latency, CPU per unit): the direction flips,
  PASS when the high end <= 1 + m, FAIL when the low end > 1 + m;
* INCONCLUSIVE when the budget (pairs, seconds) runs out in between.

The gate stops at the first FAIL of any judged metric, or when every judged
metric PASSes.  Metrics the profile lists under ``report`` (the CPU cost
next to a judged rate, or the rate next to a judged cost) get the same
series and interval in the record but do not decide; ``decided_by`` names
the metrics the verdict rests on.  A trial whose steal (or a pair whose foreign CPU load is
lopsided between its two trials) passes the profile's thresholds is
discarded with its pair and repeated; the count is reported.

Noise probe (``probe``, gates/noise.py): before its first pair a paired
gate may measure a few A/A pairs (the baseline arm against itself) and plan
from their spread: a larger budget, up to the profile's cap, when the noise
needs it, or INCONCLUSIVE at once, with one line, when even the cap cannot
resolve the margin on this machine.

An arm that produced nothing (``nothing``): a candidate whose rate is 0 (or
the workloads' FLOOR) or whose cost or time is infinite moved nothing, and
that pair's log ratio is the worst there is (``WORST_LOG_RATIO``: counted,
never dropped), so a dead IPv6 path FAILs, and the reason leads with it
("IPv6 moved nothing (throughput 0 MB/s) in 6 of 6 pairs while IPv4 moved a
median 812 MB/s").  A baseline that produced nothing is the bench's problem
(the comparison has nothing to compare against): BaselineDead, an ERROR,
never the candidate's FAIL.  A figure that is missing or NaN was not
measured: that pair is left out of the metric's series and counted.

One-sample gate (``TargetComparison``): a time (RA to usable address, NS to
NA, ...) against a stated target, judged on a quantile's distribution-free
interval the same way (lower is better).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import BenchError
from . import disturbance as D
from . import noise, stats

#: a rate at or below this, or a cost/time at or above its inverse, is "nothing" (the workloads' FLOOR is 1e-9)
NOTHING = 1e-9
#: the log ratio of a pair whose candidate produced nothing: beyond any measured ratio (1e-9 x, or 1e9 x for a
#: cost), finite so that every interval method (t, bootstrap, Wilcoxon) takes it; a rank to Wilcoxon
WORST_LOG_RATIO = math.log(1e9)


class BaselineDead(BenchError):
    """The baseline arm of a pair produced nothing: the bench cannot compare against it (ERROR, not a FAIL)."""


def produced_nothing(v: float | None, higher_is_better: bool) -> bool:
    """Whether one arm's figure says it produced nothing: a rate of 0 (or FLOOR), a cost or time of inf."""
    if v is None or math.isnan(v):
        return False
    return v <= NOTHING if higher_is_better else v >= 1 / NOTHING


def pair_log_ratio(va: float | None, vb: float | None, higher_is_better: bool) -> tuple[float | None, str]:
    """One pair's log ratio ln(B/A) and what it is: ``measured``; ``candidate nothing`` (the worst ratio:
    -WORST_LOG_RATIO for a rate, +WORST_LOG_RATIO for a cost or time); ``baseline nothing`` (None: the bench);
    ``unmeasured`` (None: a figure missing, NaN, an infinite rate or a cost of 0, left out)."""
    if va is None or vb is None or math.isnan(va) or math.isnan(vb):
        return None, "unmeasured"
    if produced_nothing(va, higher_is_better):
        return None, "baseline nothing"
    if higher_is_better and (math.isinf(va) or math.isinf(vb)):
        return None, "unmeasured"  # an infinite rate is not a measurement
    if not higher_is_better and (va <= 0 or vb <= 0):
        return None, "unmeasured"  # a cost of 0: nothing measured of it
    if produced_nothing(vb, higher_is_better):
        return (-WORST_LOG_RATIO if higher_is_better else WORST_LOG_RATIO), "candidate nothing"
    return max(-WORST_LOG_RATIO, min(WORST_LOG_RATIO, math.log(vb / va))), "measured"


_LABEL = {"v4": "IPv4", "v6": "IPv6"}


def arm_words(arm: str) -> str:
    return _LABEL.get(arm, f"the {arm!r} arm")


def _did(metric: Metric) -> str:
    if metric.higher_is_better:
        return {"throughput": "moved nothing", "transactions": "completed no transaction"}.get(
            metric.name, f"gave {metric.name} 0")
    return f"never completed ({metric.name} unbounded)"


def _amount(metric: Metric, trials: list[Trial]) -> str:
    """What the baseline moved in those trials: the rate's total where its unit is per second (MB/s: MB)."""
    vals = [t.values[metric.name] for t in trials]
    med = stats.median(vals)
    what = "moved" if metric.name == "throughput" else "gave"
    line = f"{what} a median {med:.4g} {metric.unit}"
    if metric.unit.endswith("/s"):
        total = sum(t.values[metric.name] * t.traffic_s for t in trials)
        line += f" ({total:,.4g} {metric.unit[:-2]} in the same pairs)"
    return line


def _candidate_detail(trials: list[Trial]) -> str:
    """What the candidate's trials say they did (the workload's raw figures): bytes, empty slices, the error."""
    raw = [t.raw or {} for t in trials]
    bits = []
    moved = [r.get("bytes_rx", 0) + r.get("bytes_tx", 0) if "bytes_rx" in r else r.get("bytes") for r in raw]
    if all(isinstance(b, int | float) for b in moved):
        bits.append(f"{int(sum(moved)):,} bytes")  # type: ignore[arg-type]
    slices = [r.get("slices") for r in raw]
    idle = [r.get("idle_slices") for r in raw]
    if all(isinstance(x, int) for x in slices + idle):
        bits[-1:] = [f"{bits[-1] if bits else 'nothing'} in {sum(idle)} of {sum(slices)} slices that moved nothing"]
    errors = sorted({str(r["error"]) for r in raw if r.get("error")})
    if errors:
        bits.append("; ".join(errors[:2]))
    return f": {'; '.join(bits)}" if bits else ""


def nothing_report(metric: Metric, arms: tuple[str, ...], kept: list[tuple[Trial, Trial]],
                   bounds: dict | None = None) -> dict | None:
    """The pairs of ``kept`` whose candidate produced nothing for ``metric``, with the line that leads the
    gate's reason ("IPv6 moved nothing (throughput) in 6 of 6 pairs: 0 bytes ... while IPv4 moved a median
    812 MB/s ..."), or None when every candidate produced something."""
    dead = [(a, b) for a, b in kept
            if pair_log_ratio(a.values.get(metric.name), b.values.get(metric.name), metric.higher_is_better)[1]
            == "candidate nothing"]
    if not dead:
        return None
    line = (f"{arm_words(arms[1])} {_did(metric)} in {len(dead)} of {len(kept)} pairs"
            f"{_candidate_detail([b for _, b in dead])}, while {arm_words(arms[0])} "
            f"{_amount(metric, [a for a, _ in dead])}")
    out = {"metric": metric.name, "pairs": len(dead), "of": len(kept), "line": line}
    if bounds is not None:
        out["bounds"] = {k: round(v, 6) if isinstance(v, float) else v for k, v in bounds.items()}
        out["line"] += (f" (over all its time {arm_words(arms[1])}'s {metric.name} is {bounds['rate_low']:.3f} to "
                        f"{bounds['rate_high']:.3f} x {arm_words(arms[0])}'s: dead in {bounds['share_low'] * 100:.0f} to "
                        f"{bounds['share_high'] * 100:.0f} % of its pairs, {bounds['live_low']:.3f} to "
                        f"{bounds['live_high']:.3f} x in the others)")
    return out


def dead_share_bounds(d: list[float], metric: Metric, method: str, confidence: float) -> dict | None:
    """For a rate whose candidate moved nothing in some pairs (log ratio -WORST_LOG_RATIO) and something in the
    others: bounds on the candidate's rate over all its time against the baseline's.  A rank interval (Wilcoxon)
    takes a minority of dead pairs as outliers and centres on the live ones (a candidate dead in 10 of 40
    pairs read 0.974 [0.000, 1.003]); but over its time the candidate moved (1 - dead share) x its live ratio.
    So: the dead share's Clopper-Pearson interval [p_low, p_high] and the live pairs' interval [L, U], each at
    ``confidence``; the rate is at most (1 - p_low) x U and at least (1 - p_high) x L.  The gate FAILs when the
    first is below the threshold, and may PASS only when the second is at or above it as well.  None when no
    pair, or every pair, is dead (every pair dead: the ordinary interval is the worst ratio and FAILs)."""
    if not metric.higher_is_better:
        return None  # a cost or a time that never ended is unbounded: the worst ratio decides as it is
    k = sum(1 for x in d if x <= -WORST_LOG_RATIO)
    live = [x for x in d if x > -WORST_LOG_RATIO]
    if not k or not live:
        return None
    iv = stats.ratio_interval(live, method, confidence)
    p_low, p_high = stats.binomial_bounds(k, len(d), confidence)
    return {"dead": k, "of": len(d), "share_low": p_low, "share_high": p_high, "live_low": iv.low,
            "live_high": iv.high, "rate_low": (1 - p_high) * iv.low, "rate_high": (1 - p_low) * iv.high}


def dead_baseline(metrics: list[Metric], arms: tuple[str, ...], trials: list[Trial]) -> str | None:
    """Why the bench cannot compare against this pair's (or A/A pair's) baseline trials, or None: a judged metric
    whose baseline figure says it produced nothing."""
    for m in metrics:
        if not m.judged:
            continue
        for t in trials:
            if t.arm == arms[0] and produced_nothing(t.values.get(m.name), m.higher_is_better):
                err = (t.raw or {}).get("error")
                return (f"the baseline arm ({arm_words(arms[0])}) produced nothing in pair {t.pair} ({m.name} "
                        f"{t.values.get(m.name):.4g} {m.unit}{'; ' + str(err) if err else ''}): the bench cannot "
                        "compare against it")
    return None


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    higher_is_better: bool
    margin: float = 0.03
    target: float | None = None  # one-sample gates: the stated target (same unit)
    quantile: float = 0.5  # one-sample gates: which quantile is judged
    judged: bool = True  # False: measured and reported with its interval, not deciding
    #: the ratio a stack that costs IPv6 nothing more than IPv4 shows (1: none); the margin applies to it:
    #: higher-is-better ratio >= reference x (1 - margin), lower-is-better <= (1 + margin) / reference
    reference: float = 1.0
    reference_why: str = ""

    @property
    def threshold(self) -> float:
        if self.target is not None:
            return self.target
        return self.reference * (1 - self.margin) if self.higher_is_better else (1 + self.margin) / self.reference

    def describe_threshold(self, arms: tuple[str, ...] = ()) -> str:
        if self.target is not None:
            q = "median" if self.quantile == 0.5 else f"p{round(self.quantile * 100)}"
            return f"{q} {'>=' if self.higher_is_better else '<='} {self.target:g} {self.unit}"
        b, a = (arms[1], arms[0]) if len(arms) >= 2 else ("B", "A")
        op = ">=" if self.higher_is_better else "<="
        if self.reference != 1.0:
            return (f"{b}/{a} {self.name} ratio {op} {self.threshold:.3f} (margin {self.margin * 100:g}% of the "
                    f"reference {self.reference:.4f}: {self.reference_why})")
        return f"{b}/{a} {self.name} ratio {op} {self.threshold:.3f} (margin {self.margin * 100:g}%)"


@dataclass(frozen=True)
class Budget:
    min_pairs: int = 6
    max_pairs: int = 30
    max_seconds: float = 120.0
    max_discarded: int = 20
    look_every: int = 2  # pairs between planned looks after min_pairs (2: whole ABBA blocks)

    def looks(self) -> int:
        """How many planned looks fit between min_pairs and max_pairs."""
        return (self.max_pairs - self.min_pairs) // max(1, self.look_every) + 1

    def is_look(self, pairs: int) -> bool:
        return pairs >= self.min_pairs and ((pairs - self.min_pairs) % max(1, self.look_every) == 0
                                            or pairs >= self.max_pairs)


@dataclass(frozen=True)
class DisturbancePolicy:
    max_steal_fraction: float = 0.10  # of the machine's capacity during one trial (a burst)
    max_steal_gap: float = 0.03  # |steal_A - steal_B| of a pair (steal that hit one arm only)
    max_foreign_gap: float = 0.35  # |foreign_A - foreign_B| of a pair, as a share of capacity
    enabled: bool = True

    def verdict(self, trials: list[Trial]) -> str | None:
        """Why this pair (or single trial) must be discarded, or None."""
        if not self.enabled:
            return None
        ds = [t.disturbance for t in trials if t.disturbance is not None]
        for t in trials:
            if t.disturbance and t.disturbance.steal_fraction > self.max_steal_fraction:
                return (f"steal {t.disturbance.steal_fraction * 100:.1f}% of capacity in the {t.arm} trial "
                        f"(limit {self.max_steal_fraction * 100:g}%)")
        if len(ds) == 2 and abs(ds[0].steal_fraction - ds[1].steal_fraction) > self.max_steal_gap:
            return (f"steal {ds[0].steal_fraction * 100:.1f}% vs {ds[1].steal_fraction * 100:.1f}% of capacity in "
                    f"the two trials (gap limit {self.max_steal_gap * 100:g}%)")
        if len(ds) == 2 and abs(ds[0].foreign_fraction - ds[1].foreign_fraction) > self.max_foreign_gap:
            return (f"other load {ds[0].foreign_fraction * 100:.0f}% vs {ds[1].foreign_fraction * 100:.0f}% of "
                    f"capacity in the two trials (gap limit {self.max_foreign_gap * 100:g}%)")
        return None


@dataclass
class Measure:
    """What one workload trial returns."""

    values: dict[str, float]
    traffic_s: float
    workload_cpu_s: float = 0.0
    raw: dict = field(default_factory=dict)


@dataclass
class Trial:
    arm: str
    pair: int
    position: int
    values: dict[str, float]
    traffic_s: float
    disturbance: D.Disturbance | None
    raw: dict
    discarded: str | None = None

    def as_dict(self) -> dict:
        return {"arm": self.arm, "pair": self.pair, "position": self.position,
                "values": {k: _r(v) for k, v in self.values.items()}, "traffic_s": round(self.traffic_s, 3),
                "disturbance": self.disturbance.as_dict() if self.disturbance else None,
                "discarded": self.discarded, "raw": self.raw}


@dataclass
class MetricState:
    metric: Metric
    interval: stats.Interval | None = None
    status: str | None = None  # PASS / FAIL / None

    def as_dict(self, arms=()) -> dict:
        iv = self.interval
        out = {"unit": self.metric.unit, "higher_is_better": self.metric.higher_is_better,
               "judged": self.metric.judged, "margin": self.metric.margin, "threshold": self.metric.threshold, "target": self.metric.target,
               "reference": self.metric.reference,
               "rule": self.metric.describe_threshold(tuple(arms)),
               "status": (self.status or "undecided") if self.metric.judged else "reported"}
        if iv is not None:
            out["interval"] = {k: _r(v) for k, v in iv.as_dict().items()}
            if self.metric.target is None:
                out["delta_pct"] = {"estimate": _pct(iv.estimate), "low": _pct(iv.low), "high": _pct(iv.high)}
        return out


@dataclass
class GateDecision:
    verdict: str  # PASS / FAIL / INCONCLUSIVE
    why: str
    metrics: dict[str, MetricState]
    trials: list[Trial]
    arms: tuple[str, ...]
    kept_pairs: int
    discarded: int
    traffic_s: float
    wall_s: float
    stop: str
    method: str
    confidence: float
    per_look_confidence: float | None = None
    looks: int = 1
    order: dict | None = None  # paired: how many kept pairs ran in each order
    probe: dict | None = None  # paired: the noise probe's A/A pairs and the plan made from them (noise.Plan)
    #: per metric: paired, the pairs whose candidate produced nothing (nothing_report); target, the trials that gave
    #: no figure; each with the line that leads the reason
    nothing: dict | None = None

    @property
    def decided_by(self) -> list[str]:
        """The judged metrics the verdict rests on: the FAILing ones, or every judged one for a PASS."""
        judged = {k: m for k, m in self.metrics.items() if m.metric.judged}
        if self.verdict == "FAIL":
            return [k for k, m in judged.items() if m.status == "FAIL"]
        return list(judged) if self.verdict == "PASS" else []

    def as_dict(self) -> dict:
        return {
            "verdict": self.verdict, "decided_by": self.decided_by, "stop": self.stop, "arms": list(self.arms),
            "method": self.method, "confidence": self.confidence,
            "per_look_confidence": None if self.per_look_confidence is None else round(self.per_look_confidence, 5),
            "looks_planned": self.looks, "order": self.order, "kept": self.kept_pairs, "discarded": self.discarded,
            "traffic_s": round(self.traffic_s, 2), "wall_s": round(self.wall_s, 2),
            "metrics": {k: m.as_dict(self.arms) for k, m in self.metrics.items()},
            "trials": [t.as_dict() for t in self.trials], "probe": self.probe, "nothing": self.nothing,
        }

    def _looks_words(self) -> str:
        if self.looks <= 1 or self.per_look_confidence is None:
            return ""
        return f", {self.per_look_confidence * 100:.1f}% at each of up to {self.looks} looks"

    def summary(self) -> str:
        parts = []
        for name, st in self.metrics.items():
            iv = st.interval
            if iv is None:
                parts.append(f"{name}: no interval")
                continue
            m = st.metric
            if m.target is None:
                parts.append(f"{self.arms[1]}/{self.arms[0]} {name} ratio {_fmt(iv.estimate)} "
                             f"[{_fmt(iv.low)}, {_fmt(iv.high)}] (delta {_pct_s(iv.estimate)} "
                             f"[{_pct_s(iv.low)}, {_pct_s(iv.high)}]) vs {'>=' if m.higher_is_better else '<='} "
                             f"{m.threshold:.3f}: {(st.status or 'undecided') if m.judged else 'reported'}")
            else:
                q = "median" if m.quantile == 0.5 else f"p{round(m.quantile * 100)}"
                parts.append(f"{name} {q} {_fmt(iv.estimate, '.4g')} {m.unit} [{_fmt(iv.low)}, "
                             f"{_fmt(iv.high)}] vs target {'>=' if m.higher_is_better else '<='} {m.target:g} "
                             f"{m.unit}: {st.status or 'undecided'}")
        unit = "pairs" if len(self.arms) == 2 else "trials"
        probe = f"; noise probe: {self.probe['line']}" if self.probe else ""
        lead = "".join(f"{d['line']}; " for d in (self.nothing or {}).values())
        return (f"{lead}{'; '.join(parts)}; {self.kept_pairs} {unit} kept, {self.discarded} discarded as disturbed, "
                f"{self.traffic_s:.1f} s of traffic ({self.confidence * 100:g}% {self.method} interval"
                f"{self._looks_words()}; "
                f"stopped: {self.stop}){probe}")


def _r(v):
    if isinstance(v, float):
        if math.isinf(v) or math.isnan(v):
            return None
        return round(v, 6)
    return v


def _pct(x: float) -> float | None:
    if x is None or math.isnan(x) or math.isinf(x):
        return None
    return round((x - 1) * 100, 3)


def _pct_s(x: float) -> str:
    p = _pct(x)
    return "unbounded" if p is None or x >= 1 / NOTHING else f"{p:+.1f}%"


def _fmt(x: float, spec: str = ".3f") -> str:
    """A figure or a ratio for the reason; a ratio at the worst there is (a cost of a candidate that completed
    nothing, 1e9 x) is unbounded."""
    return "unbounded" if math.isinf(x) or math.isnan(x) or x >= 1 / NOTHING else format(x, spec)


Monitor = Callable[[], D.CpuSnapshot]


class PairedComparison:
    def __init__(self, *, arms: tuple[str, str], metrics: list[Metric], measure: Callable[[str], Measure],
                 budget: Budget = Budget(), policy: DisturbancePolicy = DisturbancePolicy(),
                 method: str = "wilcoxon", confidence: float = 0.95, rng: random.Random | None = None,
                 monitor: Monitor = D.snapshot, clock: Callable[[], float] = time.monotonic,
                 on_trial: Callable[[Trial], None] | None = None, should_stop: Callable[[], str | None] | None = None,
                 measure_pair: Callable[[tuple[str, str]], tuple[Measure, Measure]] | None = None,
                 probe: noise.ProbeSpec | None = None, what: str = "this workload"):
        """``measure_pair`` (optional): one call measures both arms of a pair inside the same seconds
        (finely alternated, ``order`` says which arm goes first); it returns their Measures in
        ``order``.  Without it the two arms are two trials one after the other (``measure``).
        ``probe``: measure ``probe.pairs`` A/A pairs of the baseline arm first and plan from them
        (gates/noise.py); ``what`` names the workload in its line ("the 16 KB stream")."""
        if len(arms) != 2:
            raise ValueError("a paired comparison has exactly two arms (baseline, candidate)")
        if method not in stats.METHODS:
            raise ValueError(f"unknown interval method {method!r}; use one of {stats.METHODS}")
        self.arms = tuple(arms)
        self.metrics = metrics
        self.measure = measure
        self.budget = budget
        self.policy = policy
        self.method = method
        self.confidence = confidence
        self.rng = rng or random.Random()
        self.monitor = monitor
        self.clock = clock
        self.on_trial = on_trial
        self.should_stop = should_stop
        self.measure_pair = measure_pair
        self.probe = probe
        self.what = what

    def _pair(self, order: list[str], pair: int) -> list[Trial]:
        if self.measure_pair is None:
            return [self._trial(arm, pair, pos) for pos, arm in enumerate(order)]
        a = self.monitor()
        ms = self.measure_pair(tuple(order))
        b = self.monitor()
        dist = D.between(a, b, sum(m.workload_cpu_s for m in ms))
        return [Trial(arm, pair, pos, dict(m.values), m.traffic_s, dist, dict(m.raw))
                for pos, (arm, m) in enumerate(zip(order, ms))]

    def _trial(self, arm: str, pair: int, position: int) -> Trial:
        a = self.monitor()
        m = self.measure(arm)
        b = self.monitor()
        dist = D.between(a, b, m.workload_cpu_s)
        t = Trial(arm, pair, position, dict(m.values), m.traffic_s, dist, dict(m.raw))
        return t

    def log_ratios(self, kept: list[tuple[Trial, Trial]], metric: str) -> list[float]:
        """The pairs' log ratios for ``metric``: a candidate that produced nothing counts as the worst ratio;
        a figure not measured leaves its pair out (pair_log_ratio)."""
        hib = next((m.higher_is_better for m in self.metrics if m.name == metric), True)
        out = []
        for a, b in kept:
            d, _ = pair_log_ratio(a.values.get(metric), b.values.get(metric), hib)
            if d is not None:
                out.append(d)
        return out

    @property
    def look_confidence(self) -> float:
        return stats.per_look_confidence(self.confidence, self.budget.looks())

    def evaluate(self, kept: list[tuple[Trial, Trial]]) -> dict[str, MetricState]:
        states = {}
        for m in self.metrics:
            d = self.log_ratios(kept, m.name)
            iv = stats.ratio_interval(d, self.method, self.look_confidence) if d else None
            status = None
            if m.judged and iv is not None and len(d) >= self.budget.min_pairs:
                status = stats.decide(iv.low, iv.high, m.threshold, m.higher_is_better)
                if (b := dead_share_bounds(d, m, self.method, self.look_confidence)) is not None:
                    status = "FAIL" if status == "FAIL" or b["rate_high"] < m.threshold else (
                        "PASS" if status == "PASS" and b["rate_low"] >= m.threshold else None)
            states[m.name] = MetricState(m, iv, status)
        return states

    def noise_probe(self) -> noise.Plan:
        """``probe.pairs`` kept A/A pairs (the baseline arm twice, measured as the gate's pairs, the
        disturbance policy applied; at most twice as many attempts) and the plan made from them."""
        spec = self.probe
        base = self.arms[0]
        judged = [m for m in self.metrics if m.judged]
        t0 = self.clock()
        logs: dict[str, list[float]] = {m.name: [] for m in judged}
        kept = attempts = discarded = 0
        why = None
        early = None
        while kept < spec.pairs and attempts < 2 * spec.pairs:
            done = self._pair([base, base], -1 - attempts)
            attempts += 1
            if dead := dead_baseline(self.metrics, self.arms, done):
                raise BaselineDead(f"noise probe: {dead}")
            why = self.policy.verdict(done)
            for t in done:
                t.discarded = why
                if self.on_trial:
                    self.on_trial(t)
            if why:
                discarded += 1
                continue
            kept += 1
            for m in judged:
                d, _ = pair_log_ratio(done[0].values.get(m.name), done[1].values.get(m.name), m.higher_is_better)
                if d is not None:
                    logs[m.name].append(d)
            if noise.EARLY_PAIRS <= kept < spec.pairs and all(len(v) >= noise.EARLY_PAIRS for v in logs.values()):
                spp = (self.clock() - t0) / attempts
                look = [(noise.Reading(m.name, list(logs[m.name]), spp, discarded, noise.EARLY_GIVE_UP), m)
                        for m in judged]
                early = noise.plan(look, spec, self.budget, confidence=self.confidence, what=self.what)
                if early.hopeless:  # already hopeless on a cautious reading: no more A/A pairs
                    break
                early = None
        secs = self.clock() - t0
        spp = secs / max(1, attempts)
        readings = [(noise.Reading(m.name, logs[m.name], spp, discarded,
                                   noise.EARLY_GIVE_UP if early else 0.90), m) for m in judged]
        if kept < 3 or any(len(r.log_ratios) < 3 for r, _ in readings):
            line = (f"the noise probe kept {kept} of {attempts} A/A pairs of {self.what} (the others were "
                    f"discarded: {why or 'no usable figures'}): this machine is too disturbed to plan the gate: "
                    "INCONCLUSIVE without spending its budget")
            return noise.Plan(True, line, self.budget, math.inf, math.inf, judged[0].name,
                              [r for r, _ in readings], secs)
        plan = noise.plan(readings, spec, self.budget, confidence=self.confidence, what=self.what,
                          probe_seconds=secs)
        if plan.hopeless:  # one look at the real arms: a gross difference is judged even on a noisy machine
            done = self._pair(list(self.arms), -1 - attempts)
            for t in done:
                if self.on_trial:
                    self.on_trial(t)
            if dead := dead_baseline(self.metrics, self.arms, done):
                raise BaselineDead(dead)
            looks = {}
            for m in judged:
                d, _ = pair_log_ratio(done[0].values.get(m.name), done[1].values.get(m.name), m.higher_is_better)
                if d is not None:  # a candidate that produced nothing: the worst ratio, a gross difference
                    looks[m.name] = d
            plan = noise.gross(plan, looks, judged, spec, self.budget, confidence=self.confidence)
            plan.probe_seconds = self.clock() - t0
        return plan

    def run(self) -> GateDecision:
        plan = self.noise_probe() if self.probe is not None and self.probe.enabled else None
        if plan is not None and plan.hopeless:
            dec = GateDecision("INCONCLUSIVE", plan.line, self.evaluate([]), [], self.arms, 0, 0, 0.0,
                               plan.probe_seconds, plan.line, self.method, self.confidence, self.look_confidence,
                               self.budget.looks(), {f"{self.arms[0]} first": 0, f"{self.arms[1]} first": 0},
                               plan.as_dict())
            return dec
        if plan is not None:
            self.budget = plan.budget
        t0 = self.clock()
        trials: list[Trial] = []
        kept: list[tuple[Trial, Trial]] = []
        discarded = 0
        traffic = 0.0
        pair = 0
        stop = ""
        first = tuple(self.arms) if self.rng.random() < 0.5 else tuple(reversed(self.arms))
        states = self.evaluate(kept)
        while True:
            if len(kept) >= self.budget.max_pairs:
                stop = f"pair budget ({self.budget.max_pairs}) spent"
                break
            if self.clock() - t0 >= self.budget.max_seconds:
                stop = f"time budget ({self.budget.max_seconds:g} s) spent"
                break
            if discarded > self.budget.max_discarded:
                stop = f"more than {self.budget.max_discarded} pairs discarded as disturbed"
                break
            if self.should_stop and (why := self.should_stop()):
                stop = why
                break
            order = list(first) if len(kept) % 2 == 0 else list(reversed(first))
            done = self._pair(order, pair)
            for t in done:
                traffic += t.traffic_s
                trials.append(t)
            if dead := dead_baseline(self.metrics, self.arms, done):
                for t in done:
                    if self.on_trial:
                        self.on_trial(t)
                raise BaselineDead(dead)
            why = self.policy.verdict(done)
            if why:
                for t in done:
                    t.discarded = why
                discarded += 1
            else:
                by_arm = {t.arm: t for t in done}
                kept.append((by_arm[self.arms[0]], by_arm[self.arms[1]]))
            for t in done:
                if self.on_trial:
                    self.on_trial(t)
            pair += 1
            if why or not self.budget.is_look(len(kept)):
                continue
            states = self.evaluate(kept)
            st = [s.status for s in states.values() if s.metric.judged]
            if "FAIL" in st:
                failing = [k for k, s in states.items() if s.status == "FAIL"]
                stop = f"{', '.join(failing)} decided FAIL after {len(kept)} pairs"
                break
            if st and all(s == "PASS" for s in st):
                stop = f"every judged metric decided PASS after {len(kept)} pairs"
                break
        if self.budget.is_look(len(kept)):
            states = self.evaluate(kept)  # the last look (a budget that ran out between looks keeps the one before)
        st = [s.status for s in states.values() if s.metric.judged]
        verdict = "FAIL" if "FAIL" in st else "PASS" if st and all(s == "PASS" for s in st) else "INCONCLUSIVE"
        ab = sum(1 for a, b in kept if a.position == 0)
        nothing = {m.name: r for m in self.metrics if m.judged and (r := nothing_report(
            m, self.arms, kept, dead_share_bounds(self.log_ratios(kept, m.name), m, self.method,
                                                  self.look_confidence)))}
        dec = GateDecision(verdict, "", states, trials, self.arms, len(kept), discarded, traffic,
                           self.clock() - t0, stop, self.method, self.confidence, self.look_confidence,
                           self.budget.looks(), {f"{self.arms[0]} first": ab, f"{self.arms[1]} first": len(kept) - ab},
                           plan.as_dict() if plan else None, nothing or None)
        dec.why = dec.summary()
        return dec


def target_sample(kept: list[Trial], metric: str) -> list[float]:
    """A target gate's figures for ``metric``: a time that never came (inf, as a workload that waited forever
    would say) is kept, the slowest sample there is; a figure missing or NaN was not measured and is left out
    (``unmeasured`` counts them)."""
    return [v for t in kept if (v := t.values.get(metric)) is not None and not math.isnan(v)]


def unmeasured(kept: list[Trial], metric: str) -> int:
    return sum(1 for t in kept if (v := t.values.get(metric)) is None or math.isnan(v))


class TargetComparison:
    """One arm, each trial one sample; the metric's quantile interval against its target."""

    def __init__(self, *, arm: str, metrics: list[Metric], measure: Callable[[str], Measure],
                 budget: Budget = Budget(), policy: DisturbancePolicy = DisturbancePolicy(),
                 confidence: float = 0.95, monitor: Monitor = D.snapshot,
                 clock: Callable[[], float] = time.monotonic, on_trial: Callable[[Trial], None] | None = None):
        for m in metrics:
            if m.target is None:
                raise ValueError(f"metric {m.name}: a target comparison needs a target")
        self.arm = arm
        self.metrics = metrics
        self.measure = measure
        self.budget = budget
        self.policy = policy
        self.confidence = confidence
        self.monitor = monitor
        self.clock = clock
        self.on_trial = on_trial

    def evaluate(self, kept: list[Trial]) -> dict[str, MetricState]:
        states = {}
        for m in self.metrics:
            xs = target_sample(kept, m.name)
            iv = stats.quantile_interval(xs, m.quantile, self.confidence) if xs else None
            status = None
            if iv is not None and len(xs) >= self.budget.min_pairs:
                status = stats.decide(iv.low, iv.high, m.target, m.higher_is_better)
            states[m.name] = MetricState(m, iv, status)
        return states

    def run(self) -> GateDecision:
        t0 = self.clock()
        trials: list[Trial] = []
        kept: list[Trial] = []
        discarded = 0
        traffic = 0.0
        stop = ""
        i = 0
        while True:
            if len(kept) >= self.budget.max_pairs:
                stop = f"trial budget ({self.budget.max_pairs}) spent"
                break
            if self.clock() - t0 >= self.budget.max_seconds:
                stop = f"time budget ({self.budget.max_seconds:g} s) spent"
                break
            if discarded > self.budget.max_discarded:
                stop = f"more than {self.budget.max_discarded} trials discarded as disturbed"
                break
            a = self.monitor()
            m = self.measure(self.arm)
            b = self.monitor()
            t = Trial(self.arm, i, 0, dict(m.values), m.traffic_s, D.between(a, b, m.workload_cpu_s), dict(m.raw))
            i += 1
            trials.append(t)
            traffic += t.traffic_s
            why = self.policy.verdict([t])
            if why:
                t.discarded = why
                discarded += 1
            else:
                kept.append(t)
            if self.on_trial:
                self.on_trial(t)
            if why:
                continue
            st = [s.status for s in self.evaluate(kept).values()]
            if "FAIL" in st:
                stop = f"decided FAIL after {len(kept)} trials"
                break
            if st and all(s == "PASS" for s in st):
                stop = f"decided PASS after {len(kept)} trials"
                break
        states = self.evaluate(kept)
        st = [s.status for s in states.values()]
        verdict = "FAIL" if "FAIL" in st else "PASS" if st and all(s == "PASS" for s in st) else "INCONCLUSIVE"
        missing = {m.name: {"metric": m.name, "trials": k, "of": len(kept),
                            "line": f"{k} of {len(kept)} trials gave no {m.name} figure (left out)"}
                   for m in self.metrics if (k := unmeasured(kept, m.name))}
        dec = GateDecision(verdict, "", states, trials, (self.arm,), len(kept), discarded, traffic,
                           self.clock() - t0, stop, "order statistics", self.confidence, nothing=missing or None)
        dec.why = dec.summary()
        return dec
