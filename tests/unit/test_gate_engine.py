"""The adaptive paired engine on synthetic samples (no lab): it passes equal
arms, fails a handicap, flips for lower-is-better metrics, gives up within
its budget, randomizes the order and discards disturbed pairs."""

import itertools
import math
import random

import pytest

from v6gate.gates import disturbance as D
from v6gate.gates import noise
from v6gate.gates.engine import (
    WORST_LOG_RATIO,
    BaselineDead,
    Budget,
    DisturbancePolicy,
    Measure,
    Metric,
    PairedComparison,
    TargetComparison,
    pair_log_ratio,
)


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def synthetic(ratio: float, noise: float, seed: int, clock: FakeClock, metric="throughput", per_trial_s=2.0,
              base=1000.0):
    rng = random.Random(seed)
    order = []

    def measure(arm):
        order.append(arm)
        clock.t += per_trial_s
        drift = 1 + 0.2 * (clock.t % 17) / 17  # slow drift common to both arms
        v = base * drift * rng.lognormvariate(0, noise) * (ratio if arm == "v6" else 1.0)
        return Measure({metric: v}, per_trial_s, 0.5)

    return measure, order


def quiet_monitor(clock: FakeClock, steal_at=()):
    calls = {"n": 0}

    def snap():
        calls["n"] += 1
        k = calls["n"]
        steal = sum(5.0 for s in steal_at if 2 * s + 1 < k)  # 5 s of steal during trial s
        return D.CpuSnapshot(clock.t, busy_s=clock.t * 1.0, idle_s=0, steal_s=steal, procs_running=1)

    return snap


THROUGHPUT = Metric("throughput", "MB/s", True, 0.03)
BUDGET = Budget(6, 40, 500, 10)


def gate(ratio, noise, seed=1, metric=THROUGHPUT, budget=BUDGET, steal_at=()):
    clock = FakeClock()
    measure, order = synthetic(ratio, noise, seed, clock, metric.name)
    pc = PairedComparison(arms=("v4", "v6"), metrics=[metric], measure=measure, budget=budget,
                          rng=random.Random(seed), monitor=quiet_monitor(clock, steal_at), clock=clock)
    return pc.run(), order


def test_equal_arms_pass():
    d, _ = gate(1.0, 0.02)
    assert d.verdict == "PASS", d.why
    assert d.metrics["throughput"].interval.low >= 0.97


def test_a_handicap_twice_the_margin_fails():
    d, _ = gate(0.94, 0.02)
    assert d.verdict == "FAIL", d.why
    assert d.metrics["throughput"].interval.high < 0.97


def test_ipv6_faster_is_fine():
    assert gate(1.2, 0.02)[0].verdict == "PASS"


def test_lower_is_better_flips_the_direction():
    lat = Metric("latency", "us", False, 0.03)
    assert gate(1.10, 0.02, metric=lat)[0].verdict == "FAIL"  # IPv6 10 % slower
    assert gate(0.90, 0.02, metric=lat)[0].verdict == "PASS"  # IPv6 10 % quicker


def test_budget_runs_out_into_inconclusive():
    d, _ = gate(0.97, 0.08, budget=Budget(6, 10, 500, 10))
    assert d.verdict == "INCONCLUSIVE"
    assert d.kept_pairs == 10 and "pair budget" in d.stop


def test_seconds_budget():
    d, _ = gate(0.97, 0.08, budget=Budget(6, 1000, 30, 10))
    assert d.verdict == "INCONCLUSIVE" and "time budget" in d.stop
    assert d.traffic_s <= 32


def test_order_inside_pairs_is_randomized_and_interleaved():
    _d, order = gate(1.0, 0.05, budget=Budget(6, 30, 500, 10))
    pairs = [tuple(order[i:i + 2]) for i in range(0, len(order), 2)]
    assert all(set(p) == {"v4", "v6"} for p in pairs)
    assert ("v4", "v6") in pairs and ("v6", "v4") in pairs


def test_stolen_trials_are_discarded_and_counted():
    d, _ = gate(1.0, 0.02, steal_at=(1, 4))
    assert d.discarded >= 1
    assert all(t.discarded and "steal" in t.discarded for t in d.trials if t.discarded)
    assert d.verdict == "PASS"
    assert len(d.trials) == 2 * (d.kept_pairs + d.discarded)


def test_every_trial_is_kept_in_the_record():
    d, _ = gate(1.0, 0.02)
    doc = d.as_dict()
    assert len(doc["trials"]) == len(d.trials)
    assert {t["arm"] for t in doc["trials"]} == {"v4", "v6"}
    assert doc["metrics"]["throughput"]["delta_pct"]["estimate"] is not None


def test_lopsided_foreign_load_discards_the_pair():
    pol = DisturbancePolicy(max_steal_fraction=1, max_steal_gap=1, max_foreign_gap=0.2)
    a = D.Disturbance(2, 0, 3.5, 0.5, 1)  # 75 % of capacity foreign
    b = D.Disturbance(2, 0, 0.7, 0.5, 1)  # 5 %
    from v6gate.gates.engine import Trial

    assert "other load" in pol.verdict([Trial("v4", 0, 0, {}, 2, a, {}), Trial("v6", 0, 1, {}, 2, b, {})])
    assert pol.verdict([Trial("v4", 0, 0, {}, 2, a, {}), Trial("v6", 0, 1, {}, 2, a, {})]) is None


def test_target_gate_judges_the_median_against_the_target():
    clock = FakeClock()
    rng = random.Random(3)

    def measure(_arm, centre):
        clock.t += 1
        return Measure({"time_s": centre * rng.lognormvariate(0, 0.1)}, 0.0)

    m = Metric("time_s", "s", False, target=0.5)
    ok = TargetComparison(arm="dut", metrics=[m], measure=lambda a: measure(a, 0.2), budget=Budget(6, 20, 100, 5),
                          monitor=quiet_monitor(clock), clock=clock).run()
    slow = TargetComparison(arm="dut", metrics=[m], measure=lambda a: measure(a, 1.0), budget=Budget(6, 20, 100, 5),
                            monitor=quiet_monitor(clock), clock=clock).run()
    assert (ok.verdict, slow.verdict) == ("PASS", "FAIL")
    assert ok.kept_pairs == 6  # 6 samples reach 95 % for the median


def test_bad_method_is_refused():
    with pytest.raises(ValueError, match="interval method"):
        PairedComparison(arms=("a", "b"), metrics=[], measure=lambda a: None, method="anova")


def test_proc_stat_parsing():
    text = "cpu  100 5 50 1000 10 2 3 40 0 0\ncpu0 1 2 3 4\nprocs_running 3\n"
    s = D.parse_proc_stat(text, 7.0)
    assert s.steal_s == pytest.approx(40 / D.HZ) and s.busy_s == pytest.approx(160 / D.HZ)
    assert s.procs_running == 3 and s.t == 7.0


def test_kept_pairs_alternate_order_abba():
    d, _ = gate(1.0, 0.05, budget=Budget(6, 20, 500, 10), steal_at=(2,))
    kept = [t for t in d.trials if not t.discarded]
    firsts = [kept[i].arm for i in range(0, len(kept), 2)]
    assert all(a != b for a, b in itertools.pairwise(firsts)), firsts  # AB, BA, AB, ... over the kept pairs
    assert abs(d.order["v4 first"] - d.order["v6 first"]) <= 1


def test_looks_are_planned_and_each_uses_the_pocock_level():
    b = Budget(6, 20, 500, 10, look_every=2)
    assert b.looks() == 8
    assert [n for n in range(1, 21) if b.is_look(n)] == [6, 8, 10, 12, 14, 16, 18, 20]
    from v6gate.gates import stats

    assert stats.per_look_confidence(0.95, 1) == 0.95
    assert abs(stats.per_look_confidence(0.95, 8) - (1 - 0.0120)) < 0.0005  # Pocock K=8: nominal alpha 0.0120
    d, _ = gate(1.0, 0.02, budget=b)
    assert d.kept_pairs in (6, 8, 10, 12, 14, 16, 18, 20)
    assert d.metrics["throughput"].interval.confidence == d.per_look_confidence


def test_planned_looks_keep_the_false_pass_rate_at_the_threshold(monkeypatch):
    """IPv6 exactly 3 % slower (ratio 0.97, on the threshold): a PASS there is a false PASS, which a 95 %
    interval allows 2.5 % of the time (one side).  With Pocock's per-look level the 400 seeded gates stay
    inside that; the same gates looking at a plain 95 % interval after every pair do not (measured: 6/400
    vs 39/400 at noise 0.03, 6 vs 49 at 0.06)."""
    from v6gate.gates import stats

    def passes(look_every):
        return sum(gate(0.97, 0.03, seed=s, budget=Budget(6, 30, 10_000, 10, look_every=look_every))[0].verdict
                   == "PASS" for s in range(400))

    assert passes(2) <= 10  # 2.5 % of 400
    monkeypatch.setattr(stats, "per_look_confidence", lambda c, k: c)
    assert passes(1) > 20


def test_reported_metrics_do_not_decide_and_decided_by_names_the_judged_ones():
    cost = Metric("cpu_per_unit", "ms/MB", False, 0.03, judged=False)
    clock = FakeClock()
    rng = random.Random(5)

    def measure(arm):
        clock.t += 2
        return Measure({"throughput": 100 * rng.lognormvariate(0, 0.01),
                        "cpu_per_unit": (1.5 if arm == "v6" else 1.0) * rng.lognormvariate(0, 0.01)}, 2.0)

    d = PairedComparison(arms=("v4", "v6"), metrics=[THROUGHPUT, cost], measure=measure, budget=BUDGET,
                         rng=random.Random(5), monitor=quiet_monitor(clock), clock=clock).run()
    assert d.verdict == "PASS" and d.decided_by == ["throughput"]
    doc = d.as_dict()
    assert doc["metrics"]["cpu_per_unit"]["status"] == "reported" and doc["metrics"]["cpu_per_unit"]["interval"]
    assert doc["decided_by"] == ["throughput"]


def test_a_reference_moves_the_threshold_and_says_why():
    """A gate judged against IPv6's payload per segment (reference 0.9862 at MTU 1500): a stack that
    loses only its longer header PASSes; one that loses 6 % more FAILs; the rule names the reference."""
    ref = Metric("throughput", "MB/s", True, 0.03, reference=0.9862, reference_why="header")
    assert ref.threshold == pytest.approx(0.9862 * 0.97)
    assert gate(0.9862, 0.01, metric=ref)[0].verdict == "PASS"
    assert gate(0.9862 * 0.94, 0.01, metric=ref)[0].verdict == "FAIL"
    assert "reference 0.9862: header" in ref.describe_threshold(("v4", "v6"))
    cost = Metric("cpu_per_unit", "ms/MB", False, 0.03, reference=0.9862)
    assert cost.threshold == pytest.approx(1.03 / 0.9862)


def test_the_header_overhead_reference_is_the_payload_per_segment():
    from v6gate.gates.profiles import profile_of, tcp_payload_ratio

    assert tcp_payload_ratio(1500) == pytest.approx(1428 / 1448)
    assert tcp_payload_ratio(9000) == pytest.approx(8928 / 8948)
    assert profile_of("str", "1x9000").metrics[0].reference == pytest.approx(8928 / 8948)
    assert profile_of("rr", "1x1500").metrics[0].reference == 1.0  # a 1000-byte answer fits either family


def test_an_arm_that_moved_nothing_gives_no_ratio_and_no_harness_error():
    """A trial with nothing measured (a cost per MB of nothing: infinite, or no value) is not a log ratio: the
    pair adds nothing to that metric (it used to be a math domain error, the gate's ERROR)."""
    pc = PairedComparison(arms=("v4", "v6"), metrics=[THROUGHPUT], measure=lambda arm: None, budget=BUDGET,
                          rng=random.Random(1))
    T = type("T", (), {})

    def trial(v):
        t = T()
        t.values = {"throughput": v}
        return t

    kept = [(trial(float("inf")), trial(5.0)), (trial(5.0), trial(float("inf"))), (trial(4.0), trial(5.0))]
    assert pc.log_ratios(kept, "throughput") == [pytest.approx(0.22314355)]


# -- an arm that produced nothing (issue 34: a dead IPv6 path FAILs, a dead baseline is the bench's) ---------------
def dead_candidate(ratio_alive: float, dead_every: int, seed: int, clock: FakeClock, metric=THROUGHPUT,
                   dead_value=0.0, base=800.0, raw=None):
    """Like synthetic(); the candidate (v6) gives ``dead_value`` in every ``dead_every``-th of its trials
    (1: always), with the workload's ``raw`` figures of a dead arm."""
    rng = random.Random(seed)
    n = {"v6": 0}

    def measure(arm):
        clock.t += 1.0
        v = base * rng.lognormvariate(0, 0.02)
        if arm == "v6":
            n["v6"] += 1
            if n["v6"] % dead_every == 0:
                return Measure({metric.name: dead_value}, 1.0, 0.1, dict(raw or {}))
            v *= ratio_alive if metric.higher_is_better else 1 / ratio_alive
        return Measure({metric.name: v}, 1.0, 0.1, {"bytes_rx": int(v * 1e6), "bytes_tx": 0, "slices": 50,
                                                    "idle_slices": 0})

    return measure


def run_dead(measure, clock, metric=THROUGHPUT, budget=BUDGET, probe=None):
    return PairedComparison(arms=("v4", "v6"), metrics=[metric], measure=measure, budget=budget,
                            rng=random.Random(2), monitor=quiet_monitor(clock), clock=clock, probe=probe).run()


DEAD_RAW = {"bytes_rx": 0, "bytes_tx": 0, "slices": 50, "idle_slices": 50,
            "error": "cannot connect to fd00::2 port 5201: no answer within 2 s"}


@pytest.mark.parametrize("dead_value", [0.0, 1e-9])  # a real 0, or the workloads' FLOOR
def test_a_candidate_that_moved_nothing_fails_and_says_so(dead_value):
    clock = FakeClock()
    d = run_dead(dead_candidate(1.0, 1, 3, clock, dead_value=dead_value, raw=DEAD_RAW), clock)
    assert d.verdict == "FAIL", d.why
    k = d.kept_pairs  # the first look whose per-look interval can be bounded (Wilcoxon: 8 pairs at 18 looks)
    assert k <= 8 and d.discarded == 0
    assert d.metrics["throughput"].interval.high < 1e-6
    assert d.why.startswith(f"IPv6 moved nothing in {k} of {k} pairs: 0 bytes in {50 * k} of {50 * k} slices that "
                            "moved nothing; cannot connect to fd00::2 port 5201: no answer within 2 s, while IPv4 "
                            "moved a median "), d.why
    assert "MB in the same pairs" in d.why
    assert d.as_dict()["nothing"]["throughput"]["pairs"] == k


def test_the_old_rule_would_have_left_a_dead_path_undecided():
    """The pairs the engine used to drop (an arm of 0 has no ratio) are the pairs that decide now: with them
    left out a dead path has no interval at all."""
    clock = FakeClock()
    pc = PairedComparison(arms=("v4", "v6"), metrics=[THROUGHPUT], measure=dead_candidate(1.0, 1, 3, clock),
                          budget=BUDGET, rng=random.Random(1), monitor=quiet_monitor(clock), clock=clock)
    T = type("T", (), {})

    def trial(v):
        t = T()
        t.values = {"throughput": v}
        return t

    kept = [(trial(800.0), trial(0.0))] * 6
    assert pc.log_ratios(kept, "throughput") == [-WORST_LOG_RATIO] * 6
    assert [d for a, b in kept if (d := pair_log_ratio(800.0, 0.0, True)[0]) is not None and d > -1] == []


def test_a_candidate_dead_in_some_pairs_counts_them_as_the_worst_ratio():
    """One dead trial in four of an otherwise healthy candidate: Wilcoxon alone centres on the live pairs
    (0.974 [0.000, 1.008]: undecided for ever); over its time the candidate moved at most (1 - the dead share's
    low end) x the live pairs' high end of the baseline's rate, below the threshold: FAIL, and the reason counts
    the dead pairs and gives those bounds."""
    clock = FakeClock()
    d = run_dead(dead_candidate(1.0, 4, 5, clock), clock, budget=Budget(8, 40, 500, 10, look_every=4))
    assert d.verdict == "FAIL", d.why
    k = d.kept_pairs // 4
    assert d.why.startswith(f"IPv6 moved nothing in {k} of {d.kept_pairs} pairs"), d.why
    b = d.nothing["throughput"]["bounds"]
    assert b["rate_high"] < 0.97 < b["live_high"], b  # the live pairs alone would not FAIL
    assert "over all its time IPv6's throughput is" in d.why


def test_a_rare_dead_candidate_pair_forbids_a_pass_it_cannot_bound():
    """A healthy candidate (ratio 1.0) dead in 1 of its pairs: the dead share could be up to 13 % of 40 pairs,
    so the gate cannot PASS on the live pairs alone (never a PASS that hides an IPv6 path that died), nor FAIL."""
    clock = FakeClock()
    d = run_dead(dead_candidate(1.0, 1000, 5, clock), clock, budget=BUDGET)
    assert d.verdict == "PASS"  # no dead pair: the ordinary verdict
    clock = FakeClock()
    dead_once = dead_candidate(1.0, 7, 5, clock)  # the 7th candidate trial only: 1 of up to 13
    calls = {"n": 0}

    def measure(arm):
        calls["n"] += 1
        m = dead_once(arm)
        if arm == "v6" and calls["n"] > 16 and m.values["throughput"] == 0.0:
            return Measure({"throughput": 800.0}, 1.0, 0.1)
        return m

    d = run_dead(measure, clock, budget=Budget(6, 12, 500, 10))
    assert d.nothing and d.nothing["throughput"]["pairs"] == 1, d.why
    assert d.verdict == "INCONCLUSIVE", d.why


def test_a_lower_is_better_candidate_that_never_completed_fails():
    lat = Metric("latency", "us", False, 0.03)
    for dead in (math.inf, 1e9):
        clock = FakeClock()
        d = run_dead(dead_candidate(1.0, 1, 4, clock, metric=lat, dead_value=dead), clock, metric=lat)
        assert d.verdict == "FAIL", d.why
        assert d.why.startswith(f"IPv6 never completed (latency unbounded) in {d.kept_pairs} of {d.kept_pairs} pairs"), d.why


@pytest.mark.parametrize("first_dead", [True, False])
def test_a_baseline_that_moved_nothing_is_the_bench_never_a_fail(first_dead):
    """IPv4 (the baseline) moved nothing in a pair: nothing to compare against, the bench's ERROR
    (BaselineDead is a BenchError), whatever the candidate did, and never the candidate's FAIL."""
    from v6gate.errors import BenchError

    clock = FakeClock()
    n = {"v4": 0}

    def measure(arm):
        clock.t += 1.0
        if arm == "v4":
            n["v4"] += 1
            if first_dead or n["v4"] == 3:
                return Measure({"throughput": 0.0}, 1.0, 0.1, {"error": "the connection broke: Connection reset"})
        return Measure({"throughput": 500.0}, 1.0, 0.1)

    with pytest.raises(BaselineDead) as e:
        run_dead(measure, clock)
    assert isinstance(e.value, BenchError)
    assert "the baseline arm (IPv4) produced nothing in pair" in str(e.value)
    assert "the connection broke: Connection reset" in str(e.value) and "cannot compare" in str(e.value)


def test_the_noise_probe_sees_a_dead_candidate_as_gross_and_the_gate_fails():
    """A machine too noisy to resolve the margin (the probe alone would give up) still FAILs a dead IPv6 path:
    the probe's one look at the real arms finds the worst ratio, a gross difference."""
    clock = FakeClock()
    rng = random.Random(9)

    def measure(arm):
        clock.t += 1.0
        if arm == "v6":
            return Measure({"throughput": 0.0}, 1.0, 0.1, dict(DEAD_RAW))
        return Measure({"throughput": 800 * rng.lognormvariate(0, 0.25)}, 1.0, 0.1)

    d = run_dead(measure, clock, budget=Budget(6, 30, 90, 10), probe=noise.ProbeSpec(pairs=5, cap_pairs=30,
                                                                                     cap_seconds=90))
    assert d.probe is not None and not d.probe["hopeless"]
    assert "gross difference" in d.probe["line"], d.probe["line"]
    assert d.verdict == "FAIL", d.why
    assert d.why.startswith(f"IPv6 moved nothing in {d.kept_pairs} of {d.kept_pairs} pairs"), d.why


def test_a_dead_baseline_in_the_noise_probe_is_the_bench():
    clock = FakeClock()

    def measure(arm):
        clock.t += 1.0
        return Measure({"throughput": 0.0 if arm == "v4" else 800.0}, 1.0, 0.1)

    with pytest.raises(BaselineDead, match="noise probe: the baseline arm"):
        run_dead(measure, clock, probe=noise.ProbeSpec(pairs=5))


@pytest.mark.parametrize("va,vb,hib,want", [
    (800.0, 0.0, True, (-WORST_LOG_RATIO, "candidate nothing")),
    (800.0, 1e-9, True, (-WORST_LOG_RATIO, "candidate nothing")),
    (0.0, 800.0, True, (None, "baseline nothing")),
    (0.0, 0.0, True, (None, "baseline nothing")),
    (800.0, None, True, (None, "unmeasured")),
    (800.0, math.nan, True, (None, "unmeasured")),
    (math.inf, 5.0, True, (None, "unmeasured")),
    (5.0, math.inf, False, (WORST_LOG_RATIO, "candidate nothing")),
    (math.inf, 5.0, False, (None, "baseline nothing")),
    (0.0, 5.0, False, (None, "unmeasured")),
])
def test_pair_log_ratio_kinds(va, vb, hib, want):
    assert pair_log_ratio(va, vb, hib) == want


def test_pair_log_ratio_of_live_arms_is_the_log_ratio():
    d, kind = pair_log_ratio(800.0, 400.0, True)
    assert kind == "measured" and d == pytest.approx(math.log(0.5))


def test_target_gate_keeps_a_time_that_never_came_and_fails():
    """A time-to-X workload that reports a wait that never ended as inf: the slowest sample there is, kept
    (FAIL); a None or NaN figure is left out and counted in the reason, never a PASS on fewer samples unsaid."""
    clock = FakeClock()
    m = Metric("time_s", "s", False, target=0.5)

    def never(_arm):
        clock.t += 1
        return Measure({"time_s": math.inf}, 0.0)

    d = TargetComparison(arm="dut", metrics=[m], measure=never, budget=Budget(6, 20, 100, 5),
                         monitor=quiet_monitor(clock), clock=clock).run()
    assert d.verdict == "FAIL", d.why
    assert "time_s median unbounded s" in d.why
    vals = iter([0.1, None, 0.1, math.nan, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])

    def some_missing(_arm):
        clock.t += 1
        return Measure({"time_s": next(vals)}, 0.0)

    d = TargetComparison(arm="dut", metrics=[m], measure=some_missing, budget=Budget(6, 8, 100, 5),
                         monitor=quiet_monitor(clock), clock=clock).run()
    assert d.verdict == "PASS", d.why
    assert d.why.startswith("2 of 8 trials gave no time_s figure (left out); "), d.why
