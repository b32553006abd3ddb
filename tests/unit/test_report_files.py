"""Report files whole or not at all (report/files.py): a step that cannot be
written stops the rest, removes their stale versions, the manifest covers
what is whole, and ReportsNotWritten names what is missing; INCOMPLETE
says so and `v6gate verify` lists them as missing."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from v6gate.core.session import RunRecorder
from v6gate.report import files, incomplete, manifest


def _full(_path=None):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_step_that_does_not_fit_stops_the_rest_and_is_named(tmp_path):
    (tmp_path / "junit.xml").write_text("<stale/>")  # from an earlier write: it must not stay beside new reports
    (tmp_path / "report.html").write_text("stale")
    out = {}
    steps = [(("results.json",), lambda: files.write_text(tmp_path / "results.json", "{}")),
             (("junit.xml",), _full),
             (("report.html",), lambda: files.write_text(tmp_path / "report.html", "never"))]
    with pytest.raises(files.ReportsNotWritten) as e:
        files.write_reports(tmp_path, out, steps)
    assert e.value.missing == ["junit.xml", "report.html"] and e.value.why == "No space left on device"
    assert "junit.xml, report.html could not be written" in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["MANIFEST.sha256", "results.json"]
    assert manifest.verify(tmp_path)["ok"] == ["results.json"]
    assert incomplete.mark_unwritten(tmp_path, e.value.missing, e.value.why)
    check = manifest.verify(tmp_path)
    assert check["missing"] == ["junit.xml", "report.html"] and "reports not written" in check["incomplete"]


def test_a_file_written_through_replacing_is_whole_or_absent(tmp_path):
    target = tmp_path / "results.json"
    target.write_text("the previous version")
    with pytest.raises(OSError), files.replacing(target) as tmp:
        tmp.write_text("half")
        _full()
    assert target.read_text() == "the previous version" and [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_the_reserve_is_taken_at_the_start_and_given_back(tmp_path):
    incomplete.mark_started(tmp_path, "r1")
    sizes = {p.name: p.stat().st_blocks * 512 for p in tmp_path.iterdir()}
    assert sizes[".v6gate-reserve"] >= 1 << 20 and sizes[".v6gate-reserve-marker"] >= 64 << 10  # real blocks
    incomplete.finished(tmp_path)
    assert list(tmp_path.iterdir()) == []


class _Result:
    """What RunRecorder.write needs of a result: its dict."""

    def __init__(self, i: int, size: int = 2000):
        self.i, self.size = i, size

    def as_dict(self) -> dict:
        return {"id": f"x.{self.i}", "pad": "p" * self.size}


def test_a_record_that_does_not_fit_is_taken_back(tmp_path):
    """A full disk (/dev/full: every write ENOSPC) sets the recorder's error (the run stops) and raises nothing."""
    rec = RunRecorder(tmp_path, worker="w")
    rec.write(_Result(0))
    assert rec.error is None and json.loads(rec.path.read_text())["id"] == "x.0"
    rec.path.unlink()
    rec.path.symlink_to("/dev/full")
    rec.write(_Result(1))
    assert "cannot be written (No space left on device)" in rec.error


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root (a private tmpfs)")
def test_records_on_a_filling_disk_are_whole_lines(tmp_path):
    """On a 64 KiB tmpfs (in a private mount namespace) records are written until one does not fit: the file
    holds only whole lines (the cut one taken back), and the recorder says why."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    code = ("import json, sys\n"
            "sys.path.insert(0, sys.argv[2])\n"
            "from test_report_files import _Result\n"
            "from v6gate.core.session import RunRecorder\n"
            "rec = RunRecorder(sys.argv[1], worker='w')\n"
            "n = 0\n"
            "while rec.error is None and n < 1000:\n"
            "    rec.write(_Result(n, 3000)); n += 1\n"
            "text = open(rec.path).read()\n"
            "lines = [json.loads(ln)['id'] for ln in text.splitlines()]\n"
            "print(json.dumps({'error': rec.error, 'n': n, 'ids': lines, 'ends': text.endswith(chr(10))}))\n")
    cp = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                         'mount -t tmpfs -o size=64k tmpfs "$1" && exec "$2" -c "$3" "$1" "$4"', "sh", str(mnt),
                         sys.executable, code, str(Path(__file__).parent)],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    out = json.loads(cp.stdout)
    assert "No space left on device" in out["error"] and out["ends"], out
    assert out["ids"] == [f"x.{i}" for i in range(out["n"] - 1)], out  # every line whole, the last taken back


def test_a_resumed_run_keeps_the_newer_result_and_runs_the_parts_not_run(tmp_path):
    """``run --resume`` after a lost bench: the parts that were ERROR "not run" are run again (not counted as
    done), and the newer record of a part wins whatever the records files' names."""
    from v6gate.cli import _recorded_parts
    from v6gate.core.verdict import NOT_RUN
    from v6gate.report.results import load_records

    def rec(name, verdict, reason, started):
        line = {"id": "nd.a", "part": "A", "title": "t", "area": "nd", "ipv6ready": None, "rfc": "RFC 4861",
                "verdict": verdict, "reason": reason, "expected": "e", "seen": "s", "evidence": {},
                "duration_s": 0.1, "started": started}
        with open(tmp_path / "records" / name, "a") as f:
            f.write(json.dumps(line) + "\n")

    (tmp_path / "records").mkdir()
    rec("checks-main-9.jsonl", "ERROR", "bench error: tester interface x was deleted" + NOT_RUN, "2026-11-27T01:00:00")
    assert [r.verdict for r in load_records(tmp_path)] == ["ERROR"]
    assert _recorded_parts(str(tmp_path)) == set()
    rec("checks-main-10.jsonl", "PASS", "ok", "2026-11-27T02:00:00")  # sorts before -9
    assert [r.verdict for r in load_records(tmp_path)] == ["PASS"]
    assert _recorded_parts(str(tmp_path)) == {"nd.a#A"}
