"""What the storage workloads share (iscsi_seq.py, nfs_seq.py): running a
storage client module of net/ on the client node for one trial, and the
figures of a trial.  Our RFC 7143 initiator (net/iscsi.py) and libnfs
through ctypes (net/nfs.py): Debian's fio has neither the libiscsi nor the
nfs engine, libiscsi-bin has no writing tool and nfs-cp no block size."""

from __future__ import annotations

import json
import subprocess

from ...errors import BenchError
from ..bench import Bench
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload
from ._tools import FLOOR


def lab_service(bench: Bench, kind: str):
    svc = bench.lab.service(kind) if bench.lab is not None else None
    if svc is None or not svc.running():
        raise BenchError(f"the storage gate needs the lab DUT's {kind} (DUT configuration storage-perf)")
    return svc


def _run_storage_client(bench: Bench, prof: GateProfile, args: list[str], server_pid: int, server: str,
                        what: str) -> tuple[dict, float]:
    """Run a storage client module (net/iscsi.py, net/nfs.py) on the client node for one trial: its JSON
    figures and the server's CPU seconds meanwhile.  With ``pin`` (lab): the server on the last CPU, the
    client on CPU 0; unpinned, each session's server thread landed on the client's CPU or the other one, and
    an arm ran at 1x or 2x for a whole trial (NFS 256 KiB reads: 900 or 1,800 MB/s per arm, bimodal)."""
    import os
    import sys

    from ...paths import ROOT
    from ..disturbance import process_cpu_s

    env = {**os.environ, "PYTHONPATH": str(ROOT / "keywords")}
    bench.pin_pid(server_pid, prof.pin, server)
    argv = [sys.executable, "-m", *args]
    if prof.pin and bench.lab is not None:
        argv = ["taskset", "-c", "0", *argv]
    srv0 = process_cpu_s(server_pid)
    try:
        cp = subprocess.run(bench.client.argv(argv), capture_output=True, text=True, env=env,
                            timeout=prof.trial_s + 60)
    except subprocess.TimeoutExpired:
        raise BenchError(f"the {args[0]} client did not finish ({what})") from None
    srv1 = process_cpu_s(server_pid)
    try:
        r = json.loads(cp.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise BenchError(f"the {args[0]} client gave no figures ({what}): {cp.stderr.strip()[-200:]}") from None
    return r, (srv1 - srv0) if srv0 is not None and srv1 is not None else 0.0


def figures(ops: int, mb: float, secs: float, cpu: float) -> dict:
    if not mb:
        return {"throughput": FLOOR, "transactions": FLOOR, "cpu_per_unit": 1 / FLOOR}
    return {"throughput": mb / secs, "transactions": ops / secs, "cpu_per_unit": cpu * 1000 / mb}


def trial(bench: Bench, prof: GateProfile, family: str, args: list[str], server_pid: int,
          baseline: bool) -> Measure:
    """Run the client module for one trial; IOPS, MB/s and CPU (client rusage + the server's /proc time)."""
    p = prof.params
    r, server_cpu = _run_storage_client(bench, prof, args, server_pid, args[0], f"{family}, {p['rw']} {p['bs']}")
    if "error" in r:
        if baseline:
            raise BenchError(f"the baseline arm failed ({family} {args[2]}): {r['error']}")
        r = {"ops": 0, "bytes": 0, "seconds": prof.trial_s, "cpu_s": 0.0, "error": r["error"]}
    secs = max(r["seconds"], 1e-6)
    cpu = r["cpu_s"] + server_cpu
    mb = r["bytes"] / 1e6
    values = figures(r["ops"], mb, secs, cpu)
    raw = {"tool": args[0], "family": family, "dst": args[2], "bs": p["bs"], "rw": p["rw"],
           "ops": r["ops"], "bytes": r["bytes"], "seconds": round(secs, 4), "iops": round(r["ops"] / secs, 1),
           "mb_s": round(mb / secs, 2), "client_cpu_s": round(r["cpu_s"], 4), "server_cpu_s": round(server_cpu, 4),
           "client_cpu_pct": round(100 * r["cpu_s"] / secs, 1), "server_cpu_pct": round(100 * server_cpu / secs, 1)}
    return Measure(values, secs, r["cpu_s"], raw)


def alternate(bench: Bench, prof: GateProfile, order: tuple[str, str], svc, args: list[str],
              single) -> tuple[Measure, Measure]:
    """One trial of both families on the iSCSI or NFS workload, two sessions (one per address, ``args``
    naming the client module and its arguments) driven by one client thread in ABBA slices of ``slice_s``
    (net/alternate.py), as loadgen's alternate does for TCP.  CPU per MB: the client thread's CPU while on
    that arm plus half the server's CPU of the trial (the server's time cannot be split between interleaved
    arms; it is recorded per trial in raw).  ``single(bench, prof, family, baseline=True)``: the workload's
    one-arm trial, for the baseline when the candidate's session failed."""
    p = prof.params
    hosts = [bench.address(arm) for arm in order]
    r, server_cpu = _run_storage_client(bench, prof, args, svc.daemons[0].pid, svc.sid,
                                        f"{p['rw']} {p['bs']}, alternated")
    if "error" in r:
        failed = order[r["arm"]] if isinstance(r.get("arm"), int) else None
        baseline = prof.arms[0]
        if failed is None or failed == baseline:  # the baseline (IPv4) arm, or no arm to blame: the bench
            raise BenchError(f"the alternated {args[0]} trial failed ({failed or ' / '.join(hosts)}): {r['error']}")
        # the candidate's session failed (the DUT's IPv6 service): a zero for it, the baseline measured alone
        base = single(bench, prof, baseline, baseline=True)
        bad = Measure(figures(0, 0.0, prof.trial_s, 0.0), prof.trial_s, 0.0,
                      {"tool": f"{args[0]} alt", "family": failed, "dst": hosts[order.index(failed)], "error": r["error"]})
        return (base, bad) if order[0] == baseline else (bad, base)
    out = []
    for arm, a in zip(order, r["arms"]):
        secs = max(a["seconds"], 1e-6)
        mb = a["bytes"] / 1e6
        cpu = a["cpu_s"] + server_cpu / 2
        values = figures(a["ops"], mb, secs, cpu)
        raw = {"tool": f"{args[0]} alt", "family": arm, "dst": hosts[order.index(arm)], "bs": p["bs"], "rw": p["rw"],
               "ops": a["ops"], "bytes": a["bytes"], "seconds": round(secs, 4), "iops": round(a["ops"] / secs, 1),
               "mb_s": round(mb / secs, 2), "slices": r["slices"], "slice_s": r["slice_s"],
               "client_cpu_s": round(a["cpu_s"], 4), "server_cpu_s_trial": round(server_cpu, 4),
               "client_cpu_pct": round(100 * a["cpu_s"] / secs, 1),
               "server_cpu_pct": round(100 * server_cpu / (2 * secs), 1)}
        out.append(Measure(values, secs, cpu, raw))
    return out[0], out[1]


def check_params(params: dict, compare: str) -> tuple[str, str, str] | None:
    """interleave: slices alternates the two families' sessions in one client."""
    if params.get("interleave") == "slices" and compare != "family":
        return ("interleave", "slices alternate the two families' sessions in one client",
                "use interleave: trials for an offload comparison (offloads are per trial)")
    return None


def register(name: str, trial, alternate) -> Workload:
    """A storage workload: a family or offload comparison of MB/s, IOPS and CPU per MB."""
    return register_workload(Workload(
        name, compare=frozenset({"family", "offload"}),
        metrics={"throughput": ("MB/s", True), "transactions": ("IOPS", True),
                 "cpu_per_unit": ("CPU ms per MB", False)},
        params=frozenset({"bs", "rw", "interleave", "slice_s"}), trial=trial, alternate=alternate,
        check_params=check_params, slice_s=0.1))
