"""The Robot Framework front-end runs the slice through the same library
and records the same verdicts as pytest."""

import subprocess
import sys
import xml.etree.ElementTree as ET

from v6gate.paths import ROOT

from conftest import load_results


def test_robot_slice_suite_passes_with_reports(tmp_path):
    run_dir = tmp_path / "run"
    cp = subprocess.run([sys.executable, "-m", "robot", "--outputdir", str(tmp_path / "robot"), "--variable",
                         "TARGET:lab", "--output", "output.xml", "--report", "NONE", "--log", "log.html",
                         str(ROOT / "suites" / "robot" / "host_slice.robot")],
                        capture_output=True, text=True, timeout=300, cwd=ROOT,
                        env={**__import__("os").environ, "V6GATE_RUN_DIR": str(run_dir)})
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
    cp = subprocess.run([sys.executable, "-m", "robot", "--outputdir", str(tmp_path / "robot"), "--variable",
                         "AREAS:rdnss", "--output", "output.xml", "--report", "NONE", "--log", "NONE",
                         str(ROOT / "suites" / "robot" / "host.robot")],
                        capture_output=True, text=True, timeout=600, cwd=ROOT,
                        env={**__import__("os").environ, "V6GATE_RUN_DIR": str(run_dir)})
    assert cp.returncode == 0, cp.stdout[-3000:]
    parts = all_items(areas=["rdnss"])
    tests = ET.parse(tmp_path / "robot" / "output.xml").findall(".//suite/test")
    assert len(tests) == len(parts) >= 5
    assert all(t.find("status").get("status") == "PASS" for t in tests)
    assert all("area:rdnss" in [g.text for g in t.findall("tag")] for t in tests)
    doc = load_results(run_dir)
    assert sorted((c["id"], c["part"]) for c in doc["checks"]) == sorted((c.id, p.letter) for c, p in parts)
    assert {c["verdict"] for c in doc["checks"]} == {"PASS"}


def test_robot_host_suite_rejects_an_unknown_area(tmp_path):
    cp = subprocess.run([sys.executable, "-m", "robot", "--outputdir", str(tmp_path), "--variable", "AREAS:nosuch",
                         "--output", "NONE", "--report", "NONE", "--log", "NONE",
                         str(ROOT / "suites" / "robot" / "host.robot")],
                        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert cp.returncode != 0
    assert "unknown area(s) nosuch" in cp.stdout + cp.stderr
