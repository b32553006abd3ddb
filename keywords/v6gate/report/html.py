"""A readable single-file HTML report: summary by area and verdict, then
each check with its reason, references and a link to its pcap.

Areas that need more than a row (performance gates with plots) register a
renderer for their result kind in ``RENDERERS``."""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from pathlib import Path
from string import Template

from ..paths import REPORTS, ROOT

TEMPLATE = REPORTS / "templates" / "report.html"
VERDICTS = ("PASS", "FAIL", "SKIP", "ERROR", "INCONCLUSIVE", "NOT_JUDGED")

#: kind -> function(check_dict, report_dir) returning extra HTML for that check
RENDERERS: dict[str, Callable[[dict, Path], str]] = {}
#: functions(doc, report_dir) returning HTML sections placed after the summary
SECTIONS: list[Callable[[dict, Path], str]] = []


def _e(s) -> str:
    return html.escape(str(s if s is not None else ""))


def _rel(path: str, base: Path) -> str:
    try:
        return os.path.relpath(ROOT / path, base)
    except ValueError:
        return path


def _verdict_cell(c: dict) -> str:
    v = c["verdict"]
    label = "FAIL (waived)" if v == "FAIL" and c.get("waived") else v
    if v == "FAIL" and c.get("baseline_failure"):
        label = "FAIL (baseline)"
    cls = "waived" if label != v else v.lower()
    return f'<span class="v {cls}">{_e(label)}</span>'


def write_html(doc: dict, path: Path, report_dir: Path) -> None:
    s = doc["summary"]
    run = doc["run"]
    counts = " ".join(f'<span class="v {v.lower()}">{v} {s["counts"].get(v, 0)}</span>' for v in VERDICTS)
    area_rows = "".join(
        f"<tr><td>{_e(a)}</td>" + "".join(f"<td>{n.get(v, 0) or ''}</td>" for v in VERDICTS) + "</tr>"
        for a, n in s["by_area"].items())
    lists = []
    for key, title in (("new_failures", "New failures"), ("errors", "Bench errors"), ("inconclusive", "Inconclusive"),
                       ("not_judged", "Not judged (a precondition failed; see the check that judges it)"),
                       ("fixed", "Fixed (waived or baseline failure that now passes)"),
                       ("waived", "Waived failures"), ("missing", "Selected but not run")):
        if key == "not_judged" and s.get("not_judged_by"):
            groups = "".join(f"<p class=keys>see {_e(by.rstrip('#'))}: {', '.join(_e(k) for k in keys)}</p>"
                             for by, keys in s["not_judged_by"].items())
            lists.append(f"<h3>{_e(title)} ({len(s[key])})</h3>{groups}")
        elif s.get(key):
            lists.append(f"<h3>{_e(title)} ({len(s[key])})</h3><p class=keys>{', '.join(_e(k) for k in s[key])}</p>")
    rows = []
    for c in doc["checks"]:
        pcap = c.get("evidence", {}).get("pcap")
        link = f'<a href="{_e(_rel(pcap, report_dir))}">pcap</a>' if pcap else ""
        ref = f"{c['ipv6ready'] or '—'}{' part ' + c['part'] if c['part'] else ''}"
        extra = RENDERERS.get(c.get("kind", "check"), lambda *_: "")(c, report_dir)
        waiver = ""
        if c.get("waiver"):
            w = c["waiver"]
            waiver = f"<p class=waiver>Waiver: {_e(w.get('reason'))}" + (
                f" — observed: {_e(w['observed'])}" if w.get("observed") else "") + "</p>"
        timeline = ""
        if c.get("timeline"):
            timeline = "<details><summary>timeline</summary><pre>" + _e("\n".join(c["timeline"])) + "</pre></details>"
        rows.append(
            f'<tr class="{c["verdict"].lower()}"><td>{_verdict_cell(c)}</td><td>{_e(ref)}</td>'
            f"<td><b>{_e(c['title'])}</b><br><code>{_e(c['id'])}</code></td><td>{_e(c['rfc'])}</td>"
            f"<td><p>{_e(c['reason'])}</p>{waiver}{extra}{timeline}</td><td>{link}<br>{c['duration_s']:.2f}s</td></tr>")
    sections = "".join(fn(doc, report_dir) for fn in SECTIONS)
    page = Template(TEMPLATE.read_text()).substitute(
        title=_e(f"v6gate — {run['target'].get('name', '')}"),
        target=_e(run["target"].get("name", "")), kind=_e(run["target"].get("kind", "")),
        run_id=_e(run["id"]), started=_e(run["started"]), finished=_e(run["finished"]),
        profile=_e(run.get("profile", "")), exit_code=s["exit_code"], counts=counts, area_rows=area_rows,
        lists="".join(lists), sections=sections, rows="".join(rows),
        tool=_e(", ".join(f"{k} {v}" for k, v in run.get("tool", {}).items() if v)),
    )
    path.write_text(page)
