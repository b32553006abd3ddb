"""gates/calibrate.py: the nft handicap tuner's next rule count (pure logic)."""

import pytest

from v6gate.gates.calibrate import next_rule_count


def _eff(rules, k=1.6e-4):
    return 1 / (1 + k * rules)


def test_a_linear_cost_is_hit_from_one_probe():
    want = 0.94
    n = next_rule_count([(100, _eff(100))], want)
    assert _eff(n) == pytest.approx(want, abs=0.002)


def test_the_far_probe_does_not_steer_when_near_ones_exist():
    # 6,184 rules cost more per rule than a few hundred (not linear far out)
    probes = [(100, _eff(100)), (6184, 0.41), (430, _eff(430))]
    n = next_rule_count(probes, 0.94)
    assert _eff(n) == pytest.approx(0.94, abs=0.003)


def test_a_probe_that_measured_no_cost_grows_the_count():
    assert next_rule_count([(100, 1.004)], 0.94) == 800


def test_two_noisy_probes_are_averaged():
    # one probe reads 1 point too cheap, the other 1 point too dear: the fit sits between
    probes = [(300, _eff(300) + 0.01), (400, _eff(400) - 0.01)]
    n = next_rule_count(probes, 0.94)
    assert 300 < n < 500
