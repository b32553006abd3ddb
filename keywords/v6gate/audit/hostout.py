"""Each host's part of the audit's report, from its judged findings, as text: its row of results.json's
host table, its JUnit testcase, its row of the HTML per-host table, its line on the terminal, its FAILs
(for the triage groups and the summary) and its record for the partial result.

This is the reference of the C writer (``engine/report.c``, ``engine/judge.c``), which makes the same
texts from the engine's host state without a Python object per host; ``tests/unit/test_audit_report_c.py``
compares the two byte for byte.  The Python path (no compiler, ``--engine tshark``, ``--host``) writes
with these functions.

The streams (``Streams``): files in a temporary directory, each host's text appended in MAC order:
``table`` (a row per line), ``cases``, ``rows``, ``lines``, ``records`` (``"MAC":{record}``, comma-
separated: the hosts that sent frames) and ``fails`` (``[column, MAC, seen, measurements]`` per line), and
the count of each finding's verdicts."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from .assets import host_record
from .findings import (
    ASKS_108,
    CHECKSUMS,
    DNS6,
    ND,
    NO_IPV4,
    RA,
    READY,
    SELECTION,
    STOPS_108,
    Judged,
    judge_host,
)
from .hosts import STARTUP_WINDOW_S, Audit

#: the findings in judge_host's order: the host table's columns
COLUMNS = (NO_IPV4, ASKS_108, STOPS_108, DNS6, SELECTION, ND, CHECKSUMS, RA, READY)
COLUMN = {f.id: i for i, f in enumerate(COLUMNS)}
STREAMS = ("table", "cases", "rows", "lines", "records", "fails")
VERDICTS = ("PASS", "FAIL", "SKIP")
_compact = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps(x, separators=(",", ":"))
_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})
_ATTR = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\r": "&#13;", "\n": "&#10;",
                       "\t": "&#09;"})
_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def e(s) -> str:
    """``html.escape(s, quote=True)``, translated only when it must be."""
    s = str(s if s is not None else "")
    if "&" in s or "<" in s or ">" in s or '"' in s or "'" in s:
        return s.translate(_HTML)
    return s


def attr(s: str) -> str:
    """An XML attribute value as ElementTree escapes it."""
    if "&" in s or "<" in s or ">" in s or '"' in s or "\n" in s or "\r" in s or "\t" in s:
        return s.translate(_ATTR)
    return s


def text(s: str) -> str:
    """XML text as ElementTree escapes it."""
    if "&" in s or "<" in s or ">" in s:
        return s.translate(_TEXT)
    return s


def cells(judged: list[Judged]) -> list[Judged | None]:
    """The judged findings in the table's columns (None: a finding the host has not, RA for a non-router)."""
    out: list[Judged | None] = [None] * len(COLUMNS)
    for j in judged:
        out[COLUMN[j.finding.id]] = j
    return out


def table_row(mac: str, c: list) -> str:
    return _compact([mac, [[j.verdict, j.seen, j.measurements] if j else None for j in c]]) + "\n"


def junit_case(mac: str, c: list, pcap: str) -> str:
    """The host's testcase: a failure listing each finding that FAILs (expected, seen), else passed."""
    findings = [j for j in c[:-1] if j]
    failing = [j for j in findings if j.verdict == "FAIL"]
    case = f'<testcase classname="v6gate.audit.host" name="{attr(mac)}" time="0.000">'
    if failing:
        message = f"{len(failing)} of {len(findings)} findings FAIL: " + "; ".join(j.finding.title for j in failing)
        body = "".join(f"{j.finding.id} ({j.finding.rfc}): expected {j.finding.expect}; seen {j.seen}\n"
                       for j in failing) + f"(pcap: {pcap})"
        case += f'<failure message="{attr(message[:500])}" type="FAIL">{text(body)}</failure>'
    return case + f"<system-out>{text(f'pcap: {pcap}')}</system-out></testcase>"


def share_text(ready: Judged) -> str:
    share = ready.measurements.get("ipv6_share_percent")
    return "-" if share is None else f"{share}"


def html_row(mac: str, c: list) -> str:
    """The host's row of report.html's per-host table."""
    ready = c[-1]
    m = ready.measurements
    v4 = m.get("ipv4_addresses")
    share = m.get("ipv6_share_percent")
    cells_ = [f"<code>{e(mac)}</code><br><small>{e(', '.join(m.get('ipv6_addresses', [])[:3]))}"
              f"{'<br>' + e(', '.join(v4[:3])) if v4 else ''}</small>",
              f'<span class="v {e(ready.verdict.lower())}">{e(ready.verdict)}</span>',
              e(f"{share}%" if share is not None else "—")]
    for j in c[:-1]:
        cells_.append("" if j is None else f'<span class="v {e(j.verdict.lower())}">{e(j.verdict)}</span>'
                                           f"<br><small>{e(j.seen[:160])}</small>")
    return "<tr>" + "".join(f"<td>{x}</td>" for x in cells_) + "</tr>"


def line(mac: str, c: list) -> str:
    """The host's line on the terminal."""
    failing = [j.finding.title for j in c[:-1] if j and j.verdict == "FAIL"]
    return (f"  {mac}  {c[-1].verdict:4}  IPv6 {share_text(c[-1])}%"
            + (f"  failing: {', '.join(failing)}" if failing else "") + "\n")


def fail_lines(mac: str, c: list) -> str:
    return "".join(_compact([i, mac, j.seen, j.measurements]) + "\n" for i, j in enumerate(c)
                   if j and j.verdict == "FAIL")


class Streams:
    """The report's per-host streams (files in a temporary directory, removed with the object) and the
    count of each finding's verdicts (``counts[column][verdict]``)."""

    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="v6gate-audit-")
        self.dir = Path(self._tmp.name)
        self.paths = {s: self.dir / s for s in STREAMS}
        self.counts = [[0] * len(VERDICTS) for _ in COLUMNS]
        self.first_rows: set[int] = set()  # offsets in the table of the first row of each finding and verdict
        self.hosts = 0

    def open(self, mode: str = "w"):
        return {s: open(p, mode, encoding="utf-8") if "b" not in mode else open(p, mode)
                for s, p in self.paths.items()}

    def read(self, name: str) -> str:
        return self.paths[name].read_text(encoding="utf-8")

    def close(self) -> None:
        self._tmp.cleanup()


def write_python(streams: Streams, audit: Audit, macs: list[str], capture_name: str, pcap: str) -> Streams:
    """Each host of ``macs`` (in MAC order) judged by findings.py and written to ``streams``; the record
    of every host that sent frames (``--host`` reports fewer hosts than the partial result records)."""
    reported = set(macs)
    files = streams.open()
    try:
        records = at = 0
        for mac in sorted(set(macs) | {m for m, h in audit.hosts.items() if h.frames}):
            h = audit.hosts[mac]
            judged = judge_host(audit, h)
            if mac in reported:
                c = cells(judged)
                row = table_row(mac, c)
                for i, j in enumerate(c):
                    if j:
                        k = VERDICTS.index(j.verdict)
                        if not streams.counts[i][k]:
                            streams.first_rows.add(at)
                        streams.counts[i][k] += 1
                files["table"].write(row)
                at += len(row)  # (ASCII: its characters are its bytes)
                files["cases"].write(junit_case(mac, c, pcap))
                files["rows"].write(html_row(mac, c))
                files["lines"].write(line(mac, c))
                files["fails"].write(fail_lines(mac, c))
                streams.hosts += 1
            if h.frames:
                rec = host_record(audit, h, capture_name, judged=judged)
                files["records"].write(("," if records else "") + _compact(mac) + ":" + _compact(rec))
                records += 1
    finally:
        for f in files.values():
            f.close()
    return streams


def strings(capture_name: str, pcap: str) -> list[str]:
    """What the C writer is given (engine/report.c STRINGS): the capture's name and the pcap as reports
    show it, each finding's id, title, RFC and expectation, the IPv4 kinds' names (core.KINDS)."""
    from .core import KINDS

    out = [capture_name, pcap]
    for f in COLUMNS:
        out += [f.id, f.title, f.rfc, f.expect]
    return out + list(KINDS)


STARTUP_WINDOW = STARTUP_WINDOW_S  # (given to the C writer)

