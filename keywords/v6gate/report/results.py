"""results.json: merge the per-worker records of a run, judge them against
waivers and an optional baseline, compute the exit code, validate against
the schema, and write every report format from the one document."""

from __future__ import annotations

import collections
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import __version__, untrusted
from ..core.verdict import _RESULT_FIELDS, Result
from ..errors import UsageError
from ..paths import REPORTS, ROOT

SCHEMA = REPORTS / "schema" / "results.schema.json"
SCHEMA_V1 = "v6gate/results/1"  # every check in "checks" (a run)
SCHEMA_V2 = "v6gate/results/2"  # an audit: "checks" and the host table "audit" (audit_checks expands it)
SCHEMAS = (SCHEMA_V1, SCHEMA_V2)

# Exit codes of `v6gate run` (documented in README.md)
EXIT_OK = 0  # every check PASSed, was SKIPped, or FAILed only where waived / in the baseline
EXIT_FAIL = 1  # at least one new (unwaived) FAIL
EXIT_USAGE = 2  # bad input: target file, options (nothing was run)
EXIT_BENCH = 3  # no new FAIL, but an ERROR (bench broke), an INCONCLUSIVE gate, a NOT_JUDGED part or checks missing
EXIT_INTERRUPTED = 130  # interrupted (Ctrl-C / SIGTERM); partial reports are written


VERDICTS = ("PASS", "FAIL", "SKIP", "ERROR", "INCONCLUSIVE", "NOT_JUDGED")


def load_records(run_dir: Path, phases: tuple[str, ...] | None = None) -> list[Result]:
    out: dict[tuple[str, str | None, str], Result] = {}
    rec_dir = Path(run_dir) / "records"
    for path in sorted(rec_dir.glob("*.jsonl")):
        if phases and not path.name.startswith(phases):
            continue
        for n, line in enumerate(untrusted.read_text(path, untrusted.RUN_OUTPUT.but(kind="records file"))
                                 .splitlines(), 1):
            if not line.strip():
                continue
            try:
                r = Result.from_dict(untrusted.parse_json(line, f"{path}:{n}", untrusted.RUN_OUTPUT))
            except (UsageError, ValueError, TypeError, KeyError, AttributeError):
                continue  # a line cut by a kill (or not a record); the check shows as missing
            key = (r.id, r.part, r.setup)
            if key not in out or (r.started or "") >= (out[key].started or ""):  # a resumed run's result is newer
                out[key] = r
    return list(out.values())


def _baseline_failures(path: str | None) -> set[str]:
    if not path:
        return set()
    try:
        doc = untrusted.load_json(path, untrusted.RUN_OUTPUT.but(kind="results.json"))
    except UsageError as exc:
        raise UsageError(f"--baseline {exc}") from None
    checks = all_checks(doc) if isinstance(doc, dict) and isinstance(doc.get("checks"), list) else []
    return {f"{c['id']}{'#' + str(c['part']) if c.get('part') else ''}" for c in checks
            if isinstance(c, dict) and c.get("verdict") == "FAIL" and isinstance(c.get("id"), str)}


def summarize(results: list[Result], *, baseline: str | None = None, expected_keys: list[str] | None = None) -> dict:
    known = _baseline_failures(baseline)
    counts = collections.Counter(r.verdict for r in results)
    by_area: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    waived, new_failures, fixed, errors, inconclusive, not_judged = [], [], [], [], [], []
    not_judged_by: dict[str, list[str]] = collections.defaultdict(list)
    for r in results:
        by_area[r.area][r.verdict] += 1
        key = r.key
        if r.verdict == "FAIL":
            if r.waived or key in known:
                waived.append(key)
            else:
                new_failures.append(key)
        elif r.verdict == "PASS" and (r.waiver or key in known):
            fixed.append(key)
        elif r.verdict == "ERROR":
            errors.append(key)
        elif r.verdict == "INCONCLUSIVE":
            inconclusive.append(key)
        elif r.verdict == "NOT_JUDGED":
            not_judged.append(key)
            not_judged_by[((getattr(r, "precondition", None) or {}).get("judged_by") or "?")].append(key)
    have = {r.key for r in results}
    missing = sorted(k for k in (expected_keys or []) if k not in have)
    if new_failures:
        code = EXIT_FAIL
    elif errors or inconclusive or not_judged or missing:
        code = EXIT_BENCH
    else:
        code = EXIT_OK
    return {
        "counts": {v: counts.get(v, 0) for v in VERDICTS},
        "by_area": {a: dict(c) for a, c in sorted(by_area.items())},
        "waived": sorted(waived),
        "new_failures": sorted(new_failures),
        "fixed": sorted(fixed),
        "errors": sorted(errors),
        "inconclusive": sorted(inconclusive),
        "not_judged": sorted(not_judged),
        "not_judged_by": {k: sorted(v) for k, v in sorted(not_judged_by.items())},
        "missing": missing,
        "exit_code": code,
    }


def _version(argv: list[str]) -> str | None:
    exe = shutil.which(argv[0])
    if not exe:
        return None
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (cp.stdout or cp.stderr).strip().splitlines()
    return text[0][:120] if text else None


def tool_versions() -> dict:
    import scapy

    return {
        "v6gate": __version__,
        "python": platform.python_version(),
        "scapy": scapy.__version__,
        "dumpcap": _version(["dumpcap", "--version"]),
        "radvd": _version(["radvd", "--version"]),
        "iproute2": _version(["ip", "-V"]),
    }


def host_info() -> dict:
    return {"hostname": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
            "machine": platform.machine()}


#: name -> function(results) adding a top-level part to results.json (an area's extra data, e.g. the
#: gates' "pairings"); a part that returns None is left out.  Names must be in the schema.
DOCUMENT_PARTS: dict[str, Callable[[list[Result]], object]] = {}


def build_document(results: list[Result], *, run_meta: dict, baseline: str | None = None,
                   expected_keys: list[str] | None = None, checks: Sequence[dict] | None = None) -> dict:
    """``checks``: the check dicts already made, in the document's order (a sequence read back from disk,
    like the audit's, whose thousands of hosts would not fit in memory as dicts); ``results`` then need
    only what the summary and the document parts read (id, part, key, verdict, area, kind, waived, ...)."""
    order = {"check": 0, "gate": 1}
    results = sorted(results, key=lambda r: (order.get(r.kind, 2), r.area, r.ipv6ready or "~", r.id, r.part or ""))
    known = _baseline_failures(baseline)
    if checks is None:
        checks = []
        for r in results:
            d = r.as_dict()
            d["baseline_failure"] = r.verdict == "FAIL" and not r.waived and r.key in known
            checks.append(d)
    doc = {
        "schema": SCHEMA_V1,
        "run": {**run_meta, "baseline": baseline},
        "summary": summarize(results, baseline=baseline, expected_keys=expected_keys),
        "checks": checks,
    }
    for name, part in DOCUMENT_PARTS.items():
        value = part(results)
        if value is not None:
            doc[name] = value
    return doc


_validators: dict[str, Callable] = {}


def _schema() -> dict:
    return json.loads(SCHEMA.read_text())


def _fast(name: str) -> Callable:
    """The schema (``doc``) or its check definition (``check``) compiled to Python by fastjsonschema (some
    11 us a check against jsonschema's 245; importing jsonschema alone takes 70 ms of a 1-second audit).
    The schema uses only keywords that draft 7 has (type, enum, const, required, properties, items,
    additionalProperties, pattern, minLength, minimum), so it is compiled as draft 7; what it rejects is
    validated again by jsonschema, whose error is the one raised (and whose word is final).  The compiled
    code is kept in build/schema/ (``_compiled``): compiling it took 40 ms of a one-second audit."""
    if name not in _validators:
        schema = _schema()
        if name == "check":
            schema = {**schema["$defs"]["check"], "$defs": schema["$defs"]}
        _validators[name] = _compiled({**schema, "$schema": "http://json-schema.org/draft-07/schema#"})
    return _validators[name]


def _compiled(definition: dict) -> Callable:
    """fastjsonschema's validator of ``definition``, its code loaded from build/schema/ when an earlier run
    compiled it (the file named by a hash of the definition, fastjsonschema's version and Python's bytecode
    magic: never another schema's or interpreter's code), else compiled and kept there (written to a temporary
    name and renamed; nothing kept where build/ cannot be written)."""
    import hashlib
    import importlib.util
    import marshal

    import fastjsonschema

    text = json.dumps(definition, sort_keys=True)
    key = hashlib.sha256(f"{text}\0{fastjsonschema.VERSION}\0{importlib.util.MAGIC_NUMBER.hex()}".encode()).hexdigest()
    path = ROOT / "build" / "schema" / f"{key[:32]}.bin"
    try:
        fn_name, code = marshal.loads(path.read_bytes())
        ns: dict = {}
        exec(code, ns)
        return ns[fn_name]
    except (OSError, ValueError, EOFError, TypeError, KeyError):
        pass
    fn = fastjsonschema.compile(definition)
    code = compile(fastjsonschema.compile_to_code(definition), "<results.schema.json>", "exec")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps((fn.__name__, code)))
        os.replace(tmp, path)
    except OSError:
        pass
    return fn


def _validate(name: str, value) -> None:
    import fastjsonschema

    try:
        _fast(name)(value)
    except fastjsonschema.JsonSchemaException:  # jsonschema decides: its error, or it accepts
        import jsonschema

        schema = _schema()
        if name == "check":
            schema = {**schema["$defs"]["check"], "$defs": schema["$defs"]}
        jsonschema.Draft202012Validator(schema).validate(value)


def validate(doc: dict) -> None:
    """The document against the schema: its head (without its checks, which may be a sequence read from
    disk, and without the rows of its host table), then each check; a host table of the writer
    (``samples()``: one row of each finding and verdict) by those rows, and their checks, whole."""
    table = doc.get("audit")
    head = {**doc, "checks": []}
    if table is not None:
        head["audit"] = {**(table.head if hasattr(table, "head") else table), "hosts": []}
    _validate("doc", head)
    for c in doc["checks"]:
        validate_check(c)
    if table is not None:
        rows = table.samples() if hasattr(table, "samples") else table["hosts"]
        part = {**head["audit"], "hosts": list(rows)}
        _validate("doc", {**head, "audit": part})
        for c in audit_checks(part):
            validate_check(c)


def validate_check(c: dict, schema: dict | None = None) -> None:
    """One check against the schema's check definition (fastjsonschema's, and jsonschema's word when it
    rejects)."""
    _validate("check", c)


# -- an audit's host table (schema v6gate/results/2) --------------------------------------------------------
#: what a check of the host table holds itself (the rest its table's "check" holds, the same for all)
TABLE_FIELDS = ("id", "part", "title", "rfc", "verdict", "reason", "expected", "seen", "measurements")


def expand_check(finding: dict, shared: dict, part: str, cell: list) -> dict:
    """The check of one host table cell ([verdict, seen, measurements] of the host ``part`` and the
    finding ``finding``), as a v6gate/results/1 document lists it: its fields in their order, the reason
    "expected E; seen S (pcap: P)" (PASS, FAIL) or "S (pcap: P)"."""
    verdict, seen, measurements = cell
    pcap = (shared.get("evidence") or {}).get("pcap")
    reason = (f"expected {finding['expected']}; seen {seen} (pcap: {pcap})" if verdict in ("PASS", "FAIL") else
              f"{seen} (pcap: {pcap})")
    own = {"id": finding["id"], "part": part, "title": finding["title"], "rfc": finding["rfc"], "verdict": verdict,
           "reason": reason, "expected": finding["expected"], "seen": seen, "measurements": measurements}
    out = {name: own[name] if name in own else _copy(shared.get(name)) for name in _RESULT_FIELDS}
    out["baseline_failure"] = bool(shared.get("baseline_failure", False))
    return out


def _copy(x):
    if isinstance(x, dict):
        return {k: _copy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copy(v) for v in x]
    return x


def audit_checks(table: dict):
    """Every check of a host table (``doc["audit"]``), in the document's order (finding id, then part)."""
    findings = table["findings"]
    for i in sorted(range(len(findings)), key=lambda k: findings[k]["id"]):
        for part, cells in table["hosts"]:
            if cells[i] is not None:
                yield expand_check(findings[i], table["check"], part, cells[i])


def all_checks(doc: dict):
    """Every check of a results document: its "checks", then its host table's (v6gate/results/2)."""
    yield from doc["checks"]
    table = doc.get("audit")
    if table is not None:
        yield from table.checks() if hasattr(table, "checks") else audit_checks(table)


def check_count(doc: dict) -> int:
    return sum(doc["summary"]["counts"].values()) if doc.get("audit") is not None else len(doc["checks"])


def brief_counts(doc: dict):
    """(what the compliance matrix reads of a check, how many such checks, the FAILs' keys) over every
    check: one each of "checks" (or of their briefs), a count per finding and verdict of a host table."""
    checks = doc["checks"]
    for c in checks.briefs() if hasattr(checks, "briefs") else checks:
        yield c, 1, [f"{c['id']}{'#' + c['part'] if c.get('part') else ''}"] if c["verdict"] == "FAIL" else []
    table = doc.get("audit")
    if table is None:
        return
    if hasattr(table, "brief_counts"):
        yield from table.brief_counts()
        return
    findings = table["findings"]
    for i in sorted(range(len(findings)), key=lambda k: findings[k]["id"]):  # the document's order
        f = findings[i]
        tally: dict[str, list] = {}
        for part, cells in table["hosts"]:
            if cells[i] is not None:
                t = tally.setdefault(cells[i][0], [0, []])
                t[0] += 1
                if cells[i][0] == "FAIL":
                    t[1].append(f"{f['id']}#{part}")
        for v, (n, keys) in tally.items():
            yield ({"id": f["id"], "area": table["check"].get("area"), "verdict": v,
                    "kind": table["check"].get("kind"), "capabilities": table["check"].get("capabilities") or [],
                    "waived": bool(table["check"].get("waived"))}, n, keys)


_CHECKS_MARK = "\0v6gate-checks\0"


def dump_document(doc: dict, f) -> None:
    """Write ``json.dumps(doc, indent=1, default=str)`` to the text file ``f``, byte for byte, one
    check at a time: the text of a run with tens of thousands of checks is never whole in memory."""
    head, tail = json.dumps({**doc, "checks": _CHECKS_MARK}, indent=1, default=str).split(
        json.dumps(_CHECKS_MARK), 1)
    f.write(head)
    sep = "[\n  "
    for c in doc["checks"]:  # a list item at depth 2: its lines indented by two more spaces
        f.write(sep)
        f.write(json.dumps(c, indent=1, default=str).replace("\n", "\n  "))
        sep = ",\n  "
    f.write("[]" if sep == "[\n  " else "\n ]")
    f.write(tail)


def write_all(run_dir: Path, doc: dict) -> dict[str, Path]:
    """Write results.json, junit.xml, compliance.csv/.json, the HTML pages and MANIFEST.sha256 into run_dir,
    each whole or not at all; report.files.ReportsNotWritten names what a full or read-only run directory
    kept out (the manifest then covers what was written)."""
    from . import compliance, files
    from .html import write_html
    from .junit import write_junit

    validate(doc)
    run_dir = Path(run_dir)
    out = {"results": run_dir / "results.json", "junit": run_dir / "junit.xml", "html": run_dir / "report.html"}

    def results_json():
        with files.replacing(out["results"]) as tmp, open(tmp, "w") as f:
            dump_document(doc, f)

    def junit():
        with files.replacing(out["junit"]) as tmp:
            write_junit(doc, tmp)

    # an audit's evidence pcap is the whole audited capture, not a check's window: dissecting it with
    # tshark -V per failing host read the multi-GB capture thousands of times and held its text in memory
    return files.write_reports(run_dir, out, [
        (("results.json",), results_json),
        (("junit.xml",), junit),
        (("compliance.csv", "compliance.json"), lambda: out.update(compliance.write(doc, run_dir))),
        (("report.html", "compliance.html"), lambda: write_html(doc, out["html"], run_dir,
                                                                dissect=not doc["run"].get("audit"))),
    ])


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
