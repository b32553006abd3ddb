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


def test_every_calibrated_gate_names_a_family_gate_and_its_variant():
    from v6gate.core.check import find
    from v6gate.gates.calibrate import GATES
    from v6gate.gates.profiles import profile_of

    for key, (check_id, gate, mechanism, variant) in GATES.items():
        c = find(check_id)
        prof = profile_of(gate, variant)
        assert prof.compare == "family", key
        assert mechanism == "nft", key
        assert (variant is None) == (len(c.parts) == 1 and c.parts[0].letter is None), key


def test_the_tuner_takes_the_gates_own_pair_in_the_order_asked(monkeypatch):
    """A gate whose arms are two trials (STR with 10 pairs of connections): the pair runs them in the
    order asked; an alternated gate (RR): one trial holds both, in that order."""
    import dataclasses

    from v6gate.gates import registry, run
    from v6gate.gates.profiles import profile_of

    calls, seen = [], []
    registered = registry.workload("loadgen")
    monkeypatch.setitem(registry._WORKLOADS, "loadgen", dataclasses.replace(
        registered, trial=lambda bench, prof, fam, baseline: calls.append((fam, baseline)) or fam,
        alternate=lambda bench, prof, order: seen.append((order, prof.compare)) or tuple(order)))
    pair = run.family_pair(profile_of("str", "10x1500"), bench=object())
    assert pair(("v6", "v4")) == ("v6", "v4")
    assert calls == [("v6", False), ("v4", True)]
    pair = run.family_pair(profile_of("rr", "1x1500"), bench=object())
    assert pair(("v4", "v6")) == ("v4", "v6")
    assert seen == [(("v4", "v6"), "family")]


def test_a_run_line_says_which_judged_metric_left_the_run_undecided():
    """RR judges transactions and CPU per transaction: an INCONCLUSIVE run names the one still open."""
    from v6gate.gates.calibrate import _judged, _run_line

    dec = {"metrics": {
        "transactions": {"judged": True, "status": "PASS", "threshold": 0.97,
                         "interval": {"estimate": 0.977, "low": 0.973, "high": 0.981}},
        "cpu_per_unit": {"judged": True, "status": "undecided", "threshold": 1.03,
                         "interval": {"estimate": 1.024, "low": 1.012, "high": 1.036}},
        "throughput": {"judged": False, "status": "reported", "interval": {"estimate": 0.98}}}}
    judged = _judged(dec)
    assert set(judged) == {"transactions", "cpu_per_unit"}
    assert judged["cpu_per_unit"] == {"status": "undecided", "ratio": 1.024, "low": 1.012, "high": 1.036,
                                      "threshold": 1.03}
    e = {"verdict": "INCONCLUSIVE", "ratio": 0.977, "low": 0.973, "high": 0.981, "kept_pairs": 30,
         "discarded_pairs": 0, "traffic_s": 30.0, "steal_fraction_median": 0.0, "foreign_fraction_median": 0.02,
         "judged": judged}
    line = _run_line("A/A", 1, 20, e)
    assert line.startswith("  A/A      run  2/20: INCONCLUSIVE ratio 0.977 [0.973, 0.981]")
    assert line.endswith("(transactions 0.977 [0.973, 0.981] PASS; cpu_per_unit 1.024 [1.012, 1.036] undecided)")
    assert "(" not in _run_line("A/A", 1, 20, dict(e, judged={"transactions": judged["transactions"]}))
