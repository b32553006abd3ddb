"""The fleet report of a campaign: every DUT's run directory in, one
campaign directory's reports out.

* ``fleet.json`` / ``fleet.csv`` / ``fleet.html``: the fleet compliance
  matrix, DUT × capability (each cell the DUT's status for the capability
  with its counts, linking into that DUT's triage view filtered on it), each
  DUT's verdict counts and new FAILs, and the diff against the previous
  campaign (new FAILs per DUT);
* ``junit.xml``: one testsuite per DUT (so CI shows each DUT), one
  testcase per part as in a run's junit.xml;
* ``MANIFEST.sha256``: the campaign's files and each DUT's own manifest.

The document depends only on the DUTs' results.json files, the campaign's
definition and the previous campaign: a campaign run on one controller and
the same campaign run as shards and merged give the same fleet report part
for part (``comparable``).  The exit code follows ``v6gate run``'s rules over
all DUTs: 1 a new FAIL on any DUT; else 3 when a DUT's run is undecided,
did not finish or did not run; else 0."""

from __future__ import annotations

import csv
import io
import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from .. import untrusted
from ..errors import UsageError
from ..report import compliance, manifest
from ..report.diff import compare
from ..report.junit import _case
from ..report.results import EXIT_BENCH, EXIT_FAIL, EXIT_OK, VERDICTS
from ..report.triage import key
from .runner import BROKEN, FINISHED, INTERRUPTED, PENDING, RUNNING, finished_run

SCHEMA = "v6gate/fleet/1"
FILES = ("fleet.json", "fleet.csv", "fleet.html", "junit.xml", "campaign.json", "campaign.yaml")
NOT_TESTED = "not tested"
#: a DUT's place in the fleet when it has no finished run
NOT_RUN = "not run"
RESULTS_LIMITS = untrusted.RUN_OUTPUT.but(kind="results.json")


def load_run(run_dir: Path) -> dict:
    doc = untrusted.load_json(run_dir / "results.json", RESULTS_LIMITS)
    if not isinstance(doc, dict) or doc.get("schema") != "v6gate/results/1" or not isinstance(doc.get("checks"), list):
        raise UsageError(f"{run_dir / 'results.json'}: not a v6gate results.json (schema v6gate/results/1)")
    return doc


def _status_of(d: dict, run_dir: Path | None) -> str:
    if not d.get("in_shard") or run_dir is None:
        return NOT_RUN
    if d.get("state") == FINISHED and finished_run(run_dir):
        return FINISHED
    if d.get("state") in (RUNNING, INTERRUPTED) or incomplete_run(run_dir):
        return INTERRUPTED
    return BROKEN if d.get("state") == BROKEN else (PENDING if d.get("state") == PENDING else NOT_RUN)


def incomplete_run(run_dir: Path) -> bool:
    from ..report import incomplete

    return run_dir.is_dir() and incomplete.present(run_dir)


def _verdict(c: dict) -> str:
    return "FAIL (waived)" if c["verdict"] == "FAIL" and c.get("waived") else \
        "FAIL (baseline)" if c["verdict"] == "FAIL" and c.get("baseline_failure") else c["verdict"]


def dut_entry(d: dict, out: Path) -> tuple[dict, dict | None]:
    """One DUT's row of the fleet (and its results document, when it has one)."""
    run_dir = out / d["run_dir"] if d.get("run_dir") else None
    status = _status_of(d, run_dir)
    row = {"name": d["name"], "controller": d.get("controller"), "lab_fault": d.get("lab_fault"),
           "target_source": d.get("target_source"), "status": status}
    doc = None
    if run_dir is not None and (run_dir / "results.json").is_file() and status in (FINISHED, INTERRUPTED):
        doc = load_run(run_dir)
    if doc is None:
        row.update({"exit_code": None, "counts": dict.fromkeys(VERDICTS, 0), "new_failures": [], "waived": [],
                    "undecided": [], "missing": [], "verdicts": {}, "target": None})
        row["run"] = {"dir": d.get("run_dir"), "state": d.get("state"), "runs": d.get("runs", 0)}
        return row, None
    s = doc["summary"]
    t = doc["run"].get("target") or {}
    row.update({"exit_code": s["exit_code"], "counts": {v: s["counts"].get(v, 0) for v in VERDICTS},
                "new_failures": list(s["new_failures"]), "waived": list(s["waived"]),
                "undecided": sorted({*s.get("errors", []), *s.get("inconclusive", []), *s.get("not_judged", [])}),
                "missing": list(s.get("missing") or []), "target": {"name": t.get("name"), "kind": t.get("kind")},
                "verdicts": {key(c): _verdict(c) for c in doc["checks"]}})
    row["run"] = {"dir": d["run_dir"], "id": doc["run"].get("id"), "started": doc["run"].get("started"),
                  "finished": doc["run"].get("finished"), "duration_s": doc["run"].get("duration_s"),
                  "state": d.get("state"), "runs": d.get("runs", 0), "wall_s": d.get("wall_s"),
                  "report": f"{d['run_dir']}/report.html"}
    return row, doc


def _capabilities(rows: list[dict], docs: dict[str, dict]) -> list[dict]:
    """DUT × capability: the capabilities any DUT tested (in the catalogue's order, claimed ones first)."""
    cat = compliance.catalogue()
    cells: dict[str, dict[str, dict]] = {}
    for r in rows:
        doc = docs.get(r["name"])
        if doc is None:
            continue
        for m in compliance.matrix(doc)["rows"]:
            status = m["status"] if m["parts"] else NOT_TESTED
            cells.setdefault(m["capability"], {})[r["name"]] = {
                "status": status, "claimed": m["claimed"], "counts": m["counts"], "parts": m["parts"],
                "failing": m["failing"], "why": m["why"]}
    order = [c for c in cat if c in cells] + sorted(c for c in cells if c not in cat)
    out = []
    for cap in order:
        if not any(v["parts"] for v in cells[cap].values()):
            continue  # claimed by some DUT but tested by none in this campaign: listed apart
        spec = cat.get(cap, {})
        out.append({"capability": cap, "title": spec.get("title", ""), "usgv6": spec.get("usgv6", ""),
                    "cells": {r["name"]: cells[cap].get(r["name"]) for r in rows}})
    return out


def _untested(rows: list[dict], docs: dict[str, dict], tested: set[str]) -> list[str]:
    claimed = {c for doc in docs.values() for c in (doc["run"].get("target") or {}).get("capabilities") or []}
    return sorted(claimed - tested)


def _diff(rows: list[dict], docs: dict[str, dict], previous: Path | None) -> dict | None:
    """New FAILs (and fixes, newly undecided parts, capability changes) per DUT against the previous campaign."""
    if previous is None:
        return None
    from .runner import load_state

    prev_state = load_state(previous)
    prev = {d["name"]: d for d in prev_state["duts"]}
    out = {"previous": {"dir": str(previous), "name": prev_state.get("name")}, "duts": {}, "added": [],
           "removed": sorted(set(prev) - {r["name"] for r in rows}), "new_failures": 0}
    for r in rows:
        new = docs.get(r["name"])
        p = prev.get(r["name"])
        old_dir = previous / p["run_dir"] if p and p.get("run_dir") else None
        if p is None or old_dir is None or not (old_dir / "results.json").is_file():
            out["added"].append(r["name"])
            continue
        if new is None:
            continue
        d = compare(load_run(old_dir), new)
        out["duts"][r["name"]] = {
            "newly_failing": [x["key"] for x in d["newly_failing"]], "fixed": [x["key"] for x in d["fixed"]],
            "newly_undecided": [x["key"] for x in d["newly_undecided"]],
            "capabilities": [c for c in d["capabilities"] if c.get("old") != c.get("new")],
            "seen": {x["key"]: x["new_seen"][:300] for x in d["newly_failing"]}}
        out["new_failures"] += len(d["newly_failing"])
    out["added"].sort()
    return out


def build(state: dict, out: Path, *, previous: Path | None = None) -> tuple[dict, dict[str, dict]]:
    """The fleet document of the campaign directory ``out`` (and each DUT's results document)."""
    rows, docs = [], {}
    for d in state["duts"]:
        row, doc = dut_entry(d, out)
        rows.append(row)
        if doc is not None:
            docs[d["name"]] = doc
    caps = _capabilities(rows, docs)
    ran = [r for r in rows if r["status"] != NOT_RUN or state.get("merged")]
    if any(r["exit_code"] == EXIT_FAIL for r in ran):
        code = EXIT_FAIL
    elif any(r["status"] != FINISHED or r["exit_code"] != EXIT_OK for r in ran) or not ran:
        code = EXIT_BENCH
    else:
        code = EXIT_OK
    doc = {
        "schema": SCHEMA,
        "campaign": {"name": state["name"], "description": state.get("description", ""),
                     "file_sha256": state["file"]["sha256"], "selection": state["selection"]},
        "generated": {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "shard": state.get("shard"),
                      "merged_from": state.get("merged_from")},
        "duts": rows,
        "capabilities": caps,
        "claimed_not_tested": _untested(rows, docs, {c["capability"] for c in caps}),
        "diff": _diff(rows, docs, previous),
        "exit_code": code,
    }
    return doc, docs


def comparable(doc: dict) -> dict:
    """The fleet document without what differs between two runs of the same verdicts (when and where each
    DUT ran, which shard made the report): two reports are the same part for part when these are equal."""
    rows = [{k: v for k, v in r.items() if k != "run"} for r in doc["duts"]]
    out = {k: v for k, v in doc.items() if k not in ("generated", "duts")}
    out["duts"] = rows
    if out.get("diff"):
        out["diff"] = {k: v for k, v in out["diff"].items() if k != "previous"}
    return out


# -- writers ------------------------------------------------------------------------
def to_csv(doc: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["dut", "capability", "status", *compliance.COLUMNS, "parts", "failing"])
    for cap in doc["capabilities"]:
        for r in doc["duts"]:
            cell = cap["cells"].get(r["name"])
            if cell is None:
                w.writerow([r["name"], cap["capability"], r["status"] if r["status"] != FINISHED else NOT_TESTED,
                            *([""] * len(compliance.COLUMNS)), 0, ""])
                continue
            w.writerow([r["name"], cap["capability"], cell["status"], *(cell["counts"][k] for k in compliance.COLUMNS),
                        cell["parts"], " ".join(cell["failing"])])
    return buf.getvalue()


def to_text(doc: dict) -> str:
    """The fleet matrix as plain text (the terminal, a ticket, a note): one column per DUT."""
    names = [r["name"] for r in doc["duts"]]
    short = {"supported": "supported", "not supported": "NOT SUPPORTED", "not demonstrated": "not demonstrated",
             "not claimed": "not claimed", NOT_TESTED: "-"}
    head = ["capability", *names]
    table = []
    for cap in doc["capabilities"]:
        line = [cap["capability"]]
        for n in names:
            cell = cap["cells"].get(n)
            if cell is None:
                line.append("(no run)")
            else:
                c = cell["counts"]
                line.append(f"{short.get(cell['status'], cell['status'])} {c['PASS']}/{c['FAIL']}")
        table.append(line)
    rows = [["exit code", *[str(r["exit_code"]) if r["status"] == FINISHED else r["status"] for r in doc["duts"]]],
            ["new FAILs", *[str(len(r["new_failures"])) for r in doc["duts"]]]]
    widths = [max(len(x) for x in col) for col in zip(head, *table, *rows)]
    fmt = lambda line: "  ".join(x.ljust(w) for x, w in zip(line, widths))  # noqa: E731
    text = [f"fleet of campaign {doc['campaign']['name']} (cells: status PASS/FAIL; exit code {doc['exit_code']})",
            fmt(head), *map(fmt, table), *map(fmt, rows)]
    return "\n".join(text)


def write_junit(doc: dict, docs: dict[str, dict], path: Path) -> None:
    """One testsuite per DUT; a DUT without a finished run is one testcase in error saying why."""
    root = ET.Element("testsuites", name=f"v6gate campaign {doc['campaign']['name']}")
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for r in doc["duts"]:
        rd = docs.get(r["name"])
        if rd is None:
            if r["status"] == NOT_RUN and not doc["generated"].get("merged_from"):
                continue  # another shard's DUT
            suite = ET.SubElement(root, "testsuite", name=r["name"], tests="1", failures="0", errors="1",
                                  skipped="0", time="0")
            case = ET.SubElement(suite, "testcase", classname=f"{r['name']}.campaign", name="run")
            ET.SubElement(case, "error", type="ERROR",
                          message=f"no finished run of DUT {r['name']} ({r['status']}): see its run.log")
            totals["tests"] += 1
            totals["errors"] += 1
            continue
        c = rd["summary"]["counts"]
        n = {"tests": len(rd["checks"]), "failures": c["FAIL"] - len(rd["summary"]["waived"]) + c["INCONCLUSIVE"],
             "errors": c["ERROR"], "skipped": c["SKIP"] + c.get("NOT_JUDGED", 0) + len(rd["summary"]["waived"])}
        suite = ET.SubElement(root, "testsuite", name=r["name"], **{k: str(v) for k, v in n.items()},
                              time=f"{sum(x['duration_s'] for x in rd['checks']):.3f}",
                              timestamp=rd["run"].get("started") or "")
        props = ET.SubElement(suite, "properties")
        for k, v in (("target", (r.get("target") or {}).get("name")), ("exit_code", r["exit_code"]),
                     ("report", r["run"].get("report")), ("lab_fault", r.get("lab_fault"))):
            if v is not None:
                ET.SubElement(props, "property", name=k, value=str(v))
        for check in rd["checks"]:
            case = _case(check)
            case.set("classname", f"{r['name']}.{case.get('classname')}")
            suite.append(case)
        for k in totals:
            totals[k] += n[k]
    for k, v in totals.items():
        root.set(k, str(v))
    tmp = path.with_name(path.name + ".tmp")
    ET.ElementTree(root).write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, path)


def write_html(doc: dict, path: Path) -> None:
    from ..report.html import env

    run = {"target": {"name": f"campaign {doc['campaign']['name']}", "kind": "fleet"},
           "id": doc["campaign"]["name"], "started": min((r["run"].get("started") or "" for r in doc["duts"]),
                                                         default="") or "-",
           "finished": doc["generated"]["at"], "profile": doc["campaign"]["selection"]["profile"], "tool": {}}
    html = env().get_template("fleet.html.j2").render(
        doc=doc, run=run, summary={"exit_code": doc["exit_code"]}, nav=[("fleet.html", "Fleet")], page="fleet.html",
        columns=compliance.COLUMNS, link=_cell_link, finished=FINISHED)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(html)
    os.replace(tmp, path)


def _cell_link(row: dict, cap: str, cell: dict) -> str | None:
    """Into the DUT's triage view, filtered on the capability (and on FAILs when it is not supported)."""
    report = row["run"].get("report")
    if not report:
        return None
    from urllib.parse import urlencode

    q = {"cap": cap}
    if cell["status"] == "not supported":
        q["v"] = "fail"
    return f"{report}?{urlencode(q)}"


def write_manifest(out: Path, doc: dict) -> Path:
    """The campaign's files and each DUT's MANIFEST.sha256 (which covers that DUT's evidence)."""
    rels = [f for f in FILES if (out / f).is_file()]
    rels += sorted(f"{r['run']['dir']}/{manifest.NAME}" for r in doc["duts"]
                   if r["run"].get("dir") and (out / r["run"]["dir"] / manifest.NAME).is_file())
    lines = [f"{manifest.sha256(out / rel)}  {rel}\n" for rel in sorted(rels)]
    path = out / manifest.NAME
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(lines))
    os.replace(tmp, path)
    return path


def verify(out: Path) -> dict[str, list[str]]:
    """A campaign directory against its MANIFEST.sha256, and each DUT's run directory it lists against the
    DUT's own (``v6gate verify CAMPAIGN_DIR``): {changed, missing, extra, ok}, paths relative to ``out``."""
    from .. import untrusted

    path = out / manifest.NAME
    if not path.is_file():
        raise UsageError(f"{out}: no {manifest.NAME}; the campaign did not finish writing its reports")
    entries = manifest.parse(untrusted.read_text(path, untrusted.RUN_OUTPUT.but(kind=manifest.NAME)), str(path))
    res: dict[str, list[str]] = {"changed": [], "missing": [], "extra": [], "ok": []}
    for rel, digest in sorted(entries.items()):
        p = out / rel
        if not p.is_file():
            res["missing"].append(rel)
        elif manifest.sha256(p) != digest:
            res["changed"].append(rel)
        else:
            res["ok"].append(rel)
        if rel.endswith("/" + manifest.NAME) and p.is_file():
            sub = rel[: -len(manifest.NAME) - 1]
            for k, rels in manifest.verify(out / sub).items():
                res[k] += [f"{sub}/{r}" for r in rels]
    listed = set(entries)
    res["extra"] += sorted(f for f in FILES if (out / f).is_file() and f not in listed)
    res["extra"] += sorted(str(p.relative_to(out)) for p in out.glob(f"duts/*/{manifest.NAME}")
                           if str(p.relative_to(out)) not in listed)
    return res


def write_all(state: dict, out: Path, *, previous: Path | None = None) -> tuple[dict, dict[str, Path]]:
    import json

    doc, docs = build(state, out, previous=previous)
    paths = {"json": out / "fleet.json", "csv": out / "fleet.csv", "html": out / "fleet.html",
             "junit": out / "junit.xml"}
    tmp = paths["json"].with_name("fleet.json.tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, paths["json"])
    tmp = paths["csv"].with_name("fleet.csv.tmp")
    tmp.write_text(to_csv(doc))
    os.replace(tmp, paths["csv"])
    write_junit(doc, docs, paths["junit"])
    write_html(doc, paths["html"])
    paths["manifest"] = write_manifest(out, doc)
    return doc, paths
