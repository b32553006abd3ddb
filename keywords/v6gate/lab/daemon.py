"""A daemon of the lab: a real program started in a namespace as our child,
in the foreground, with its own log file, stopped by PID.

Host paths: a daemon runs in the lab's work directory (the directory of its
log) with TMPDIR a directory of the lab, so whatever it writes relative to
its working directory or into a temporary file (iperf3's buffers, Python's
http.server, a core file) stays in the lab and goes with it, never in the
shared /tmp or the harness's working directory.  Fixed paths a program
insists on are handled by ``lab/hostpaths.py``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from ..errors import LabError
from ..util.proc import in_ns, need
from .registry import process_start_time


class Daemon:
    def __init__(self, name: str, argv: list[str], ns: str, log: Path, env: dict | None = None):
        self.name = name
        self.argv = argv
        self.ns = ns
        self.log = log
        self.env = env
        self.proc: subprocess.Popen | None = None

    def start(self) -> Daemon:
        need(self.argv[0])
        self.log.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.log.parent / "tmp"
        tmp.mkdir(exist_ok=True)
        logf = open(self.log, "ab")
        env = {**os.environ, "TMPDIR": str(tmp), **(self.env or {})}
        self.proc = subprocess.Popen(
            in_ns(self.ns, self.argv), stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, start_new_session=True, close_fds=True, cwd=self.log.parent,
        )
        logf.close()
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def record(self) -> dict:
        return {"name": self.name, "pid": self.pid, "start": process_start_time(self.pid) if self.pid else None}

    def alive(self) -> bool:
        return bool(self.proc) and self.proc.poll() is None

    def check_running(self, settle_s: float = 0.0) -> None:
        if settle_s:
            time.sleep(settle_s)
        if not self.alive():
            tail = self.log_tail()
            raise LabError(f"{self.name} exited at start (code {self.proc.returncode}): {tail}")

    def log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except FileNotFoundError:
            return "(no log)"
        return " | ".join(text[-lines:]) or "(empty log)"

    def stop(self, graceful_s: float = 0.0) -> None:
        """Stop the daemon.  graceful_s=0 kills at once (teardown does not need
        goodbye messages; the namespace goes away anyway)."""
        if not self.proc or self.proc.poll() is not None:
            self._reap()
            return
        with contextlib.suppress(ProcessLookupError):
            if graceful_s > 0:
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(graceful_s)
                    return
                except subprocess.TimeoutExpired:
                    pass
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._reap()

    def _reap(self) -> None:
        if self.proc:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(2)
