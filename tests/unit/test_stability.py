"""Run-to-run stability: verdicts compared part by part over repeated runs."""

import pytest

from v6gate.report.stability import compare


def run(verdicts: dict, wall=10.0) -> dict:
    checks = []
    for key, v in verdicts.items():
        cid, _, part = key.partition("#")
        checks.append({"id": cid, "part": part or None, "verdict": v, "reason": f"{key} was {v}"})
    return {"run": {"phases": [{"phase": "conformance", "wall_s": wall}]}, "checks": checks}


def test_identical_runs_are_all_stable():
    s = compare([run({"a#A": "PASS", "b": "FAIL"}), run({"a#A": "PASS", "b": "FAIL"}, wall=12.0)])
    assert s["identical"] == s["parts"] == 2 and s["unstable"] == {}
    assert s["verdicts_when_identical"] == {"PASS": 1, "FAIL": 1}
    assert s["wall_s"] == {"median": 11.0, "min": 10.0, "max": 12.0}


def test_a_part_that_flips_is_reported_with_counts_and_reasons():
    s = compare([run({"a#A": "PASS"}), run({"a#A": "FAIL"}), run({"a#A": "PASS"})])
    assert s["identical"] == 0
    assert s["unstable"]["a#A"]["counts"] == {"PASS": 2, "FAIL": 1}
    assert s["unstable"]["a#A"]["first_reason"]["FAIL"] == "a#A was FAIL"


def test_a_part_missing_from_one_run_is_unstable():
    s = compare([run({"a": "PASS", "b": "PASS"}), run({"a": "PASS"})])
    assert s["unstable"]["b"]["counts"] == {"PASS": 1, "missing": 1}


def test_nothing_to_compare_is_an_error():
    with pytest.raises(ValueError):
        compare([])
