#!/usr/bin/env python3
"""Print v6gate labs that leaked: namespaces whose owning process is gone
(or that no live harness registered).  Labs of processes still running
belong to someone else's run and are not leftovers; standalone labs
(`v6gate lab up`) count only if they did not exist when we started
(pass their ids, one per line, on stdin).

Besides leaked labs (by id), it prints what a lab must never leave on the
host once its owner is gone, as ``kind:path``: a ``mount:`` (a tmpfs, an
overlay or a bind of a lab daemon's private paths that escaped into the
host's mount namespace, or anything mounted under the lab state directory),
a ``workdir:`` (the lab's directory under the state directory) and an
``etc:`` (its /etc/netns/<namespace> directory).  Empty output: nothing
left."""

import os
import sys
import time

from v6gate.lab import daemon_leftovers, registry
from v6gate.paths import STATE_DIR

#: mount sources the lab's private mount namespaces use (lab/hostpaths.py); never visible on the host
PRIVATE_SOURCES = ("v6gate-private", "v6gate-dhcpcd", "tmpfs-v6gate")


#: a directory younger than this may belong to a lab being built right now (not registered yet)
SETTLE_S = 60


def _old(path) -> bool:
    try:
        return time.time() - os.stat(path).st_mtime > SETTLE_S
    except OSError:
        return False


def _lab_of(name: str) -> str | None:
    return name.rsplit("-", 1)[0] if name.startswith(registry.PREFIX) and "-" in name else (
        name if name.startswith(registry.PREFIX) else None)


def leaked_labs(before: set[str]) -> list[str]:
    reg = registry.registered()
    leaked = []
    for lab_id in sorted({ns.rsplit("-", 1)[0] for ns in registry.our_namespaces()} | set(reg)):
        info = reg.get(lab_id)
        if info and info.get("standalone"):
            if lab_id not in before:
                leaked.append(lab_id)
        elif not info or not registry.owner_alive(info):
            leaked.append(lab_id)
    return leaked


def _live(lab_id: str, reg: dict, before: set[str]) -> bool:
    info = reg.get(lab_id)
    if not info:
        return False
    if info.get("standalone"):
        return lab_id in before
    return registry.owner_alive(info)


def host_paths(before: set[str]) -> list[str]:
    """Mounts, work directories and /etc/netns directories of labs without a live owner."""
    reg = registry.registered()
    found = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                point = left.split()[4].replace("\\040", " ")
                source = right.split()[1] if len(right.split()) > 1 else ""
                if source in PRIVATE_SOURCES:
                    found.append(f"mount:{point}")
                elif point.startswith(str(STATE_DIR) + "/"):
                    lab = _lab_of(point[len(str(STATE_DIR)) + 1:].split("/")[0])
                    if lab and not _live(lab, reg, before):
                        found.append(f"mount:{point}")
    except OSError:
        pass
    if STATE_DIR.is_dir():
        for d in sorted(STATE_DIR.iterdir()):
            lab = _lab_of(d.name)
            if lab and d.is_dir() and _old(d) and not _live(lab, reg, before) and not any(
                    ns.startswith(d.name) for ns in registry.our_namespaces()):
                found.append(f"workdir:{d}")
    etc = "/etc/netns"
    if os.path.isdir(etc):
        for name in sorted(os.listdir(etc)):
            lab = _lab_of(name)
            if lab and _old(f"{etc}/{name}") and not _live(lab, reg, before) and name not in registry.our_namespaces():
                found.append(f"etc:{etc}/{name}")
    return found


if __name__ == "__main__":
    before = set(sys.stdin.read().split()) if not sys.stdin.isatty() else set()
    # daemons' files in host paths and their private mounts (storage daemons, lab/daemon_leftovers.py)
    daemons = ([f"file:{p}" for p in daemon_leftovers.daemon_files()]
               + [f"mount:{m}" for m in daemon_leftovers.lab_mounts()])
    print(" ".join(leaked_labs(before) + host_paths(before) + daemons))
