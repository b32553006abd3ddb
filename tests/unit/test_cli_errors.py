"""Bad input: one line on stderr that says what to fix, exit code 2, no
traceback, nothing half-written."""

import subprocess
import sys

import pytest

from v6gate.paths import REPORTS


def v6gate(*args):
    return subprocess.run([sys.executable, "-m", "v6gate.cli", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def bad_target(tmp_path):
    p = tmp_path / "dut.yaml"
    p.write_text("name: x\nkind: host\ncapabilities: [Core]\ntester: {interface: eth9}\n"
                 "dut: {mac: 'zz:00:00:00:00:01'}\ncontrol: {adapter: none}\n")
    return p


def assert_one_line_usage_error(cp, *words):
    assert cp.returncode == 2, cp
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1, cp.stderr
    assert "Traceback" not in cp.stderr + cp.stdout
    for w in words:
        assert w in lines[0], lines[0]


def test_validate_names_field_and_fix(bad_target):
    assert_one_line_usage_error(v6gate("validate", str(bad_target)), "dut.mac", "aa:bb:cc:dd:ee:ff")


def test_run_with_malformed_target_builds_nothing(bad_target):
    before = set(REPORTS.joinpath("runs").glob("*")) if REPORTS.joinpath("runs").exists() else set()
    cp = v6gate("run", "--target", str(bad_target))
    assert_one_line_usage_error(cp, "dut.mac")
    after = set(REPORTS.joinpath("runs").glob("*")) if REPORTS.joinpath("runs").exists() else set()
    assert after == before, "a run directory was created for a rejected target"


def test_run_with_missing_target_file(tmp_path):
    assert_one_line_usage_error(v6gate("run", "--target", str(tmp_path / "nope.yaml")), "file not found")


def test_report_of_a_non_run_directory(tmp_path):
    assert_one_line_usage_error(v6gate("report", str(tmp_path)), "no records/")


def test_lab_down_needs_a_name():
    if __import__("os").geteuid() != 0:
        pytest.skip("lab commands need root")
    assert_one_line_usage_error(v6gate("lab", "down"), "lab down NAME")


def test_validate_accepts_the_examples():
    from v6gate.paths import FIXTURES

    for p in sorted((FIXTURES / "targets").glob("*.yaml")):
        cp = v6gate("validate", str(p))
        assert cp.returncode == 0, cp.stderr
