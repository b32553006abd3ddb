"""The triage view's order, as data for the template: what needs a person
first (new FAILs, bench ERRORs, parts NOT_JUDGED, INCONCLUSIVE gates),
grouped by area and by root cause, then the gates, the known failures
(waived or in the baseline) and, collapsed, everything that passed or did
not apply.

Root causes: a NOT_JUDGED part is grouped under the check its precondition
names (``precondition.judged_by``), so one broken precondition reads as one
problem with its dependants beneath it; FAILs and ERRORs whose first problem
reads the same once numbers, addresses and paths are masked are one group."""

from __future__ import annotations

import re
from collections import defaultdict

from .compliance import capabilities_of

ATTENTION = ("FAIL", "ERROR", "NOT_JUDGED", "INCONCLUSIVE")
#: order of groups inside an area and of areas in the view
SEVERITY = {"FAIL": 0, "ERROR": 1, "NOT_JUDGED": 2, "INCONCLUSIVE": 3}

_MASKS = [
    (re.compile(r"\(pcap:[^)]*\)"), ""),
    (re.compile(r"\b[0-9a-f]{2}(:[0-9a-f]{2}){5}\b", re.I), "<mac>"),
    (re.compile(r"\b[0-9a-f]{0,4}(:[0-9a-f]{0,4}){2,7}\b", re.I), "<addr>"),
    (re.compile(r"(/[\w.+-]+){2,}"), "<path>"),
    (re.compile(r"\d+(\.\d+)?"), "#"),
]


def key(c: dict) -> str:
    return f"{c['id']}{'#' + c['part'] if c.get('part') else ''}"


def label(c: dict) -> tuple[str, str]:
    """(text, css class) of a check's verdict as the report shows it."""
    v = c["verdict"]
    if v == "FAIL" and c.get("waived"):
        return "FAIL (waived)", "waived"
    if v == "FAIL" and c.get("baseline_failure"):
        return "FAIL (baseline)", "baseline"
    return v, v.lower()


def is_known_failure(c: dict) -> bool:
    return c["verdict"] == "FAIL" and bool(c.get("waived") or c.get("baseline_failure"))


def needs_attention(c: dict) -> bool:
    """Non-PASS, non-SKIP: the checks whose decisive packets the report dissects."""
    return c["verdict"] in ATTENTION


def signature(c: dict) -> str:
    """What a check's problem says with the particulars masked (its root-cause key)."""
    problems = c.get("problems") or []
    text = problems[0] if problems else (c.get("seen") or c.get("reason") or "")
    text = text.split(";")[0]
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return " ".join(text.split())[:160]


def rfcs(c: dict) -> list[str]:
    return sorted(set(re.findall(r"RFC\s*(\d+)", c.get("rfc") or "")), key=int)


def _judged_by(c: dict) -> str | None:
    pre = c.get("precondition") or {}
    jb = (pre.get("judged_by") or "").rstrip("#")
    return jb or None


def build(doc: dict) -> dict:
    checks = doc["checks"]
    by_key = {key(c): c for c in checks}
    areas: dict[str, list[dict]] = defaultdict(list)
    gates, known, rest = [], [], []
    heads: dict[str, dict] = {}  # judged_by key -> its group

    def new_group(area: str, verdict: str, cause: str, head: dict | None = None) -> dict:
        g = {"area": area, "verdict": verdict, "cause": cause, "head": head, "members": []}
        areas[area].append(g)
        return g

    # preconditions first, so a FAIL that judges others heads their group
    for c in checks:
        if c["verdict"] != "NOT_JUDGED":
            continue
        jb = _judged_by(c)
        pre = c.get("precondition") or {}
        if jb not in heads:
            head = by_key.get(jb) if jb else None
            area = head["area"] if head else c["area"]
            verdict = head["verdict"] if head and head["verdict"] in ATTENTION else "NOT_JUDGED"
            cause = f"precondition {pre.get('name') or '?'} not reached" + (
                f" (judged by {jb})" if jb else "") + (f": {pre['detail']}" if pre.get("detail") else "")
            heads[jb] = new_group(area, verdict, cause, head)
        heads[jb]["members"].append(c)
    in_head = {key(g["head"]) for g in heads.values() if g["head"]}
    sigs: dict[tuple, dict] = {}
    for c in checks:
        v = c["verdict"]
        if v == "NOT_JUDGED" or key(c) in in_head:
            continue
        if c.get("kind") == "gate" and v != "INCONCLUSIVE" and v != "ERROR" and not (v == "FAIL" and not
                                                                                     is_known_failure(c)):
            gates.append(c)
            continue
        if is_known_failure(c):
            known.append(c)
        elif v in ATTENTION:
            sk = (c["area"], v, signature(c))
            if sk not in sigs:
                sigs[sk] = new_group(c["area"], v, sk[2] or v)
            sigs[sk]["members"].append(c)
        else:
            rest.append(c)
    ordered = []
    for area, groups in areas.items():
        groups.sort(key=lambda g: (SEVERITY.get(g["verdict"], 9), -len(g["members"])))
        ordered.append({"area": area, "groups": groups,
                        "counts": _count(c for g in groups for c in ([g["head"]] if g["head"] else []) + g["members"])})
    ordered.sort(key=lambda a: (min(SEVERITY.get(g["verdict"], 9) for g in a["groups"]), a["area"]))
    attention = sum(len(g["members"]) + (1 if g["head"] else 0) for a in ordered for g in a["groups"])
    return {"areas": ordered, "gates": gates, "known": known, "rest": rest, "attention": attention,
            "rest_counts": _count(rest)}


def _count(checks) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for c in checks:
        out[label(c)[0]] += 1
    return dict(out)


def filter_values(doc: dict) -> dict:
    checks = doc["checks"]
    return {
        "verdicts": sorted({label(c) for c in checks}),
        "areas": sorted({c["area"] for c in checks}),
        "capabilities": sorted({cap for c in checks for cap in capabilities_of(c)}),
        "rfcs": sorted({r for c in checks for r in rfcs(c)}, key=int),
        "ipv6ready": sorted({c["ipv6ready"] for c in checks if c.get("ipv6ready")}),
    }
