"""The campaign file: many DUTs, one selection of checks.

A campaign names the areas (or checks) and profile every DUT runs, and a
list of DUT entries.  An entry is a target file (``target:``), possibly a
template shared by a rack of units that differ in the tester port they are
cabled to, their MAC or management address (``tester:``, ``dut:``,
``link:``, ``control:`` override the file's sections), or the embedded
lab's Linux DUT (``lab: {fault: ...}``, with a lab fault as a defect it
carries for the whole run).  Each entry has its own waivers and baseline.

Read through the one untrusted loader (size, depth, aliases, duplicate
keys), validated against ``fixtures/campaigns/campaign.schema.json``; each
DUT's effective target (the file with the entry's overrides and waivers)
is validated by the target schema before anything runs.  Every problem is
one line naming the file, the entry and the fix (exit 2)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

from .. import untrusted
from ..errors import InputFileError, UsageError
from ..paths import FIXTURES

SCHEMA_PATH = FIXTURES / "campaigns" / "campaign.schema.json"
LAB_TARGET = FIXTURES / "targets" / "lab.yaml"
#: the sections of a target file a DUT entry may override (the rest is the target file's)
OVERRIDES = ("tester", "dut", "link", "control", "description")
LIMITS = untrusted.CONFIG.but(kind="campaign file")


@dataclass(frozen=True)
class DutEntry:
    index: int
    name: str
    target: Path | None  # the target file (absolute); None: the embedded lab's DUT
    lab_fault: str | None = None
    controller: str | None = None
    overrides: dict = field(default_factory=dict)
    waivers: tuple = ()
    waiver_files: tuple = ()  # absolute paths (globs allowed)
    baseline: Path | None = None

    @property
    def is_lab(self) -> bool:
        return self.target is None

    @property
    def where(self) -> str:
        return f"duts[{self.index}] ({self.name})"


@dataclass(frozen=True)
class Campaign:
    name: str
    source: Path
    sha256: str
    duts: tuple[DutEntry, ...]
    description: str = ""
    profile: str = "default"
    areas: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    gates: bool = False
    jobs: int | None = None

    def shard(self, spec: str | None) -> list[DutEntry]:
        """The DUTs of one shard: ``K/N`` (the K-th of N shards: every N-th DUT in the file's order, from the
        K-th) or a controller's name (the DUTs whose ``controller`` it is); None: every DUT."""
        return select_shard(self, spec)


def _schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def validate(doc: object, path: Path) -> dict:
    """The document against the campaign schema: the first error as one line (deepest first)."""
    from ..core.target import _field_path, _fix_for, _plain, _problem

    doc = _plain(doc)
    if not isinstance(doc, dict):
        raise InputFileError(path, None, "is not a YAML mapping", "start from fixtures/campaigns/example.yaml")
    schema = _schema()
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc),
                    key=lambda e: (len(list(e.absolute_path)), str(list(e.absolute_path))))
    if errors:
        err = errors[0]
        if err.validator == "oneOf":
            n = list(err.absolute_path)
            both = isinstance(err.instance, dict) and "target" in err.instance and "lab" in err.instance
            raise InputFileError(path, _field_path(err), "has both 'target' and 'lab'" if both else
                                 "has neither 'target' nor 'lab'", "give the DUT's target file (target: FILE) or "
                                 f"lab: {{}} for the embedded lab's DUT (entry {n[-1] if n else '?'})")
        if err.context:
            err = sorted(err.context, key=lambda e: -len(list(e.absolute_path)))[0]
        raise InputFileError(path, _field_path(err), _problem(err), _fix_for(err, schema))
    return doc


def _resolve(base: Path, rel: str) -> Path:
    p = Path(rel)
    return p if p.is_absolute() else (base / p)


def load(path: str | Path) -> Campaign:
    """Read and validate a campaign file (one line, exit 2, on any problem)."""
    path = Path(path)
    doc = validate(untrusted.load_yaml(path, LIMITS), path)
    base = path.resolve().parent
    duts, seen = [], {}
    for i, d in enumerate(doc["duts"]):
        if d["name"] in seen:
            raise InputFileError(path, f"duts[{i}].name", f"{d['name']!r} is also the name of duts[{seen[d['name']]}]",
                                 "give every DUT its own name")
        seen[d["name"]] = i
        target = None
        if "target" in d:
            target = _resolve(base, d["target"]).resolve()
            if not target.is_file():
                raise InputFileError(path, f"duts[{i}].target", f"{d['target']!r} not found (looked in {base})",
                                     "point at the DUT's target file, relative to the campaign file")
        baseline = _resolve(base, d["baseline"]).resolve() if d.get("baseline") else None
        duts.append(DutEntry(index=i, name=d["name"], target=target, lab_fault=(d.get("lab") or {}).get("fault"),
                             controller=d.get("controller"),
                             overrides={k: d[k] for k in OVERRIDES if k in d},
                             waivers=tuple(d.get("waivers") or ()),
                             waiver_files=tuple(str(_resolve(base, w)) for w in d.get("waiver_files") or ()),
                             baseline=baseline))
    _check_selection(path, doc)
    raw = path.read_bytes()
    return Campaign(name=doc["name"], source=path.resolve(), sha256=hashlib.sha256(raw).hexdigest(),
                    duts=tuple(duts), description=doc.get("description", ""),
                    profile=doc.get("profile", "default"), areas=tuple(doc.get("areas") or ()),
                    checks=tuple(doc.get("checks") or ()), gates=bool(doc.get("gates", False)), jobs=doc.get("jobs"))


def _check_selection(path: Path, doc: dict) -> None:
    """Areas and check ids that exist (a typo would select nothing)."""
    from .. import cli_guard as guard

    for field_name, check, values in (("areas", guard.check_areas, doc.get("areas")),
                                      ("checks", guard.check_ids, doc.get("checks"))):
        try:
            check(list(values or []))
        except UsageError as exc:
            problem, _, fix = str(exc).removeprefix("--area ").removeprefix("--check ").rpartition("; ")
            raise InputFileError(path, field_name, problem or fix, fix if problem else "see 'v6gate list'") from None


def select_shard(c: Campaign, spec: str | None) -> list[DutEntry]:
    if not spec:
        return list(c.duts)
    k, slash, n = spec.partition("/")
    if slash:
        if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n) <= 256):
            raise UsageError(f"--shard {spec}: give K/N with 1 <= K <= N (e.g. 1/2), or a controller's name")
        k, n = int(k), int(n)
        return [d for d in c.duts if d.index % n == k - 1]
    mine = [d for d in c.duts if d.controller == spec]
    if not mine:
        known = sorted({d.controller for d in c.duts if d.controller})
        raise UsageError(f"--shard {spec}: no DUT of campaign {c.name} names controller {spec!r}; "
                         + (f"its controllers: {', '.join(known)}" if known else "give K/N (e.g. 1/2)"))
    return mine


def effective_target(c: Campaign, d: DutEntry) -> dict:
    """The DUT's target document: its target file (or the lab's) with the entry's overrides, waivers and
    name; relative paths of the file made absolute so the document can be written anywhere."""
    from ..core.target import _load_yaml, _merge, absolute_file_refs

    src = d.target or LAB_TARGET
    doc = _load_yaml(src)
    if not isinstance(doc, dict):
        raise InputFileError(src, None, "is not a YAML mapping", "start from fixtures/targets/example-host.yaml")
    doc = absolute_file_refs(doc, src.resolve().parent)
    doc = _merge(doc, d.overrides)
    doc["name"] = d.name
    if d.is_lab:
        doc["lab"] = {**doc.get("lab", {}), **({"fault": d.lab_fault} if d.lab_fault else {})}
        doc["description"] = (f"the embedded lab's Linux DUT{' with fault ' + d.lab_fault if d.lab_fault else ''}, "
                              f"DUT {d.name} of campaign {c.name}")
    if isinstance(doc.get("lab"), dict) and isinstance(doc["lab"].get("topology"), str):
        doc["lab"]["topology"] = str(_resolve(src.parent, doc["lab"]["topology"]).resolve())
    files = [str(_resolve(src.parent, w)) for w in doc.get("waiver_files") or [] if isinstance(w, str)]
    doc["waiver_files"] = files + list(d.waiver_files)
    if not doc["waiver_files"]:
        del doc["waiver_files"]
    if d.waivers:
        doc["waivers"] = list(doc.get("waivers") or []) + list(d.waivers)
    return doc
