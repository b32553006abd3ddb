"""``v6gate campaign merge SHARD_DIR...``: the fleet report of a campaign run
as shards (one CI job per controller, each with its own campaign
directory).  Every DUT run directory is verified against its
MANIFEST.sha256 and must be the run of that DUT of that campaign (its
results.json says so); the shards must be of the same campaign file and
selection, and no DUT may be in two of them.  The DUT run directories are
copied (hard links where the file system allows) under ``OUT/duts/``, so the
merged directory is self-contained, and the fleet report is built from them
exactly as for a campaign run on one controller."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from ..errors import UsageError
from ..report import manifest
from . import fleet
from .runner import COPY, DUTS, STATE, load_state, write_json


class Mismatch(Exception):
    """A shard's files do not match their manifest: listed, nothing merged (exit 1, as ``v6gate verify``)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def _copy(src: Path, dst: Path) -> None:
    def link_or_copy(s, d):
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=link_or_copy, symlinks=True)


def _verify_dut(shard: Path, d: dict, state: dict) -> list[str]:
    run_dir = shard / d["run_dir"]
    problems = []
    if not (run_dir / manifest.NAME).is_file():
        return [f"{run_dir}: no {manifest.NAME} (the DUT's run did not write its reports)"]
    check = manifest.verify(run_dir)
    for what in ("changed", "missing", "extra"):
        for rel in check[what]:
            problems.append(f"{run_dir}: {rel} {what}")
    if problems:
        return problems
    doc = fleet.load_run(run_dir)
    c = (doc["run"].get("campaign") or {})
    if c.get("name") != state["name"] or c.get("dut") != d["name"] or c.get("file_sha256") != state["file"]["sha256"]:
        raise UsageError(f"{run_dir}: its results.json is the run of DUT {c.get('dut')!r} of campaign "
                         f"{c.get('name')!r}, not of DUT {d['name']} of campaign {state['name']} (this file); "
                         "merge the shards of one campaign")
    return []


def _verify_shard_manifest(shard: Path) -> list[str]:
    path = shard / manifest.NAME
    if not path.is_file():
        return [f"{shard}: no {manifest.NAME} (the shard did not finish writing its reports)"]
    from .. import untrusted

    entries = manifest.parse(untrusted.read_text(path, untrusted.RUN_OUTPUT.but(kind=manifest.NAME)), str(path))
    out = []
    for rel, digest in sorted(entries.items()):
        p = shard / rel
        if not p.is_file():
            out.append(f"{shard}: {rel} missing")
        elif manifest.sha256(p) != digest:
            out.append(f"{shard}: {rel} changed")
    return out


def merge(shards: list[Path], out: Path, *, previous: Path | None = None) -> tuple[dict, dict]:
    if not shards:
        raise UsageError("merge: give the shards' campaign directories")
    states = [(Path(s), load_state(Path(s))) for s in shards]
    first_dir, first = states[0]
    problems, owner = [], {}
    for shard, st in states:
        if (st["name"], st["file"]["sha256"]) != (first["name"], first["file"]["sha256"]):
            raise UsageError(f"{shard}: a shard of campaign {st['name']} (file sha256 {st['file']['sha256'][:12]}), "
                             f"not of {first['name']} ({first['file']['sha256'][:12]}) like {first_dir}; "
                             "merge the shards of one campaign")
        if st["selection"] != first["selection"]:
            raise UsageError(f"{shard}: ran another selection ({st['selection']}) than {first_dir} "
                             f"({first['selection']}); merge shards run with the same options")
        if [d["name"] for d in st["duts"]] != [d["name"] for d in first["duts"]]:
            raise UsageError(f"{shard}: lists other DUTs than {first_dir}; merge the shards of one campaign")
        problems += _verify_shard_manifest(shard)
        for d in st["duts"]:
            if not d.get("in_shard"):
                continue
            if d["name"] in owner:
                raise UsageError(f"DUT {d['name']} is in two shards ({owner[d['name']]} and {shard}); "
                                 "each DUT belongs to one shard")
            owner[d["name"]] = shard
            problems += _verify_dut(shard, d, st)
    if problems:
        raise Mismatch(problems)
    out.mkdir(parents=True, exist_ok=True)
    if (out / DUTS).exists() or (out / STATE).exists():
        raise UsageError(f"--out {out}: already holds a campaign; merge into a new directory")
    (out / DUTS).mkdir()
    duts = []
    for d in first["duts"]:
        shard = owner.get(d["name"])
        if shard is None:
            duts.append({**d, "in_shard": False, "run_dir": None, "state": None, "exit_code": None})
            continue
        src = next(x for x in dict(states)[shard]["duts"] if x["name"] == d["name"])
        _copy(shard / src["run_dir"], out / DUTS / d["name"])
        duts.append({**src, "run_dir": f"{DUTS}/{d['name']}", "shard": str(shard)})
    shutil.copy2(first_dir / COPY, out / COPY)
    state = {**{k: v for k, v in first.items() if k not in ("duts", "attempts", "shard")},
             "shard": None, "merged": True, "attempts": [],
             "merged_from": [{"dir": str(s), "shard": st.get("shard")} for s, st in states], "duts": duts}
    write_json(out / STATE, state)
    with contextlib.suppress(OSError):
        (out / ".targets").rmdir()
    return fleet.write_all(state, out, previous=previous)
