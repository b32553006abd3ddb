"""The HTML report, from Jinja2 templates (reports/templates/*.j2) with
autoescaping: ``report.html`` is the triage view (problems first, grouped by
area and root cause, filters and search, passes collapsed), beside it
``compliance.html`` (the capability matrix) and, when the run has a
baseline, ``diff.html``.  Every page works offline from the run directory
(no CDN: the CSS and the small filter script are inline).

Areas that need more than a reason (performance gates with plots) register
a renderer for their result kind in ``RENDERERS``; ``SECTIONS`` add HTML
sections after the triage groups (the gates' pairing, the audit's per-host
table).  Both return HTML strings that the area escaped itself."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import jinja2
from markupsafe import Markup

from .. import untrusted
from ..errors import UsageError
from ..paths import REPORTS, ROOT
from . import files, triage

TEMPLATES = REPORTS / "templates"
VERDICTS = ("PASS", "FAIL", "SKIP", "ERROR", "INCONCLUSIVE", "NOT_JUDGED")

#: kind -> function(check_dict, report_dir) returning extra HTML for that check
RENDERERS: dict[str, Callable[[dict, Path], str]] = {}
#: functions(doc, report_dir) returning HTML sections placed after the triage groups
SECTIONS: list[Callable[[dict, Path], str]] = []

_ENV: jinja2.Environment | None = None


def env() -> jinja2.Environment:
    global _ENV
    if _ENV is None:
        _ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                                  autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
                                  undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True,
                                  bytecode_cache=_bytecode_cache())
        _ENV.filters["num"] = _num
    return _ENV


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """The templates compiled once into build/jinja/ (keyed by their source's checksum: an edited template is
    compiled again); compiling them took some 60 ms of a one-second audit.  None where build/ cannot be
    written (the templates are then compiled in memory each time)."""
    d = ROOT / "build" / "jinja"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(d)) if os.access(d, os.W_OK) else None


def _num(v, fmt: str = "{:.4g}") -> str:
    return "—" if v is None else fmt.format(v)


def rel_link(path: str | None, base: Path) -> str | None:
    """A pcap path as results.json holds it (repository-relative or absolute) as a link from the report."""
    if not path:
        return None
    try:
        return os.path.relpath(ROOT / path, base)
    except ValueError:
        return path


def headline(c: dict, limit: int = 240) -> str:
    """The one line a triager reads first: the first problem, else what was seen, else the reason."""
    text = ((c.get("problems") or [None])[0] or c.get("seen") or c.get("reason") or "").strip()
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _extra(c: dict, report_dir: Path) -> Markup:
    fn = RENDERERS.get(c.get("kind", "check"))
    return Markup(fn(c, report_dir)) if fn else Markup("")


def _pages(doc: dict, report_dir: Path, *, baseline_doc: dict | None = None,
           dissect: bool = True) -> dict[str, tuple[jinja2.Template, dict]]:
    """name -> (template, context) of every page of the report.  An audit's host table, while it is
    written, brings its own triage view and filter values (``triage_view``, ``filter_values``), made
    from its streams: ``triage.build`` would hold every check in memory."""
    from . import compliance, diff

    t0 = time.monotonic()
    report_dir = Path(report_dir)
    checks = doc["checks"]
    made = doc.get("audit") if hasattr(doc.get("audit"), "triage_view") else checks
    view = getattr(made, "triage_view", None) or triage.build(_listed(doc))
    dissections = {}
    if dissect:
        from .dissect import dissect_checks

        dissections = dissect_checks([c for c in checks if triage.needs_attention(c)],
                                     dut_mac=(doc["run"].get("target") or {}).get("dut_mac"))
    matrix = compliance.matrix(doc)
    delta = diff.compare(baseline_doc, doc) if baseline_doc is not None else None
    nav = [("report.html", "Triage"), ("compliance.html", "Compliance")] + (
        [("diff.html", "Diff")] if delta is not None else [])
    common = {"doc": doc, "run": doc["run"], "summary": doc["summary"], "nav": nav, "verdicts": VERDICTS,
              "label": triage.label, "key": triage.key, "rfcs": triage.rfcs, "headline": headline,
              "caps": compliance.capabilities_of}
    out = {}
    e = env()
    out["report.html"] = (e.get_template("report.html.j2"), dict(
        **common, page="report.html", view=view, dissections=dissections,
        link=lambda p: rel_link(p, report_dir), extra=lambda c: _extra(c, report_dir),
        sections=_sections(doc, report_dir),
        filters=getattr(made, "filter_values", None) or triage.filter_values(_listed(doc)), delta=delta,
        build_s=round(time.monotonic() - t0, 2)))
    out["compliance.html"] = (e.get_template("compliance.html.j2"),
                              dict(**common, page="compliance.html", matrix=matrix, columns=compliance.COLUMNS))
    if delta is not None:
        out["diff.html"] = (e.get_template("diff.html.j2"), dict(**common, page="diff.html", delta=delta))
    return out


def _listed(doc: dict) -> dict:
    """``doc`` with every check in "checks" (a v6gate/results/2 document's host table expanded)."""
    if doc.get("audit") is None:
        return doc
    from .results import all_checks

    return {**doc, "checks": list(all_checks(doc))}


def _sections(doc: dict, report_dir: Path):
    """The SECTIONS' HTML, piece by piece: a section may return its HTML whole or as an iterable of
    pieces (the audit's per-host table, one row at a time)."""
    for fn in SECTIONS:
        html = fn(doc, report_dir)
        for piece in (html,) if isinstance(html, str) else html:
            yield Markup(piece)


def pages(doc: dict, report_dir: Path, *, baseline_doc: dict | None = None,
          dissect: bool = True) -> dict[str, str]:
    """name -> HTML text of every page of the report."""
    return {name: t.render(**ctx) for name, (t, ctx) in _pages(doc, report_dir, baseline_doc=baseline_doc,
                                                                dissect=dissect).items()}


def write_html(doc: dict, path: Path, report_dir: Path, *, baseline_doc: dict | None = None,
               dissect: bool = True) -> list[Path]:
    """Write report.html at ``path`` and its sibling pages, each streamed from its template (the text
    ``pages`` gives, never whole in memory); returns every page written."""
    path = Path(path)
    if baseline_doc is None:
        baseline_doc = load_baseline(doc)
    written = []
    for name, (t, ctx) in _pages(doc, report_dir, baseline_doc=baseline_doc, dissect=dissect).items():
        p = path if name == "report.html" else path.with_name(name)
        with files.replacing(p) as tmp, open(tmp, "w") as f:  # each page whole or not at all
            f.writelines(t.generate(**ctx))
        written.append(p)
    stale = path.with_name("diff.html")
    if stale not in written and stale.exists():
        stale.unlink()
    return written


def load_baseline(doc: dict) -> dict | None:
    """The run's --baseline results.json, if it names one that can still be read."""
    path = (doc.get("run") or {}).get("baseline")
    if not path:
        return None
    try:
        return untrusted.load_json(path, untrusted.RUN_OUTPUT.but(kind="results.json"))
    except UsageError:
        return None
