"""Exit codes and summaries: waivers, baselines, fixed failures, bench errors."""

import json

import jsonschema
import pytest

from v6gate.core.verdict import Result
from v6gate.report.results import (
    EXIT_BENCH,
    EXIT_FAIL,
    EXIT_OK,
    SCHEMA,
    build_document,
    summarize,
)


def res(check="area.check_x", part="A", verdict="PASS", waived=False, waiver=None, kind="check"):
    return Result(id=check, part=part, title="t", area=check.split(".")[0], ipv6ready="v6LC.1.1.1", rfc="RFC 8200 §3",
                  verdict=verdict, reason=f"expected x; seen {verdict}", expected="x", seen="y",
                  evidence={"pcap": "/tmp/p.pcapng"}, duration_s=0.1, started="2026-01-01T00:00:00Z",
                  waived=waived, waiver=waiver, kind=kind)


def test_all_pass_is_exit_0():
    assert summarize([res(), res(part="B"), res(verdict="SKIP")])["exit_code"] == EXIT_OK


def test_unwaived_fail_is_exit_1_and_listed():
    s = summarize([res(), res(part="B", verdict="FAIL")])
    assert s["exit_code"] == EXIT_FAIL and s["new_failures"] == ["area.check_x#B"]


def test_waived_fail_is_exit_0():
    s = summarize([res(verdict="FAIL", waived=True, waiver={"reason": "documented deviation"})])
    assert s["exit_code"] == EXIT_OK and s["waived"] == ["area.check_x#A"]


def test_waived_check_that_passes_is_reported_fixed():
    s = summarize([res(verdict="PASS", waiver={"reason": "documented deviation"})])
    assert s["exit_code"] == EXIT_OK and s["fixed"] == ["area.check_x#A"]


def test_error_and_inconclusive_are_exit_3_not_fail():
    assert summarize([res(verdict="ERROR")])["exit_code"] == EXIT_BENCH
    assert summarize([res(verdict="INCONCLUSIVE", kind="gate")])["exit_code"] == EXIT_BENCH


def test_a_dut_failure_outranks_a_bench_error():
    assert summarize([res(verdict="ERROR"), res(part="B", verdict="FAIL")])["exit_code"] == EXIT_FAIL


def test_missing_checks_are_a_bench_problem():
    s = summarize([res()], expected_keys=["area.check_x#A", "area.check_x#B"])
    assert s["missing"] == ["area.check_x#B"] and s["exit_code"] == EXIT_BENCH


def test_baseline_failures_are_not_new_and_fixed_ones_are_reported(tmp_path):
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"checks": [{"id": "area.check_x", "part": "A", "verdict": "FAIL"},
                                           {"id": "area.check_x", "part": "B", "verdict": "FAIL"}]}))
    s = summarize([res(verdict="FAIL"), res(part="B", verdict="PASS"), res(part="C", verdict="FAIL")],
                  baseline=str(base))
    assert s["new_failures"] == ["area.check_x#C"]
    assert s["fixed"] == ["area.check_x#B"]
    assert s["exit_code"] == EXIT_FAIL


def test_document_validates_against_the_schema():
    doc = build_document([res(), res(part="B", verdict="FAIL")], run_meta={
        "id": "r", "started": "s", "finished": "f", "profile": "default", "target": {"name": "n", "kind": "host"},
        "tool": {}, "host": {}})
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    bad = dict(doc, checks=[dict(doc["checks"][0], verdict="MAYBE")])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(bad)


def test_results_validate_raises_jsonschema_s_error_for_a_bad_check_and_accepts_what_jsonschema_accepts(
        monkeypatch):
    from v6gate.report import results

    doc = build_document([res(), res(part="B", verdict="FAIL")], run_meta={
        "id": "r", "started": "s", "finished": "f", "profile": "default", "target": {"name": "n", "kind": "host"},
        "tool": {}, "host": {}})
    results.validate(doc)
    bad = dict(doc, checks=[doc["checks"][0], dict(doc["checks"][1], verdict="MAYBE")])
    with pytest.raises(jsonschema.ValidationError, match="MAYBE"):
        results.validate(bad)

    import fastjsonschema

    def rejects_all(_value):  # a compiled validator stricter than the schema: jsonschema's word stands
        raise fastjsonschema.JsonSchemaValueException("rejected")

    monkeypatch.setattr(results, "_validators", {"doc": rejects_all, "check": rejects_all})
    results.validate(doc)

