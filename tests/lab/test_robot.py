"""The Robot Framework front-end runs the slice through the same library
and records the same verdicts as pytest."""

import subprocess
import sys
import xml.etree.ElementTree as ET

from v6gate.paths import ROOT

from conftest import load_results


def robot(tmp_path, suite: str, *variables: str, timeout=300, log="NONE") -> subprocess.CompletedProcess:
    """Run a Robot suite of suites/robot on the lab; output.xml in tmp_path/robot, the v6gate run in tmp_path/run."""
    argv = [sys.executable, "-m", "robot", "--outputdir", str(tmp_path / "robot"), "--output", "output.xml",
            "--report", "NONE", "--log", log]
    for v in variables:
        argv += ["--variable", v]
    return subprocess.run([*argv, str(ROOT / "suites" / "robot" / suite)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT,
                          env={**__import__("os").environ, "V6GATE_RUN_DIR": str(tmp_path / "run")})


def test_robot_slice_suite_passes_with_reports(tmp_path):
    run_dir = tmp_path / "run"
    cp = robot(tmp_path, "host_slice.robot", "TARGET:lab", log="log.html")
    assert cp.returncode == 0, cp.stdout[-3000:]
    stats = ET.parse(tmp_path / "robot" / "output.xml").find(".//total/stat")
    assert stats.get("fail") == "0" and int(stats.get("pass")) >= 9
    doc = load_results(run_dir)
    assert doc["summary"]["counts"]["PASS"] >= 19 and doc["summary"]["exit_code"] == 0
    assert {c["verdict"] for c in doc["checks"]} == {"PASS"}


def test_robot_host_suite_generates_one_test_per_check_part(tmp_path):
    """suites/robot/host.robot: the library turns the selected areas into one
    Robot test per check part (named and tagged by its IPv6 Ready ID), run
    through the same library as pytest."""
    from v6gate.core.check import all_items

    run_dir = tmp_path / "run"
    cp = robot(tmp_path, "host.robot", "AREAS:rdnss", timeout=600)
    assert cp.returncode == 0, cp.stdout[-3000:]
    parts = all_items(areas=["rdnss"])
    tests = ET.parse(tmp_path / "robot" / "output.xml").findall(".//suite/test")
    assert len(tests) == len(parts) >= 5
    # parts of capabilities the lab does not claim (RFC 9463 DNR) SKIP with the reason; the others PASS
    statuses = [t.find("status").get("status") for t in tests]
    assert set(statuses) <= {"PASS", "SKIP"} and statuses.count("PASS") >= 5, statuses
    assert all("area:rdnss" in [g.text for g in t.findall("tag")] for t in tests)
    doc = load_results(run_dir)
    assert sorted((c["id"], c["part"]) for c in doc["checks"]) == sorted((c.id, p.letter) for c, p in parts)
    assert {c["verdict"] for c in doc["checks"]} <= {"PASS", "SKIP"}
    assert all("does not claim" in c["reason"] for c in doc["checks"] if c["verdict"] == "SKIP")


def test_robot_host_suite_rejects_an_unknown_area(tmp_path):
    cp = robot(tmp_path, "host.robot", "AREAS:nosuch", timeout=120)
    assert cp.returncode != 0
    assert "unknown area(s) nosuch" in cp.stdout + cp.stderr


def test_robot_storage_campaign_gives_a_verdict_and_a_pcap_per_part(tmp_path):
    """suites/robot/storage.robot: the storage IPv6-only audit campaign, one
    Robot test per storage check part, verdicts and pcaps in the run directory."""
    from v6gate.core.check import all_items

    run_dir = tmp_path / "run"
    cp = robot(tmp_path, "storage.robot", timeout=600)
    assert cp.returncode == 0, cp.stdout[-3000:]
    parts = all_items(areas=["storage"])
    tests = ET.parse(tmp_path / "robot" / "output.xml").findall(".//suite/test")
    assert len(tests) == len(parts) >= 10
    assert all("area:storage" in [g.text for g in t.findall("tag")] for t in tests)
    doc = load_results(run_dir)
    assert sorted((c["id"], c["part"]) for c in doc["checks"]) == sorted((c.id, p.letter) for c, p in parts)
    assert {c["verdict"] for c in doc["checks"]} == {"PASS"}
    from pathlib import Path

    pcaps = [(c.get("evidence") or {}).get("pcap") for c in doc["checks"]]
    assert all(p and Path(p).exists() for p in pcaps), pcaps
