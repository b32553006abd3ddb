"""The compliance matrix (SDOC-style): per target, each capability it claims
against the verdicts of the tests that support the claim, with a status a
lab or an auditor can act on.  The capabilities, their USGv6-r1 / IPv6 Ready
labels and the areas that support them are data
(fixtures/compliance/capabilities.yaml); written as a page of the report
and as compliance.csv / compliance.json in the run directory."""

from __future__ import annotations

import csv
import io
import json
from functools import lru_cache
from pathlib import Path

from .. import yamlfile
from ..paths import FIXTURES
from . import files, results

DATA = FIXTURES / "compliance" / "capabilities.yaml"
COLUMNS = ("PASS", "FAIL", "waived", "SKIP", "NOT_JUDGED", "ERROR", "INCONCLUSIVE")
SUPPORTED, NOT_SUPPORTED, NOT_DEMONSTRATED, NOT_CLAIMED = ("supported", "not supported", "not demonstrated",
                                                           "not claimed")


@lru_cache(maxsize=1)
def catalogue() -> dict[str, dict]:
    return dict(yamlfile.load_data_file(DATA)["capabilities"])


def supports(check: dict, capability: str, spec: dict) -> bool:
    """Whether the part counts for ``capability``: the capability is its own, its area's or names its check.
    A performance gate (kind "gate") is its own capability (Performance, by its area) and counts for a
    conformance capability only where that capability names the gate under ``checks`` (Happy Eyeballs: the
    gate is that behaviour's test): its own ``capabilities`` say which targets it runs on, so an
    undecided or slow gate never leaves Core, SLAAC or a storage service "not demonstrated" (issue 34)."""
    own = check.get("kind") != "gate" and capability in (check.get("capabilities") or [])
    return own or check.get("area") in (spec.get("areas") or []) or check.get("id") in (spec.get("checks") or [])


def capabilities_of(check: dict) -> list[str]:
    """Every capability of the catalogue the part supports (its own, its area's, its check id's) and its own
    others: what the triage view's capability filter selects, so that a cell of a matrix links to its parts."""
    return list(_capabilities_of(check.get("id"), check.get("area"), tuple(check.get("capabilities") or ()),
                                 check.get("kind")))


@lru_cache(maxsize=4096)
def _capabilities_of(check_id, area, own: tuple, kind=None) -> tuple:
    spec = {"id": check_id, "area": area, "capabilities": own, "kind": kind}
    mine = () if kind == "gate" else own
    return tuple(dict.fromkeys([*(cap for cap, s in catalogue().items() if supports(spec, cap, s)), *mine]))


def _column(c: dict) -> str:
    v = c["verdict"]
    if v == "FAIL" and c.get("waived"):
        return "waived"
    return v if v in COLUMNS else "ERROR"


def status(counts: dict[str, int]) -> str:
    if counts["FAIL"]:
        return NOT_SUPPORTED
    if counts["PASS"] and not (counts["ERROR"] or counts["NOT_JUDGED"] or counts["INCONCLUSIVE"]):
        return SUPPORTED
    return NOT_DEMONSTRATED


def _why(row: dict) -> str:
    n = row["counts"]
    if row["parts"] == 0:
        return "no test of this capability ran"
    if row["status"] == NOT_SUPPORTED:
        return f"{n['FAIL']} part(s) FAIL: " + ", ".join(row["failing"][:5]) + (" …" if len(row["failing"]) > 5 else "")
    if row["status"] == SUPPORTED:
        return f"{n['PASS']} part(s) PASS" + (f"; {n['waived']} waived deviation(s)" if n["waived"] else "")
    undecided = {k: n[k] for k in ("ERROR", "NOT_JUDGED", "INCONCLUSIVE") if n[k]}
    if undecided:
        return "undecided: " + ", ".join(f"{v} {k}" for k, v in undecided.items())
    if row["status"] == NOT_CLAIMED:
        return "the target does not claim it; its tests were skipped or ran for information"
    return "no part PASSed (all skipped or waived)"


def matrix(doc: dict) -> dict:
    target = doc["run"].get("target") or {}
    claimed = list(target.get("capabilities") or [])
    cat = catalogue()
    names = claimed + [c for c in cat if c not in claimed]
    rows = []
    specs = [(cap, cat.get(cap, {})) for cap in names]
    tally = {cap: (dict.fromkeys(COLUMNS, 0), []) for cap in names}
    supported: dict[tuple, list] = {}  # (id, area, capabilities, kind) -> the capabilities it supports
    # one pass; an audit's host table gives a count per finding and verdict (results.brief_counts)
    for c, n, fails in results.brief_counts(doc):
        k = (c.get("id"), c.get("area"), tuple(c.get("capabilities") or ()), c.get("kind"))
        caps = supported.get(k)
        if caps is None:
            caps = supported[k] = [cap for cap, spec in specs if supports(c, cap, spec)]
        col = _column(c)
        for cap in caps:
            counts, failing = tally[cap]
            counts[col] += n
            if col == "FAIL":
                failing += fails
    for cap, spec in specs:
        counts, failing = tally[cap]
        parts = sum(counts.values())
        if cap not in claimed and parts == 0:
            continue
        row = {"capability": cap, "claimed": cap in claimed, "title": spec.get("title", ""),
               "usgv6": spec.get("usgv6", ""), "ipv6ready": spec.get("ipv6ready", ""), "counts": counts,
               "parts": parts, "failing": failing,
               "status": status(counts) if cap in claimed else NOT_CLAIMED}
        row["why"] = _why(row)
        rows.append(row)
    return {"target": target.get("name", ""), "kind": target.get("kind", ""), "run": doc["run"].get("id"),
            "rows": rows}


def to_csv(m: dict) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["target", "capability", "claimed", "status", *COLUMNS, "parts", "usgv6", "ipv6ready", "title", "why"])
    for r in m["rows"]:
        w.writerow([m["target"], r["capability"], "yes" if r["claimed"] else "no", r["status"],
                    *(r["counts"][k] for k in COLUMNS), r["parts"], r["usgv6"], r["ipv6ready"], r["title"], r["why"]])
    return out.getvalue()


def to_text(m: dict) -> str:
    """The matrix as a plain-text table (for a terminal, a ticket or a note)."""
    head = ["capability", "claimed", "status", *COLUMNS]
    rows = [[r["capability"], "yes" if r["claimed"] else "no", r["status"], *(str(r["counts"][k]) for k in COLUMNS)]
            for r in m["rows"]]
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    lines = [f"compliance of {m['target']} ({m['kind']}), run {m['run']}",
             "  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(x.ljust(w) for x, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def write(doc: dict, run_dir: Path) -> dict[str, Path]:
    m = matrix(doc)
    run_dir = Path(run_dir)
    paths = {"compliance_csv": run_dir / "compliance.csv", "compliance_json": run_dir / "compliance.json"}
    files.write_text(paths["compliance_csv"], to_csv(m))  # each whole or not at all
    files.write_text(paths["compliance_json"], json.dumps(m, indent=1))
    return paths
