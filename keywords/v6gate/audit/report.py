"""The audit's results: the same results.json (schema-valid), JUnit XML and
HTML report as a run, one entry per host and finding (``part`` is the
host's MAC), plus a per-host readiness table in the HTML report."""

from __future__ import annotations

import html
import json
import os
import tempfile
from array import array
from collections.abc import Sequence
from pathlib import Path

from ..core.verdict import Result
from ..paths import shown
from ..report import html as html_report
from ..report import results, triage
from .findings import READY, Judged, judge_host
from .hosts import Audit

VERDICTS = results.VERDICTS

AREA = "audit"


def result_for(j: Judged, mac: str, capture: Path, started: str, pcap: str) -> Result:
    """``pcap``: the capture as reports show it (``shown(capture)``, made once for a whole audit's results)."""
    f = j.finding
    if j.verdict in ("PASS", "FAIL"):
        reason = f"expected {f.expect}; seen {j.seen} (pcap: {pcap})"
    else:
        reason = f"{j.seen} (pcap: {pcap})"
    return Result(id=f.id, part=mac, title=f.title, area=AREA, ipv6ready=None, rfc=f.rfc, verdict=j.verdict,
                  reason=reason, expected=f.expect, seen=j.seen, evidence={"pcap": pcap}, duration_s=0.0,
                  started=started, kind="check", profile="default", capabilities=[], fault=None, setup="audit",
                  target=capture.name, measurements=j.measurements)


def _e(s) -> str:
    return html.escape(str(s if s is not None else ""))


_COLUMNS = ("audit.host_sends_no_ipv4", "audit.dhcpv4_asks_for_option_108", "audit.dhcpv4_stops_after_option_108",
            "audit.dns_over_ipv6", "audit.ipv6_preferred_for_dual_stack_names", "audit.nd_behaviour",
            "audit.checksums", "audit.router_advertises_dns_and_nat64_prefix")


def _row(mac: str, cs: dict[str, dict]) -> str:
    """One host's row of the readiness table, from its checks (finding id -> check)."""
    ready = cs.get(READY.id, {})
    m = ready.get("measurements", {})
    cells = [f"<code>{_e(mac)}</code><br><small>{_e(', '.join(m.get('ipv6_addresses', [])[:3]))}"
             f"{'<br>' + _e(', '.join(m.get('ipv4_addresses', [])[:3])) if m.get('ipv4_addresses') else ''}</small>",
             f'<span class="v {_e(ready.get("verdict", "").lower())}">{_e(ready.get("verdict", "?"))}</span>',
             _e(f"{m.get('ipv6_share_percent')}%" if m.get("ipv6_share_percent") is not None else "—")]
    for fid in _COLUMNS:
        c = cs.get(fid)
        if c is None:
            cells.append("")
            continue
        cells.append(f'<span class="v {_e(c["verdict"].lower())}">{_e(c["verdict"])}</span>'
                     f'<br><small>{_e(c["seen"][:160])}</small>')
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def audit_section(doc: dict, report_dir: Path):
    """The per-host readiness table (only in an audit's report), as pieces of HTML: its rows come from
    the spool's row file when the checks are a ``Spool`` (one host's row at a time)."""
    info = doc["run"].get("audit")
    if not info:
        return ""
    head = ("<tr><th>host</th><th>readiness</th><th>IPv6 share</th><th>no IPv4</th><th>asks option 108</th>"
            "<th>stops after 108</th><th>DNS over IPv6</th><th>IPv6 first</th><th>ND</th><th>checksums</th>"
            "<th>RAs</th></tr>")
    mem = ", ".join(f"{v} MiB {k}" for k, v in info["peak_rss_mib"].items() if v)
    judged = {"c": ", every frame judged in C", "python": ", every frame judged in Python (no C engine)"}.get(
        info.get("judged_by"), "")
    stats = (f"{info['packets']} packets, {info['hosts_seen']} hosts, {info['duration_s']} s "
             f"({info['packets_per_s']} packets/s, {info.get('engine', 'tshark')} engine{judged}); "
             f"peak memory {mem}")
    checks = doc["checks"]
    if isinstance(checks, Spool):
        rows = checks.host_rows()
    else:
        by_host: dict[str, dict] = {}
        for c in checks:
            by_host.setdefault(c["part"], {})[c["id"]] = c
        rows = [_row(mac, cs) for mac, cs in by_host.items()]
    yield (f"<h2>IPv6-only readiness per host</h2><p>Capture <code>{_e(info['capture'])}</code>: {_e(stats)}</p>"
           f"<table class=checks>{head}")
    yield from rows
    yield "</table>"


if audit_section not in html_report.SECTIONS:
    html_report.SECTIONS.append(audit_section)


class Spool(Sequence):
    """The audit's check dicts on disk, one JSON line each, in the document's order, read back one at a
    time when iterated (a list of the dicts of 7,000 hosts took 0.2-0.5 GB).  It owns its temporary
    directory: removed when the last reference goes, or at exit.  ``triage_view`` and
    ``filter_values`` are what ``report.triage`` would compute from the list; ``host_rows`` the
    per-host table's rows, written with the checks."""

    def __init__(self, tmp: tempfile.TemporaryDirectory, offsets: array, index=None):
        self._tmp, self.offsets = tmp, offsets
        self.path = Path(tmp.name) / "checks.jsonl"
        self.index = range(len(offsets)) if index is None else index
        self.triage_view: dict | None = None
        self.filter_values: dict | None = None

    def subset(self, index) -> Spool:
        return Spool(self._tmp, self.offsets, index)

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.subset(self.index[i])
        with open(self.path, "rb") as f:
            f.seek(self.offsets[self.index[i]])
            return json.loads(f.readline())

    def __iter__(self):
        with open(self.path, "rb") as f:
            for i in self.index:
                f.seek(self.offsets[i])
                yield json.loads(f.readline())

    def host_rows(self):
        with open(Path(self._tmp.name) / "rows.jsonl", "rb") as f:
            for line in f:
                yield json.loads(line)


class _Brief:
    """What the summary and the document parts read of a result (``results.summarize``)."""

    __slots__ = ("id", "part", "verdict")
    area, kind, ipv6ready, waived, waiver, precondition = AREA, "check", None, False, None, None

    def __init__(self, id: str, part: str, verdict: str):
        self.id, self.part, self.verdict = id, part, verdict

    @property
    def key(self) -> str:
        return f"{self.id}#{self.part}"


def build_document(audit: Audit, macs: list[str], capture: Path, started: str, run_meta: dict) -> dict:
    """The audit's results document (``results.build_document``'s, the same bytes once written) with
    its checks in a ``Spool``: each host is judged once, its checks written as JSON lines to one file
    per finding and its table row to the rows file; the files are then joined in the document's order
    (finding id, then MAC) while the triage groups (first problem, masked) are collected as indexes."""
    tmp = tempfile.TemporaryDirectory(prefix="v6gate-audit-")
    base = Path(tmp.name)
    per_id: dict[str, tuple] = {}  # finding id -> (file, verdict per check, triage group per check or -1)
    groups: dict[tuple, int] = {}  # (area, verdict, signature) -> group number
    shapes: dict[tuple, dict] = {}  # what filter_values reads, once per distinct value
    briefs = []
    pcap = shown(capture)  # (once: it resolves the path)
    with open(base / "rows.jsonl", "w") as rows:
        for mac in sorted(macs):
            cs = {}
            for j in judge_host(audit, audit.hosts[mac]):
                d = result_for(j, mac, capture, started, pcap).as_dict()
                d["baseline_failure"] = False  # an audit has no baseline
                cs[d["id"]] = d
                v = d["verdict"]
                entry = per_id.get(d["id"])
                if entry is None:
                    entry = per_id[d["id"]] = (open(base / f"{len(per_id)}.jsonl", "w+"), bytearray(), array("i"))
                entry[0].write(json.dumps(d, default=str) + "\n")
                entry[1].append(VERDICTS.index(v))
                entry[2].append(groups.setdefault((AREA, v, triage.signature(d)), len(groups))
                                if triage.needs_attention(d) else -1)
                shape = (v, d["area"], d["rfc"], d["ipv6ready"], tuple(d["capabilities"]))
                if shape not in shapes:
                    shapes[shape] = {k: d[k] for k in ("verdict", "area", "rfc", "ipv6ready", "capabilities",
                                                       "waived", "baseline_failure")}
                briefs.append(_Brief(d["id"], mac, v))
            rows.write(json.dumps(_row(mac, cs)) + "\n")
    offsets = array("Q")
    members = [array("L") for _ in groups]
    rest = array("L")
    rest_counts: dict[str, int] = {}
    with open(base / "checks.jsonl", "wb") as out:
        for fid in sorted(per_id):
            f, verdicts, gs = per_id[fid]
            f.seek(0)
            for line, v, g in zip(f, verdicts, gs):
                i = len(offsets)
                offsets.append(out.tell())
                out.write(line.encode())
                if g < 0:
                    rest.append(i)
                    rest_counts[VERDICTS[v]] = rest_counts.get(VERDICTS[v], 0) + 1
                else:
                    members[g].append(i)
            f.close()
            os.unlink(f.name)
    spool = Spool(tmp, offsets)
    # triage.build's view of these checks: no NOT_JUDGED, gate, waived or baseline check in an audit
    made = sorted(groups.items(), key=lambda kv: members[kv[1]][0])  # created in the document's order
    made.sort(key=lambda kv: (triage.SEVERITY.get(kv[0][1], 9), -len(members[kv[1]])))
    area_groups = [{"area": area, "verdict": v, "cause": sig or v, "head": None, "members": spool.subset(members[g])}
                   for (area, v, sig), g in made]
    counts: dict[str, int] = {}
    for g in area_groups:
        counts[g["verdict"]] = counts.get(g["verdict"], 0) + len(g["members"])
    spool.triage_view = {"areas": [{"area": AREA, "groups": area_groups, "counts": counts}] if area_groups else [],
                         "gates": [], "known": [], "rest": spool.subset(rest),
                         "attention": sum(len(g["members"]) for g in area_groups), "rest_counts": rest_counts}
    spool.filter_values = triage.filter_values({"checks": list(shapes.values())})
    return results.build_document(briefs, run_meta=run_meta, checks=spool)
