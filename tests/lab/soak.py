"""Soak: do consecutive runs against one external DUT leave anything behind?

    .venv/bin/python tests/lab/soak.py --runs 10 --area icmpv6            # in one process
    .venv/bin/python tests/lab/soak.py --runs 10 --area icmpv6 --repeat   # `v6gate repeat 10`

The DUT is the Linux stack of a namespace on a veth link (veth_dut.VethBench).
In one process: every part of the area, run after run, each run a new
Session (its port, capture and recorder) as the pytest phase makes one, and
after each run this process's RSS, open fds, threads and child processes
(after gc.collect()) and the namespaces of v6gate's prefix still present.
With --repeat: ``v6gate repeat N``, sampled every 0.2 s: per child run the
peak RSS, fds and threads of the tree below repeat, and after it the
processes and namespaces left.  One JSON line per run, then a summary."""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from veth_dut import VethBench

from v6gate.lab import registry
from v6gate.paths import ROOT, new_run_id


def _status(pid: int | str, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _children(pid: int) -> list[int]:
    """Every process below ``pid``."""
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = d.joinpath("stat").read_text()
            except OSError:
                continue
            parent[int(d.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    out, frontier = [], {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier}
        out += frontier
    return out


def _tree(pids: list[int]) -> dict:
    rss = fds = threads = 0
    for p in pids:
        try:
            rss += _status(p, "VmRSS")
            threads += _status(p, "Threads")
            fds += len(os.listdir(f"/proc/{p}/fd"))
        except OSError:
            continue
    return {"rss_kib": rss, "fds": fds, "threads": threads, "processes": len(pids)}


def in_one_process(bench: VethBench, target: str, runs: int, area: str, out: Path) -> list[dict]:
    from v6gate.core.check import all_items
    from v6gate.core.session import RunRecorder, Session

    items = all_items(areas=[area])
    run_id = os.environ.setdefault("V6GATE_RUN_ID", new_run_id())  # names anything a run makes (namespaces)
    rows = []
    for i in range(1, runs + 1):
        run_dir = out / f"run-{i:02d}"
        t0, c0 = time.monotonic(), time.process_time()
        session = Session.for_target(target, run_dir, recorder=RunRecorder(run_dir))
        verdicts: dict[str, int] = {}
        try:
            for c, part in items:
                v = str(session.run(c, part).verdict)
                verdicts[v] = verdicts.get(v, 0) + 1
        finally:
            session.close()
        del session
        gc.collect()
        rows.append({"run": i, "verdicts": verdicts, "wall_s": round(time.monotonic() - t0, 1),
                     "cpu_s": round(time.process_time() - c0, 2),
                     "rss_kib": _status("self", "VmRSS"), "max_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                     "fds": len(os.listdir("/proc/self/fd")), "threads": threading.active_count(),
                     "os_threads": _status("self", "Threads"), "children": len(_children(os.getpid())),
                     "run_namespaces": len([n for n in registry.our_namespaces() if run_id in n]),
                     "load": os.getloadavg()[0]})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def with_repeat(target: str, runs: int, area: str, out: Path) -> list[dict]:
    proc = subprocess.Popen([sys.executable, "-m", "v6gate.cli", "repeat", str(runs), "--out", str(out), "--",
                             "--target", target, "--area", area, "--no-gates", "-n", "0"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows: dict[int, dict] = {}
    while proc.poll() is None:
        kids = _children(proc.pid)
        done = len(list(out.glob("run-*/results.json"))) if out.is_dir() else 0
        row = rows.setdefault(done + 1, {"run": done + 1, "peak_rss_kib": 0, "peak_fds": 0, "peak_threads": 0,
                                         "peak_processes": 0})
        tree = _tree([proc.pid, *kids])
        for k in ("rss_kib", "fds", "threads", "processes"):
            row[f"peak_{k}"] = max(row[f"peak_{k}"], tree[k])
        row["repeat_rss_kib"] = _status(proc.pid, "VmRSS") if proc.poll() is None else row.get("repeat_rss_kib")
        row["between_runs_processes"] = len(kids) if not kids else row.get("between_runs_processes")
        time.sleep(0.2)
    result = [rows[k] for k in sorted(rows) if k <= runs]
    for r in result:
        print(json.dumps(r), flush=True)
    ids = {json.loads(p.read_text()).get("run", {}).get("id") for p in out.glob("run-*/results.json")}
    left = [n for n in registry.our_namespaces() if any(i and i in n for i in ids)]
    print(json.dumps({"repeat_exit": proc.returncode, "run_namespaces_after": len(left),
                      "load": os.getloadavg()[0]}), flush=True)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--area", default="icmpv6")
    ap.add_argument("--repeat", action="store_true", help="`v6gate repeat N` instead of N runs in this process")
    ap.add_argument("--out", type=Path, default=None, help="where the runs go (default: a new temporary directory)")
    a = ap.parse_args()
    import signal
    import tempfile

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the bench's namespaces go on every path

    out = a.out or Path(tempfile.mkdtemp(prefix="v6gate-soak-"))
    with VethBench(f"soak{os.getpid()}", prefix="sk", mac_byte=0x40) as bench:
        target = bench.target(out)
        if a.repeat:
            with_repeat(target, a.runs, a.area, out / "repeat")
        else:
            in_one_process(bench, target, a.runs, a.area, out)
    print(json.dumps({"out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
