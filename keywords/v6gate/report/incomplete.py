"""The marker of a run directory whose run did not finish: ``INCOMPLETE``.

``v6gate run`` writes it first, before any check runs, and removes it only
after results.json, junit.xml and report.html are written (each atomically).
A run killed before that (SIGKILL, a crash, a power cut) leaves a directory
that says so instead of looking finished: the records of the checks that
finished are in records/, and ``v6gate report RUN_DIR`` builds the reports
from them (the marker stays, rewritten to say the reports were rebuilt).

A run directory that fills up (or is remounted read-only) during the run
must still hold the reports of what finished, or say which it could not
write: from its start the run keeps room in reserve (``.v6gate-reserve``,
1 MiB of real blocks, given back just before the reports are written, and
a small one for this marker, given back just before it says which reports
did not fit).  A report that does not fit is not written (never half of it)
and the marker names it and why (``mark_unwritten``; ``v6gate verify``
lists it as missing)."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

MARKER = "INCOMPLETE"
RESERVES = {".v6gate-reserve": 1 << 20, ".v6gate-reserve-marker": 64 << 10}  # for the reports, for the marker
_UNWRITTEN = "not written: "


def _write(run_dir: Path, text: str) -> None:
    path = Path(run_dir) / MARKER
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def mark_started(run_dir: Path, run_id: str) -> None:
    _reserve(run_dir)
    _write(run_dir, f"v6gate run {run_id} started {_now()} (pid {os.getpid()}) and has not written its reports: "
                    f"it is running, or it was killed. 'v6gate report {run_dir}' builds them from records/ (checks "
                    "that had not finished are missing).\n")


def mark_interrupted(run_dir: Path) -> None:
    release_all(run_dir)
    _write(run_dir, f"interrupted by a signal at {_now()}: the reports hold the checks that finished before it.\n")


def mark_stopped(run_dir: Path, why: str) -> None:
    """The run stopped early: its bench was lost (the tester interface, the capture) or its directory filled
    up or went read-only; the parts after it were not run (ERROR) or could not be recorded."""
    release_all(run_dir)
    with contextlib.suppress(OSError):
        _write(run_dir, f"stopped at {_now()}: {why}; the reports hold the checks whose results were written; "
                        f"'v6gate run --resume --out {run_dir}' (with the same options) runs the rest.\n")


def mark_rebuilt(run_dir: Path) -> None:
    release_all(run_dir)
    old = (Path(run_dir) / MARKER).read_text() if present(run_dir) else ""
    _write(run_dir, old + f"reports rebuilt from records/ by 'v6gate report' at {_now()}: they hold the checks that "
                          "finished before the run stopped.\n")


def mark_unwritten(run_dir: Path, missing: list[str], why: str) -> bool:
    """Say which reports a full or read-only run directory kept out; False when even this could not be
    written (the marker of the run's start stays: the run still reads as not finished)."""
    old = (Path(run_dir) / MARKER).read_text() if present(run_dir) else ""
    release_reserve(run_dir, ".v6gate-reserve-marker")
    try:
        _write(run_dir, old + f"reports not written at {_now()} ({why}): the run directory holds the reports listed "
                              f"in MANIFEST.sha256 and the records of the checks that finished; make room and run "
                              f"'v6gate report {run_dir}' to write the rest.\n{_UNWRITTEN}{' '.join(missing)}\n")
        return True
    except OSError:
        return False


def unwritten(run_dir: Path) -> list[str]:
    """The report files the marker says were not written."""
    try:
        text = (Path(run_dir) / MARKER).read_text()
    except OSError:
        return []
    lines = [ln for ln in text.splitlines() if ln.startswith(_UNWRITTEN)]
    return lines[-1][len(_UNWRITTEN):].split() if lines else []


def _reserve(run_dir: Path) -> None:
    """Room for the final reports and this marker, taken now (best effort: a directory too small for it
    is refused at the start, cli_guard.check_free_space)."""
    block = bytes(64 << 10)
    for name, size in RESERVES.items():
        try:
            fd = os.open(Path(run_dir) / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                for _ in range(size // len(block)):
                    os.write(fd, block)
            finally:
                os.close(fd)
        except OSError:
            release_reserve(run_dir, name)


def release_reserve(run_dir: Path, name: str | None = None) -> None:
    """Give the reserve back: the reports' (``.v6gate-reserve``, before they are written), or one named."""
    with contextlib.suppress(OSError):
        (Path(run_dir) / (name or ".v6gate-reserve")).unlink()


def release_all(run_dir: Path) -> None:
    for name in RESERVES:
        release_reserve(run_dir, name)


def finished(run_dir: Path) -> None:
    release_all(run_dir)
    (Path(run_dir) / MARKER).unlink(missing_ok=True)


def present(run_dir: Path) -> bool:
    return (Path(run_dir) / MARKER).exists()
