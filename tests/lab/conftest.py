"""Fixtures for tests against the real namespace lab (root)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from v6gate.lab import registry
from v6gate.paths import ROOT

#: The foundation's vertical slice: every run-level project test uses it, so
#: these tests keep their cost as areas grow.
SLICE = [
    "icmpv6.echo_request_is_answered",
    "nd.ns_is_answered_without_nce",
    "nd.ns_for_global_address_is_answered",
    "nd.invalid_ns_is_ignored",
    "slaac.link_local_address_is_probed_before_use",
    "slaac.global_address_is_formed_and_probed",
]


def slice_args() -> list[str]:
    return [a for c in SLICE for a in ("--check", c)]


def v6gate(*args, timeout=600, check=False, **kw) -> subprocess.CompletedProcess:
    cp = subprocess.run([sys.executable, "-m", "v6gate.cli", *map(str, args)], capture_output=True, text=True,
                        timeout=timeout, cwd=ROOT, **kw)
    if check and cp.returncode != 0:
        raise AssertionError(f"v6gate {' '.join(map(str, args))} -> {cp.returncode}\n{cp.stdout}\n{cp.stderr}")
    return cp


def spawn_v6gate(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "v6gate.cli", *map(str, args)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, **kw)


def namespaces_with(prefix: str) -> list[str]:
    return [n for n in registry.our_namespaces() if n.startswith(prefix)]


def processes_in_our_namespaces() -> list[int]:
    return [p for ns in registry.our_namespaces() for p in registry.ns_pids(ns)]


def wait_for(pred, timeout=30.0, step=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def claiming_target(directory: Path, capabilities) -> Path:
    """A copy of the lab target that also claims ``capabilities`` (which the lab's DUT does not implement: the
    parts needing them run against the project's own simulated peer, lab/faults.py stands_in_for)."""
    import yaml

    from v6gate.core.target import absolute_file_refs

    lab = ROOT / "fixtures" / "targets" / "lab.yaml"
    doc = absolute_file_refs(yaml.safe_load(lab.read_text()), lab.parent)  # key files named from the copy too
    doc["capabilities"] = [*doc["capabilities"], *[c for c in capabilities if c not in doc["capabilities"]]]
    doc["lab"]["topology"] = str((lab.parent / doc["lab"]["topology"]).resolve())
    doc["waiver_files"] = [str(lab.parent / w) for w in doc.get("waiver_files", [])]
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"lab-claiming-{'-'.join(sorted(capabilities))}.yaml"
    target.write_text(yaml.safe_dump(doc))
    return target


def run_dir_from(stdout: str) -> Path:
    for line in stdout.splitlines():
        if "results " in line and line.strip().startswith("results"):
            return Path(line.split("results", 1)[1].strip()).parent
    raise AssertionError(f"no results path in output:\n{stdout}")


def load_results(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())


def verdicts(doc: dict) -> dict[str, str]:
    return {f"{c['id']}#{c['part']}": c["verdict"] for c in doc["checks"]}


def kill_group(proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="session")
def selftest_dir() -> Path:
    d = ROOT / "reports" / "selftest"
    d.mkdir(parents=True, exist_ok=True)
    return d


# -- controls: one run directory per pytest session, merged into reports/controls.json ----
CONTROLS_JSON = ROOT / "reports" / "controls.json"


def pytest_configure(config):
    if not hasattr(config, "workerinput") and "V6GATE_CONTROLS_DIR" not in os.environ:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        d = ROOT / "reports" / "controls" / stamp
        os.environ["V6GATE_CONTROLS_DIR"] = str(d)


@pytest.fixture(scope="session")
def controls_run_dir() -> Path:
    d = Path(os.environ["V6GATE_CONTROLS_DIR"])
    d.mkdir(parents=True, exist_ok=True)
    return d


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):
        return
    d = Path(os.environ.get("V6GATE_CONTROLS_DIR", "/nonexistent"))
    files = sorted((d / "records").glob("controls-*.jsonl")) if d.is_dir() else []
    if not files:
        return
    from v6gate.core.check import load_all

    entries = {}
    if CONTROLS_JSON.exists():
        try:
            for e in json.loads(CONTROLS_JSON.read_text()).get("checks", []):
                entries[(e["id"], e["part"])] = e
        except (ValueError, KeyError):
            entries = {}
    for f in files:
        for line in f.read_text().splitlines():
            e = json.loads(line)
            entries[(e["id"], e["part"])] = e
    registry = load_all()
    live = {k: e for k, e in entries.items()
            if k[0] in registry and any(p.letter == k[1] for p in registry[k[0]].parts)}
    checks = sorted(live.values(), key=lambda e: (e["area"], e.get("ipv6ready") or "~", e["id"], e["part"] or ""))
    from v6gate.report import controls as proof

    doc = {
        "schema": "v6gate/controls/2",
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "what": "each check part proven both ways on the embedded lab: PASS on a conforming DUT, FAIL on a broken one "
                "for the reason the fault declares (fails_with / counter); every attempt kept; each entry stamped "
                "with the commit and a hash of the check's source and faults it was proven at",
        "summary": proof.summarize(checks, registry),
        "checks": checks,
    }
    CONTROLS_JSON.write_text(json.dumps(doc, indent=1))
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr:
        sm = doc["summary"]
        counts = {k: v for k, v in sm.items() if isinstance(v, int)}
        tr.write_line(f"controls: {counts}; wrong reason {len(sm['wrong_reason'])}, stale {len(sm['stale'])}, "
                      f"{sm['fail_side_detection']} -> {CONTROLS_JSON}")



@pytest.fixture
def stale_sweep_lock():
    """Held by the tests that SIGKILL a run and then sweep with `lab down --stale`: one test's sweep must
    not remove another's leftovers before that test has looked at them (xdist runs them side by side)."""
    import fcntl

    from v6gate.paths import STATE_DIR

    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / ".stale-sweep.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield
