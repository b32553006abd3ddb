"""The audit's results: the same results.json (schema-valid), JUnit XML and
HTML report as a run, one entry per host and finding (``part`` is the
host's MAC), plus a per-host readiness table in the HTML report."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from array import array
from collections.abc import Sequence
from pathlib import Path

from ..core.verdict import Result
from ..paths import shown
from ..report import html as html_report
from ..report import results, triage
from .assets import host_record
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


_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def _e(s) -> str:
    """``html.escape`` (quotes too), translated only when it must be."""
    s = str(s if s is not None else "")
    if "&" in s or "<" in s or ">" in s or '"' in s or "'" in s:
        return s.translate(_HTML)
    return s


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
        self.brief_list: list = []  # _Brief of each check, in no particular order
        self.hosts: list = []  # (mac, readiness verdict, IPv6 share, failing titles) per reported host

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

    def briefs(self):
        """What the compliance matrix reads of each check (id, part, area, verdict, capabilities, waived),
        none read back from disk."""
        for b in sorted(self.brief_list, key=lambda b: (b.id, b.part)):  # the document's order
            yield {"id": b.id, "part": b.part, "area": AREA, "verdict": b.verdict, "capabilities": [],
                   "waived": False}

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


# -- the checks as text, made from templates ------------------------------------------------------------
_enc = json.JSONEncoder(separators=(",", ":"), default=str).encode  # the C encoder (no indent)
_esc = json.encoder.encode_basestring_ascii  # a JSON string, as json.dumps writes it


_ATTR = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\r": "&#13;", "\n": "&#10;",
                       "\t": "&#09;"})
_CDATA = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def _attr(s: str) -> str:
    """An XML attribute value as ElementTree escapes it (translated only when it must be: a translation
    costs more than looking)."""
    if "&" in s or "<" in s or ">" in s or '"' in s or "\n" in s or "\r" in s or "\t" in s:
        return s.translate(_ATTR)
    return s


def _cdata(s: str) -> str:
    """XML text as ElementTree escapes it."""
    if "&" in s or "<" in s or ">" in s:
        return s.translate(_CDATA)
    return s


class _Templates:
    """Each finding's check as JSON and as a JUnit testcase, its constant parts made once: a check of
    an audit is the text of ``result_for(...).as_dict()`` (plus baseline_failure), and its testcase
    the bytes ``report.junit`` writes for it (``tests/unit/test_audit_report.py`` compares both)."""

    def __init__(self, capture: Path, started: str, pcap: str):
        self.pcap, self.started, self.target = pcap, started, capture.name
        self.pcap_tail = _esc(f" (pcap: {pcap})")[1:]  # ' (pcap: ...)"' inside a JSON string
        self.by_id: dict[str, tuple] = {}
        self.system_out = f"<system-out>{_cdata(f'pcap: {pcap}')}</system-out></testcase>"

    def finding(self, f) -> tuple:
        t = self.by_id.get(f.id)
        if t is None:
            head = f'{{"id":{_esc(f.id)},"part":'
            mid = (f',"title":{_esc(f.title)},"area":"{AREA}","ipv6ready":null,"rfc":{_esc(f.rfc)},"verdict":"')
            expect = _esc(f"expected {f.expect}; seen ")[:-1]  # '"expected ...; seen ' (open)
            tail1 = f',"expected":{_esc(f.expect)},"seen":'
            tail2 = (f',"evidence":{{"pcap":{_esc(self.pcap)}}},"duration_s":0.0,"started":{_esc(self.started)},'
                     f'"kind":"check","profile":"default","capabilities":[],"waived":false,"waiver":null,'
                     f'"fault":null,"setup":"audit","target":{_esc(self.target)},"worker":null,"measurements":')
            end = (',"timeline":[],"cleanup_errors":[],"fail_side_proven_against":null,"problems":[],'
                   '"dut_sent":[],"precondition":null,"baseline_failure":false}\n')
            case = (f'<testcase classname="{_attr(f"v6gate.{AREA}.{f.id}")}" name="', f" {f.title}", f"{f.rfc}: ")
            t = self.by_id[f.id] = (head, mid, expect, tail1, tail2, end, case)
        return t

    def check(self, j: Judged, mac: str) -> tuple[str, str]:
        """(the check's JSON line, its JUnit testcase)."""
        head, mid, expect, tail1, tail2, end, (case_head, title, rfc) = self.finding(j.finding)
        seen = _esc(j.seen)
        v = j.verdict
        reason = (expect + seen[1:-1] + self.pcap_tail) if v in ("PASS", "FAIL") else (seen[:-1] + self.pcap_tail)
        line = "".join((head, _esc(mac), mid, v, '","reason":', reason, tail1, seen, tail2, _enc(j.measurements),
                        end))
        f = j.finding
        said = f"expected {f.expect}; seen {j.seen}" if v in ("PASS", "FAIL") else j.seen
        text = f"{rfc}{said} (pcap: {self.pcap})"
        name = _attr(f"{f.id}-{mac}{title}")
        case = f'{case_head}{name}" time="0.000">'
        if v == "FAIL":
            case += f'<failure message="{_attr(text[:500])}" type="FAIL">{_cdata(text)}</failure>'
        elif v == "SKIP":
            case += f'<skipped message="{_attr(text[:500])}" />'
        return line, case + self.system_out


def build_document(audit: Audit, macs: list[str], capture: Path, started: str, run_meta: dict,
                   records: dict | None = None) -> dict:
    """The audit's results document (``results.build_document``'s) with its checks in a ``Spool``: each
    host is judged once, its checks written from templates as JSON lines and JUnit testcases to one
    file per finding and its table row to the rows file; the files are then joined in the document's
    order (finding id, then MAC) while the triage groups (first problem, masked) are collected as
    indexes.  One check of each finding and verdict is validated against the schema whole (the others
    differ from it only in strings, which the schema does not constrain, and measurements objects).
    ``records``: filled with each host's record for the capture's partial result (``assets.host_record``,
    by MAC), from the findings judged here."""
    tmp = tempfile.TemporaryDirectory(prefix="v6gate-audit-")
    base = Path(tmp.name)
    per_id: dict[str, tuple] = {}  # finding id -> (json file, junit file, verdict per check, triage group or -1)
    groups: dict[tuple, int] = {}  # (area, verdict, signature) -> group number
    shapes: dict[tuple, dict] = {}  # what filter_values reads, once per distinct value
    samples: dict[tuple, str] = {}  # (finding id, verdict) -> one check's line, validated whole
    briefs = []
    hosts = []  # (mac, readiness, IPv6 share, failing findings' titles): the command's lines
    pcap = shown(capture)  # (once: it resolves the path)
    tpl = _Templates(capture, started, pcap)
    attention = triage.ATTENTION
    with open(base / "rows.jsonl", "w") as rows:
        for mac in sorted(macs):
            h = audit.hosts[mac]
            judged = judge_host(audit, h)
            if records is not None and h.frames:
                records[mac] = host_record(audit, h, capture.name, judged=judged)
            for j in judged:
                fid, v = j.finding.id, j.verdict
                line, case = tpl.check(j, mac)
                entry = per_id.get(fid)
                if entry is None:
                    n = len(per_id)
                    entry = per_id[fid] = (open(base / f"{n}.jsonl", "w+b"), open(base / f"{n}.xml", "w+",
                                           encoding="utf-8", errors="xmlcharrefreplace"), bytearray(), array("i"),
                                           [], [], array("Q"))
                entry[4].append(line)
                entry[5].append(case)
                if len(entry[4]) >= 256:  # written in batches: a write call per check cost more than the check
                    _flush(entry)
                entry[2].append(VERDICTS.index(v))
                entry[3].append(groups.setdefault((AREA, v, triage.signature({"seen": j.seen})), len(groups))
                                if v in attention else -1)
                shape = (v, j.finding.rfc)
                if shape not in shapes:
                    shapes[shape] = {"verdict": v, "area": AREA, "rfc": j.finding.rfc, "ipv6ready": None,
                                     "capabilities": [], "waived": False, "baseline_failure": False}
                samples.setdefault((fid, v), line)
                briefs.append(_Brief(fid, mac, v))
            rows.write(json.dumps(_row_of(mac, judged)) + "\n")
            ready = judged[-1]
            hosts.append((mac, ready.verdict, ready.measurements.get("ipv6_share_percent"),
                          [j.finding.title for j in judged[:-1] if j.verdict == "FAIL"]))
    for entry in per_id.values():
        _flush(entry)
    for line in samples.values():
        results.validate_check(json.loads(line))
    offsets = array("Q")
    members = [array("L") for _ in groups]
    rest = array("L")
    rest_counts: dict[str, int] = {}
    with open(base / "checks.jsonl", "wb") as out, open(base / "cases.xml", "w", encoding="utf-8",
                                                         errors="xmlcharrefreplace") as cases:
        for fid in sorted(per_id):
            f, x, verdicts, gs = per_id[fid][:4]
            f.seek(0)
            x.seek(0)
            shutil.copyfileobj(x, cases)
            x.close()
            at = out.tell()
            shutil.copyfileobj(f, out)
            for size, v, g in zip(per_id[fid][6], verdicts, gs):
                i = len(offsets)
                offsets.append(at)
                at += size
                if g < 0:
                    rest.append(i)
                    rest_counts[VERDICTS[v]] = rest_counts.get(VERDICTS[v], 0) + 1
                else:
                    members[g].append(i)
            f.close()
            os.unlink(f.name)
            os.unlink(x.name)
    spool = Spool(tmp, offsets)
    spool.brief_list, spool.hosts = briefs, hosts
    # triage.build's view of these checks: no NOT_JUDGED, gate, waived or baseline check in an audit.  The
    # HTML lists the first SHOWN members of each group and none of the passed or not applicable ones: the
    # per-host table has every host's every finding (a page of 60,000 checks helps nobody)
    made = sorted(groups.items(), key=lambda kv: members[kv[1]][0])  # created in the document's order
    made.sort(key=lambda kv: (triage.SEVERITY.get(kv[0][1], 9), -len(members[kv[1]])))
    area_groups = [{"area": area, "verdict": v, "cause": sig or v, "head": None,
                    "members": spool.subset(members[g][:SHOWN]), "total": len(members[g])}
                   for (area, v, sig), g in made]
    counts: dict[str, int] = {}
    for g in area_groups:
        counts[g["verdict"]] = counts.get(g["verdict"], 0) + g["total"]
    spool.triage_view = {"areas": [{"area": AREA, "groups": area_groups, "counts": counts}] if area_groups else [],
                         "gates": [], "known": [], "rest": spool.subset(array("L")), "rest_total": len(rest),
                         "attention": sum(g["total"] for g in area_groups), "rest_counts": rest_counts}
    spool.filter_values = triage.filter_values({"checks": list(shapes.values())})
    return results.build_document(briefs, run_meta=run_meta, checks=spool)


def _flush(entry: tuple) -> None:
    lines, cases = entry[4], entry[5]
    entry[0].write("".join(lines).encode())  # (JSON text is ASCII: a line's length is its bytes')
    entry[6].extend(map(len, lines))
    entry[1].write("".join(cases))  # testcases back to back, as ElementTree writes them
    lines.clear()
    cases.clear()


SHOWN = 50  # members of a triage group the HTML lists (all are in results.json and the per-host table)


def _row_of(mac: str, judged: list[Judged]) -> str:
    """One host's row of the readiness table (``_row``'s, from the judged findings)."""
    cs = {j.finding.id: {"verdict": j.verdict, "seen": j.seen, "measurements": j.measurements} for j in judged}
    return _row(mac, cs)


def write_all(run_dir: Path, doc: dict) -> dict[str, Path]:
    """``results.write_all`` for an audit's document (its checks a ``Spool``): the same files, made from
    the text the spool holds; results.json lists the checks one per line (compact JSON), the document
    around them as ``json.dumps(indent=1)`` writes it."""
    from ..report import compliance, manifest
    from ..report.html import write_html

    checks = doc["checks"]
    if not isinstance(checks, Spool):
        return results.write_all(run_dir, doc)
    results.validate({**doc, "checks": []})
    run_dir = Path(run_dir)
    out = {"results": run_dir / "results.json", "junit": run_dir / "junit.xml", "html": run_dir / "report.html"}
    mark = "\0v6gate-checks\0"
    head, tail = json.dumps({**doc, "checks": mark}, indent=1, default=str).split(json.dumps(mark), 1)
    tmp = out["results"].with_suffix(".tmp")
    with open(tmp, "wb") as f, open(checks.path, "rb") as src:
        f.write(head.encode())
        # each check is one line ending in the only newline it holds (JSON escapes the others): a newline
        # between two checks becomes ",\n"; copied a megabyte at a time
        f.write(b"[\n" if len(checks) else b"[]")
        prev = b""
        while chunk := src.read(1 << 20):
            f.write(prev.replace(b"\n", b",\n"))
            prev = chunk
        if prev:
            f.write(prev[:-1].replace(b"\n", b",\n") + b"\n ]")
        f.write(tail.encode())
    os.replace(tmp, out["results"])
    tmp = out["junit"].with_suffix(".xml.tmp")
    _junit(doc, tmp)
    os.replace(tmp, out["junit"])
    out.update(compliance.write(doc, run_dir))
    tmp = out["html"].with_suffix(".html.tmp")
    write_html(doc, tmp, run_dir, dissect=False)
    os.replace(tmp, out["html"])
    out["manifest"] = manifest.write(run_dir)
    return out


def _junit(doc: dict, path: Path) -> None:
    """``report.junit.write_junit``'s bytes, the testcases copied from the spool."""
    from ..report.junit import suite_head_tail

    head, tail = suite_head_tail(doc, len(doc["checks"]), 0.0)
    with open(path, "w", encoding="utf-8", errors="xmlcharrefreplace") as f, \
            open(Path(doc["checks"]._tmp.name) / "cases.xml", encoding="utf-8") as cases:
        f.write("<?xml version='1.0' encoding='utf-8'?>\n" + head)
        shutil.copyfileobj(cases, f)
        f.write(tail)
