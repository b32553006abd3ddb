"""The audit's results, from the per-host streams (``hostout.py``, or the C writer ``engine/report.c``):

* results.json, schema ``v6gate/results/2``: the summary, and every host's every finding in the host
  table (``audit``: the findings once, the fields every check shares once, then a row per host with each
  finding's verdict, seen and measurements); ``report.results.audit_checks`` expands it into exactly the
  checks a ``v6gate/results/1`` document listed, one per host and finding (tested);
* junit.xml: a testcase per host, failing with each finding that FAILs;
* report.html: the FAILs grouped by cause (the first 50 of each) and the per-host table; the compliance
  files; the manifest.

A capture of 6,800 hosts gives 7 MB of results.json where the list of checks gave 61 MB (and 100,000
hosts 0.9 GB): docs/v6only.md, "The report"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..core.verdict import Result
from ..report import html as html_report
from ..report import results, triage
from .findings import ACTIVE, Judged
from .hostout import COLUMNS, VERDICTS, Streams

AREA = "audit"
SCHEMA = results.SCHEMA_V2
SHOWN = 50  # checks of a triage group the HTML lists (every one is in results.json and the per-host table)


def result_for(j: Judged, mac: str, capture: Path, started: str, pcap: str) -> Result:
    """One host's finding as a check of a run (what a ``v6gate/results/1`` document listed; the host table
    expands to it).  ``pcap``: the capture as reports show it."""
    f = j.finding
    if j.verdict in ("PASS", "FAIL"):
        reason = f"expected {f.expect}; seen {j.seen} (pcap: {pcap})"
    else:
        reason = f"{j.seen} (pcap: {pcap})"
    return Result(id=f.id, part=mac, title=f.title, area=AREA, ipv6ready=None, rfc=f.rfc, verdict=j.verdict,
                  reason=reason, expected=f.expect, seen=j.seen, evidence={"pcap": pcap}, duration_s=0.0,
                  started=started, kind="check", profile="default", capabilities=[], fault=None, setup="audit",
                  target=capture.name, measurements=j.measurements)


def table_head(capture: Path, started: str, pcap: str) -> dict:
    """The host table's head: the findings (its columns) and the fields every check of the audit shares."""
    r = Result(id="audit.x", part=None, title="-", area=AREA, ipv6ready=None, rfc="-", verdict="PASS", reason="-",
               expected="-", seen="-",
               evidence={"pcap": pcap}, duration_s=0.0, started=started, kind="check", profile="default",
               capabilities=[], fault=None, setup="audit", target=capture.name).as_dict()
    shared = {k: v for k, v in r.items() if k not in results.TABLE_FIELDS}
    return {"findings": [{"id": f.id, "title": f.title, "rfc": f.rfc, "expected": f.expect,
                          "active_check": ACTIVE.get(f.id)} for f in COLUMNS],
            "check": {**shared, "baseline_failure": False}}


class HostTable:
    """results.json's ``audit`` part while the audit is written: its head, and the rows in the streams
    (on disk: the text of 100,000 hosts is never whole in memory); with what the HTML report reads of
    it (``triage_view``, ``filter_values``, ``rows``) and the compliance matrix (``brief_counts``)."""

    def __init__(self, streams: Streams, head: dict):
        self.streams, self.head = streams, head
        self.triage_view: dict | None = None
        self.filter_values: dict | None = None
        self.fail_keys: dict[int, list[str]] = {}  # column -> the FAILs' keys, in MAC order

    @property
    def hosts(self) -> int:
        return self.streams.hosts

    def checks(self):
        """Every host's every finding as a check, in the document's order (``results.audit_checks``)."""
        rows = [json.loads(line) for line in self.lines_of("table")]
        return results.audit_checks({**self.head, "hosts": rows})

    def lines_of(self, name: str):
        with open(self.streams.paths[name], encoding="utf-8") as f:
            yield from f

    def chunks(self, name: str, size: int = 1 << 20):
        with open(self.streams.paths[name], encoding="utf-8") as f:
            while chunk := f.read(size):
                yield chunk

    def brief_counts(self):
        """(what the compliance matrix reads of a check, how many checks, the FAILs' keys) per finding and
        verdict."""
        findings = self.head["findings"]
        for i in sorted(range(len(findings)), key=lambda k: findings[k]["id"]):  # the document's order
            f = findings[i]
            for v, n in zip(VERDICTS, self.streams.counts[i]):
                if n:
                    yield ({"id": f["id"], "area": AREA, "verdict": v, "kind": "check", "capabilities": [],
                           "waived": False}, n,
                           self.fail_keys.get(i, []) if v == "FAIL" else [])

    def rows(self):
        """The HTML per-host table's rows, 256 KiB at a time (the page's writer holds a few copies of one)."""
        return self.chunks("rows", 1 << 18)

    def samples(self) -> list:
        """The first row of each finding and verdict (what ``results.validate`` checks whole)."""
        out = []
        with open(self.streams.paths["table"], "rb") as f:
            for at in sorted(self.streams.first_rows):
                f.seek(at)
                out.append(json.loads(f.readline()))
        return out


def _check(head: dict, i: int, mac: str, seen: str, measurements: dict, verdict: str = "FAIL") -> dict:
    return results.expand_check(head["findings"][i], head["check"], mac, [verdict, seen, measurements])


def build_document(streams: Streams, capture: Path, started: str, pcap: str, run_meta: dict) -> dict:
    """The audit's results document (schema v6gate/results/2) from its streams: the summary, the host
    table, and the triage view of its FAILs (grouped by cause, in the document's order: finding id, then
    MAC; the first SHOWN of each group as checks)."""
    head = table_head(capture, started, pcap)
    table = HostTable(streams, head)
    ids = [f["id"] for f in head["findings"]]
    fails = []  # (finding id, MAC, column, seen, measurements)
    for line in table.lines_of("fails"):
        i, mac, seen, m = json.loads(line)
        fails.append((ids[i], mac, i, seen, m))
    fails.sort(key=lambda x: (x[0], x[1]))
    for fid, mac, i, _, _ in fails:
        table.fail_keys.setdefault(i, []).append(f"{fid}#{mac}")
    counts = {v: sum(c[k] for c in streams.counts) for k, v in enumerate(VERDICTS)}
    summary = {
        "counts": {v: counts.get(v, 0) for v in results.VERDICTS},
        "by_area": {AREA: {v: n for v, n in counts.items() if n}} if any(counts.values()) else {},
        "waived": [], "new_failures": [f"{fid}#{mac}" for fid, mac, *_ in fails], "fixed": [], "errors": [],
        "inconclusive": [], "not_judged": [], "not_judged_by": {}, "missing": [],
        "exit_code": results.EXIT_FAIL if fails else results.EXIT_OK,
    }
    # triage.build's view: every FAIL needs attention (an audit has no ERROR, NOT_JUDGED, gate, waiver or
    # baseline); its groups by cause, created in the document's order, then by size
    groups: dict[str, dict] = {}
    for _fid, mac, i, seen, m in fails:
        sig = triage.signature({"seen": seen})
        g = groups.get(sig)
        if g is None:
            g = groups[sig] = {"area": AREA, "verdict": "FAIL", "cause": sig or "FAIL", "head": None, "members": [],
                               "total": 0}
        if g["total"] < SHOWN:
            g["members"].append(_check(head, i, mac, seen, m))
        g["total"] += 1
    made = list(groups.values())
    made.sort(key=lambda g: -g["total"])
    rest = {v: counts[v] for v in ("PASS", "SKIP") if counts[v]}
    table.triage_view = {"areas": [{"area": AREA, "groups": made, "counts": {"FAIL": len(fails)}}] if made else [],
                         "gates": [], "known": [], "rest": [], "rest_total": sum(rest.values()), "attention": len(fails),
                         "rest_counts": rest}
    shapes = [{"verdict": v, "area": AREA, "rfc": COLUMNS[i].rfc, "ipv6ready": None, "capabilities": [],
               "waived": False, "baseline_failure": False}
              for i, c in enumerate(streams.counts) for v, n in zip(VERDICTS, c) if n]
    table.filter_values = triage.filter_values({"checks": shapes})
    return {"schema": SCHEMA, "run": {**run_meta, "baseline": None}, "summary": summary, "checks": [],
            "audit": table}


def audit_section(doc: dict, report_dir: Path):
    """The per-host readiness table (only in an audit's report), as pieces of HTML."""
    info = doc["run"].get("audit")
    table = doc.get("audit")
    if not info or table is None:
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
    from .hostout import e, html_row

    yield (f"<h2>IPv6-only readiness per host</h2><p>Capture <code>{e(info['capture'])}</code>: {e(stats)}</p>"
           f"<table class=checks>{head}")
    if isinstance(table, HostTable):
        yield from table.rows()
    else:  # a document read back: its rows made again from the table
        for mac, cells in table["hosts"]:
            c = [None if x is None else Judged(COLUMNS[i], x[0], x[1], x[2]) for i, x in enumerate(cells)]
            yield html_row(mac, c)
    yield "</table>"


if audit_section not in html_report.SECTIONS:
    html_report.SECTIONS.append(audit_section)


def write_all(run_dir: Path, doc: dict) -> dict[str, Path]:
    """results.json, junit.xml, report.html (and compliance.html), compliance.csv/.json and the manifest of
    an audit's document, each whole or not at all (report/files.py: a full or read-only run directory keeps
    out what did not fit, ReportsNotWritten names it)."""
    from ..report import compliance, files
    from ..report.html import write_html

    table: HostTable = doc["audit"]
    results.validate(doc)
    run_dir = Path(run_dir)
    out = {"results": run_dir / "results.json", "junit": run_dir / "junit.xml", "html": run_dir / "report.html"}
    mark = "\0v6gate-hosts\0"
    head, tail = json.dumps({**doc, "audit": {**table.head, "hosts": mark}}, indent=1, default=str).split(
        json.dumps(mark), 1)

    def results_json():
        with files.replacing(out["results"]) as tmp, open(tmp, "wb") as f, \
                open(table.streams.paths["table"], "rb") as src:
            f.write(head.encode())
            # each row is one line ending in the only newline it holds (JSON escapes the others): a newline
            # between two rows becomes ",\n"; copied a megabyte at a time
            f.write(b"[\n" if table.hosts else b"[]")
            prev = b""
            while chunk := src.read(1 << 20):
                f.write(prev.replace(b"\n", b",\n"))
                prev = chunk
            if prev:
                f.write(prev[:-1].replace(b"\n", b",\n") + b"\n  ]")
            f.write(tail.encode())

    def junit():
        with files.replacing(out["junit"]) as tmp:
            _junit(doc, tmp)

    return files.write_reports(run_dir, out, [
        (("results.json",), results_json),
        (("junit.xml",), junit),
        (("compliance.csv", "compliance.json"), lambda: out.update(compliance.write(doc, run_dir))),
        (("report.html", "compliance.html"), lambda: write_html(doc, out["html"], run_dir, dissect=False)),
    ])


def _junit(doc: dict, path: Path) -> None:
    """A testsuite of a testcase per host (the streams' cases): a host fails when a finding of it FAILs."""
    from ..report.junit import suite_head_tail

    table: HostTable = doc["audit"]
    failing = len({key.split("#", 1)[1] for keys in table.fail_keys.values() for key in keys})
    head, tail = suite_head_tail(doc, table.hosts, 0.0, failures=failing, errors=0, skipped=0)
    with open(path, "w", encoding="utf-8", errors="xmlcharrefreplace") as f, \
            open(table.streams.paths["cases"], encoding="utf-8") as cases:
        f.write("<?xml version='1.0' encoding='utf-8'?>\n" + head)
        shutil.copyfileobj(cases, f)
        f.write(tail)
