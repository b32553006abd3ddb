"""Kill tolerance: `v6gate run` SIGKILLed at 10 random points (while it
starts, builds its lab, runs checks, writes reports), each followed by
`v6gate lab down --stale`, leaves no namespace, process, mount, tmpfs or
host-path file of its own; the run directory says it is incomplete (or
holds whole reports), `v6gate report` rebuilds it, and the verdicts of a
run after the kills equal those of a run before them.

Wall time: one reference run, 10 killed ones (kill points spread over the
reference run's own duration), one run after; a two-check selection."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

from v6gate.lab import registry
from v6gate.paths import STATE_DIR
from v6gate.report.incomplete import MARKER

from conftest import kill_group, namespaces_with, spawn_v6gate, v6gate

SELECTION = ["--check", "icmpv6.echo_request_is_answered", "--check", "nd.ns_is_answered_without_nce"]
KILLS = 10
PRIVATE_SOURCES = ("v6gate-private", "v6gate-dhcpcd")


def _run(out: Path) -> tuple[subprocess.Popen, float]:
    t0 = time.monotonic()
    proc = spawn_v6gate("run", "-n", "1", "--no-gates", "--out", str(out), *SELECTION)
    return proc, t0


def _verdicts(run_dir: Path) -> dict:
    doc = json.loads((run_dir / "results.json").read_text())
    return {f"{c['id']}#{c.get('part') or ''}": c["verdict"] for c in doc["checks"]}


def _run_id(run_dir: Path) -> str | None:
    marker = run_dir / MARKER
    if marker.exists():
        words = marker.read_text().split()
        return words[2] if words[:2] == ["v6gate", "run"] else None
    return None


def _pids_of(prefix: str) -> list[int]:
    pids = [p for ns in namespaces_with(prefix) for p in registry.ns_pids(ns)]
    for lab_id, info in registry.registered().items():
        if lab_id.startswith(prefix):
            pids += [p["pid"] for p in info.get("procs", []) if p.get("pid")]
    return pids


def _leftovers(prefix: str, pids: list[int]) -> list[str]:
    left = [f"namespace:{n}" for n in namespaces_with(prefix)]
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left_part, _, right = line.partition(" - ")
            point, source = left_part.split()[4], [*right.split(), "", ""][1]
            if prefix in point or source in PRIVATE_SOURCES:
                left.append(f"mount:{point} ({source})")
    if STATE_DIR.is_dir():
        left += [f"workdir:{d}" for d in STATE_DIR.iterdir() if d.name.startswith(prefix)]
        left += [f"registry:{p}" for p in (STATE_DIR / "labs").glob(f"{prefix}*")]
    if os.path.isdir("/etc/netns"):
        left += [f"etc:/etc/netns/{n}" for n in os.listdir("/etc/netns") if n.startswith(prefix)]
    if pids:
        ps = subprocess.run(["ps", "-o", "pid=,stat=,comm=", "-p", ",".join(map(str, pids))], capture_output=True,
                            text=True).stdout.splitlines()
        left += [f"process:{line.strip()}" for line in ps if line.split()[1][0] != "Z"]
    return left


def _host_paths() -> set[str]:
    """Host paths a lab daemon could write if its isolation failed."""
    return {p for p in ("/run/dhcpcd", "/var/lib/dhcpcd", "/var/lib/kea", "/run/kea", "/run/radvd", "/run/unbound",
                        "/var/lib/tayga") if os.path.exists(p)}


def test_sigkill_at_random_points_leaves_nothing_and_changes_no_verdict(tmp_path, stale_sweep_lock):
    seed = int(os.environ.get("V6GATE_KILL_SEED", time.time_ns() % 1_000_000))
    rnd = random.Random(seed)
    paths_before = _host_paths()

    ref_dir = tmp_path / "reference"
    proc, t0 = _run(ref_dir)
    proc.communicate(timeout=600)
    ref_s = time.monotonic() - t0
    assert proc.returncode == 0, f"reference run exit {proc.returncode}"
    assert not (ref_dir / MARKER).exists(), "a finished run keeps its INCOMPLETE marker"
    reference = _verdicts(ref_dir)

    points, incomplete, rebuilt = [], 0, 0
    for i in range(KILLS):
        out = tmp_path / f"killed-{i}"
        delay = rnd.uniform(0.2, ref_s + 0.5)
        proc, t0 = _run(out)
        time.sleep(max(0.0, delay - (time.monotonic() - t0)))
        run_id = _run_id(out)
        prefix = f"{registry.PREFIX}{run_id}" if run_id else None
        pids = _pids_of(prefix) if prefix else []
        kill_group(proc, signal.SIGKILL)
        proc.wait(30)
        points.append(round(delay, 2))
        v6gate("lab", "down", "--stale", check=True)
        if prefix:
            left = _leftovers(prefix, pids)
            assert not left, f"kill {i} at {delay:.2f} s (seed {seed}) left: {left}"
        results = out / "results.json"
        if (out / MARKER).exists():
            incomplete += 1
            if results.exists():
                json.loads(results.read_text())  # whole or absent, never half-written
            if (out / "records").is_dir():
                cp = v6gate("report", str(out))
                assert cp.returncode in (0, 1, 3), f"report of killed run {i}: {cp.returncode} {cp.stderr}"
                assert "did not finish" in cp.stdout, cp.stdout
                partial = _verdicts(out)
                rebuilt += 1
                done = {k: v for k, v in partial.items() if v in ("PASS", "FAIL")}
                assert all(reference.get(k) == v for k, v in done.items()), \
                    f"killed run {i}: finished checks {done} differ from the reference {reference}"
        elif out.exists():
            assert results.exists() and _verdicts(out) == reference, f"kill {i} after the reports: {out}"

    after_dir = tmp_path / "after"
    proc, _ = _run(after_dir)
    proc.communicate(timeout=600)
    assert proc.returncode == 0
    assert _verdicts(after_dir) == reference, "the kills changed a later run's verdicts"
    assert _host_paths() <= paths_before, f"host paths appeared: {_host_paths() - paths_before}"
    print(f"kill points (s, seed {seed}): {points}; reference run {ref_s:.1f} s; {incomplete} marked "
          f"{MARKER}, {rebuilt} rebuilt by v6gate report; leftovers 0")
