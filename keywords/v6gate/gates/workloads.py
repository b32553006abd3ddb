"""Workload trials with real tools: one call = one trial of one arm.

Each returns an ``engine.Measure``: the metric values, the seconds of traffic,
the CPU the workload itself used (for the disturbance estimate) and the
tool's raw figures, which go into results.json with the trial.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time

from ..errors import BenchError
from ..net.loadgen import binary
from .bench import Bench
from .engine import Measure
from .profiles import GateProfile

#: a candidate arm that moved nothing gets this instead of 0 (its log ratio is then hugely negative: FAIL)
FLOOR = 1e-9


def _run(argv: list[str], timeout: float, what: str) -> subprocess.CompletedProcess:
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{what} did not finish within {timeout:g} s: {' '.join(argv[-12:])}") from None
    return cp


# -- v6gate-loadgen ---------------------------------------------------------------------------------
def loadgen(bench: Bench, prof: GateProfile, family: str, *, dstopts: int = 0, baseline: bool = False) -> Measure:
    p = prof.params
    addr = bench.address(family)
    argv = [binary(), "client", addr, str(bench.ports["loadgen"]), p["mode"], str(p["req"]), str(p["resp"]),
            str(p.get("pairs", 1)), f"{prof.trial_s:g}", f"{prof.warmup_s:g}", str(dstopts), str(p.get("sockbuf", 0))]
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
    raw = {"tool": "v6gate-loadgen", "family": family, "dst": addr, **{k: r[k] for k in (
        "mode", "pairs", "req", "resp", "dstopts", "seconds", "transactions", "bytes_rx", "errors", "latency_mean_s")},
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
                      family: str = "v6", dstopts: int = 0) -> tuple[Measure, Measure]:
    """One trial of both arms on two connections kept open, alternated every ``slice_s`` in ABBA order
    (v6gate-loadgen alternate): the arms share the same seconds of the machine.  ``compare`` family: the
    arms are v4/v6 to the same port; dstopts: without/with (the DUT's plain port and its Destination
    Options port, IPv6).  Throughput counts the bytes of both directions (STR: the responses; an upload
    stream, rr with a large ``req``: the requests).  CPU per unit is the client thread's CPU while on that arm (the server's CPU
    cannot be split between interleaved arms; it is recorded per trial in raw)."""
    p = prof.params
    port = bench.ports["loadgen"]

    def where(arm: str) -> tuple[str, int]:
        if compare == "family":
            return bench.address(arm), port
        return bench.address(family), port + (1 if arm == "with" else 0)

    (ha, pa), (hb, pb) = where(order[0]), where(order[1])
    argv = [binary(), "alternate", ha, str(pa), hb, str(pb), p["mode"], str(p["req"]), str(p["resp"]),
            f"{prof.trial_s:g}", f"{float(p.get('slice_s', 0.05)):g}", f"{prof.warmup_s:g}", str(p.get("sockbuf", 0)),
            str(p.get("chunk", 262144))]
    argv = _pin(bench, prof, argv)
    srv0 = bench.server_cpu_s("v6gate-loadgen")
    cp = _run(bench.client.argv(argv), prof.trial_s + prof.warmup_s + 20, "v6gate-loadgen alternate")
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
               "client_cpu_s": round(a["cpu_s"], 4), "server_cpu_s_trial": server_cpu, "pinned": prof.pin}
        out.append(Measure(values, secs, a["cpu_s"] + (server_cpu or 0.0) / 2, raw))
    return out[0], out[1]


# -- iperf3 -----------------------------------------------------------------------------------------------
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
        cp = _run(bench.client.argv(argv), secs + 20, "iperf3")
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


# -- qperf --------------------------------------------------------------------------------------------------
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
        cp = _run(bench.client.argv(argv), secs + 15, "qperf")
        wall = time.monotonic() - t0
        vals = parse_qperf(cp.stdout)
        if vals.get("latency") is not None or vals.get("recv_bw", vals.get("bw")) is not None:
            break
    raw = {"tool": "qperf", "family": family, "dst": addr, "test": test, "size": size, **vals}
    if test.endswith("_bw"):
        v = vals.get("recv_bw", vals.get("bw"))
        if v is None:
            if baseline or cp.returncode not in (0, 137, -9):
                raise BenchError(f"qperf {test} -m {size} to {addr} gave no bandwidth: "
                                 f"{(cp.stderr.strip().splitlines() or ['exit ' + str(cp.returncode)])[-1]}")
            v = FLOOR
        return Measure({"throughput": max(v, FLOOR)}, min(wall, secs), 0.0, raw)
    v = vals.get("latency")
    if v is None:
        if baseline:
            raise BenchError(f"qperf {test} -m {size} to {addr} gave no latency (exit {cp.returncode}; a lost "
                             "datagram stops qperf's udp_lat)")
        v = 1 / FLOOR
    return Measure({"latency": v}, min(wall, secs), 0.0, raw)


def finite(x: float) -> bool:
    return not (math.isinf(x) or math.isnan(x))


# -- storage: sequential iSCSI and NFSv3 I/O ------------------------------------------------------------------
# Our RFC 7143 initiator (net/iscsi.py) and libnfs through ctypes (net/nfs.py): Debian's fio has neither the
# libiscsi nor the nfs engine, libiscsi-bin has no writing tool and nfs-cp no block size.
def iscsi_seq(bench: Bench, prof: GateProfile, family: str, *, baseline: bool = False) -> Measure:
    """One trial: sequential bs-byte READ(10) or WRITE(10) on the lab DUT's tgt LUN for trial_s seconds."""
    from ..checks.storage._client import INITIATOR

    tgt = _lab_service(bench, "tgt")
    p = prof.params
    args = ["v6gate.net.iscsi", "seq", bench.address(family), str(tgt.params["port"]), INITIATOR,
            tgt.params["iqn"], "1", str(int(p["bs"])), p["rw"], f"{prof.trial_s:g}"]
    return _storage_trial(bench, prof, family, args, tgt.daemons[0].pid, baseline)


def nfs_seq(bench: Bench, prof: GateProfile, family: str, *, baseline: bool = False) -> Measure:
    """One trial: sequential bs-byte NFSv3 READ or WRITE of a file on the lab DUT's ganesha export."""
    from ..net.nfs import prepare_read_files

    nfs = _lab_service(bench, "nfs-ganesha")
    p = prof.params
    if p["rw"] == "read":
        prepare_read_files(nfs.export_path, ["seq"])
    args = ["v6gate.net.nfs", "seq", bench.address(family), nfs.export_path, str(int(p["bs"])), p["rw"],
            f"{prof.trial_s:g}"]
    return _storage_trial(bench, prof, family, args, nfs.daemons[0].pid, baseline)


def storage_alternate(bench: Bench, prof: GateProfile, order: tuple[str, str]) -> tuple[Measure, Measure]:
    """One trial of both families on the iSCSI or NFS workload, two sessions (one per address) driven by one
    client thread in ABBA slices of ``slice_s`` (net/alternate.py), as loadgen_alternate does for TCP.  CPU per
    MB: the client thread's CPU while on that arm plus half the server's CPU of the trial (the server's time
    cannot be split between interleaved arms; it is recorded per trial in raw)."""
    from ..checks.storage._client import INITIATOR

    p = prof.params
    slice_s = f"{float(p.get('slice_s', 0.1)):g}"
    hosts = [bench.address(arm) for arm in order]
    if prof.workload == "iscsi_seq":
        svc = _lab_service(bench, "tgt")
        args = ["v6gate.net.iscsi", "alt", *hosts, str(svc.params["port"]), INITIATOR, svc.params["iqn"], "1",
                str(int(p["bs"])), p["rw"], f"{prof.trial_s:g}", slice_s]
    else:
        from ..net.nfs import prepare_read_files

        svc = _lab_service(bench, "nfs-ganesha")
        if p["rw"] == "read":
            prepare_read_files(svc.export_path, ["arm0", "arm1"])
        args = ["v6gate.net.nfs", "alt", *hosts, svc.export_path, str(int(p["bs"])), p["rw"], f"{prof.trial_s:g}",
                slice_s]
    r, server_cpu = _run_storage_client(bench, prof, args, svc.daemons[0].pid, svc.sid,
                                        f"{p['rw']} {p['bs']}, alternated")
    if "error" in r:
        failed = order[r["arm"]] if isinstance(r.get("arm"), int) else None
        baseline = prof.arms[0]
        if failed is None or failed == baseline:  # the baseline (IPv4) arm, or no arm to blame: the bench
            raise BenchError(f"the alternated {args[0]} trial failed ({failed or ' / '.join(hosts)}): {r['error']}")
        # the candidate's session failed (the DUT's IPv6 service): a zero for it, the baseline measured alone
        base = (iscsi_seq if prof.workload == "iscsi_seq" else nfs_seq)(bench, prof, baseline, baseline=True)
        bad = Measure(_storage_values(0, 0.0, prof.trial_s, 0.0), prof.trial_s, 0.0,
                      {"tool": f"{args[0]} alt", "family": failed, "dst": hosts[order.index(failed)], "error": r["error"]})
        return (base, bad) if order[0] == baseline else (bad, base)
    out = []
    for arm, a in zip(order, r["arms"]):
        secs = max(a["seconds"], 1e-6)
        mb = a["bytes"] / 1e6
        cpu = a["cpu_s"] + server_cpu / 2
        values = _storage_values(a["ops"], mb, secs, cpu)
        raw = {"tool": f"{args[0]} alt", "family": arm, "dst": hosts[order.index(arm)], "bs": p["bs"], "rw": p["rw"],
               "ops": a["ops"], "bytes": a["bytes"], "seconds": round(secs, 4), "iops": round(a["ops"] / secs, 1),
               "mb_s": round(mb / secs, 2), "slices": r["slices"], "slice_s": r["slice_s"],
               "client_cpu_s": round(a["cpu_s"], 4), "server_cpu_s_trial": round(server_cpu, 4),
               "client_cpu_pct": round(100 * a["cpu_s"] / secs, 1),
               "server_cpu_pct": round(100 * server_cpu / (2 * secs), 1)}
        out.append(Measure(values, secs, cpu, raw))
    return out[0], out[1]


def _lab_service(bench: Bench, kind: str):
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

    from ..paths import ROOT
    from .disturbance import process_cpu_s

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


def _storage_values(ops: int, mb: float, secs: float, cpu: float) -> dict:
    if not mb:
        return {"throughput": FLOOR, "transactions": FLOOR, "cpu_per_unit": 1 / FLOOR}
    return {"throughput": mb / secs, "transactions": ops / secs, "cpu_per_unit": cpu * 1000 / mb}


def _storage_trial(bench: Bench, prof: GateProfile, family: str, args: list[str], server_pid: int,
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
    values = _storage_values(r["ops"], mb, secs, cpu)
    raw = {"tool": args[0], "family": family, "dst": args[2], "bs": p["bs"], "rw": p["rw"],
           "ops": r["ops"], "bytes": r["bytes"], "seconds": round(secs, 4), "iops": round(r["ops"] / secs, 1),
           "mb_s": round(mb / secs, 2), "client_cpu_s": round(r["cpu_s"], 4), "server_cpu_s": round(server_cpu, 4),
           "client_cpu_pct": round(100 * r["cpu_s"] / secs, 1), "server_cpu_pct": round(100 * server_cpu / secs, 1)}
    return Measure(values, secs, r["cpu_s"], raw)
