#!/usr/bin/env python3
"""Print v6gate labs that leaked: namespaces whose owning process is gone
(or that no live harness registered).  Labs of processes still running
belong to someone else's run and are not leftovers; standalone labs
(`v6gate lab up`) count only if they did not exist when we started
(pass their ids, one per line, on stdin)."""

import sys

from v6gate.lab import hostpaths, registry

before = set(sys.stdin.read().split()) if not sys.stdin.isatty() else set()
reg = registry.registered()
leaked = []
for lab_id in sorted({ns.rsplit("-", 1)[0] for ns in registry.our_namespaces()} | set(reg)):
    info = reg.get(lab_id)
    if info and info.get("standalone"):
        if lab_id not in before:
            leaked.append(lab_id)
    elif not info or not registry.owner_alive(info):
        leaked.append(lab_id)
# daemons' files in host paths and their private mounts (storage daemons, lab/hostpaths.py)
leaked += [f"file:{p}" for p in hostpaths.daemon_files()] + [f"mount:{m}" for m in hostpaths.lab_mounts()]
print(" ".join(leaked))
