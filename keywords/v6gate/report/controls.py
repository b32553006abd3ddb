"""Controls that prove the reason (tests/lab/test_controls.py, ``v6gate controls``).

A check part is proven when it PASSes on a conforming lab DUT and FAILs on a
broken one *for the reason the breakage causes*.  The fault declares that
reason (``fails_with``: a pattern over what the check saw and its problems;
``counter``: the impostor answered, the nft rule matched, the repairer
rewrote); a FAIL for any other reason, in particular a setup step that broke,
is "not proven".

Every attempt is kept (a side that is wrong once is tried once more, and both
attempts stay in the entry), the entry records the commit and a hash of the
check's source and the fault definitions it was proven with, so an entry
whose check or fault changed since is reported stale and re-proven
(``v6gate controls --stale``).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import subprocess

from ..paths import ROOT

CONTROLS_JSON = ROOT / "reports" / "controls.json"
ATTEMPT_KEYS = ("verdict", "reason", "seen", "pcap", "duration_s")


@functools.cache
def commit() -> str:
    """The commit the controls run at (``+dirty`` with uncommitted changes)."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--",
                                "keywords", "fixtures"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+dirty" if dirty else "")


def _fault_spec(name: str | None):
    if not name:
        return None
    from ..lab.faults import load_faults

    f = load_faults().get(name)
    return f.spec if f else {"missing": name}


def source_hash(check, part, faults: tuple[str | None, ...]) -> str:
    """sha256 over the check function's source, the part's declaration and
    the definitions of the faults used on either side."""
    try:
        src = inspect.getsource(inspect.unwrap(check.func))
    except (OSError, TypeError):
        src = check.id
    doc = {"source": src, "part": repr(part), "faults": [_fault_spec(f) for f in faults]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


def attempt_record(result) -> dict:
    d = result.as_dict() if hasattr(result, "as_dict") else dict(result)
    out = {k: d.get(k) for k in ATTEMPT_KEYS}
    out["pcap"] = (d.get("evidence") or {}).get("pcap")
    problems = d.get("problems")
    if problems:
        out["problems"] = list(problems)
    counters = (d.get("evidence") or {}).get("fault_counters")
    if counters:
        out["fault_counters"] = counters
    return out


def judge_attempt(side: str, attempt: dict, fault) -> str | None:
    """None when ``attempt`` is the right outcome for ``side`` ('pass' or
    'fail'); else why not, in one line.  ``fault`` is the Fault in force on
    the FAIL side (None for a deviation of the healthy lab)."""
    want = side.upper()
    if attempt["verdict"] != want:
        return f"{attempt['verdict']}, not {want}"
    if side == "pass":
        return None
    seen = attempt.get("seen") or ""
    problems = attempt.get("problems") or []
    if fault is None:
        if seen.lstrip().lower().startswith("setup:"):
            return f"a setup step failed, not the clause under test ({seen[:120]})"
        return None
    return fault.proves(seen, problems, attempt.get("fault_counters"))


def detection_rate(attempts: list[dict]) -> str:
    right = sum(1 for a in attempts if a.get("right"))
    return f"{right}/{len(attempts)}"


def is_stale(entry: dict, registry: dict) -> str | None:
    """Why a recorded entry no longer proves the current check part (its
    check's source or a fault changed, or it predates proof stamps), or
    None when it is current."""
    if entry.get("status") in ("not_applicable", "uncontrolled"):
        return None
    c = registry.get(entry["id"])
    if c is None:
        return "the check no longer exists"
    try:
        part = c.part(entry["part"])
    except KeyError:
        return "the part no longer exists"
    faults = tuple(entry.get("faults") or ())
    if not entry.get("source_hash"):
        return "proven before reasons were checked (no proof stamp)"
    if source_hash(c, part, faults) != entry["source_hash"]:
        return f"the check or its fault changed since {entry.get('commit', '?')}"
    return None


def recorded(path=None) -> dict:
    """The entries of reports/controls.json by (check id, part)."""
    path = path or CONTROLS_JSON
    try:
        return {(e["id"], e["part"]): e for e in json.loads(path.read_text()).get("checks", [])}
    except (OSError, ValueError, KeyError):
        return {}


def summarize(checks: list[dict], registry: dict) -> dict:
    """controls.json's summary: counts by status and the lists a maintainer acts on."""
    by_status: dict[str, list[str]] = {}
    for e in checks:
        by_status.setdefault(e["status"], []).append(f"{e['id']}#{e['part']}")
    stale = {}
    for e in checks:
        why = is_stale(e, registry)
        if why:
            e["stale"] = why
            stale[f"{e['id']}#{e['part']}"] = why
        else:
            e.pop("stale", None)
    rates = [e["fail_setup"].get("detection_rate") for e in checks if e.get("fail_setup", {}).get("detection_rate")]
    right = sum(int(r.split("/")[0]) for r in rates)
    tried = sum(int(r.split("/")[1]) for r in rates)
    return {"parts": len(checks), **{k: len(v) for k, v in by_status.items()},
            "not_proven": by_status.get("not_proven", []), "uncontrolled": by_status.get("uncontrolled", []),
            "wrong_reason": [f"{e['id']}#{e['part']}: {e['wrong_reason']}" for e in checks if e.get("wrong_reason")],
            "flaky": [f"{e['id']}#{e['part']} ({', '.join(e['flaky_sides'])})" for e in checks
                      if e.get("flaky_sides")],
            "fail_side_detection": f"{right}/{tried} FAIL-side attempts gave the fault's FAIL",
            "simulated_peer_only": [f"{e['id']}#{e['part']}" for e in checks if e.get("fail_side_proven_against")],
            "stale": stale,
            "commits": sorted({e.get("commit") or "before proof stamps" for e in checks
                               if e["status"] not in ("not_applicable", "uncontrolled")})}
