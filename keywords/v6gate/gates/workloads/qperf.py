"""qperf: UDP and TCP throughput and half round-trip latency for a payload
size; a gate on it is a sweep, one paired decision per payload size."""

from __future__ import annotations

import random
import re
import time

from ...core.verdict import Outcome, Verdict
from ...errors import BenchError
from ..bench import Bench
from ..engine import Measure, PairedComparison
from ..outcome import expected
from ..profiles import GateProfile
from ..registry import Workload, register_workload
from ._tools import FLOOR, run_tool

_UNITS = {"bytes/sec": 1e-6, "KB/sec": 1e-3, "MB/sec": 1.0, "GB/sec": 1e3, "ns": 1e-3, "us": 1.0, "ms": 1e3,
          "sec": 1e6}
_LINE = re.compile(r"^\s*(\w+)\s*=\s*([0-9.]+)\s*(\S+)")


def parse_qperf(text: str) -> dict[str, float]:
    """qperf's 'name = value unit' lines -> {name: value in MB/s or us}."""
    out = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group(3) in _UNITS:
            out[m.group(1)] = float(m.group(2)) * _UNITS[m.group(3)]
    return out


def qperf(bench: Bench, prof: GateProfile, family: str, size: int, *, baseline: bool = False) -> Measure:
    test = prof.params["test"]
    addr = bench.address(family)
    secs = max(1, round(prof.trial_s))
    argv = ["timeout", "-s", "KILL", str(secs + 8), "qperf", "-t", str(secs), "-lp", str(bench.ports["qperf"]),
            "-m", str(size), addr, test]
    for _attempt in range(3):  # qperf's udp_lat stops at a lost datagram: try again before calling it a result
        t0 = time.monotonic()
        cp = run_tool(bench.client.argv(argv), secs + 15, "qperf")
        wall = time.monotonic() - t0
        vals = parse_qperf(cp.stdout)
        if vals.get("latency") is not None or vals.get("recv_bw", vals.get("bw")) is not None:
            break
    raw = {"tool": "qperf", "family": family, "dst": addr, "test": test, "size": size, **vals}
    if test.endswith("_bw"):
        v = vals.get("recv_bw", vals.get("bw"))
        if v is None:
            why = (cp.stderr.strip().splitlines() or ['exit ' + str(cp.returncode)])[-1]
            if baseline:
                raise BenchError(f"qperf {test} -m {size} to {addr} gave no bandwidth: {why}")
            # the candidate's address gave nothing while the baseline's works (else the baseline's trial of the
            # pair is the bench's ERROR): the DUT's, judged as the worst ratio (engine.pair_log_ratio)
            raw["error"] = f"qperf to {addr}: {why}"
            v = FLOOR
        return Measure({"throughput": max(v, FLOOR)}, min(wall, secs), 0.0, raw)
    v = vals.get("latency")
    if v is None:
        if baseline:
            raise BenchError(f"qperf {test} -m {size} to {addr} gave no latency (exit {cp.returncode}; a lost "
                             "datagram stops qperf's udp_lat)")
        v = 1 / FLOOR
    return Measure({"latency": v}, min(wall, secs), 0.0, raw)


def sweep(t, prof: GateProfile, bench: Bench) -> Outcome:
    """One paired decision per payload size (``params.sizes``): FAIL if any size FAILs, INCONCLUSIVE if any
    is undecided."""
    sizes = [int(s) for s in prof.params.get("sizes", [])]
    if not sizes:
        raise BenchError(f"gate {prof.key}: no payload sizes")
    per_size = {}
    verdicts = []
    traffic = 0.0
    for size in sizes:
        dec = PairedComparison(
            arms=prof.arms, metrics=prof.metrics, budget=prof.budget, policy=prof.disturbance, method=prof.method,
            confidence=prof.confidence, rng=random.Random(),
            measure=lambda arm, s=size: qperf(bench, prof, arm, s, baseline=arm == "v4")).run()
        per_size[str(size)] = dec.as_dict()
        verdicts.append((size, dec.verdict, dec))
        traffic += dec.traffic_s
        m = prof.metrics[0].name
        iv = dec.metrics[m].interval
        t.note(f"size {size}: {dec.verdict} ratio {iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]" if iv else
               f"size {size}: {dec.verdict}")
    t.measure("sweep", per_size)
    failing = [s for s, v, _ in verdicts if v == "FAIL"]
    undecided = [s for s, v, _ in verdicts if v == "INCONCLUSIVE"]
    metric = prof.metrics[0]
    curve = "; ".join(f"{s} B {d.metrics[metric.name].interval.estimate:.3f}" for s, _, d in verdicts
                      if d.metrics[metric.name].interval is not None)
    summary = (f"v6/v4 {metric.name} ratio per payload size: {curve}; {traffic:.0f} s of traffic; "
               f"{len(sizes) - len(failing) - len(undecided)} sizes PASS, {len(failing)} FAIL"
               f"{' (' + ', '.join(map(str, failing)) + ' B)' if failing else ''}, {len(undecided)} undecided")
    if failing:
        return Outcome(Verdict.FAIL, summary, expected=expected(prof))
    if undecided:
        return Outcome(Verdict.INCONCLUSIVE, summary, expected=expected(prof))
    return Outcome(Verdict.PASS, summary, expected=expected(prof))


register_workload(Workload(
    "qperf", compare=frozenset({"family"}), metrics={"throughput": ("MB/s", True), "latency": ("us", False)},
    params=frozenset({"test", "sizes"}), decide=sweep))
