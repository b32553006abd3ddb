"""The noise probe (gates/noise.py and the engine's use of it) on synthetic
samples: a quiet machine keeps the profile's budget, a noisier one gets a
larger budget up to the cap, a machine too noisy for the margin ends
INCONCLUSIVE at once with one line and without spending the budget, and a
disturbed one says so."""

import math
import random

import pytest
from test_gate_engine import FakeClock, quiet_monitor, synthetic

from v6gate.gates import noise
from v6gate.gates.engine import Budget, DisturbancePolicy, Metric, PairedComparison

STREAM = Metric("throughput", "MB/s", True, 0.025)
SPEC = noise.ProbeSpec(pairs=5, cap_pairs=60, cap_seconds=90)
BUDGET = Budget(6, 30, 90, 10)


def probed(ratio, sd, seed=1, spec=SPEC, budget=BUDGET, per_trial_s=0.65, policy=None, steal_at=()):
    clock = FakeClock()
    measure, order = synthetic(ratio, sd / math.sqrt(2), seed, clock, "throughput", per_trial_s)
    pc = PairedComparison(arms=("v4", "v6"), metrics=[STREAM], measure=measure, budget=budget, policy=policy or DisturbancePolicy(),
                          rng=random.Random(seed), monitor=quiet_monitor(clock, steal_at), clock=clock,
                          probe=spec, what="the 16 KB stream")
    return pc.run(), order, clock


def test_chi2_quantiles_match_tables():
    # chi-square(4): 0.10 -> 1.064, 0.90 -> 7.779; chi-square(9): 0.90 -> 14.684 (tables)
    assert noise.chi2_ppf(0.90, 4) == pytest.approx(7.779, rel=0.01)
    assert noise.chi2_ppf(0.10, 4) == pytest.approx(1.064, rel=0.03)
    assert noise.chi2_ppf(0.90, 9) == pytest.approx(14.684, rel=0.01)


def test_pairs_needed_grows_with_the_square_of_the_noise_and_counts_the_looks():
    kw = dict(confidence=0.95, min_pairs=6, look_every=2)
    gap = -math.log(1 - 0.025)
    n1 = noise.pairs_needed(0.024, gap, **kw)
    n2 = noise.pairs_needed(0.048, gap, **kw)
    assert 12 <= n1 <= 25
    assert 3.5 * n1 <= n2 <= 4.6 * n1  # ~4x, a little more for the extra looks' stricter level
    assert noise.pairs_needed(0.0, gap, **kw) == 6
    assert noise.pairs_needed(0.001, gap, **kw) == 6


def test_quiet_machine_keeps_its_budget_and_decides():
    dec, order, _ = probed(1.0, 0.02)
    assert dec.verdict == "PASS", dec.why
    assert dec.probe and not dec.probe["hopeless"]
    assert dec.probe["planned"]["max_pairs"] == BUDGET.max_pairs  # never less than the profile's
    assert order[:10] == ["v4"] * 10  # the probe's A/A pairs come first, the baseline arm twice
    assert "noise probe: this machine's noise for the 16 KB stream is ±" in dec.why


def test_noisier_machine_gets_a_larger_budget_up_to_the_cap():
    dec, _, _ = probed(1.0, 0.045, seed=3)
    p = dec.probe
    assert not p["hopeless"]
    assert BUDGET.max_pairs < p["planned"]["max_pairs"] <= SPEC.cap_pairs
    assert "budget raised to" in p["line"]
    assert dec.looks == Budget(6, p["planned"]["max_pairs"], 90, 10).looks()


def test_too_noisy_ends_inconclusive_at_once_with_one_line():
    dec, order, clock = probed(0.90, 0.14, seed=5)  # even a real 10 % handicap is not judged: no budget spent
    assert dec.verdict == "INCONCLUSIVE"
    aa = dec.as_dict()["probe"]["readings"][0]["pairs"]
    assert 3 <= aa < 5  # given up before the probe's last A/A pair: hopeless already on a cautious reading
    assert order[:2 * aa] == ["v4"] * 2 * aa and order[2 * aa:] == ["v4", "v6"]  # the A/A pairs, one look
    assert clock.t < 10  # decided within 10 s (0.65 s trials)
    line = dec.why
    assert "\n" not in line
    assert line.startswith("this machine's noise for the 16 KB stream is ±")
    assert "2.5 % needs ≈" in line and "over the cap of 60 pairs (90 s)" in line
    assert dec.kept_pairs == 0 and not dec.trials
    assert "one pair of the real arms: throughput" in line and "no gross difference" in line


def test_a_gross_difference_is_judged_even_on_a_noisy_machine():
    """A DUT throttled to a crawl FAILs although the machine's noise could never resolve the margin."""
    dec, _, _ = probed(0.05, 0.14, seed=5)
    assert dec.verdict == "FAIL", dec.why
    assert "gross difference" in dec.probe["line"] and dec.kept_pairs <= 8


def test_give_up_is_conservative_at_the_cap():
    """At a true noise that the cap can just resolve, the probe gives up in well under 1 run in 5
    (it gives up on the low end of the sd's 90 % bound)."""
    gap = -math.log(1 - 0.025)
    kw = dict(confidence=0.95, min_pairs=6, look_every=2)
    sd = 0.030
    assert noise.pairs_needed(sd, gap, **kw) <= 60
    gave_up = sum(probed(1.0, sd, seed=s)[0].verdict == "INCONCLUSIVE" and probed(1.0, sd, seed=s)[0].kept_pairs == 0
                  for s in range(60))
    assert gave_up <= 3


def test_early_give_up_waits_for_three_pairs_and_a_cautious_reading():
    """Before its last A/A pair the probe gives up only at the low end of the sd's 97.5 % bound: a machine
    whose noise the cap can resolve is not given up on early (all 5 pairs measured, then planned)."""
    assert noise.EARLY_PAIRS == 3 and noise.EARLY_GIVE_UP > 0.90
    dec, _, _ = probed(1.0, 0.045, seed=3)
    assert not dec.probe["hopeless"] and dec.probe["readings"][0]["pairs"] == 5
    low = noise.Reading("x", [0.1, -0.1, 0.05], 1.0, give_up_confidence=0.975)
    assert low.sd_low < noise.Reading("x", [0.1, -0.1, 0.05], 1.0).sd_low < low.sd


def test_disturbed_probe_says_so():
    dec, _, _ = probed(1.0, 0.02, steal_at=range(0, 40))
    assert dec.verdict == "INCONCLUSIVE"
    assert "too disturbed" in dec.why and "steal" in dec.why


def test_no_probe_is_the_engine_as_before():
    dec, order, _ = probed(1.0, 0.02, spec=noise.ProbeSpec(pairs=0))
    assert dec.probe is None
    assert set(order[:2]) == {"v4", "v6"}


def test_a_gross_difference_gets_the_cap_when_the_noise_bound_wants_more():
    """The storage offload gates beside other labs: 3 A/A pairs at +-52 % per pair, one look at the handicap
    0.126 x (4.9 sds beyond the threshold) wanted 14 pairs of a 12-pair cap at the high end of the noise's
    bound and gave up (INCONCLUSIVE, the lab test's FAIL side lost).  A gross look now spends the cap; the
    verdict still rests on the gate's own interval."""
    m = Metric("throughput", "MB/s", True, 0.03)
    spec = noise.ProbeSpec(pairs=5, cap_pairs=12, cap_seconds=90)
    budget = Budget(6, 12, 90, 6)
    rd = noise.Reading("throughput", [0.50, -0.33, 0.02], 3.6, give_up_confidence=noise.EARLY_GIVE_UP)
    hopeless = noise.plan([(rd, m)], spec, budget, confidence=0.95, what="iSCSI")
    assert hopeless.hopeless
    assert noise.pairs_needed(rd.sd_high, (math.log(0.97) - math.log(0.126)) / 2, confidence=0.95, min_pairs=6,
                              look_every=2) > spec.cap_pairs
    went = noise.gross(hopeless, {"throughput": math.log(0.126)}, [m], spec, budget, confidence=0.95)
    assert not went.hopeless and went.budget.max_pairs == 12, went.line
    assert "a gross difference, judged in up to 12 pairs (the cap; ≈ " in went.line
    # not gross (within GROSS_SDS of the threshold): still hopeless
    assert noise.gross(hopeless, {"throughput": math.log(0.80)}, [m], spec, budget, confidence=0.95).hopeless
