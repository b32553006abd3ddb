"""``v6gate audit``: a capture in, a readiness report per host out."""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import ipaddress
import os
import platform
import resource
import time
from pathlib import Path

from ..errors import UsageError
from ..paths import REPORTS, shown
from ..report.results import host_info, now_iso
from ..util.proc import need
from . import fleet, partial
from .capture import capture_format, read_frame_at
from .hostout import Streams
from .hosts import Audit
from .report import build_document, write_all
from .tshark import ReadStats, read_fields


class Option108:
    """The value of option 108 in a DHCPOFFER, decoded with Scapy (tshark
    4.0 has no decoder for it and shows only its bytes)."""

    def __init__(self, path: Path, fmt: str):
        self.path, self.fmt = path, fmt
        self.decoded = 0

    def __call__(self, offset: int) -> int | None:
        raw = read_frame_at(self.path, offset, self.fmt)
        if not raw:
            return None
        import scapy.layers.dhcp  # noqa: F401 - binds BOOTP/DHCP to UDP 67/68 before dissecting
        from scapy.layers.l2 import Ether

        from ..net.v6only import dhcp_options

        self.decoded += 1
        value = dhcp_options(Ether(raw)).get("ipv6-only-preferred")
        return int(value) if isinstance(value, int) else None


def _peak_rss_kib() -> int:
    """This process's peak RSS since it started: VmHWM (getrusage's
    ru_maxrss also carries the peak of the process that forked it, e.g. a
    benchmark that built the capture)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _select(audit: Audit, wanted: list[str]) -> list[str]:
    """The hosts ``--host`` names (by MAC, or an address they used)."""
    chosen = []
    for w in wanted:
        key = w.strip().lower()
        try:
            key = str(ipaddress.ip_address(key))
        except ValueError:
            pass
        match = [m for m, h in audit.hosts.items() if m == key or key in h.ipv4_addrs or key in h.ipv6_addrs]
        if not match:
            busiest = ", ".join(sorted(audit.hosts, key=lambda m: -audit.hosts[m].frames)[:5])
            raise UsageError(f"--host {w}: no host with that MAC or address sent frames on the capture "
                             f"(busiest: {busiest or 'none'})")
        chosen += [m for m in match if m not in chosen]
    return chosen


ENGINES = ("fast", "tshark")


@contextlib.contextmanager
def _no_cyclic_gc():
    """The cyclic garbage collector off while an audit runs: its objects (hosts, checks, records) form no
    cycles that matter, and its full passes over the millions of objects of 100,000 hosts took a third of
    the audit's CPU (31 s instead of 45 s for 2 M frames and 100,000 hosts; 10 % for 6,800 hosts).
    Reference counting still frees everything as it goes."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@_no_cyclic_gc()
def audit_capture(capture: str | Path, *, hosts: list[str] | None = None, out: str | Path | None = None,
                  jobs: int | None = None, chunk_frames: int = 100_000, command: str = "",
                  engine: str = "fast", progress: bool | None = None,
                  fleet_inputs: FleetInputs | None = None) -> tuple[dict, dict]:
    """``engine``: "fast" (fast.py: every frame dissected and judged by the
    C engine, or on the Python path without a compiler) or "tshark" (every
    frame through tshark, the reference the fast engine is tested against).
    ``jobs``: tshark processes (None: 2 on 2 or more cores); the fast engine
    reads on one core.  ``progress``: a progress line on stderr (None: only
    when stderr is a terminal)."""
    path = Path(capture)
    fmt = capture_format(path)
    if engine not in ENGINES:
        raise UsageError(f"--engine {engine}: unknown; use one of {', '.join(ENGINES)}")
    if engine == "tshark":
        need("tshark")
    started = now_iso()
    t0 = time.monotonic()
    stats = ReadStats()
    core = None
    if engine == "fast":
        from .fast import Progress, read

        got = read(path, progress=Progress(path.stat().st_size, force=progress))
        stats.packets, decoded = got.counts["packets"], got.counts["decoded_108"]
        jobs, chunk_frames, core = 1, None, got.counts["engine"]
    else:
        from .fast import Read

        jobs = jobs or max(1, min(2, os.cpu_count() or 1))
        decoder = Option108(path, fmt)
        audit = Audit(option_108=decoder)
        for frame, offset, fields in read_fields(path, chunk_frames=chunk_frames, jobs=jobs, stats=stats):
            audit.add(frame, offset, fields)
        got, decoded = Read({"packets": stats.packets}, audit=audit), decoder.decoded
    try:
        elapsed = time.monotonic() - t0
        reading_rss = _peak_rss_kib()  # before the report is made
        if not stats.packets:
            raise UsageError(f"{path}: the capture holds no packets")
        if not got.hosts:
            raise UsageError(f"{path}: no Ethernet source address in its {stats.packets} packets (a capture on Linux's "
                             "'any' device has none); capture on the link's Ethernet interface")
        macs = _select(got.audit(), hosts) if hosts else None
        info = {
            "capture": shown(path), "format": fmt, "bytes": path.stat().st_size, "packets": stats.packets,
            "hosts_seen": got.hosts, "hosts_reported": len(macs) if macs is not None else got.hosts,
            "duration_s": round(elapsed, 3), "packets_per_s": round(stats.packets / elapsed) if elapsed > 0 else None,
            "capture_span_s": round(got.t_last - got.t0, 3) if got.t0 is not None else 0,
            "engine": engine, "jobs": jobs, "chunk_frames": chunk_frames, "chunks": stats.chunks,
            "peak_rss_mib": {"v6gate": round(reading_rss / 1024, 1), "tshark": round(stats.tshark_max_rss_kib / 1024, 1)},
            "peak_rss_reading_mib": round(reading_rss / 1024, 1),
            "scapy_decoded_frames": decoded, **({"judged_by": core} if core else {}),
            "rdnss_seen": sorted(got.rdnss_seen), "pref64_seen": sorted(got.pref64_seen),
        }
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        out_dir = Path(out) if out else REPORTS / "audit" / f"{stamp}-{path.stem[:40]}"
        out_dir.mkdir(parents=True, exist_ok=True)
        meta = {"id": out_dir.name, "started": started, "finished": now_iso(), "command": command,
                "profile": "default", "target": {"name": path.name, "kind": "capture", "source": shown(path)},
                "tool": audit_tools(engine), "host": host_info(), "lab": None, "workers": jobs, "phases": [],
                "duration_s": round(elapsed, 3), "audit": info}
        pcap = shown(path)  # (once: it resolves the path)
        streams = got.write(Streams(), partial.capture_name(path), pcap, macs)  # every host judged, in MAC order
    finally:
        got.close()  # (the engine's hosts: some 5 KiB a host)
    doc = build_document(streams, path, started, pcap, meta)
    fleet_paths = {}
    if fleet_inputs is not None:
        part = partial.from_records(streams.read("records"), path, stats.packets, t0=got.t0, t_last=got.t_last)
        fleet_paths = write_fleet(part, fleet_inputs, out_dir, text=partial.records_text(streams, part))
    paths = write_all(out_dir, doc)
    return {**{k: str(v) for k, v in paths.items()}, **fleet_paths}, doc


def audit_tools(engine: str) -> dict:
    """The tools an audit ran: v6gate and Python (and tshark with --engine tshark); not those a run drives
    (dumpcap, radvd, iproute2: three more processes for each audit)."""
    from .. import __version__

    out = {"v6gate": __version__, "python": platform.python_version()}
    if engine == "tshark":
        out["tshark"] = _tshark_version()
    return out


class FleetInputs:
    """The user's fleet files, read and checked before any capture is (bad input fails at once)."""

    def __init__(self, *, inventory=None, exceptions=None, plan=None, as_of: str | None = None):
        self.as_of = fleet.parse_as_of(as_of)
        self.plan = fleet.load_plan(plan)
        self.inventory = fleet.Inventory.load(inventory) if inventory else None
        self.exceptions = fleet.load_exceptions(exceptions, self.as_of) if exceptions else []


def write_fleet(part: dict, inputs: FleetInputs, out_dir: Path, text=None) -> dict:
    """partial.json and the fleet report (fleet.json, fleet-assets.csv, fleet-summary.csv, fleet.html) of
    ``part`` in ``out_dir``; the paths as text, and the fleet document under "fleet_doc".  ``text``: the
    partial's JSON text in pieces, when it is made already."""
    doc = fleet.build(part, inputs.plan, inventory=inputs.inventory, exceptions=inputs.exceptions,
                      as_of=inputs.as_of)
    paths = {"partial": partial.dump(part, Path(out_dir) / "partial.json", text=text),
             **fleet.write_all(doc, out_dir)}
    return {**{k: str(v) for k, v in paths.items()}, "fleet_doc": doc}


@_no_cyclic_gc()
def audit_many(inputs: list, *, out: str | Path | None = None, fleet_inputs: FleetInputs,
               dask: str | None = None) -> dict:
    """Captures and earlier partial results, one audit: each capture audited into its partial (here, or as
    shards on the Dask scheduler at ``dask``), merged with the given partials; the fleet report and the merged
    partial written.  Returns the paths (and the fleet document under "fleet_doc")."""
    from . import shards

    names: dict[str, str] = {}
    captures, partials = [], []
    for x in inputs:
        if partial.is_partial(x):
            partials.append(partial.load(x))
            continue
        capture_format(Path(x))
        name = partial.capture_name(x)
        if name in names:
            raise UsageError(f"{x}: another capture given is also named {name} ({names[name]}); captures are "
                             "named by their file names in an audit: rename one")
        names[name] = str(x)
        captures.append(Path(x))
    if dask and captures:
        client = shards.dask_client(dask)
        try:
            partials.append(shards.on_dask(client, captures))
        finally:
            client.close()
    else:
        partials += [shards.partial_of(c) for c in captures]
    merged = partial.merge_all(partials)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out_dir = Path(out) if out else REPORTS / "audit" / f"{stamp}-fleet-{len(merged['captures'])}-captures"
    out_dir.mkdir(parents=True, exist_ok=True)
    return write_fleet(merged, fleet_inputs, out_dir)


def _tshark_version() -> str | None:
    from ..report.results import _version

    return _version(["tshark", "--version"])
