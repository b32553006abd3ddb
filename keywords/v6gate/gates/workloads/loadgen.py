"""v6gate-loadgen (net/loadgen.c): RR, CRR and STR transactions with N
client/server pairs over either family, optionally with a Destination
Options header on the server's data; one call = one trial of one arm, or
both arms finely alternated on two connections kept open."""

from __future__ import annotations

import json
import subprocess
import time

from ...errors import BenchError
from ...net.loadgen import binary
from ..bench import Bench
from ..engine import Measure
from ..profiles import GateProfile
from ..registry import Workload, register_workload
from ._tools import FLOOR, run_tool

#: the DUT's loadgen port that sends with each extension header, after its plain port (net/loadgen.c server)
HEADER_PORT = {"dstopts": 1, "hopopts": 2}


def header_port(bench: Bench, header: str | None) -> int:
    """The DUT's loadgen port for a stream with extension ``header``, or its plain port.  The lab DUT's
    server sends 8-byte headers (lab/services/perf.py); a real DUT's, what it was started with."""
    return bench.ports["loadgen"] + (HEADER_PORT[header] if header else 0)


def loadgen(bench: Bench, prof: GateProfile, family: str, *, header: str | None = None,
            baseline: bool = False) -> Measure:
    p = prof.params
    addr = bench.address(family)
    argv = [binary(), "client", addr, str(header_port(bench, header)), p["mode"], str(p["req"]), str(p["resp"]),
            str(p.get("pairs", 1)), f"{prof.trial_s:g}", f"{prof.warmup_s:g}", "0", str(p.get("sockbuf", 0))]
    argv = _pin(bench, prof, argv)
    proc = subprocess.Popen(bench.client.argv(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(prof.warmup_s)
    srv0 = bench.server_cpu_s("v6gate-loadgen")
    try:
        out, err = proc.communicate(timeout=prof.warmup_s + prof.trial_s + 15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise BenchError(f"v6gate-loadgen client did not finish ({family}, {p['mode']})") from None
    srv1 = bench.server_cpu_s("v6gate-loadgen")
    if proc.returncode != 0:
        raise BenchError(f"v6gate-loadgen client failed ({family} {addr}): {(err.strip().splitlines() or ['?'])[-1]}")
    r = json.loads(out)
    secs = max(r["seconds"], 1e-6)
    server_cpu = (srv1 - srv0) if srv0 is not None and srv1 is not None else None
    client_cpu = r["cpu_user_s"] + r["cpu_sys_s"]
    cpu = client_cpu + (server_cpu or 0.0)
    mb = r["bytes_rx"] / 1e6
    if r["transactions"] == 0 and mb == 0:
        if baseline:
            raise BenchError(f"the baseline arm moved no data ({family} to {addr}, {r['errors']} errors): the bench "
                             "cannot compare against it")
        values = {"throughput": FLOOR, "transactions": FLOOR, "cpu_per_unit": 1 / FLOOR, "latency": 1 / FLOOR}
    else:
        per_unit = cpu * 1000 / mb if p["mode"] == "str" else cpu * 1000 / max(r["transactions"], 1)
        values = {"throughput": mb / secs, "transactions": r["transactions"] / secs, "cpu_per_unit": per_unit,
                  "latency": r["latency_mean_s"] * 1e6 if r["latency_mean_s"] else 1 / FLOOR}
    raw = {"tool": "v6gate-loadgen", "family": family, "dst": addr, "header": header,
           **{k: r[k] for k in ("mode", "pairs", "req", "resp", "seconds", "transactions", "bytes_rx", "errors",
                                "latency_mean_s")},
        "client_cpu_s": round(client_cpu, 4), "server_cpu_s": None if server_cpu is None else round(server_cpu, 4)}
    return Measure(values, secs, cpu, raw)


def _pin(bench: Bench, prof: GateProfile, argv: list[str]) -> list[str]:
    """With ``pin`` (lab only: both ends run on this machine): the DUT's loadgen server on the last CPU,
    the client on CPU 0, so a trial's threads and the softirq work they trigger always land the same way
    (unpinned, where the two per-connection server threads landed moved a 1-s RR trial by +-10 %).
    Without ``pin`` the server is let loose again (a pinned gate before must not shape an unpinned one)."""
    if bench.lab is None:
        return argv
    bench.pin_server("v6gate-loadgen", prof.pin)
    return ["taskset", "-c", "0", *argv] if prof.pin else argv


def loadgen_alternate(bench: Bench, prof: GateProfile, order: tuple[str, str], *, compare: str,
                      family: str = "v6", header: str = "dstopts") -> tuple[Measure, Measure]:
    """One trial of both arms on two connections kept open, alternated every ``slice_s`` in ABBA order
    (v6gate-loadgen alternate): the arms share the same seconds of the machine.  An arm that could not connect,
    or whose connection broke, idles through its slices and is reported with its ``error`` (raw): the baseline's
    is the bench's problem (BenchError), the candidate's a figure of nothing (FLOOR) the engine judges as the
    worst ratio (engine.pair_log_ratio).  ``compare`` family: the
    arms are v4/v6 to the same port; dstopts: without/with (the DUT's plain port and its Destination
    Options port, IPv6).  Throughput counts the bytes of both directions (STR: the responses; an upload
    stream, rr with a large ``req``: the requests).  CPU per unit is the client thread's CPU while on that arm (the server's CPU
    cannot be split between interleaved arms; it is recorded per trial in raw)."""
    p = prof.params
    port = bench.ports["loadgen"]

    def where(arm: str) -> tuple[str, int]:
        if compare == "family":
            return bench.address(arm), port
        return bench.address(family), header_port(bench, header if arm == "with" else None)

    (ha, pa), (hb, pb) = where(order[0]), where(order[1])
    argv = [binary(), "alternate", ha, str(pa), hb, str(pb), p["mode"], str(p["req"]), str(p["resp"]),
            f"{prof.trial_s:g}", f"{float(p.get('slice_s', 0.05)):g}", f"{prof.warmup_s:g}", str(p.get("sockbuf", 0)),
            str(p.get("chunk", 262144))]
    argv = _pin(bench, prof, argv)
    srv0 = bench.server_cpu_s("v6gate-loadgen")
    cp = run_tool(bench.client.argv(argv), prof.trial_s + prof.warmup_s + 20, "v6gate-loadgen alternate")
    srv1 = bench.server_cpu_s("v6gate-loadgen")
    if cp.returncode != 0:
        raise BenchError(f"v6gate-loadgen alternate {ha} / {hb} failed: {(cp.stderr.strip().splitlines() or ['?'])[-1]}")
    r = json.loads(cp.stdout)
    server_cpu = None if srv0 is None or srv1 is None else round(srv1 - srv0, 4)
    out = []
    for arm, a in zip(order, r["arms"]):
        secs = max(a["seconds"], 1e-6)
        mb = (a["bytes_rx"] + a["bytes_tx"]) / 1e6  # both directions: an upload stream moves its bytes out
        n = a["transactions"]
        per_unit = a["cpu_s"] * 1000 / (mb if p["mode"] == "str" else max(n, 1)) if n else 1 / FLOOR
        values = {"throughput": max(mb / secs, FLOOR), "transactions": max(n / secs, FLOOR), "cpu_per_unit": per_unit,
                  "latency": a["latency_mean_s"] * 1e6 if a["latency_mean_s"] else 1 / FLOOR}
        raw = {"tool": "v6gate-loadgen alternate", "arm": arm, "dst": a["host"], "port": a["port"],
               "mode": r["mode"], "req": r["req"], "resp": r["resp"], "sockbuf": r["sockbuf"], "slice_s": r["slice_s"],
               "slices": r["slices"], "chunk": r["chunk"], "transactions": n, "bytes_rx": a["bytes_rx"],
               "bytes_tx": a["bytes_tx"], "seconds": round(secs, 6),
               "client_cpu_s": round(a["cpu_s"], 4), "server_cpu_s_trial": server_cpu, "pinned": prof.pin,
               "idle_slices": a.get("idle_slices"), **({"error": a["error"]} if a.get("error") else {}),
               **({"lost": a.get("lost", 0)} if r["mode"] == "urr" else {})}
        if (not n or a.get("error")) and arm == prof.arms[0]:
            why = f": {a['error']}" if a.get("error") else ""
            raise BenchError(f"the baseline arm ({arm}, {a['host']} port {a['port']}) moved "
                             f"{'nothing' if not n else 'only until its connection ended'} in {secs:.2f} s{why}: "
                             "the bench cannot compare against it")
        out.append(Measure(values, secs, a["cpu_s"] + (server_cpu or 0.0) / 2, raw))
    return out[0], out[1]


def _alternate(bench: Bench, prof: GateProfile, order: tuple[str, str]) -> tuple[Measure, Measure]:
    from ..comparisons import exthdr_of

    return loadgen_alternate(bench, prof, order, compare=prof.compare, family=prof.family or "v6",
                             header=exthdr_of(prof))


def _check_params(params: dict, compare: str) -> tuple[str, str, str] | None:
    if params.get("interleave") == "slices" and (
            params.get("mode") not in ("rr", "str", "urr") or compare not in ("family", "exthdr")
            or params.get("pairs", 1) != 1):
        return ("interleave", "slices alternate one rr, str or urr connection per arm of a family or exthdr "
                "comparison", "use interleave: trials here, or mode rr/str/urr with pairs 1")
    if params.get("mode") == "urr" and params.get("interleave") != "slices":
        return ("mode", "urr (UDP request/response) runs only alternated", "add interleave: slices")
    if params.get("mode") == "urr" and (params.get("req") != params.get("resp") or not 8 <= int(params.get("req", 0)) <= 65000):
        return ("req", "urr echoes its datagrams: req and resp are one datagram size, 8..65000 bytes",
                "write the same req and resp")
    if params.get("header", "dstopts") not in HEADER_PORT:
        return ("header", f"{params['header']!r} is not an extension header the DUT's loadgen server sends",
                f"use one of {sorted(HEADER_PORT)}")
    if compare != "exthdr" and "header" in params:
        return ("header", "only an exthdr comparison puts an extension header on a stream", "remove it")
    return None


register_workload(Workload(
    "loadgen", compare=frozenset({"family", "offload", "exthdr"}),
    metrics={"throughput": ("MB/s", True), "transactions": ("transactions/s", True),
             "cpu_per_unit": ("CPU ms per unit", False), "latency": ("us", False)},
    params=frozenset({"mode", "req", "resp", "pairs", "sockbuf", "header", "interleave", "slice_s", "chunk"}),
    trial=loadgen, alternate=_alternate, check_params=_check_params))
