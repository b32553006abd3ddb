"""The audit's fast engine: every frame of a capture into ``hosts.Audit``
without tshark.

Every frame is dissected and judged by the C engine (``core.py``,
``engine/``: the dissector and the per-host rules held in C), inside the
buffers of the audit's own reader (``pcapread.py``), with no per-frame
Python: on one core it reads faster than a disk delivers (figures in
docs/v6only.md), so a second process has nothing to win.

The Python path (``scan``: ``dissect.fields_of``, tshark's fields computed
in Python, into ``Audit.add``) is the engine's reference, tested field by
field against tshark; the engine is tested against it host by host.  It
reads a capture when the engine cannot be built (no C compiler: said once
on stderr) or cannot judge it exactly (a frame's time beyond 64-bit
nanoseconds: said on stderr), and when asked (``deep_only``).
"""

from __future__ import annotations

import os
import sys
import time

from . import core, dissect
from .hosts import Audit
from .pcapread import Reader


class Progress:
    """frames, MB, rate and ETA on one line of a terminal's stderr; silent
    when stderr is not a terminal (CI, a pipe, a file)."""

    def __init__(self, total_bytes: int, stream=None, force: bool | None = None, every: float = 0.5):
        self.stream = stream or sys.stderr
        self.every = every
        self.on = force if force is not None else bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = max(1, total_bytes)
        self.t0 = self.last = time.monotonic()
        self.shown = False

    def update(self, frames: int, done_bytes: int, final: bool = False) -> None:
        if not self.on:
            return
        now = time.monotonic()
        if not final and now - self.last < self.every:
            return
        self.last = now
        el = max(now - self.t0, 1e-6)
        rate = frames / el
        eta = (self.total - done_bytes) / (done_bytes / el) if done_bytes else 0
        pct = min(100.0, 100.0 * done_bytes / self.total)
        self.stream.write(f"\rv6gate audit: {frames:,} frames, {done_bytes / 1e6:,.0f}/{self.total / 1e6:,.0f} MB "
                          f"({pct:.0f}%), {rate:,.0f} frames/s, ETA {eta:,.0f} s   ")
        if final:
            self.stream.write("\n")
        self.stream.flush()
        self.shown = True

    def finish(self, frames: int, done_bytes: int) -> None:
        """The last line, ended, once a line was shown or the read outlasted
        one interval; a read quicker than that leaves the terminal alone."""
        if self.shown or time.monotonic() - self.t0 >= self.every:
            self.update(frames, done_bytes, final=True)


def option_108_decoder(audit: Audit) -> dict:
    """Make ``audit`` decode option 108 from the frame being added
    (``state["frame"]``); ``state["decoded"]`` counts the decodes."""
    state = {"frame": b"", "decoded": 0}

    def option_108(_offset):
        state["decoded"] += 1
        return dissect.option_108(state["frame"])

    audit.option_108 = option_108
    return state


def read_into(audit: Audit, path, *, deep_only: bool = False, progress: Progress | None = None) -> dict:
    """Feed every frame of ``path`` to ``audit`` (a fresh one); returns
    counters: packets, decoded_108 (option-108 values decoded), bytes, and
    ``engine`` ("c": the C engine judged every frame; "python": the Python
    path did)."""
    lib = None if deep_only else core.load()
    if lib is not None:
        try:
            return core.read(audit, path, lib, progress=progress)
        except core.Unsupported as exc:  # (the audit is untouched: the engine fills it only at its end)
            print(f"v6gate audit: {exc}; the Python path reads this capture", file=sys.stderr)
    reader = Reader(path)
    state = option_108_decoder(audit)
    scan(audit, reader, state, progress=progress)
    if progress is not None:
        progress.finish(reader.frames, reader.bytes_read)
    return {"packets": reader.frames, "decoded_108": state["decoded"], "bytes": reader.size, "engine": "python",
            "pid": os.getpid()}


class Read:
    """A capture read for its report: by the C engine, its hosts left in it (``engine``), or on the Python
    path (``audit``).  ``write`` judges the hosts into the report's streams (the C writer, or hostout.py's
    for the Python path and for a selection of hosts); ``audit()`` gives the hosts as ``hosts.Audit``."""

    def __init__(self, counts: dict, *, engine: core.Engine | None = None, audit: Audit | None = None):
        self.counts, self.engine, self._audit = counts, engine, audit
        if engine is not None:
            run = engine.run()
            counts["decoded_108"] = run["decoded"]
            self.frames, self.hosts = run["frames"], run["hosts"]
            self.t0 = core._t(run["t0"]) if run["t0"] is not None else None
            self.t_last = core._t(run["t_last"]) if run["t0"] is not None else 0.0
            self.rdnss_seen, self.pref64_seen = set(run["rdnss_seen"]), set(run["pref64_seen"])
        else:
            self.frames, self.hosts = audit.frames, len(audit.hosts)
            self.t0, self.t_last = audit.t0, audit.t_last
            self.rdnss_seen, self.pref64_seen = audit.rdnss_seen, audit.pref64_seen

    def audit(self) -> Audit:
        """The hosts as ``hosts.Audit`` (the engine's exported: it keeps none after)."""
        if self._audit is None:
            audit = Audit()
            self.engine.export(audit)
            self.engine.close()
            self.engine, self._audit = None, audit
        return self._audit

    def write(self, streams, capture_name: str, pcap: str, macs: list[str] | None = None):
        """Every host (or those of ``macs``) judged and written to ``streams``, in MAC order."""
        from .hostout import STARTUP_WINDOW, strings, write_python

        if self.engine is not None and macs is None:
            self.engine.report(streams, strings(capture_name, pcap), STARTUP_WINDOW)
            return streams
        audit = self.audit()
        return write_python(streams, audit, list(audit.hosts) if macs is None else macs, capture_name, pcap)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None


def read(path, *, progress: Progress | None = None) -> Read:
    """Every frame of ``path`` judged, for its report: by the C engine (its hosts kept in it), or on the
    Python path (no compiler; a time beyond 64-bit ns), as ``read_into`` chooses."""
    lib = core.load()
    if lib is not None:
        try:
            engine, counts = core.walk(path, lib, progress=progress)
            return Read(counts, engine=engine)
        except core.Unsupported as exc:
            print(f"v6gate audit: {exc}; the Python path reads this capture", file=sys.stderr)
    audit = Audit()
    counts = read_into(audit, path, deep_only=True, progress=progress)
    return Read(counts, audit=audit)


def scan(audit: Audit, reader: Reader, state: dict, *, progress: Progress | None = None) -> int:
    """The Python path: every frame of ``reader`` dissected (tshark's
    fields) and added to ``audit``; returns the frames read."""
    fields_of, add = dissect.fields_of, audit.add
    check_every = (1 << 14) - 1
    k = 0
    for off, ns, orig, lt, fr in reader:
        k += 1
        if progress is not None and not k & check_every:
            progress.update(reader.frames, reader.bytes_read)
        state["frame"] = fr
        add(reader.frames, off, fields_of(fr, lt, orig, ns))
    return k
