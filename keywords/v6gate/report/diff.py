"""Run-to-run diff: what changed between two runs (two firmware builds, or
two configurations of the same DUT).  ``v6gate diff OLD NEW`` prints it and
exits for CI; a run with ``--baseline`` shows it as the report's Diff page.

Exit codes of ``v6gate diff``:
  0  no regression: nothing newly FAILs (fixes, reason changes and moved gates are listed)
  1  at least one part newly FAILs (FAIL in NEW, not FAIL in OLD, not waived in NEW)
  2  bad input (a path that is not a run directory or a results.json)
  3  no new FAIL, but a part that OLD decided is undecided in NEW (ERROR, NOT_JUDGED, INCONCLUSIVE)
"""

from __future__ import annotations

from pathlib import Path

from .. import untrusted
from ..errors import UsageError
from .results import SCHEMAS, all_checks
from .triage import key, signature

EXIT_SAME, EXIT_NEW_FAIL, EXIT_USAGE, EXIT_UNDECIDED = 0, 1, 2, 3
UNDECIDED = ("ERROR", "NOT_JUDGED", "INCONCLUSIVE")


def load(path: str | Path) -> tuple[dict, Path]:
    """A run directory or a results.json -> (document, its path)."""
    p = Path(path)
    f = p / "results.json" if p.is_dir() else p
    if not f.is_file():
        raise UsageError(f"{path}: not a run directory with a results.json, nor a results.json file")
    doc = untrusted.load_json(f, untrusted.RUN_OUTPUT.but(kind="results.json"))
    if not isinstance(doc, dict) or doc.get("schema") not in SCHEMAS or not isinstance(doc.get("checks"), list) \
            or not _table_ok(doc.get("audit")):
        raise UsageError(f"{f}: not a v6gate results.json (schema {' or '.join(SCHEMAS)}); pass a run's or an "
                         "audit's results.json")
    return doc, f


def _table_ok(table) -> bool:
    """An audit's host table (v6gate/results/2) that ``all_checks`` can expand (or none)."""
    if table is None:
        return True
    try:
        n = len(table["findings"])
        return isinstance(table["check"], dict) and all(
            isinstance(f, dict) and all(isinstance(f.get(k), str) for k in ("id", "title", "rfc", "expected"))
            for f in table["findings"]) and all(
            isinstance(row, list) and len(row) == 2 and isinstance(row[0], str) and isinstance(row[1], list)
            and len(row[1]) == n and all(c is None or (isinstance(c, list) and len(c) == 3 and isinstance(c[0], str)
                                                       and isinstance(c[1], str) and isinstance(c[2], dict))
                                         for c in row[1]) for row in table["hosts"])
    except (TypeError, KeyError):
        return False


def _label(doc: dict) -> str:
    run = doc.get("run") or {}
    return f"{(run.get('target') or {}).get('name', '?')} · {run.get('id', '?')}"


def _seen(c: dict) -> str:
    """What the part saw, problem first (the reason also repeats the expectation)."""
    return ((c.get("problems") or [None])[0] or c.get("seen") or c.get("reason") or "").strip()


def _failing(c: dict | None) -> bool:
    return c is not None and c["verdict"] == "FAIL"


def _gate_moves(old: dict, new: dict) -> list[dict]:
    out = []
    om = ((old.get("measurements") or {}).get("decision") or {}).get("metrics") or {}
    nm = ((new.get("measurements") or {}).get("decision") or {}).get("metrics") or {}
    for metric in sorted(set(om) & set(nm)):
        a, b = om[metric].get("interval") or {}, nm[metric].get("interval") or {}
        if a.get("estimate") is None or b.get("estimate") is None:
            continue
        margin = nm[metric].get("margin") or om[metric].get("margin") or 0.03
        shift = b["estimate"] - a["estimate"]
        apart = (b.get("low") is not None and a.get("high") is not None and b["low"] > a["high"]) or (
            b.get("high") is not None and a.get("low") is not None and b["high"] < a["low"])
        if abs(shift) > margin:
            out.append({"key": key(new), "metric": metric, "old": a, "new": b, "shift": round(shift, 4),
                        "margin": margin, "disjoint": bool(apart), "old_status": om[metric].get("status"),
                        "new_status": nm[metric].get("status")})
    return out


def compare(old: dict, new: dict) -> dict:
    o = {key(c): c for c in all_checks(old)}
    n = {key(c): c for c in all_checks(new)}
    newly_failing, fixed, reason_changed, other, undecided, gates = [], [], [], [], [], []
    for k, c in n.items():
        was = o.get(k)
        row = {"key": k, "area": c["area"], "title": c["title"], "ipv6ready": c.get("ipv6ready"),
               "old": was["verdict"] if was else None, "new": c["verdict"], "waived": bool(c.get("waived")),
               "old_reason": was.get("reason", "") if was else "", "new_reason": c.get("reason", ""),
               "old_seen": _seen(was) if was else "", "new_seen": _seen(c)}
        if c["verdict"] == "FAIL" and not _failing(was):
            (other if c.get("waived") else newly_failing).append(row)
        elif _failing(was) and c["verdict"] == "PASS":
            fixed.append(row)
        elif was is not None and was["verdict"] == c["verdict"] and c["verdict"] != "PASS" and \
                signature(was) != signature(c):
            reason_changed.append(row)
        elif was is not None and was["verdict"] != c["verdict"]:
            (undecided if c["verdict"] in UNDECIDED and was["verdict"] not in UNDECIDED else other).append(row)
        if was is not None and c.get("kind") == "gate":
            gates += _gate_moves(was, c)
    only_old = sorted(set(o) - set(n))
    only_new = sorted(set(n) - set(o))
    code = EXIT_NEW_FAIL if newly_failing else EXIT_UNDECIDED if undecided else EXIT_SAME
    areas = sorted({c["area"] for c in o.values()} | {c["area"] for c in n.values()})

    def counts(checks, area):
        out = {}
        for c in checks.values():
            if c["area"] == area:
                out[c["verdict"]] = out.get(c["verdict"], 0) + 1
        return out

    from .compliance import matrix

    mo, mn = matrix(old), matrix(new)
    caps = {r["capability"]: {"old": r["status"]} for r in mo["rows"]}
    for r in mn["rows"]:
        caps.setdefault(r["capability"], {})["new"] = r["status"]
    return {
        "old": {"label": _label(old), "id": old["run"].get("id"), "target": (old["run"].get("target") or {}).get("name")},
        "new": {"label": _label(new), "id": new["run"].get("id"), "target": (new["run"].get("target") or {}).get("name")},
        "newly_failing": newly_failing, "fixed": fixed, "reason_changed": reason_changed,
        "newly_undecided": undecided, "other_changes": other, "gates_moved": gates,
        "only_in_old": only_old, "only_in_new": only_new, "common": len(set(o) & set(n)),
        "by_area": [{"area": a, "old": counts(o, a), "new": counts(n, a)} for a in areas],
        "capabilities": [{"capability": k, **v} for k, v in caps.items()],
        "exit_code": code,
    }


def to_text(d: dict) -> str:
    lines = [f"v6gate diff: OLD {d['old']['label']}  ->  NEW {d['new']['label']}",
             f"  {d['common']} parts in both; {len(d['only_in_old'])} only in OLD, {len(d['only_in_new'])} only in NEW"]
    for title, rows in (("newly FAILing", d["newly_failing"]), ("fixed", d["fixed"]),
                        ("newly undecided", d["newly_undecided"]), ("reason changed", d["reason_changed"]),
                        ("other verdict changes", d["other_changes"])):
        lines.append(f"{title}: {len(rows)}")
        for r in rows[:50]:
            lines.append(f"  {r['key']}: {r['old'] or 'absent'} -> {r['new']}{' (waived)' if r['waived'] else ''}"
                         f"  {r['new_seen'][:160]}")
        if len(rows) > 50:
            lines.append(f"  … {len(rows) - 50} more (see --json)")
    lines.append(f"gates moved past their margin: {len(d['gates_moved'])}")
    for g in d["gates_moved"]:
        lines.append(f"  {g['key']} {g['metric']}: {g['old']['estimate']} -> {g['new']['estimate']} "
                     f"(shift {g['shift']:+.4f}, margin {g['margin']}; {g['old_status']} -> {g['new_status']})")
    changed = [c for c in d["capabilities"] if c.get("old") != c.get("new")]
    for c in changed:
        lines.append(f"capability {c['capability']}: {c.get('old') or '-'} -> {c.get('new') or '-'}")
    lines.append(f"exit code {d['exit_code']}")
    return "\n".join(lines)
