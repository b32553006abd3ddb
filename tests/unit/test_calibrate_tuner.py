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
    """A gate whose arms are two trials (the 16 KB stream's iperf3): the pair runs them in the order
    asked; an alternated gate (RR): one trial holds both, in that order."""
    from v6gate.gates import run, workloads
    from v6gate.gates.profiles import profile_of

    calls = []
    monkeypatch.setattr(workloads, "iperf3", lambda bench, prof, fam, baseline: calls.append((fam, baseline)) or fam)
    pair = run.family_pair(profile_of("stream_16k", None), bench=object())
    assert pair(("v6", "v4")) == ("v6", "v4")
    assert calls == [("v6", False), ("v4", True)]
    seen = []
    monkeypatch.setattr(workloads, "loadgen_alternate",
                        lambda bench, prof, order, **kw: seen.append((order, kw["compare"])) or tuple(order))
    pair = run.family_pair(profile_of("rr", "1x1500"), bench=object())
    assert pair(("v4", "v6")) == ("v4", "v6")
    assert seen == [(("v4", "v6"), "family")]
