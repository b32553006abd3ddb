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
