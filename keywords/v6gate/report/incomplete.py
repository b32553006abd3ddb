"""The marker of a run directory whose run did not finish: ``INCOMPLETE``.

``v6gate run`` writes it first, before any check runs, and removes it only
after results.json, junit.xml and report.html are written (each atomically).
A run killed before that (SIGKILL, a crash, a power cut) leaves a directory
that says so instead of looking finished: the records of the checks that
finished are in records/, and ``v6gate report RUN_DIR`` builds the reports
from them (the marker stays, rewritten to say the reports were rebuilt)."""

from __future__ import annotations

import os
import time
from pathlib import Path

MARKER = "INCOMPLETE"


def _write(run_dir: Path, text: str) -> None:
    path = Path(run_dir) / MARKER
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def mark_started(run_dir: Path, run_id: str) -> None:
    _write(run_dir, f"v6gate run {run_id} started {_now()} (pid {os.getpid()}) and has not written its reports: "
                    f"it is running, or it was killed. 'v6gate report {run_dir}' builds them from records/ (checks "
                    "that had not finished are missing).\n")


def mark_interrupted(run_dir: Path) -> None:
    _write(run_dir, f"interrupted by a signal at {_now()}: the reports hold the checks that finished before it.\n")


def mark_rebuilt(run_dir: Path) -> None:
    old = (Path(run_dir) / MARKER).read_text() if present(run_dir) else ""
    _write(run_dir, old + f"reports rebuilt from records/ by 'v6gate report' at {_now()}: they hold the checks that "
                          "finished before the run stopped.\n")


def finished(run_dir: Path) -> None:
    (Path(run_dir) / MARKER).unlink(missing_ok=True)


def present(run_dir: Path) -> bool:
    return (Path(run_dir) / MARKER).exists()
