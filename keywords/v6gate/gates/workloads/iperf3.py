"""iperf3: a TCP (or UDP) stream over either family; one call = one trial of one arm."""

from __future__ import annotations

import json
import time

from ...errors import BenchError
from ..bench import Bench
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload
from ._tools import FLOOR, run_tool


def iperf3(bench: Bench, prof: GateProfile, family: str, *, baseline: bool = False) -> Measure:
    p = prof.params
    addr = bench.address(family)
    secs = max(1, round(prof.trial_s))
    argv = ["iperf3", "-c", addr, "-p", str(bench.ports["iperf3"]), "-t", str(secs), "--json",
            "-4" if family == "v4" else "-6", "-P", str(p.get("parallel", 1))]
    if prof.warmup_s >= 0.5:
        argv += ["-O", str(max(1, round(prof.warmup_s)))]
    if p.get("length"):
        argv += ["-l", str(p["length"])]
    if p.get("window"):
        argv += ["-w", str(p["window"])]
    if p.get("udp"):
        argv += ["-u", "-b", str(p.get("bitrate", 0))]
    if p.get("reverse"):
        argv.append("-R")
    if prof.pin and bench.lab is not None:
        argv += ["-A", "0,1"]
    for attempt in range(3):
        cp = run_tool(bench.client.argv(argv), secs + 20, "iperf3")
        try:
            doc = json.loads(cp.stdout)
        except ValueError:
            raise BenchError(f"iperf3 gave no JSON ({family} {addr}): {(cp.stderr.strip().splitlines() or ['?'])[-1]}") from None
        if "error" in doc and "busy" in doc["error"] and attempt < 2:
            time.sleep(0.5)
            continue
        break
    if "error" in doc:
        raise BenchError(f"iperf3 to {addr}: {doc['error']}")
    end = doc["end"]
    total = end.get("sum_received") or end.get("sum") or {}
    seconds = max(float(total.get("seconds", secs)), 1e-6)
    mb = float(total.get("bytes", 0)) / 1e6
    cpu_pct = end.get("cpu_utilization_percent", {})
    cpu = (cpu_pct.get("host_total", 0) + cpu_pct.get("remote_total", 0)) / 100 * seconds
    if mb == 0 and baseline:
        raise BenchError(f"the baseline arm moved no data (iperf3 {family} to {addr})")
    values = {"throughput": max(mb / seconds, FLOOR), "cpu_per_unit": cpu * 1000 / mb if mb else 1 / FLOOR}
    raw = {"tool": "iperf3", "family": family, "dst": addr, "seconds": seconds, "bytes": total.get("bytes"),
           "retransmits": end.get("sum_sent", {}).get("retransmits"), "cpu_utilization_percent": cpu_pct,
           "mss": doc.get("start", {}).get("tcp_mss_default"),
           "sndbuf": doc.get("start", {}).get("sndbuf_actual"), "rcvbuf": doc.get("start", {}).get("rcvbuf_actual")}
    if total.get("lost_percent") is not None:
        raw["lost_percent"] = total.get("lost_percent")
    return Measure(values, seconds, cpu, raw)


register_workload(Workload(
    "iperf3", compare=frozenset({"family", "offload"}),
    metrics={"throughput": ("MB/s", True), "cpu_per_unit": ("CPU ms per MB", False)},
    params=frozenset({"length", "window", "parallel", "udp", "reverse", "bitrate"}), trial=iperf3))
