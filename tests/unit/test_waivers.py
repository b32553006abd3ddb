"""Waivers: an expired one is reported and no longer waives; a part-less
waiver of a multi-part check is refused unless it says ``parts: all``."""

import subprocess
import sys

import pytest
import yaml

from v6gate.core.target import load_target
from v6gate.errors import TargetFileError
from v6gate.paths import FIXTURES

MULTI = "icmpv6.echo_request_is_answered"  # parts A, B, C, ...
SINGLE = "nd.fragmented_ns_is_ignored"


def _target(tmp_path, waivers: str):
    """The shipped example host target with these waivers instead of its own."""
    doc = yaml.safe_load((FIXTURES / "targets" / "example-host.yaml").read_text())
    doc["waivers"] = yaml.safe_load(waivers)
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_expired_waiver_no_longer_waives(tmp_path):
    t = load_target(_target(tmp_path, f"  - {{check: {MULTI}, part: A, reason: the stack answers late on purpose,"
                                      f" expires: 2020-01-31}}\n"))
    assert t.waiver_for(MULTI, "A") is None
    w = t.expired_waiver_for(MULTI, "A")
    assert w is not None and w.expires == "2020-01-31"
    assert [x.check for x in t.expired_waivers()] == [MULTI]


def test_waiver_before_its_expiry_waives(tmp_path):
    t = load_target(_target(tmp_path, f"  - {{check: {MULTI}, part: A, reason: the stack answers late on purpose,"
                                      f" expires: 2999-12-31}}\n"))
    assert t.waiver_for(MULTI, "A") is not None
    assert t.expired_waiver_for(MULTI, "A") is None and t.expired_waivers() == []


def test_partless_waiver_of_a_multi_part_check_is_refused(tmp_path):
    path = _target(tmp_path, f"  - {{check: {MULTI}, reason: the stack has no Echo responder at all}}\n")
    with pytest.raises(TargetFileError, match=r"has no 'part' but the check has \d+ parts .*'parts: all'"):
        load_target(path)


def test_partless_waiver_with_parts_all_waives_every_part(tmp_path):
    t = load_target(_target(tmp_path, f"  - {{check: {MULTI}, parts: all, reason: the stack has no Echo responder"
                                      f" at all}}\n"))
    assert t.waiver_for(MULTI, "A") is not None and t.waiver_for(MULTI, "B") is not None


def test_partless_waiver_of_a_single_part_check_is_fine(tmp_path):
    t = load_target(_target(tmp_path, f"  - {{check: {SINGLE}, reason: the stack reassembles ND messages}}\n"))
    assert t.waiver_for(SINGLE, None) is not None


def test_parts_takes_only_all(tmp_path):
    with pytest.raises(TargetFileError, match="parts"):
        load_target(_target(tmp_path, f"  - {{check: {MULTI}, parts: some, reason: the stack has no responder}}\n"))


def test_cli_refuses_with_one_line_and_exit_2(tmp_path):
    path = _target(tmp_path, f"  - {{check: {MULTI}, reason: the stack has no Echo responder at all}}\n")
    cp = subprocess.run([sys.executable, "-m", "v6gate.cli", "validate", str(path)], capture_output=True, text=True,
                        timeout=60)
    assert cp.returncode == 2, cp
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "parts: all" in lines[0] and "Traceback" not in cp.stderr
