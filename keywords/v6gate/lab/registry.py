"""Bookkeeping of running labs, so nothing of ours outlives a crash.

Every lab writes ``/run/v6gate/labs/<lab_id>.json`` *before* it creates its
first namespace.  Cleanup works from three sources so that it still finds
everything after a SIGKILL: the registry files, the namespaces whose names
carry our prefix, and the processes living inside those namespaces.

Only names starting with ``PREFIX`` are touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from ..paths import STATE_DIR

PREFIX = "v6g"
LABS_DIR = STATE_DIR / "labs"


def registry_path(lab_id: str) -> Path:
    return LABS_DIR / f"{lab_id}.json"


def register(lab_id: str, info: dict) -> None:
    LABS_DIR.mkdir(parents=True, exist_ok=True)
    tmp = registry_path(lab_id).with_suffix(".tmp")
    tmp.write_text(json.dumps(info, indent=1))
    os.replace(tmp, registry_path(lab_id))


def unregister(lab_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        registry_path(lab_id).unlink()


def registered() -> dict[str, dict]:
    out = {}
    if not LABS_DIR.is_dir():
        return out
    for p in LABS_DIR.glob("*.json"):
        try:
            out[p.stem] = json.loads(p.read_text())
        except (OSError, ValueError):
            out[p.stem] = {}
    return out


def our_namespaces() -> list[str]:
    try:
        names = os.listdir("/run/netns")
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n.startswith(PREFIX))


def ns_pids(ns: str) -> list[int]:
    cp = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(x) for x in cp.stdout.split() if x.isdigit()]


def kill_ns_processes(namespaces: list[str], grace_s: float = 2.0) -> int:
    """SIGTERM every process in the namespaces, SIGKILL what is left after grace_s.

    Processes survive ``ip netns del`` (it only removes the name), so this must
    happen first.  Returns the number of processes signalled."""
    pids = {p for ns in namespaces for p in ns_pids(ns)}
    pids.discard(os.getpid())
    if not pids:
        return 0
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in list(pids):
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pids.discard(p)
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 1.0)
        while pids and time.monotonic() < deadline:
            for p in list(pids):
                if not _alive(p):
                    pids.discard(p)
            time.sleep(0.02)
        if not pids:
            break
    return len(pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        if state == "Z":  # zombie: dead, waiting for its parent to reap it
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
            return False
        return True
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def delete_namespaces(namespaces: list[str]) -> None:
    for ns in namespaces:
        # Delete the links first: a veth only disappears with its namespace
        # asynchronously, and a rebuilt lab would collide with the old end.
        cp = subprocess.run(["ip", "-n", ns, "-o", "link", "show"], capture_output=True, text=True)
        for line in cp.stdout.splitlines():
            name = line.split(":", 2)[1].strip().split("@")[0]
            if name != "lo":
                subprocess.run(["ip", "-n", ns, "link", "del", name], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)


def owner_alive(info: dict) -> bool:
    pid = info.get("owner_pid")
    if not pid:
        return False
    if not _alive(pid):
        return False
    # guard against pid reuse: compare the process start time we recorded
    return _start_of(pid) == info.get("owner_start")


def _start_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def process_start_time(pid: int | None = None) -> str | None:
    return _start_of(pid or os.getpid())


def cleanup(*, lab_ids: list[str] | None = None, stale_only: bool = False, prefix: str = PREFIX) -> list[str]:
    """Remove labs.  lab_ids: only these; stale_only: only labs whose owner died;
    otherwise every namespace named with ``prefix``.  Returns the lab ids removed."""
    # namespaces first, then the registry: a lab registers before it creates its first namespace, so every
    # namespace listed here has its registry file already (read the other way round, a lab another run was
    # building in between looked like an interrupted build and was removed: v6gate campaign starts runs at once)
    ns_all = our_namespaces()
    reg = registered()
    by_lab: dict[str, list[str]] = {}
    for ns in ns_all:
        if not ns.startswith(prefix):
            continue
        lab_id = ns.rsplit("-", 1)[0]
        by_lab.setdefault(lab_id, []).append(ns)
    for lab_id in reg:
        if lab_id.startswith(prefix):
            by_lab.setdefault(lab_id, [])
    chosen = []
    for lab_id, namespaces in sorted(by_lab.items()):
        if lab_ids is not None and lab_id not in lab_ids:
            continue
        info = reg.get(lab_id, {})
        if stale_only and info and (info.get("standalone") or owner_alive(info)):
            continue  # a running harness's lab, or one left up on purpose by `lab up`
        # (namespaces without a registry file come from an interrupted build: stale)
        namespaces = sorted(set(namespaces) | {n for n in info.get("namespaces", []) if n in ns_all})
        kill_ns_processes(namespaces)
        for proc in info.get("procs", []):
            # a daemon whose namespace is already gone; verify it is still the
            # same process (pid reuse) before killing it
            pid = proc.get("pid")
            if pid and _alive(pid) and _start_of(pid) == proc.get("start"):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        delete_namespaces(namespaces)
        if info.get("workdir"):
            shutil.rmtree(info["workdir"], ignore_errors=True)
        unregister(lab_id)
        chosen.append(lab_id)
    return chosen
