"""Input checks the CLI makes before it builds or runs anything, so that bad
input ends in one line that says what to fix and exit code 2 (README.md),
never in a traceback, a half-built lab or a run that fails late: the
selection (areas, check ids), option values, the output directory, a
baseline file, the tester interface of a real device; plus a parser whose
errors are one line, and quiet handling of a closed stdout
(``v6gate list | head``)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from .errors import UsageError


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the fix (exit 2)."""

    def error(self, message: str):
        print(f"v6gate: {message}; see '{self.prog} --help'", file=sys.stderr)
        sys.exit(2)


def known_areas() -> set[str]:
    from .core.check import REGISTRY, load_all

    load_all()
    return {c.area for c in REGISTRY.values()}


def check_areas(areas: list[str] | None) -> None:
    if not areas:
        return
    known = known_areas()
    for a in areas:
        if a not in known:
            raise UsageError(f"--area {a}: no such area; known: {', '.join(sorted(known))}")


def check_ids(ids: list[str] | None) -> None:
    from .core.check import find

    for cid in ids or []:
        base, _, part = cid.partition("#")
        c = find(base)  # UsageError with a hint when unknown
        if part and part not in {p.letter for p in c.parts}:
            raise UsageError(f"--check {cid}: {base} has no part {part}; its parts: "
                             f"{', '.join(p.letter for p in c.parts if p.letter) or 'none (give the id alone)'}")


def check_waivers(target) -> None:
    """Each waiver names a check (and part) that exists: a typo would make it never apply."""
    from .core.check import REGISTRY, load_all

    load_all()
    for i, w in enumerate(target.waivers):
        c = REGISTRY.get(w.check)
        where = w.source or target.source
        if c is None:
            close = [k for k in REGISTRY if w.check.split(".")[-1] in k][:3]
            raise UsageError(f"{where}: waivers[{i}].check {w.check!r} is not a check id; "
                             + (f"did you mean {', '.join(close)}?" if close else "see 'v6gate list'"))
        if w.part and w.part not in {p.letter for p in c.parts}:
            raise UsageError(f"{where}: waivers[{i}].part {w.part!r}: {w.check} has parts "
                             f"{', '.join(p.letter for p in c.parts if p.letter) or 'none (leave part out)'}")


def check_extensions(target) -> None:
    """The area settings a target file gives under ``extensions`` that an area validates before anything runs
    (ikev2: its fields, and that the pre-shared key can be read when the DUT claims IKEv2)."""
    from .checks.ikev2.settings import validate as ikev2

    ikev2(target)


def check_workers(n: int, option: str = "-n") -> None:
    if n < 0:
        raise UsageError(f"{option} {n}: give 0 (in-process) or a positive number of workers")


def check_out_dir(out: str | None, option: str = "--out") -> None:
    """The directory must exist or be creatable, and be writable; nothing is left behind by the probe."""
    if not out:
        return
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {out}: is a file, not a directory; pass a directory")
    existing = p
    while not existing.exists():
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK) or not _can_create_in(existing):
        raise UsageError(f"{option} {out}: cannot write there ({existing} is not writable); pass a writable directory")


#: the least free space a run starts with: its reserve for the reports (report/incomplete.py) and room to work
MIN_FREE = 4 << 20


def check_free_space(out: str | None, option: str = "--out") -> None:
    """A run directory on a file system with less than MIN_FREE left would fill before its first reports."""
    from .paths import REPORTS

    p = Path(out) if out else REPORTS / "runs"
    while not p.exists():
        p = p.parent
    try:
        st = os.statvfs(p)
    except OSError:
        return
    free = st.f_bavail * st.f_frsize
    if free < MIN_FREE:
        raise UsageError(f"{option + ' ' + out if out else str(p)}: only {free // 1024} KiB free there; a run needs "
                         f"at least {MIN_FREE >> 20} MiB (its pcaps and reports): make room or pass another --out")


def _can_create_in(d: Path) -> bool:
    probe = d / f".v6gate-write-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def check_baseline(path: str | None) -> None:
    """A baseline is a previous run's results.json: an object with a list of check records."""
    if not path:
        return
    fix = "pass a previous run's results.json"
    from . import untrusted

    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--baseline {path}: file not found; {fix}")
    try:
        doc = untrusted.load_json(p, untrusted.RUN_OUTPUT.but(kind="results.json"))
    except UsageError as exc:
        raise UsageError(f"--baseline {exc}") from None
    checks = doc.get("checks") if isinstance(doc, dict) else None
    if not isinstance(checks, list) or not all(isinstance(c, dict) and "id" in c and "verdict" in c for c in checks):
        raise UsageError(f"--baseline {path}: not a results.json (no list of checks with id and verdict); {fix}")


def check_tester_interface(target) -> None:
    """A real device's tester interface must exist where the target says (namespace or root)."""
    if target.lab is not None:
        return
    from .errors import BenchError
    from .util.netns import netns

    try:
        with netns(target.tester_netns):
            exists = _has_link(target.tester_interface)
    except (OSError, BenchError) as exc:
        raise UsageError(f"{target.source}: tester.netns {target.tester_netns!r}: cannot enter it ({exc}); "
                         "name an existing network namespace or null") from None
    if not exists:
        where = f"namespace {target.tester_netns}" if target.tester_netns else "this machine"
        raise UsageError(f"{target.source}: tester.interface {target.tester_interface!r} does not exist in {where}; "
                         "name the NIC on the DUT's link (ip -br link)")
    _check_link_state(target)


def _check_link_state(target) -> None:
    """What the tester interface itself says before a packet is sent: down, no carrier (nothing on the other
    end: the DUT is off, the cable or switch port is down), or the DUT's MAC is the tester's own."""
    from .scope_guard import _ip_json

    iface, src = target.tester_interface, target.source
    link = next(iter(_ip_json(["link", "show", "dev", iface], target.tester_netns)), None)
    if link is None:
        return
    flags = set(link.get("flags") or [])
    if "UP" not in flags:
        raise UsageError(f"{src}: tester.interface {iface} is down; bring it up (ip link set {iface} up)")
    if "NO-CARRIER" in flags:
        raise UsageError(f"{src}: tester.interface {iface} has no carrier: nothing is on the other end (the DUT is off, "
                         "or its cable or switch port is down); fix the link, then run")
    if str(link.get("address", "")).lower() == target.dut_mac:
        raise UsageError(f"{src}: dut.mac {target.dut_mac} is tester.interface {iface}'s own MAC; give the DUT's MAC")


def _has_link(name: str) -> bool:
    import socket

    try:
        socket.if_nametoindex(name)
        return True
    except OSError:
        return False


def quiet_closed_stdout() -> int:
    """stdout's reader went away (``v6gate list | head -3``): stop writing,
    say nothing, end like a Unix tool killed by SIGPIPE (128 + 13)."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 141


def flushed(rc: int) -> int:
    """Flush stdout now, where a closed pipe can still be handled quietly (not at interpreter exit)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return quiet_closed_stdout()
    return rc
